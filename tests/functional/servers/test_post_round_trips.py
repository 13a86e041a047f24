"""The statements ``POST /servers`` sends the API database in the web process, on each backend (issue
23: on PostgreSQL each is a round trip to the server, which under 20 clients on 2 cores waits for a
CPU twice): the change stamps, read with the token's, then the build's rows. The flavor, image,
quota limits and default group a cloud that booted before has read are remembered under those
stamps (``cloudcore.core.stamps``; that they are read again after a change is
``test_remembered_reads``'). On PostgreSQL the four INSERTs of those rows are one query with no
BEGIN or COMMIT of its own (``cloudcore.core.scope.written_together``): 2 round trips where there
were 11, then 6. On SQLite the transaction is as before. Either way the cast to the conductor
follows the commit.

Statements as Django logs them (``CaptureQueriesContext``: BEGIN and COMMIT included), on databases
with no transaction of the test around them; the cast is recorded instead of run (the build's own
statements are ``test_boot_statements``')."""
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connections
from django.test import override_settings
from django.test.utils import CaptureQueriesContext

import conductor.rpc
from tests.cloud import build_cloud
from tests.conftest import ALL_DATABASES

pytestmark = pytest.mark.django_db(databases=ALL_DATABASES, transaction=True)

#: the tables of a server's rows, in the order they are written
ROWS = ("servers_buildrequest", "scheduling_requestspec", "cells_instancemapping", "networks_instancesecuritygroups")
#: what the API reads first: the change stamps (the token's and those of the remembered reads)
READS = 1


@contextlib.contextmanager
def _casts(monkeypatch: Any) -> Iterator[list[tuple[list[str], bool]]]:
    """The conductor casts made while active: the servers, and whether a transaction was open."""
    casts: list[tuple[list[str], bool]] = []

    def cast(*, ctx: Any, instance_uuids: list[str], admin_pass: str | None = None) -> None:
        casts.append((instance_uuids, connections["default"].in_atomic_block))

    with monkeypatch.context() as patch:
        patch.setattr(conductor.rpc, "schedule_and_build_instances", cast)
        yield casts


def _post(cloud: Any, client: Any, monkeypatch: Any, name: str, **fields: Any
          ) -> tuple[list[str], list[tuple[list[str], bool]]]:
    with _casts(monkeypatch) as casts, CaptureQueriesContext(connections["default"]) as captured:
        server = cloud.create_server(client, name, networks="none", **fields)
    assert casts and casts[0][0] == [server["id"]]
    statements = [query["sql"] for query in captured.captured_queries]
    return statements[1:], casts  # the first: the test helper's flavor lookup


@override_settings(QUOTA_INSTANCES=-1, QUOTA_CORES=-1, QUOTA_RAM=-1)
def test_a_post_sends_its_rows_in_one_round_trip_on_postgresql(cells: dict[str, Any], monkeypatch: Any) -> None:
    cloud = build_cloud(cells, vcpus=64, memory_mb=65536, disk_gb=1000)
    try:
        client = cloud.member()
        # given a cloud that booted before (the caches warm)
        cloud.create_server(client, "warm", networks="none")
        # when a server is asked for
        statements, casts = _post(cloud, client, monkeypatch, "measured")
        # then its rows are written after the reads, and cast once committed
        inserts = [s for s in statements if s.startswith("INSERT")]
        assert len(statements) - len(inserts) - sum(s in ("BEGIN", "BEGIN IMMEDIATE", "COMMIT") for s in statements) \
            == READS, statements
        assert casts == [(casts[0][0], False)]
        written = " ".join(inserts)
        assert [written.index(f'INSERT INTO "{table}"') for table in ROWS] == sorted(
            written.index(f'INSERT INTO "{table}"') for table in ROWS)
        if connections["default"].vendor == "postgresql":
            # one query for the four, with no BEGIN or COMMIT of its own: READS + 1 round trips
            assert len(statements) == READS + 1 and len(inserts) == 1, statements
        else:
            assert [s.split(" (")[0] for s in statements[READS:]] == [
                "BEGIN IMMEDIATE", *(f'INSERT INTO "{table}"' for table in ROWS), "COMMIT"]
    finally:
        cloud.teardown()


@override_settings(QUOTA_INSTANCES=-1, QUOTA_CORES=-1, QUOTA_RAM=-1)
def test_a_post_into_a_server_group_joins_it_in_the_same_transaction(cells: dict[str, Any],
                                                                     monkeypatch: Any) -> None:
    from servers.models import InstanceGroupMember

    cloud = build_cloud(cells, vcpus=64, memory_mb=65536, disk_gb=1000)
    try:
        client = cloud.member()
        group = cloud.post(client, "os-server-groups", {"server_group": {"name": "g", "policies": ["affinity"]}},
                           version="2.1").json()["server_group"]
        cloud.create_server(client, "warm", networks="none")  # the project's default group made
        # when a server is asked for in a group (its membership is an ORM write, after a read of the group)
        statements, casts = _post(cloud, client, monkeypatch, "grouped", hints={"group": group["id"]})
        # then the build's rows, then the membership (after a read of the group and of its members, which
        # server_group.add_member names), are one transaction, and the cast follows its commit
        kinds = [s.split(" ")[0] for s in statements]
        begin, commit = kinds.index("BEGIN"), kinds.index("COMMIT")
        assert kinds[begin:commit + 1] == [
            "BEGIN", *(["INSERT"] if connections["default"].vendor == "postgresql" else ["INSERT"] * len(ROWS)),
            "SELECT", "SELECT", "INSERT", "COMMIT"], statements
        assert statements[commit - 1].startswith('INSERT INTO "servers_instancegroupmember"')
        assert all(f'INSERT INTO "{table}"' in " ".join(statements[begin:commit - 3]) for table in ROWS)
        # the request's notifications (server_group.add_member) are written after it, together
        assert [s.split(" (")[0] for s in statements[commit + 1:]] == ['INSERT INTO "core_notificationrecord"']
        assert casts == [(casts[0][0], False)]
        assert list(InstanceGroupMember.objects.values_list("instance_uuid", flat=True)) == casts[0][0]
    finally:
        cloud.teardown()
