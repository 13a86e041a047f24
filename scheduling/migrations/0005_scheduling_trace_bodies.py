"""Scheduling traces: the body of a trace moves out of its record into ``SchedulingTraceBody``,
stored once per distinct body under the digest of its compact JSON (the record keeps the
digest); the record's index on ``instance_uuid`` alone goes (``(instance_uuid, request_id)``
serves the same reads)."""

import hashlib
import json

from django.db import migrations, models


def _digest(body: str) -> str:
    # as scheduling.services.traces.trace_body_digest
    return hashlib.blake2b(body.encode(), digest_size=16).hexdigest()


def bodies_out(apps, schema_editor):
    Record = apps.get_model("scheduling", "SchedulingTraceRecord")
    Body = apps.get_model("scheduling", "SchedulingTraceBody")
    db = schema_editor.connection.alias
    for record in Record.objects.using(db).only("id", "trace").iterator():
        body = json.dumps(record.trace, separators=(",", ":"))
        digest = _digest(body)
        Body.objects.using(db).get_or_create(digest=digest, defaults={"body": body})
        Record.objects.using(db).filter(id=record.id).update(body_digest=digest)


def bodies_in(apps, schema_editor):
    Record = apps.get_model("scheduling", "SchedulingTraceRecord")
    Body = apps.get_model("scheduling", "SchedulingTraceBody")
    db = schema_editor.connection.alias
    bodies = dict(Body.objects.using(db).values_list("digest", "body"))
    for record in Record.objects.using(db).only("id", "body_digest").iterator():
        trace = json.loads(bodies[record.body_digest]) if record.body_digest in bodies else {}
        Record.objects.using(db).filter(id=record.id).update(trace=trace)


class Migration(migrations.Migration):

    dependencies = [
        ('scheduling', '0004_placement_usage_sample'),
    ]

    operations = [
        migrations.CreateModel(
            name='SchedulingTraceBody',
            fields=[
                ('digest', models.CharField(max_length=64, primary_key=True, serialize=False)),
                ('body', models.TextField()),
            ],
            options={
                'abstract': False,
            },
        ),
        migrations.AddField(
            model_name='schedulingtracerecord',
            name='body_digest',
            field=models.CharField(default='', max_length=64),
            preserve_default=False,
        ),
        migrations.RunPython(bodies_out, bodies_in),
        migrations.RemoveField(
            model_name='schedulingtracerecord',
            name='trace',
        ),
        migrations.AlterField(
            model_name='schedulingtracerecord',
            name='instance_uuid',
            field=models.CharField(max_length=36),
        ),
    ]
