"""A build that finds no valid host, as a conductor worker runs it (issue 22: the trace must cost a
few percent of the scheduling): the scheduling's deferred rows (its trace's body and record, its
start notification) ride in the burial's API-database transaction with the mapping pointed at
cell0, the build request deleted and the failure's notifications, one commit where there were
five; the trace is readable whenever the server reads PENDING (or ERROR), at every commit on
the API database, not only once the task is done; and a failing write of those rows does not fail
the burial."""
from __future__ import annotations

import re
from typing import Any

import pytest
from django.db import DatabaseError, connections
from django.test import override_settings

import conductor.rpc
from cells.models import InstanceMapping
from cloudcore.core import scope
from cloudcore.core.models import NotificationRecord
from conductor.tasks import schedule_and_build_instances_task
from scheduling.models import SchedulingTraceRecord
from servers.models import BuildRequest
from tests.cloud import build_cloud
from tests.conftest import ALL_DATABASES
from tests.sqllog import api_db_transactions, inserted_tables

pytestmark = pytest.mark.django_db(databases=ALL_DATABASES, transaction=True)

NOTIFICATIONS, TRACES = "core_notificationrecord", "scheduling_schedulingtracerecord"
BODIES = "scheduling_schedulingtracebody"
#: the tables whose writes decide what ``look`` sees
WATCHED = re.compile(r'"(cells_instancemapping|servers_buildrequest|scheduling_schedulingtracerecord)"')


def _accepted(cells: dict[str, Any], monkeypatch: Any, settings: Any) -> tuple[Any, Any, str, dict[str, Any]]:
    """A cloud whose hosts have 8192 MB, and a member's server of 30000 MB accepted by the API, the
    conductor's cast recorded as a worker receives it: (cloud, member, server id, the cast)."""
    settings.USE_PENDING_STATE = True
    cloud = build_cloud(cells)
    huge = cloud.flavor("m1.huge", vcpus=1, ram=30000)
    member = cloud.member()
    casts: list[dict[str, Any]] = []
    with monkeypatch.context() as patch:
        patch.setattr(conductor.rpc, "schedule_and_build_instances",
                      lambda **kwargs: casts.append({**kwargs, "ctx": kwargs["ctx"].to_dict()}))
        sid = cloud.create_server(member, "waits", flavor=huge.flavorid, networks="none")["id"]
    (cast,) = casts
    return cloud, member, sid, cast


@override_settings(NOTIFICATIONS_ENABLED=True, NOTIFICATIONS_KEEP=0)
def test_the_trace_is_written_in_the_burials_api_transaction(cells, monkeypatch, settings):
    cloud, member, sid, cast = _accepted(cells, monkeypatch, settings)
    try:
        # when the conductor finds no host for it
        with api_db_transactions() as transactions:
            schedule_and_build_instances_task.run(**cast)
        # then one API-database transaction writes the trace, the mapping's cell, the build
        # request's delete and the notifications (the scheduler's start, the failure's two)
        writes = [t for t in transactions if any(s.startswith(("INSERT", "UPDATE", "DELETE")) for s in t)]
        assert len(writes) == 1, writes
        (burial,) = writes
        assert sorted(set(inserted_tables(burial))) == [NOTIFICATIONS, BODIES, TRACES]
        assert any(s.startswith('UPDATE "cells_instancemapping"') for s in burial)
        assert any(s.startswith('DELETE FROM "servers_buildrequest"') for s in burial)
        # and the server reads PENDING with its explanation
        assert cloud.wait_for_status(member, sid, "PENDING", version="2.105")["fault"]["message"].startswith(
            "No valid host was found.")
        explanation = cloud.get(cloud.admin(), f"servers/{sid}/os-scheduling-explanation").json()
        assert explanation["scheduling_explanation"]["result"] == "no_valid_host"
        assert [r.instance_uuid for r in SchedulingTraceRecord.objects.all()] == [sid]
    finally:
        cloud.teardown()


