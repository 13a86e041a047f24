"""Migration 0005: the traces recorded before it keep their whole trace, their bodies stored once
per distinct body, and the way back restores each record's trace."""
from __future__ import annotations

import json

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from scheduling.services.traces import trace_body_digest

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("scheduling", "0004_placement_usage_sample")]
AFTER = [("scheduling", "0005_scheduling_trace_bodies")]


def _migrate(target: list[tuple[str, str]]) -> object:
    executor = MigrationExecutor(connection)
    executor.migrate(target)
    executor.loader.build_graph()
    return executor.loader.project_state(target).apps


def test_records_before_the_migration_keep_their_trace_with_one_body_each_distinct_one():
    try:
        # given three records stored before bodies existed, two of them with the same trace
        old = _migrate(BEFORE)
        Record = old.get_model("scheduling", "SchedulingTraceRecord")  # type: ignore[attr-defined]
        same = {"result": "no_valid_host", "placement": {"candidates": 0, "shortfall": {"providers": 2}}}
        other = {"result": "selected", "selections": [{"host": "c1"}]}
        for uuid, trace in (("i1", same), ("i2", same), ("i3", other)):
            Record.objects.create(instance_uuid=uuid, result=trace["result"], trace=trace)
        # when the database is migrated
        new = _migrate(AFTER)
        Record = new.get_model("scheduling", "SchedulingTraceRecord")  # type: ignore[attr-defined]
        Body = new.get_model("scheduling", "SchedulingTraceBody")  # type: ignore[attr-defined]
        # then one body per distinct trace, named by the digest the scheduler gives it
        bodies = dict(Body.objects.values_list("digest", "body"))
        assert sorted(json.loads(b)["result"] for b in bodies.values()) == ["no_valid_host", "selected"]
        named = dict(Record.objects.values_list("instance_uuid", "body_digest"))
        # (the digest of the body's text: on PostgreSQL the old jsonb column gave the keys back in
        # its own order, so the text is not always json.dumps(same))
        assert named["i1"] == named["i2"] == trace_body_digest(bodies[named["i1"]])
        assert json.loads(bodies[named["i1"]]) == same
        assert json.loads(bodies[named["i3"]]) == other
        # and the way back gives each record its trace again
        Record = _migrate(BEFORE).get_model("scheduling", "SchedulingTraceRecord")  # type: ignore[attr-defined]
        assert {r.instance_uuid: r.trace for r in Record.objects.all()} == {"i1": same, "i2": same, "i3": other}
    finally:  # every migration applied again, the later ones too (the next tests' schema)
        _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
