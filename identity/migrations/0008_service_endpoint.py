import django.utils.timezone
import identity.models
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('identity', '0007_region'),
    ]

    operations = [
        migrations.CreateModel(
            name='Service',
            fields=[
                ('id', models.CharField(default=identity.models.new_id, max_length=64, primary_key=True, serialize=False)),
                ('type', models.CharField(max_length=255)),
                ('name', models.CharField(blank=True, default='', max_length=255)),
                ('enabled', models.BooleanField(default=True)),
                ('extra', models.JSONField(blank=True, default=dict)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
            ],
        ),
        migrations.CreateModel(
            name='Endpoint',
            fields=[
                ('id', models.CharField(default=identity.models.new_id, max_length=64, primary_key=True, serialize=False)),
                ('service_id', models.CharField(db_index=True, max_length=64)),
                ('interface', models.CharField(max_length=8)),
                ('url', models.TextField()),
                ('region_id', models.CharField(blank=True, db_index=True, max_length=255, null=True)),
                ('enabled', models.BooleanField(default=True)),
                ('extra', models.JSONField(blank=True, default=dict)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
            ],
        ),
    ]