@pytest.mark.parametrize("notifications", [True, False])
def test_the_trace_is_readable_whenever_the_server_reads_pending(cells, monkeypatch, settings, notifications):
    settings.NOTIFICATIONS_ENABLED = notifications
    cloud, member, sid, cast = _accepted(cells, monkeypatch, settings)
    connection = connections["default"]
    # at every commit on the API database (a transaction's, or a statement's in autocommit), what
    # another reader would see: whether the server is out of BUILDING (its mapping names a cell,
    # its build request gone) and whether its trace is there
    seen: list[tuple[bool, bool]] = []
    looking = [False]

    def look() -> None:
        looking[0] = True
        try:
            moved = InstanceMapping.objects.filter(instance_uuid=sid, cell__isnull=False).exists() \
                or not BuildRequest.objects.filter(instance_uuid=sid).exists()
            seen.append((moved, SchedulingTraceRecord.objects.filter(instance_uuid=sid).exists()))
        finally:
            looking[0] = False

    commit, set_autocommit = connection.commit, connection.set_autocommit
    committed = [False]

    def looked_after_commit() -> None:
        commit()
        committed[0] = True

    def looked_once_autocommit(autocommit: bool, *args: Any, **kwargs: Any) -> None:
        set_autocommit(autocommit, *args, **kwargs)
        if autocommit and committed[0]:  # (not before: a read would open a transaction on PostgreSQL)
            committed[0] = False
            look()

    def wrapper(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        result = execute(sql, params, many, context)
        # (a write of those tables in autocommit; not inside a transaction PostgreSQL holds for a
        # split one, the placement claim's, where nothing else may be sent)
        if not looking[0] and not connection.in_atomic_block and WATCHED.search(sql) \
                and not sql.startswith(("SELECT", "BEGIN")):
            look()
        return result

    try:
        connection.commit = looked_after_commit  # type: ignore[method-assign]
        connection.set_autocommit = looked_once_autocommit  # type: ignore[method-assign]
        with connection.execute_wrapper(wrapper):
            # when the conductor finds no host for it
            schedule_and_build_instances_task.run(**cast)
        # then at no commit was the server out of BUILDING without its trace
        assert seen and seen[-1] == (True, True)
        assert (True, False) not in seen, seen
        # and the API reads it PENDING, its trace there
        assert cloud.wait_for_status(member, sid, "PENDING", version="2.105")["status"] == "PENDING"
        assert SchedulingTraceRecord.objects.filter(instance_uuid=sid).count() == 1
    finally:
        del connection.commit, connection.set_autocommit
        cloud.teardown()


@override_settings(NOTIFICATIONS_ENABLED=True, NOTIFICATIONS_KEEP=0)
def test_a_failing_trace_write_does_not_fail_the_burial(cells, monkeypatch, settings, caplog):
    cloud, member, sid, cast = _accepted(cells, monkeypatch, settings)
    # given a trace record whose first write fails (as a full disk would fail it once)
    plain, failures = scope.insert_plain, []

    def failing_once(database: str, model: Any, rows: list[Any], **kwargs: Any) -> Any:
        if model is SchedulingTraceRecord and not failures:
            failures.append(model)
            raise DatabaseError("disk I/O error")
        return plain(database, model, rows, **kwargs)

    monkeypatch.setattr(scope, "insert_plain", failing_once)
    try:
        # when the conductor finds no host for it
        with api_db_transactions() as transactions:
            schedule_and_build_instances_task.run(**cast)
        # then the burial's transaction was rolled back before it wrote anything and done again
        # without the deferred rows, which were written once the scope ended
        assert failures == [SchedulingTraceRecord]
        assert any(t[0] == "ROLLBACK" for t in transactions)
        assert "could not open the transaction" in caplog.text
        assert cloud.wait_for_status(member, sid, "PENDING", version="2.105")["status"] == "PENDING"
        assert [r.instance_uuid for r in SchedulingTraceRecord.objects.all()] == [sid]
        events = list(NotificationRecord.objects.exclude(event_type__startswith="aggregate.")  # the set-up's
                      .order_by("id").values_list("event_type", flat=True))
        assert sorted(events) == ["compute_task.build_instances.error", "instance.update",
                                  "scheduler.select_destinations.start"]
        assert not BuildRequest.objects.filter(instance_uuid=sid).exists()
    finally:
        cloud.teardown()
