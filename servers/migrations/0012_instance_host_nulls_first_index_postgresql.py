"""On PostgreSQL only, an index on the instance's host with its NULLs first.

The server list orders a nullable sort key with its NULLs first ascending and last descending on
every backend, as the cross-cell merge does (``cloudcore.core.keyset.sort_order``). SQLite's plain
index on ``host`` has that order; PostgreSQL's has the NULLs last ascending, so a list sorted on host
read every live row of the cell and sorted them (EXPLAIN ANALYZE, a cell of 20,000 instances: a seq
scan of 18,000 rows and a top-N sort for an admin's page of 1,000 or of 21). This index, read forwards
for ``host`` ascending and backwards for descending, gives the page in order up to the limit (1,386
rows read ascending, the NULL hosts being the first group; 1,016 descending; 93 for a page of 21).
It is not in the model's state (Django declares no index per backend); ``host``'s plain index stays
for the equality filters on every backend."""
from django.db import migrations

INDEX = "servers_instance_host_nulls_first"


def _create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        table = schema_editor.quote_name(apps.get_model("servers", "Instance")._meta.db_table)
        schema_editor.execute(f"CREATE INDEX {INDEX} ON {table} (host NULLS FIRST)")


def _drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DROP INDEX IF EXISTS {INDEX}")


class Migration(migrations.Migration):

    dependencies = [
        ("servers", "0011_instance_project_created_uuid_desc_index"),
    ]

    operations = [
        # a cell table: the hint lets the cells' router run it on the cell databases only
        migrations.RunPython(_create, _drop, hints={"model_name": "instance"}),
    ]
