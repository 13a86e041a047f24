from django.db import migrations, models


def _create_row(apps, schema_editor):
    apps.get_model("identity", "IdentityChangeStamp").objects.using(schema_editor.connection.alias) \
        .get_or_create(id=1, defaults={"seq": 0})


class Migration(migrations.Migration):

    dependencies = [
        ('identity', '0004_group'),
    ]

    operations = [
        migrations.CreateModel(
            name='IdentityChangeStamp',
            fields=[
                ('id', models.PositiveSmallIntegerField(default=1, primary_key=True, serialize=False)),
                ('seq', models.BigIntegerField(default=0)),
            ],
            options={
                'abstract': False,
            },
        ),
        migrations.RunPython(_create_row, migrations.RunPython.noop),
    ]
