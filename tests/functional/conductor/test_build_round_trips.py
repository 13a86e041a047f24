"""The statements the conductor sends for one build (``schedule_and_build_instances_task``, as a
conductor worker runs it: issue 23 item 2, where the conductor is the boot pipeline's bottleneck),
on every connection as Django logs them (``CaptureQueriesContext``: BEGIN and COMMIT included), on
databases with no transaction of the test around them; on PostgreSQL each is a round trip (plus
the health check's ``SELECT 1`` of each database used, which Django sends outside that log).

Pinned per backend: the build request read with its spec and the security groups it asked for (one
statement, where the groups were a read of their own before the cast to the host); the scheduler's
cells, freshness and zones reads; the placement claim (on PostgreSQL two queries, ``BEGIN`` with its
locks and one read of what they guard, then the allocations with ``COMMIT``, where its transaction
was seven round trips: ``scheduling.placement.services._claim_for_new_consumer``); the scheduler's
rows (the trace's body and record, the notifications) written when its scope ends, on PostgreSQL
one query with no BEGIN or COMMIT of its own (``cloudcore.core.scope.written_together``, the
notifications' ids its answer), where they were BEGIN, three INSERTs and COMMIT; then the host
mapping, the instance and its action in the cell (on PostgreSQL one query, the action's id its
answer, where they were BEGIN, two INSERTs and COMMIT), the mapping's cell and the build request
deleted. The host's cast is recorded instead of run (the host's own statements are
``tests/functional/servers/test_boot_statements``')."""
from __future__ import annotations

import contextlib
from typing import Any

import pytest
from django.db import connections
from django.test import override_settings
from django.test.utils import CaptureQueriesContext

import compute.rpc
import conductor.rpc
from conductor.tasks import schedule_and_build_instances_task
from networks.secgroups import requested_groups_for_instance
from tests.cloud import build_cloud
from tests.conftest import ALL_DATABASES

pytestmark = pytest.mark.django_db(databases=ALL_DATABASES, transaction=True)

#: statements of one build by database kind (the API database; the chosen host's cell; the other
#: cell, read by the scheduler for its hosts' freshness), per backend
STATEMENTS = {
    # build request; cells, placement's freshness, zones; claim (BEGIN, stamp, consumer, providers,
    # usage, allocations, COMMIT); BEGIN, trace body, trace record, notifications, COMMIT; host
    # mapping, the instance mapping's cell, the build request deleted
    "sqlite": {"api": 1 + 3 + 7 + 5 + 3, "cell": 1 + 4, "other cell": 1},
    # the same, the claim two queries (BEGIN, stamp, consumer, providers, one read of the stamp, the
    # consumer and the usage; allocations, COMMIT), the scheduler's rows one query, the instance
    # and its action one query
    "postgresql": {"api": 1 + 3 + 2 + 1 + 3, "cell": 1 + 1, "other cell": 1},
}


# NOTIFICATIONS_KEEP=0: no prune of the records (it runs when the ids, which PostgreSQL does not
# roll back between tests, cross a multiple of a fifth of the kept rows: in the measured build or not)
@override_settings(QUOTA_INSTANCES=-1, QUOTA_CORES=-1, QUOTA_RAM=-1, NOTIFICATIONS_ENABLED=True, NOTIFICATIONS_KEEP=0)
def test_a_build_in_the_conductor_costs_its_pinned_statements(cells: dict[str, Any], monkeypatch: Any) -> None:
    cloud = build_cloud(cells, vcpus=64, memory_mb=65536, disk_gb=1000)
    try:
        client = cloud.member()
        casts: list[dict[str, Any]] = []
        built: list[dict[str, Any]] = []
        # given servers accepted by the API, the conductor's casts recorded as a worker receives them
        with monkeypatch.context() as patch:
            patch.setattr(conductor.rpc, "schedule_and_build_instances",
                          lambda **kwargs: casts.append({**kwargs, "ctx": kwargs["ctx"].to_dict()}))
            for i in range(2):
                cloud.create_server(client, f"warm-{i}", networks="none")
            plain = cloud.create_server(client, "plain", networks="none")
            grouped = cloud.create_server(client, "grouped", networks="none", security_groups=[{"name": "default"}])
        monkeypatch.setattr(compute.rpc, "build_and_run_instance", lambda **kwargs: built.append(kwargs))
        for kwargs in casts[:2]:  # the caches warm, as in a worker's steady state
            schedule_and_build_instances_task.run(**kwargs)
        # when the conductor builds one more server
        with contextlib.ExitStack() as stack:
            captured = {alias: stack.enter_context(CaptureQueriesContext(connections[alias]))
                        for alias in ALL_DATABASES}  # (not a cell another test registered)
            schedule_and_build_instances_task.run(**casts[2])
        schedule_and_build_instances_task.run(**casts[3])
        # then it sends its pinned statements, on each database
        cell = built[2]["cell_uuid"]
        by_alias = {alias: [q["sql"] for q in c.captured_queries] for alias, c in captured.items()}
        cell_alias = next(alias for alias in by_alias if alias != "default" and any(
            str(c.uuid) == cell for c in cells.values() if getattr(c, "name", None) == alias))
        counts = {"api": len(by_alias.pop("default")), "cell": len(by_alias.pop(cell_alias)),
                  "other cell": sum(len(statements) for statements in by_alias.values())}
        everything = "\n".join(q["sql"][:160] for c in captured.values() for q in c.captured_queries)
        assert counts == STATEMENTS[connections["default"].vendor], everything
        # and the groups asked for are the build request's (no read of their own), cast as they are stored
        assert "SELECT \"networks_instancesecuritygroups\"" not in everything
        assert [b["instance_uuid"] for b in built[2:]] == [plain["id"], grouped["id"]]
        assert [b["security_groups"] for b in built[2:]] == [
            requested_groups_for_instance(plain["id"]), requested_groups_for_instance(grouped["id"])]
        assert all(b["security_groups"] for b in built[2:])  # the project's default, stored by the API
    finally:
        cloud.teardown()
