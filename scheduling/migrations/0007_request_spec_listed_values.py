"""Request specs: the three values of a spec that a server list shows (its zone, its group's uuid,
its scheduler hints) get their own columns, so that a list page reads them and never the spec,
filled here for the rows stored before, a batch of rows at a time (as
``RequestSpec.set_spec`` fills them for the rows written after)."""

from django.db import migrations, models

#: rows read and written at a time
BATCH = 500


def _listed(spec):
    # as RequestSpec.set_spec
    group = spec.get("instance_group")
    return {"availability_zone": spec.get("availability_zone"),
            "instance_group_uuid": group.get("uuid") if isinstance(group, dict) else None,
            "scheduler_hints": spec.get("scheduler_hints")}


def fill_listed_values(apps, schema_editor):
    RequestSpec = apps.get_model("scheduling", "RequestSpec")
    specs = RequestSpec.objects.using(schema_editor.connection.alias)
    last = 0
    while batch := list(specs.filter(id__gt=last).order_by("id").only("id", "spec")[:BATCH]):
        for row in batch:
            for name, value in _listed(row.spec or {}).items():
                setattr(row, name, value)
        specs.bulk_update(batch, ["availability_zone", "instance_group_uuid", "scheduler_hints"])
        last = batch[-1].id


class Migration(migrations.Migration):

    dependencies = [
        ('scheduling', '0006_scheduling_trace_body_orphaned'),
    ]

    operations = [
        migrations.AddField(
            model_name='requestspec',
            name='availability_zone',
            field=models.CharField(blank=True, max_length=255, null=True),
        ),
        migrations.AddField(
            model_name='requestspec',
            name='instance_group_uuid',
            field=models.CharField(blank=True, max_length=36, null=True),
        ),
        migrations.AddField(
            model_name='requestspec',
            name='scheduler_hints',
            field=models.JSONField(blank=True, null=True),
        ),
        migrations.RunPython(fill_listed_values, migrations.RunPython.noop),
    ]
