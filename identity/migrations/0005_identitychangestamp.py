from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('identity', '0004_group'),
    ]

    operations = [
        migrations.CreateModel(
            name='IdentityChangeStamp',
            fields=[
                ('key', models.CharField(max_length=64, primary_key=True, serialize=False)),
                ('seq', models.BigIntegerField(default=0)),
            ],
            options={
                'abstract': False,
            },
        ),
    ]
