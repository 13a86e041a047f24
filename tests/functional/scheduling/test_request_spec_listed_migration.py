"""Migration 0007: the request specs stored before it get the columns of their listed values (zone,
group uuid, hints) filled from their spec, a batch of rows at a time, and a server list reads them
as the spec holds them."""
from __future__ import annotations

import importlib
from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("scheduling", "0006_scheduling_trace_body_orphaned")]
AFTER = [("scheduling", "0007_request_spec_listed_values")]
HINTS = {"nested": {"a": [1, {"b": "ü ☃"}], "e": {}}, "big": 2 ** 70 + 1, "list": ["x", None, True, 1.5]}
SPECS: dict[str, dict[str, Any]] = {
    "i1": {"availability_zone": "az1", "instance_group": {"uuid": "g1", "members": ["i1"]}, "scheduler_hints": HINTS,
           "flavor": {"name": "m1.tiny"}},
    "i2": {"availability_zone": None, "scheduler_hints": None},
    "i3": {"image": {"id": "img"}},
    "i4": {"availability_zone": "null", "scheduler_hints": {}},
    "i5": {},
}


def _migrate(target: list[tuple[str, str]]) -> Any:
    executor = MigrationExecutor(connection)
    executor.migrate(target)
    executor.loader.build_graph()
    return executor.loader.project_state(target).apps


def test_specs_stored_before_the_migration_get_their_listed_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    from servers.selectors import request_spec_keys_of

    # a batch of two rows: five specs are filled in three batches
    migration = importlib.import_module("scheduling.migrations.0007_request_spec_listed_values")
    monkeypatch.setattr(migration, "BATCH", 2)
    try:
        # given specs stored before the columns existed: a zone, a group and hints beyond 64 bits;
        # a zone and hints null; none of them; a zone "null" and empty hints; an empty spec
        old = _migrate(BEFORE)
        RequestSpec = old.get_model("scheduling", "RequestSpec")
        for uuid, spec in SPECS.items():
            RequestSpec.objects.create(instance_uuid=uuid, spec=spec)
        # when the database is migrated
        new = _migrate(AFTER)
        RequestSpec = new.get_model("scheduling", "RequestSpec")
        # then each row's columns hold its spec's zone, group uuid and hints (NULL where it has none)
        columns = {row.instance_uuid: (row.availability_zone, row.instance_group_uuid, row.scheduler_hints)
                   for row in RequestSpec.objects.all()}
        assert columns == {"i1": ("az1", "g1", HINTS), "i2": (None, None, None), "i3": (None, None, None),
                           "i4": ("null", None, {}), "i5": (None, None, None)}
        assert columns["i1"][2]["big"] == 2 ** 70 + 1
        # (no hints: SQL NULL, as a spec written after the migration stores it, not a JSON null)
        assert set(RequestSpec.objects.filter(scheduler_hints__isnull=True).values_list("instance_uuid", flat=True)) \
            == {"i2", "i3", "i5"}
        # and the list's read of them gives what the specs hold
        _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
        assert request_spec_keys_of(SPECS) == {
            uuid: {"availability_zone": spec.get("availability_zone"),
                   "instance_group": {"uuid": spec["instance_group"]["uuid"]} if "instance_group" in spec else None,
                   "scheduler_hints": spec.get("scheduler_hints")}
            for uuid, spec in SPECS.items()}
    finally:  # every migration applied again, the later ones too (the next tests' schema)
        _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
