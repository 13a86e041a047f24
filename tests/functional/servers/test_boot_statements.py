"""SQL statements per boot, counted as ``make bench`` counts them (an execute wrapper on every
connection around ``POST /servers``, ``bench.env.count_queries``; the whole build runs inside
it): a budget for the total and for each step (``bench.env.sql_by_step``), and the reads that
used to repeat done once (the token and its roles, the cells, the quota limits, the requested
security groups, the request spec), the notifications stored in one INSERT; and the reads that
joined a neighbour (the flavor's extra specs, the quota class's rows and the project's, the request
spec and the build request), the placement consumer written without reading it first, the volume
block devices not looked for when the conductor knows there are none, no transaction opened for
the one INSERT of the notifications.

A query count, not a timed assertion. The databases are transactional here (as the bench's are)
so that the build runs inside the request, as it does under ``make run``."""
from __future__ import annotations

import contextlib
import re
from typing import Any

import pytest
from django.db import connections
from django.test import override_settings

from bench.env import count_queries, sql_by_step
from tests.cloud import build_cloud
from tests.conftest import ALL_DATABASES

pytestmark = pytest.mark.django_db(databases=ALL_DATABASES, transaction=True)

#: statements of one boot in the bench's set-up (networks "none"; 4 hosts in 2 cells), the test
#: helper's flavor lookup included (40 before the API's reads were remembered: cloudcore.core.stamps)
BUDGET = 36
#: and their share by the step that issues them, as ``make bench`` splits them
#: (``bench.env.sql_by_step``; "other": the test helper's flavor lookup)
BUDGET_BY_STEP = {
    "other": 1,
    "token validation": 1,  # the user's token (the host calls no service during the build)
    "API": 5,  # the build's 4 rows (in a transaction: BEGIN); the flavor with its extra specs, image,
               # quota limits and default group are remembered under the stamps the token's read brings
    "conductor": 7,  # build request with its request spec, host mapping; the instance, its action
                     # (BEGIN), the mapping's cell, the build request deleted
    "scheduler and placement": 11,  # cells; per cell one freshness statement; placement's stamp;
                                     # zones and aggregates; the claim (6: BEGIN, stamp, consumer,
                                     # providers, usage, allocations)
    "compute host": 7,  # the instance, the event, 3 task states, done (the event too); the image
                        # comes with the request from the conductor, as Nova's does
    # when the request ends, in one transaction: BEGIN, the notifications' INSERT, the trace's
    # two (its body, skipped when stored already, and its record)
    "rows written at the request's end": 4,
}


