"""The request scope: a read memoised once per outermost request (nested requests join it, a
write forgets it), and the notifications of a request stored in one INSERT when it ends, the
same rows in the same order as one at a time; the rows of several models written in one
transaction, a failing one not losing the others; plain INSERTs (skipping stored keys when asked);
the notifications pruned without a count."""
from __future__ import annotations

from typing import Any

import pytest
from django.db import IntegrityError, connections, transaction
from django.test import override_settings
from django.utils import timezone

from cloudcore.core import notifications, scope
from cloudcore.core.models import NotificationRecord
from networks.models import InstanceSecurityGroups
from scheduling.models import SchedulingTraceBody, SchedulingTraceRecord
from tests.sqllog import api_db_transactions, inserted_tables

pytestmark = pytest.mark.django_db


def test_a_read_is_memoised_per_scope_and_nested_scopes_join() -> None:
    reads: list[int] = []

    def read() -> int:
        reads.append(1)
        return len(reads)

    # outside a scope every call reads
    assert (scope.memoized("k", read), scope.memoized("k", read)) == (1, 2)
    with scope.request_scope() as outer:
        assert scope.memoized("k", read) == 3
        with scope.request_scope() as inner:  # an in-process call made by the request
            assert inner is outer and scope.memoized("k", read) == 3
        scope.forget("k")  # a write that changes it
        assert scope.memoized("k", read) == 4
    assert scope.current() is None and scope.memoized("k", read) == 5


@override_settings(NOTIFICATIONS_ENABLED=True, NOTIFICATIONS_KEEP=0)
def test_rows_deferred_in_nested_scopes_are_written_once_at_the_outermost_exit_even_on_error() -> None:
    with pytest.raises(RuntimeError), scope.request_scope():
        with scope.request_scope():  # an in-process call made by the request
            notifications.notify("compute.instance.update", {"n": 1})
        assert not NotificationRecord.objects.exists()
        raise RuntimeError("the request failed")
    assert list(NotificationRecord.objects.values_list("event_type", flat=True)) == ["compute.instance.update"]


@override_settings(NOTIFICATIONS_ENABLED=True, NOTIFICATIONS_KEEP=0)
def test_notifications_of_a_request_are_stored_in_one_insert(django_assert_num_queries: Any) -> None:
    events = ["compute.instance.create.start", "compute.instance.update", "compute.instance.create.end"]
    # given a request emitting three notifications
    with scope.request_scope():
        with django_assert_num_queries(0):
            sent = [notifications.notify(event, {"n": i}) for i, event in enumerate(events)]
        # then nothing is written while it runs
        assert not NotificationRecord.objects.exists()
    rows = list(NotificationRecord.objects.order_by("id"))
    # then the same rows in the same order, each with the time it was emitted
    assert [r.event_type for r in rows] == events
    assert [r.payload for r in rows] == sent
    assert rows[0].timestamp <= rows[1].timestamp <= rows[2].timestamp


@pytest.mark.django_db(transaction=True)  # no test transaction around it: BEGIN is the scope's
@override_settings(NOTIFICATIONS_ENABLED=True, NOTIFICATIONS_KEEP=0)
def test_one_insert_when_the_request_ends(django_assert_max_num_queries: Any) -> None:
    with django_assert_max_num_queries(3):  # the scope's transaction: BEGIN, one INSERT, COMMIT
        with scope.request_scope():
            for i in range(5):
                notifications.notify("compute.instance.update", {"n": i})
    assert NotificationRecord.objects.count() == 5


@override_settings(NOTIFICATIONS_ENABLED=True, NOTIFICATIONS_KEEP=0)
def test_outside_a_request_a_notification_is_stored_at_once() -> None:
    notifications.notify("compute.instance.update", {"n": 1})
    assert NotificationRecord.objects.count() == 1


def _trace_row(uuid: str = "i1", result: str | None = "no_valid_host") -> SchedulingTraceRecord:
    return SchedulingTraceRecord(instance_uuid=uuid, request_id="req-1", result=result, body_digest="d")


