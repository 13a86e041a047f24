"""The server list's text sort keys ordered by code point on PostgreSQL (the ``"C"`` collation;
``cloudcore.core.models.CodePointCharField``), as the cross-cell merge orders them in Python,
whatever the database's default collation. On PostgreSQL each column's type is altered (its
indexes rebuilt); on SQLite, whose order already is that one, the table is remade as it is."""

from django.db import migrations

from cloudcore.core.models import CodePointCharField

OPTIONAL = {"blank": True, "max_length": 255, "null": True}
TEXT = {"blank": True, "default": "", "max_length": 255}
#: each field as the model declares it, its class aside
FIELDS = {
    "availability_zone": OPTIONAL,
    "display_name": TEXT,
    "host": {**OPTIONAL, "db_index": True},
    "hostname": TEXT,
    "key_name": OPTIONAL,
    "node": OPTIONAL,
    "task_state": OPTIONAL,
    "vm_state": {"db_index": True, "default": "building", "max_length": 255},
}


class Migration(migrations.Migration):

    dependencies = [
        ("servers", "0012_instance_host_nulls_first_index_postgresql"),
    ]

    operations = [
        migrations.AlterField(model_name="instance", name=name, field=CodePointCharField(**options))
        for name, options in FIELDS.items()
    ]
