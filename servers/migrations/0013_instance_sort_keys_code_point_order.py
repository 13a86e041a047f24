"""The server list's text sort keys ordered by code point on PostgreSQL (the ``"C"`` collation;
``cloudcore.core.models.CodePointCharField``), as the cross-cell merge orders them in Python,
whatever the database's default collation. On PostgreSQL each column's type is altered (its
indexes rebuilt); on SQLite, whose order already is that one, the table is remade as it is."""

import cloudcore.core.models
from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('servers', '0012_instance_host_nulls_first_index_postgresql'),
    ]

    operations = [
        migrations.AlterField(
            model_name='instance',
            name='availability_zone',
            field=cloudcore.core.models.CodePointCharField(blank=True, max_length=255, null=True),
        ),
        migrations.AlterField(
            model_name='instance',
            name='display_name',
            field=cloudcore.core.models.CodePointCharField(blank=True, default='', max_length=255),
        ),
        migrations.AlterField(
            model_name='instance',
            name='host',
            field=cloudcore.core.models.CodePointCharField(blank=True, db_index=True, max_length=255, null=True),
        ),
        migrations.AlterField(
            model_name='instance',
            name='hostname',
            field=cloudcore.core.models.CodePointCharField(blank=True, default='', max_length=255),
        ),
        migrations.AlterField(
            model_name='instance',
            name='key_name',
            field=cloudcore.core.models.CodePointCharField(blank=True, max_length=255, null=True),
        ),
        migrations.AlterField(
            model_name='instance',
            name='node',
            field=cloudcore.core.models.CodePointCharField(blank=True, max_length=255, null=True),
        ),
        migrations.AlterField(
            model_name='instance',
            name='task_state',
            field=cloudcore.core.models.CodePointCharField(blank=True, max_length=255, null=True),
        ),
        migrations.AlterField(
            model_name='instance',
            name='vm_state',
            field=cloudcore.core.models.CodePointCharField(db_index=True, default='building', max_length=255),
        ),
    ]