@pytest.mark.django_db(transaction=True)
@override_settings(NOTIFICATIONS_ENABLED=True, NOTIFICATIONS_KEEP=0)
def test_the_rows_of_several_models_are_written_in_one_transaction() -> None:
    # given a scope deferring notifications, trace rows, then more notifications
    with api_db_transactions() as transactions:
        with scope.request_scope():
            notifications.notify("scheduler.select_destinations.start", {"n": 1})
            scope.insert([_trace_row("i1"), _trace_row("i2")])
            notifications.notify("scheduler.select_destinations.end", {"n": 2})
            assert transactions == []
    # then one transaction, one INSERT per model, in the order the models came
    assert [inserted_tables(t) for t in transactions] == [
        ["core_notificationrecord", "scheduling_schedulingtracerecord"]]
    assert [t[:7] for t in transactions[0]] == ["INSERT ", "INSERT "]
    assert list(NotificationRecord.objects.order_by("id").values_list("event_type", flat=True)) == [
        "scheduler.select_destinations.start", "scheduler.select_destinations.end"]
    assert list(SchedulingTraceRecord.objects.order_by("id").values_list("instance_uuid", flat=True)) == ["i1", "i2"]


@pytest.mark.django_db(transaction=True)
def test_rows_that_are_one_plain_insert_are_that_statement_alone_in_autocommit() -> None:
    statements: list[tuple[str, bool]] = []
    connection = connections["default"]

    def wrapper(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        statements.append((sql, connection.in_atomic_block))
        return execute(sql, params, many, context)

    row = {"instance_uuid": "i1", "request_id": "req-1", "created_at": timezone.now(), "result": "no_valid_host",
           "body_digest": "d"}
    # given a scope whose only rows are one model's, written plainly (a trace record alone)
    with connection.execute_wrapper(wrapper):
        with scope.request_scope():
            scope.insert_values(SchedulingTraceRecord, [row, {**row, "instance_uuid": "i2"}])
        # then they are one INSERT outside any transaction block: it commits by itself
        assert [(sql.split(" (")[0], atomic) for sql, atomic in statements] == [
            ('INSERT INTO "scheduling_schedulingtracerecord"', False)]
        # and rows of two models (or a model not written plainly) still share one transaction
        statements.clear()
        with scope.request_scope():
            scope.insert_values(SchedulingTraceBody, [{"digest": "d", "body": "{}"}], ignore_conflicts=True)
            scope.insert_values(SchedulingTraceRecord, [{**row, "instance_uuid": "i3"}])
        if connection.vendor == "postgresql":  # one query, which the server runs as one transaction
            assert [(sql.count("INSERT INTO"), atomic) for sql, atomic in statements] == [(2, False)]
        else:
            assert [atomic for sql, atomic in statements if sql.startswith("INSERT")] == [True, True]
    assert SchedulingTraceRecord.objects.count() == 3


@override_settings(NOTIFICATIONS_ENABLED=True, NOTIFICATIONS_KEEP=0)
def test_a_failing_write_does_not_lose_the_others(caplog: Any) -> None:
    # given a scope whose trace row cannot be written (no result: NOT NULL) between notifications
    with scope.request_scope():
        notifications.notify("compute.instance.update", {"n": 1})
        scope.insert([_trace_row("bad", result=None)])
        notifications.notify("compute.instance.update", {"n": 2})
    # then nothing is raised, the notifications are written once each, the failure is logged
    assert [r.payload["payload"]["nova_object.data"] for r in NotificationRecord.objects.order_by("id")] == [
        {"n": 1}, {"n": 2}]
    assert not SchedulingTraceRecord.objects.exists()
    assert "could not write the deferred rows together" in caplog.text
    assert "could not write 1 SchedulingTraceRecord rows" in caplog.text


def test_outside_a_scope_rows_are_written_at_once_and_a_failure_is_raised() -> None:
    scope.insert([_trace_row("i1")])
    assert SchedulingTraceRecord.objects.filter(instance_uuid="i1").exists()
    with pytest.raises(IntegrityError), transaction.atomic():
        scope.insert([_trace_row("bad", result=None)])


def test_flush_writes_a_models_pending_rows_for_a_reader_in_the_scope() -> None:
    with scope.request_scope():
        scope.insert([_trace_row("i1")])
        assert not SchedulingTraceRecord.objects.exists()
        scope.flush(SchedulingTraceRecord)
        assert SchedulingTraceRecord.objects.filter(instance_uuid="i1").count() == 1
    assert SchedulingTraceRecord.objects.count() == 1  # not written again at the end


@pytest.mark.django_db(transaction=True)
def test_plain_rows_are_one_insert_each_model_and_ignore_conflicts_skips_stored_keys() -> None:
    # given a body stored already
    scope.insert([SchedulingTraceBody(digest="d1", body='{"a":1}')], plain=True, ignore_conflicts=True)
    with api_db_transactions() as transactions:
        with scope.request_scope():
            # when the same key and a new one are inserted plainly, with records naming them
            scope.insert([SchedulingTraceBody(digest="d1", body='{"a":2}'),
                          SchedulingTraceBody(digest="d2", body='{"b":1}')], plain=True, ignore_conflicts=True)
            scope.insert([_trace_row("i1"), _trace_row("i2")], plain=True)
            # and a reader flushes both models in the scope
            scope.flush(SchedulingTraceBody, SchedulingTraceRecord)
            assert SchedulingTraceRecord.objects.count() == 2
    # then one transaction of one INSERT per model (on PostgreSQL one query, which the server runs as
    # one transaction), the stored key kept as it was
    inserts = [s for t in transactions for s in t if s.startswith("INSERT")]
    if connections["default"].vendor == "postgresql":
        inserts = inserts[0].split("; ") if len(inserts) == 1 else inserts
    else:
        assert [inserted_tables(t) for t in transactions if inserted_tables(t)] == [
            ["scheduling_schedulingtracebody", "scheduling_schedulingtracerecord"]]
    assert inserted_tables(inserts) == ["scheduling_schedulingtracebody", "scheduling_schedulingtracerecord"]
    assert "ON CONFLICT DO NOTHING" in inserts[0] and "ON CONFLICT" not in inserts[1]
    assert dict(SchedulingTraceBody.objects.values_list("digest", "body")) == {"d1": '{"a":1}', "d2": '{"b":1}'}
    record = SchedulingTraceRecord.objects.get(instance_uuid="i1")
    assert (record.request_id, record.result, record.body_digest) == ("req-1", "no_valid_host", "d")
    assert record.created_at is not None
    # and without ignore_conflicts a stored key fails
    with pytest.raises(IntegrityError):
        scope.insert([SchedulingTraceBody(digest="d1", body="{}")], plain=True)


@pytest.mark.django_db(transaction=True)
def test_rows_given_by_their_values_are_stored_as_the_orm_stores_them_on_either_path() -> None:
    # given a record saved by the ORM
    now = timezone.now()
    SchedulingTraceRecord.objects.create(instance_uuid="i0", request_id="req-1", created_at=now,
                                         result="no_valid_host", body_digest="d")
    row = {"instance_uuid": "i1", "request_id": "req-1", "created_at": now, "result": "no_valid_host",
           "body_digest": "d"}  # the message left out: its default
    # when the same record is given by its values: on SQLite's connection itself (nothing watching
    # the statements), then through Django's cursor (an execute wrapper watching), then as a model
    scope.insert_values(SchedulingTraceRecord, [row])
    statements: list[str] = []

    def wrapper(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        statements.append(sql)
        return execute(sql, params, many, context)

    with connections["default"].execute_wrapper(wrapper):
        scope.insert_values(SchedulingTraceRecord, [{**row, "instance_uuid": "i2"}])
    (insert,) = [sql for sql in statements if sql.startswith("INSERT")]
    assert insert.startswith('INSERT INTO "scheduling_schedulingtracerecord"')
    scope.insert([_trace_row("i3")], plain=True)
    # then every row reads back as the ORM's, its time stored as the same text
    for uuid in ("i1", "i2"):
        record = SchedulingTraceRecord.objects.get(instance_uuid=uuid)
        assert (record.request_id, record.created_at, record.result, record.message, record.body_digest) \
            == ("req-1", now, "no_valid_host", "", "d")
    assert SchedulingTraceRecord.objects.filter(created_at=now).count() == 3
    with connections["default"].cursor() as cursor:
        cursor.execute('SELECT DISTINCT "created_at" FROM "scheduling_schedulingtracerecord" '
                       'WHERE "instance_uuid" < %s', ["i3"])
        assert len(cursor.fetchall()) == 1
    assert SchedulingTraceRecord.objects.get(instance_uuid="i3").created_at is not None


def test_plain_rows_now_are_one_statement_in_the_callers_transaction_and_update_stored_keys() -> None:
    # given the requested groups of one server stored already
    scope.insert_plain_now([InstanceSecurityGroups(instance_uuid="u1", security_group_ids=["g0"])],
                           unique_fields=["instance_uuid"], update_fields=["security_group_ids"])
    statements: list[str] = []

    def wrapper(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        statements.append(sql)
        return execute(sql, params, many, context)

    # when that server's and another's are stored plainly inside a request's transaction
    with scope.request_scope(), connections["default"].execute_wrapper(wrapper), transaction.atomic():
        scope.insert_plain_now([InstanceSecurityGroups(instance_uuid="u1", security_group_ids=["g1"]),
                                InstanceSecurityGroups(instance_uuid="u2", security_group_ids=["g2"])],
                               unique_fields=["instance_uuid"], update_fields=["security_group_ids"])
        # then they are written at once (not at the scope's end), in one statement, the clause the ORM's
        # upsert writes
        assert dict(InstanceSecurityGroups.objects.values_list("instance_uuid", "security_group_ids")) == {
            "u1": ["g1"], "u2": ["g2"]}
    inserts = [s for s in statements if s.startswith("INSERT")]
    assert len(inserts) == 1
    assert inserts[0].endswith('ON CONFLICT("instance_uuid") DO UPDATE SET "security_group_ids" = '
                               'EXCLUDED."security_group_ids"')


@override_settings(NOTIFICATIONS_ENABLED=True, NOTIFICATIONS_KEEP=20)
def test_notifications_are_pruned_when_their_ids_cross_a_fifth_of_the_kept_count() -> None:
    # given notifications stored one at a time (outside a request), the kept count 20 (a fifth: 4)
    statements: list[str] = []

    def wrapper(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        statements.append(sql)
        return execute(sql, params, many, context)

    with connections["default"].execute_wrapper(wrapper):
        for i in range(50):
            notifications.notify("compute.instance.update", {"n": i})
    ids = list(NotificationRecord.objects.order_by("id").values_list("id", flat=True))
    # then the newest 20 are kept, and never more than a fifth more
    assert 20 <= len(ids) <= 24 and ids[-1] - ids[0] == len(ids) - 1
    assert NotificationRecord.objects.order_by("-id").first().payload["payload"]["nova_object.data"] == {"n": 49}
    # and rows are never counted: a store is its INSERT; a store whose id is a multiple of 4 also
    # reads the 20th newest id, and deletes what is older once there are 20
    first = ids[-1] - 49
    crossings = [i for i in range(first, ids[-1] + 1) if i % 4 == 0]
    assert not [s for s in statements if "COUNT(" in s]
    assert len([s for s in statements if s.startswith("DELETE")]) == len([i for i in crossings if i - first >= 19])
    assert len([s for s in statements if s.startswith("SELECT")]) == len(crossings)
    assert len([s for s in statements if s.startswith("INSERT")]) == 50


@override_settings(NOTIFICATIONS_ENABLED=True, NOTIFICATIONS_KEEP=5)
def test_a_scope_storing_many_notifications_prunes_once() -> None:
    with scope.request_scope():
        for i in range(12):
            notifications.notify("compute.instance.update", {"n": i})
    assert [r.payload["payload"]["nova_object.data"]["n"] for r in NotificationRecord.objects.order_by("id")] == [
        7, 8, 9, 10, 11]