def _boot(cloud: Any, client: Any, name: str, steps: dict[str, int] | None = None) -> list[tuple[str, str]]:
    """The statements of one boot (``steps``: filled with their count by step, when given)."""
    statements: list[tuple[str, str]] = []

    def recorder(alias: str) -> Any:
        def wrapper(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
            statements.append((alias, sql))
            return execute(sql, params, many, context)
        return wrapper

    with count_queries() as counter, contextlib.ExitStack() as stack:
        for alias in list(connections.settings):
            stack.enter_context(connections[alias].execute_wrapper(recorder(alias)))
        by_step = stack.enter_context(sql_by_step()) if steps is not None else {}
        server = cloud.create_server(client, name, networks="none")
    if steps is not None:
        steps.update(by_step)
    assert counter.total == len(statements)  # the bench's own count
    assert cloud.show(client, server["id"])["status"] == "ACTIVE"
    return statements


def _count(statements: list[tuple[str, str]], pattern: str) -> int:
    return sum(1 for _alias, sql in statements if re.search(pattern, sql))


@override_settings(NOTIFICATIONS_ENABLED=True, NOTIFICATIONS_KEEP=0)
def test_a_boot_stays_within_its_statement_budget(cells: dict[str, Any]) -> None:
    cloud = build_cloud(cells, vcpus=64, memory_mb=65536, disk_gb=1000)
    try:
        client = cloud.member()
        # given a cloud that booted before (the caches warm, as in the bench's steady state)
        with override_settings(QUOTA_INSTANCES=-1, QUOTA_CORES=-1, QUOTA_RAM=-1):
            for i in range(2):
                _boot(cloud, client, f"warm-{i}")
            # when one more server boots
            steps: dict[str, int] = {}
            statements = _boot(cloud, client, "measured", steps)
        # then it costs no more than the budget, nor does any step more than its share
        assert len(statements) <= BUDGET, "\n".join(f"[{a}] {s[:120]}" for a, s in statements)
        assert sum(steps.values()) == len(statements)
        assert {step: n for step, n in steps.items() if n > BUDGET_BY_STEP.get(step, 0)} == {}, steps
        # and what used to repeat is read once: the user's token's change stamps (its validation
        # remembered, the token row not read again; the host, handed the image, calls no service
        # and validates no token of its own), the cells, the
        # quota limits; the requested security groups are written with one upsert and not read
        # back; the notifications are one INSERT. The flavor, image, quota limits and default group
        # are remembered by the process (cloudcore.core.stamps), their stamps read with the token's
        assert _count(statements, r'FROM "identity_token"') == 0
        assert _count(statements, r'FROM "identity_identitychangestamp"') == 1
        assert _count(statements, r'FROM "identity_identitychangestamp".* FROM "core_changestamp"') == 1
        assert _count(statements, r'FROM "images_image"') == 0  # remembered; the host is handed it
        assert _count(statements, r'FROM "networks_securitygroup"') == 0
        assert _count(statements, r'"identity_role"|guardian_') == 0
        assert _count(statements, r'FROM "cells_cellmapping"') == 1
        assert _count(statements, r'FROM "servers_quota(class|limit)"') == 0  # remembered
        assert _count(statements, r'FROM "servers_instance" ') == 1  # the compute's, no usage count
        assert _count(statements, r'INSERT INTO "networks_instancesecuritygroups"') == 1
        # (and read by the conductor with its build request, a subquery: no statement of their own)
        assert _count(statements, r'^SELECT [^(]*FROM "networks_instancesecuritygroups"') == 0
        assert _count(statements, r'FROM "scheduling_requestspec"') == 1
        assert _count(statements, r'INSERT INTO "core_notificationrecord"') == 1
        # written with the scheduler's trace body and record when the request ends (one transaction;
        # on PostgreSQL one query, the notifications last: their ids are its answer)
        ends = ['INSERT INTO "scheduling_schedulingtracebody"', 'INSERT INTO "scheduling_schedulingtracerecord"',
                'INSERT INTO "core_notificationrecord"']
        if connections["default"].vendor == "postgresql":
            alias, query = statements[-1]
            assert alias == "default" and [part.split(" (")[0] for part in query.split("; ")] == ends, query[:300]
        else:
            assert [(alias, sql.split(" (")[0]) for alias, sql in statements[-3:]] == [("default", e) for e in ends]
        assert _count(statements, r"^SAVEPOINT") == 0
        # and what a neighbouring statement brings along is not read again: the flavor's extra
        # specs (joined), the build request's spec (a subquery), the consumer (an upsert); the
        # block devices of a server that asked for none are not looked for
        assert _count(statements, r'FROM "servers_flavorextraspec"') == 0
        assert _count(statements, r'^SELECT .*FROM "servers_buildrequest"') == 1
        assert _count(statements, r'FROM "scheduling_consumer"') == 0
        assert _count(statements, r'"servers_blockdevicemapping"') == 0
        # the API's rows, the claim, the instance's rows, the rows written when the request ends
        # (SQLite's explicit BEGINs; PostgreSQL's driver opens its transactions with no statement,
        # but the claim's first query opens its own: placement's _claim_for_new_consumer)
        assert _count(statements, r"^BEGIN") == (4 if connections["default"].vendor == "sqlite" else 1)
        assert len(cloud.notifications()) >= 8
        # with quota limits that apply, the usage is counted once (one statement per cell and
        # the build requests): 5 more statements
        limited = _boot(cloud, client, "limited")
        assert _count(limited, r'COUNT\("servers_instance"') == 3
        assert _count(limited, r'FROM "servers_buildrequest" WHERE "servers_buildrequest"."project_id"') == 1
        assert len(limited) <= BUDGET + 5
    finally:
        cloud.teardown()
