"""What the scheduler writes besides its claims (issue 22: the trace must cost a few percent): the
start and end notifications' records and the trace's rows (its body and a record per server),
written together when the scheduling
call ends (its request scope), one INSERT per model in one transaction; the same trace asked
again stores no second body; the trace readable as
soon as the call has returned, in a worker (no outer scope) and inside an HTTP request; one write
failing loses neither the other rows nor the scheduler's answer."""
from __future__ import annotations

import pickle
import re
from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.db import DatabaseError, connections, transaction
from django.test import override_settings
from django.utils import timezone

from cloudcore.core import scope
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import NoValidHost
from cloudcore.core.models import NotificationRecord
from scheduling import scheduler
from scheduling.explain import explain_request
from scheduling.models import SchedulingTraceBody, SchedulingTraceRecord
from scheduling.placement import services as placement
from scheduling.scheduler import select_destinations
from scheduling.services import traces
from scheduling.services.explanations import SchedulingTraceNotFound, server_explanation
from scheduling.services.traces import trace_bodies_purge, trace_records_delete
from scheduling.trace import failure_details, failure_summary
from servers.services.archive import archive_deleted_rows
from tests.conftest import ALL_DATABASES
from tests.functional.scheduling.test_scheduler import spec
from tests.sqllog import api_db_transactions, inserted_tables

pytestmark = [pytest.mark.django_db(databases=ALL_DATABASES, transaction=True),
              pytest.mark.usefixtures("notifications_kept")]

CTX = RequestContext(user_id="u1", project_id="p1", request_id="req-rows-1")
NOTIFICATIONS, TRACES = "core_notificationrecord", "scheduling_schedulingtracerecord"
BODIES = "scheduling_schedulingtracebody"


@pytest.fixture
def notifications_kept() -> Any:
    with override_settings(NOTIFICATIONS_ENABLED=True, NOTIFICATIONS_KEEP=0):
        yield


def too_big() -> dict[str, Any]:
    return spec(flavor={"vcpus": 1, "memory_mb": 10 ** 6, "root_gb": 1, "ephemeral_gb": 0, "swap": 0,
                        "extra_specs": {}})


def rows_transaction(transactions: list[list[str]]) -> list[str]:
    """The one transaction that wrote notification or trace rows (asserting there is one), its
    statements (on PostgreSQL one query of their INSERTs, ``scope.written_together``: split)."""
    split = [[part for sql in t for part in re.split(r"; (?=INSERT INTO )", sql)] for t in transactions]
    (written,) = [t for t in split if {NOTIFICATIONS, TRACES} & set(inserted_tables(t))]
    return written


def events() -> list[str]:
    return list(NotificationRecord.objects.order_by("id").values_list("event_type", flat=True))


def test_a_placed_request_writes_its_rows_in_one_transaction(compute_host):
    compute_host("c1", cell="cell1")
    # when a worker schedules two servers (no request scope around the call)
    with api_db_transactions() as transactions:
        selections = select_destinations(CTX, {**spec(), "num_instances": 2}, ["i1", "i2"])
    assert scope.current() is None and len(selections) == 2
    # then the start and end notifications, the trace's body and both its records are one
    # transaction: its only statements an INSERT per model
    written = rows_transaction(transactions)
    assert inserted_tables(written) == [BODIES, TRACES, NOTIFICATIONS] and len(written) == 3
    # with the same rows, order and timestamps as one at a time
    assert events() == ["scheduler.select_destinations.start", "scheduler.select_destinations.end"]
    start, end = NotificationRecord.objects.order_by("id")
    assert start.timestamp <= end.timestamp
    traces = list(SchedulingTraceRecord.objects.order_by("id"))
    assert [t.instance_uuid for t in traces] == ["i1", "i2"] and {t.result for t in traces} == {"selected"}
    assert start.timestamp <= traces[0].created_at <= end.timestamp


def test_no_valid_host_in_a_worker_is_explained_as_soon_as_the_call_returns(compute_host):
    compute_host("c1", cell="cell1", memory_mb=4096)
    with api_db_transactions() as transactions, pytest.raises(NoValidHost):
        select_destinations(CTX, too_big(), ["i1"])
    # then the trace is there for the explanation API and ``manage.py scheduler explain``
    explanation = server_explanation(instance_uuid="i1")
    assert explanation["request_id"] == "req-rows-1" and explanation["result"] == "no_valid_host"
    assert explanation["trace"]["placement"]["shortfall"]["resources"]["MEMORY_MB"]["most_free"] == 4096
    # written with the start notification in one transaction (no end notification on this path)
    assert inserted_tables(rows_transaction(transactions)) == [BODIES, TRACES, NOTIFICATIONS]
    assert events() == ["scheduler.select_destinations.start"]


def test_inside_an_http_request_the_rows_wait_for_its_end_but_the_trace_is_readable(compute_host):
    compute_host("c1", cell="cell1", memory_mb=4096)
    with api_db_transactions() as transactions:
        with scope.request_scope():  # as ``RequestScopeMiddleware`` opens it
            notified_before = len(transactions)
            with pytest.raises(NoValidHost):
                select_destinations(CTX, too_big(), ["i1"])
            # the scheduler joined the request's scope: nothing of its rows written yet
            assert not SchedulingTraceRecord.objects.exists() and not NotificationRecord.objects.exists()
            # and a reader in the same request gets the trace (its rows written first)
            assert server_explanation(instance_uuid="i1")["result"] == "no_valid_host"
            assert events() == []
        assert len([t for t in transactions[notified_before:]
                    if TRACES in inserted_tables([p for sql in t for p in re.split(r"; (?=INSERT INTO )", sql)])]) == 1
    # then the notification at the request's end, the trace not written twice
    assert events() == ["scheduler.select_destinations.start"]
    assert SchedulingTraceRecord.objects.count() == 1


def test_a_failing_trace_write_loses_neither_the_notifications_nor_the_answer(compute_host, monkeypatch, caplog):
    compute_host("c1", cell="cell1")

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise DatabaseError("disk I/O error")

    # given a trace record that cannot be written
    plain = scope.insert_plain

    def broken_records(database: str, model: Any, rows: list[Any], **kwargs: Any) -> None:
        if model is SchedulingTraceRecord:
            broken()
        plain(database, model, rows, **kwargs)

    monkeypatch.setattr(scope, "insert_plain", broken_records)
    # when a server is placed, then the answer is the scheduler's
    (selection,) = select_destinations(CTX, spec(), ["i1"])
    assert selection[0].service_host == "c1"
    # and the notifications are written, once each; the failure is logged
    assert events() == ["scheduler.select_destinations.start", "scheduler.select_destinations.end"]
    assert not SchedulingTraceRecord.objects.exists()
    assert "could not write 1 SchedulingTraceRecord rows" in caplog.text
    # and a NoValidHost is still the answer when the write fails
    with pytest.raises(NoValidHost):
        select_destinations(CTX, too_big(), ["i2"])
    assert events()[-1] == "scheduler.select_destinations.start" and len(events()) == 3


def test_failing_notifications_lose_neither_the_trace_nor_the_answer(compute_host, monkeypatch):
    compute_host("c1", cell="cell1", memory_mb=4096)

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise DatabaseError("disk I/O error")

    plain = scope.insert_plain

    def broken_for_notifications(database: str, model: Any, rows: Any, **kwargs: Any) -> Any:
        return (broken if model is NotificationRecord else plain)(database, model, rows, **kwargs)

    monkeypatch.setattr(scope, "insert_plain", broken_for_notifications)  # (the notifications' INSERT)
    with pytest.raises(NoValidHost):
        select_destinations(CTX, too_big(), ["i1"])
    assert not NotificationRecord.objects.exists()
    assert server_explanation(instance_uuid="i1")["result"] == "no_valid_host"


def _explained(uuid: str) -> tuple[dict[str, Any], str]:
    out = StringIO()
    call_command("scheduler", "explain", uuid, stdout=out)
    return server_explanation(instance_uuid=uuid), out.getvalue()


def test_the_same_failure_asked_again_stores_one_body_and_reads_whole(compute_host):
    compute_host("c1", cell="cell1", memory_mb=4096)
    # given a request that does not fit, explained once
    with pytest.raises(NoValidHost) as first:
        select_destinations(CTX, too_big(), ["i1"])
    once, once_text = _explained("i1")
    # when the same question is asked again for other servers (the same answer)
    with api_db_transactions() as transactions, pytest.raises(NoValidHost) as again:
        select_destinations(RequestContext(user_id="u1", project_id="p1", request_id="req-rows-2"),
                            too_big(), ["i2", "i3"])
    # then the body is not written again (this process stored it): one body, a record per server
    # naming it
    assert inserted_tables(rows_transaction(transactions)) == [TRACES, NOTIFICATIONS]
    assert SchedulingTraceBody.objects.count() == 1
    assert {r.body_digest for r in SchedulingTraceRecord.objects.all()} == {SchedulingTraceBody.objects.get().digest}
    # and each server's explanation (API and command) is the whole trace, as the first one's
    for uuid, request_id in (("i2", "req-rows-2"), ("i3", "req-rows-2"), ("i1", "req-rows-1")):
        explanation, text = _explained(uuid)
        assert explanation["request_id"] == request_id
        assert {k: v for k, v in explanation.items() if k not in ("server_id", "request_id", "created_at")} \
            == {k: v for k, v in once.items() if k not in ("server_id", "request_id", "created_at")}
        assert explanation["trace"] == first.value.trace == again.value.trace  # type: ignore[attr-defined]
        head, *rest = text.splitlines()
        assert uuid in head and request_id in head and rest == once_text.splitlines()[1:]
    assert "nearest c1: MEMORY_MB short by" in once_text


def test_the_json_reused_for_an_equal_failure_is_the_trace_as_it_was_saved(compute_host):
    compute_host("c1", cell="cell1", memory_mb=4096)
    with pytest.raises(NoValidHost) as first:
        select_destinations(CTX, too_big(), ["i1"])
    saved = server_explanation(instance_uuid="i1")["trace"]
    # given the first failure's trace changed by a reader after it was saved
    first.value.trace["placement"]["shortfall"]["providers"] = 99  # type: ignore[attr-defined]
    first.value.trace["placement"]["shortfall"]["nearest"].clear()  # type: ignore[attr-defined]
    # when the same failure is saved again, then its body is the one saved, unchanged
    with pytest.raises(NoValidHost):
        select_destinations(CTX, too_big(), ["i2"])
    assert server_explanation(instance_uuid="i2")["trace"] == saved
    assert saved["placement"]["shortfall"]["providers"] == 1 and saved["placement"]["shortfall"]["nearest"]
    assert SchedulingTraceBody.objects.count() == 1


def test_a_failure_asked_again_is_explained_alike_whatever_readers_did_to_the_traces_before(compute_host):
    compute_host("c1", cell="cell1", memory_mb=4096)
    # given the same failure met four times (the shortfall named anew, then kept named, then
    # copied), each trace changed by its reader after it was saved
    for uuid in ("i1", "i2", "i3", "i4"):
        with pytest.raises(NoValidHost) as failed:
            select_destinations(CTX, too_big(), [uuid])
        shortfall = failed.value.trace["placement"]["shortfall"]  # type: ignore[attr-defined]
        shortfall["nearest"][0]["host"], shortfall["nearest"][0]["short"]["MEMORY_MB"] = "changed", -1
        shortfall["resources"].clear()
    # then every one was explained as the first, whose body is the only one
    first = server_explanation(instance_uuid="i1")["trace"]
    assert first["placement"]["shortfall"]["nearest"][0]["host"] == "c1"
    assert first["placement"]["shortfall"]["resources"]["MEMORY_MB"]["short_on"] == 1
    assert [server_explanation(instance_uuid=uuid)["trace"] for uuid in ("i2", "i3", "i4")] == [first] * 3
    assert SchedulingTraceBody.objects.count() == 1


@pytest.fixture
def copies(monkeypatch) -> list[dict[str, Any]]:
    """The shortfalls the scheduler copies (``shortfall_copy``), in order."""
    made: list[dict[str, Any]] = []
    counted = scheduler.shortfall_copy

    def counting(shortfall: dict[str, Any]) -> dict[str, Any]:
        made.append(shortfall)
        return counted(shortfall)

    monkeypatch.setattr(scheduler, "shortfall_copy", counting)
    return made


def test_the_same_failure_again_shares_the_kept_shortfall_and_a_reader_gets_its_own_copy(compute_host, copies):
    compute_host("c1", cell="cell1", memory_mb=4096)
    # given the same failure met three times (the shortfall named anew, kept named, then kept)
    failures = []
    for uuid in ("i1", "i2", "i3"):
        with pytest.raises(NoValidHost) as failed:
            select_destinations(CTX, too_big(), [uuid])
        failures.append(failed.value)
    # then the scheduler copied the shortfall once (to name its hosts), twice before: the second
    # and third failures share the kept named answer, uncopied
    assert len(copies) == 2
    kept = failures[1].shared_trace["placement"]["shortfall"]
    assert failures[2].shared_trace["placement"]["shortfall"] is kept
    # and a reader of ``trace`` gets an equal copy of its own, made once, when first read
    own = failures[2].trace
    assert own == failures[2].shared_trace and own is failures[2].trace
    assert own["placement"]["shortfall"] is not kept and len(copies) == 3
    assert own["placement"]["shortfall"]["nearest"][0] is not kept["nearest"][0]
    assert pickle.loads(pickle.dumps(failures[2])).trace == own  # noqa: S301 - (a Celery result's way)
    # and the conductor's readers (the event's details, the error notification's summary) copy
    # nothing of it: changing the summary changes nothing kept
    assert "nearest c1: MEMORY_MB short by" in failure_details(failures[2])
    summary = failure_summary(failures[2])
    assert len(copies) == 3
    summary["shortfall"]["resources"]["MEMORY_MB"]["short_on"] = -1
    summary["nearest"][0]["short"].clear()
    with pytest.raises(NoValidHost) as again:
        select_destinations(CTX, too_big(), ["i4"])
    assert again.value.shared_trace["placement"]["shortfall"] is kept
    assert kept["resources"]["MEMORY_MB"]["short_on"] == 1 and kept["nearest"][0]["short"]["MEMORY_MB"] > 0
    assert server_explanation(instance_uuid="i4")["trace"] == server_explanation(instance_uuid="i1")["trace"]


def test_a_claim_elsewhere_that_leaves_the_shortfall_as_it_was_shares_the_kept_one(compute_host, copies):
    node = compute_host("c1", cell="cell1", memory_mb=4096)
    other = compute_host("c2", cell="cell2", memory_mb=2048)
    # given the same failure met twice: its shortfall kept, named by host
    for uuid in ("i1", "i2"):
        with pytest.raises(NoValidHost) as failed:
            select_destinations(CTX, too_big(), [uuid])
    kept = failed.value.shared_trace["placement"]["shortfall"]
    named = len(copies)
    # when a claim elsewhere in the cloud (a VCPU on c2) changes placement but not why the
    # request fits nowhere, then the next failure shares the kept shortfall: nothing copied or
    # named again, no second body
    placement.allocations_put(consumer_uuid="elsewhere", project_id="p", user_id="u",
                              allocations={other.uuid: {"VCPU": 1}})
    with pytest.raises(NoValidHost) as again:
        select_destinations(CTX, too_big(), ["i3"])
    assert again.value.shared_trace["placement"]["shortfall"] is kept and len(copies) == named
    assert server_explanation(instance_uuid="i3")["trace"] == server_explanation(instance_uuid="i1")["trace"]
    assert SchedulingTraceBody.objects.count() == 1
    # and a claim that changes it (RAM on c1, the nearest) gives a new shortfall, which says so
    placement.allocations_put(consumer_uuid="nearer", project_id="p", user_id="u",
                              allocations={node.uuid: {"MEMORY_MB": 1024}})
    with pytest.raises(NoValidHost) as changed:
        select_destinations(CTX, too_big(), ["i4"])
    shortfall = changed.value.shared_trace["placement"]["shortfall"]
    assert shortfall is not kept and len(copies) == named + 1
    assert shortfall["resources"]["MEMORY_MB"]["most_free"] == kept["resources"]["MEMORY_MB"]["most_free"] - 1024
    assert shortfall["nearest"][0]["host"] == "c1"
    assert shortfall["nearest"][0]["short"]["MEMORY_MB"] == kept["nearest"][0]["short"]["MEMORY_MB"] + 1024
    assert SchedulingTraceBody.objects.count() == 2


def test_a_dry_runs_trace_is_its_own(compute_host):
    compute_host("c1", cell="cell1", memory_mb=4096)
    with pytest.raises(NoValidHost):
        select_destinations(CTX, too_big(), ["i1"])
    # given a dry run of the same failure (the kept named shortfall), its trace changed by its reader
    answer = explain_request(spec=too_big())
    answer["trace"]["placement"]["shortfall"]["resources"].clear()
    answer["trace"]["placement"]["shortfall"]["nearest"][0]["host"] = "changed"
    # when the same failure is met again, then its trace is the first one's
    with pytest.raises(NoValidHost):
        select_destinations(CTX, too_big(), ["i2"])
    assert server_explanation(instance_uuid="i2")["trace"] == server_explanation(instance_uuid="i1")["trace"]
    assert explain_request(spec=too_big())["trace"]["placement"]["shortfall"]["nearest"][0]["host"] == "c1"


def test_a_process_that_forgot_the_body_writes_it_again_and_the_insert_skips_it(compute_host):
    compute_host("c1", cell="cell1", memory_mb=4096)
    with pytest.raises(NoValidHost):
        select_destinations(CTX, too_big(), ["i1"])
    # given another process (nothing remembered) that meets the same failure
    traces.forget_stored()
    with api_db_transactions() as transactions, pytest.raises(NoValidHost):
        select_destinations(CTX, too_big(), ["i2"])
    # then it writes the body's INSERT, which finds the body stored: still one body
    assert inserted_tables(rows_transaction(transactions)) == [BODIES, TRACES, NOTIFICATIONS]
    assert SchedulingTraceBody.objects.count() == 1
    # and a body remembered for longer than BODY_REMEMBERED is written again too
    (digest,) = traces._stored
    traces._stored[digest] -= traces.body_remembered()
    with api_db_transactions() as transactions, pytest.raises(NoValidHost):
        select_destinations(CTX, too_big(), ["i3"])
    assert inserted_tables(rows_transaction(transactions)) == [BODIES, TRACES, NOTIFICATIONS]


def test_a_body_is_remembered_only_once_its_transaction_commits(compute_host):
    compute_host("c1", cell="cell1", memory_mb=4096)
    # given a failure whose rows are written inside a transaction that rolls back
    with pytest.raises(RuntimeError), transaction.atomic():
        with pytest.raises(NoValidHost):
            select_destinations(CTX, too_big(), ["i1"])
        raise RuntimeError
    # when the same failure is met again, then its body is written (it was not stored)
    with pytest.raises(NoValidHost):
        select_destinations(CTX, too_big(), ["i2"])
    assert SchedulingTraceBody.objects.count() == 1
    assert server_explanation(instance_uuid="i2")["trace"]["placement"]["shortfall"]["nearest"]


def test_with_notifications_off_a_failure_remembered_is_its_record_alone(compute_host):
    compute_host("c1", cell="cell1", memory_mb=4096)
    with override_settings(NOTIFICATIONS_ENABLED=False):
        with pytest.raises(NoValidHost):
            select_destinations(CTX, too_big(), ["i1"])
        whole = server_explanation(instance_uuid="i1")
        # when the same failure is met again with nothing else to write
        statements: list[tuple[str, bool]] = []
        connection = connections["default"]

        def wrapper(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
            statements.append((sql, connection.in_atomic_block))
            return execute(sql, params, many, context)

        with connection.execute_wrapper(wrapper), pytest.raises(NoValidHost):
            select_destinations(CTX, too_big(), ["i2"])
    # then its record is one INSERT that commits by itself (no transaction block around it)
    assert [(sql.split(" (")[0], atomic) for sql, atomic in statements if sql.startswith("INSERT")] == [
        (f'INSERT INTO "{TRACES}"', False)]
    assert server_explanation(instance_uuid="i2")["trace"] == whole["trace"]


def _made_long_ago(uuid: str) -> None:
    SchedulingTraceRecord.objects.filter(instance_uuid=uuid).update(
        created_at=timezone.now() - traces.orphan_grace() - timedelta(minutes=1))


def test_a_body_named_lately_is_kept_for_the_grace_then_purged(compute_host):
    compute_host("c1", cell="cell1", memory_mb=4096)
    with pytest.raises(NoValidHost):
        select_destinations(CTX, too_big(), ["i1"])
    # when the only record naming the body, made just now, is archived
    assert trace_records_delete(["i1"]) == 1
    # then the body is kept, marked orphaned (this process may name it without writing it)
    body = SchedulingTraceBody.objects.get()
    assert body.orphaned_at is not None
    assert trace_bodies_purge() == 0 and SchedulingTraceBody.objects.count() == 1
    # and a record that names it again (the process remembered it) reads whole
    with pytest.raises(NoValidHost):
        select_destinations(CTX, too_big(), ["i2"])
    assert server_explanation(instance_uuid="i2")["trace"]["placement"]["shortfall"]["nearest"]
    # once the grace has passed the purge keeps a body named again, its mark cleared
    SchedulingTraceBody.objects.update(orphaned_at=timezone.now() - traces.orphan_grace() - timedelta(minutes=1))
    assert trace_bodies_purge() == 0
    assert SchedulingTraceBody.objects.get().orphaned_at is None
    # and deletes one nobody names any more
    assert trace_records_delete(["i2"]) == 1
    SchedulingTraceBody.objects.update(orphaned_at=timezone.now() - traces.orphan_grace() - timedelta(minutes=1))
    assert trace_bodies_purge() == 1 and not SchedulingTraceBody.objects.exists()


def test_archiving_servers_purges_the_bodies_left_past_their_grace(compute_host, cells):
    compute_host("c1", cell="cell1", memory_mb=4096)
    with pytest.raises(NoValidHost):
        select_destinations(CTX, too_big(), ["i1"])
    trace_records_delete(["i1"])
    SchedulingTraceBody.objects.update(orphaned_at=timezone.now() - traces.orphan_grace() - timedelta(minutes=1))
    # when the archive runs with no server to archive, then the body left behind goes
    result = archive_deleted_rows()
    assert result.rows == {"scheduling_trace_bodies": 1} and not SchedulingTraceBody.objects.exists()


def test_deleting_a_record_keeps_the_body_another_record_names(compute_host):
    compute_host("c1", cell="cell1", memory_mb=4096)
    # given the same failure recorded for two servers, and another one for a third
    for uuid in ("i1", "i2"):
        with pytest.raises(NoValidHost):
            select_destinations(CTX, too_big(), [uuid])
    with pytest.raises(NoValidHost):
        select_destinations(CTX, spec(flavor={"vcpus": 1, "memory_mb": 10 ** 7, "root_gb": 1, "ephemeral_gb": 0,
                                              "swap": 0, "extra_specs": {}}), ["i3"])
    assert SchedulingTraceBody.objects.count() == 2
    for uuid in ("i1", "i2", "i3"):  # made before the archive's grace: an orphaned body goes at once
        _made_long_ago(uuid)
    whole = server_explanation(instance_uuid="i2")
    # when the first server's traces are deleted (archived)
    assert trace_records_delete(["i1"]) == 1
    # then the body the second one names is kept: its explanation is whole
    assert SchedulingTraceBody.objects.count() == 2
    assert server_explanation(instance_uuid="i2") == whole
    # and deleting the last record naming a body deletes the body, not the others'
    assert trace_records_delete(["i2"]) == 1
    assert SchedulingTraceBody.objects.count() == 1
    assert server_explanation(instance_uuid="i3")["trace"]["request"]["resources"]["MEMORY_MB"] == 10 ** 7
    with pytest.raises(SchedulingTraceNotFound):
        server_explanation(instance_uuid="i2")


def test_how_long_a_body_is_remembered_and_kept_are_the_settings(compute_host):
    compute_host("c1", cell="cell1", memory_mb=4096)
    # given a process that remembers no body it stored (SCHEDULER_TRACE_BODY_REMEMBERED=0)
    with override_settings(SCHEDULER_TRACE_BODY_REMEMBERED=0):
        with pytest.raises(NoValidHost):
            select_destinations(CTX, too_big(), ["i1"])
        # when the same failure is met again, then its body's INSERT is written again (and skips it)
        with api_db_transactions() as transactions, pytest.raises(NoValidHost):
            select_destinations(CTX, too_big(), ["i2"])
    assert inserted_tables(rows_transaction(transactions)) == [BODIES, TRACES, NOTIFICATIONS]
    assert SchedulingTraceBody.objects.count() == 1
    # given a grace of ten minutes, and the records naming the body made eleven minutes ago
    SchedulingTraceRecord.objects.update(created_at=timezone.now() - timedelta(minutes=11))
    with override_settings(SCHEDULER_TRACE_ORPHAN_GRACE=600):
        # when they are archived, then the body goes at once (a day's grace would have kept it)
        assert trace_records_delete(["i1", "i2"]) == 2
    assert not SchedulingTraceBody.objects.exists()


def test_a_failure_with_the_same_shortfall_but_another_request_is_stored_as_its_own(compute_host):
    compute_host("c1", cell="cell1", memory_mb=4096)
    traces._recent.clear()
    # given the same failure met three times: from the second on, its shortfall is a copy of the
    # kept named answer, and the remembered trace is found by that answer (its shortfall not compared)
    for uuid in ("i1", "i2", "i3"):
        with pytest.raises(NoValidHost):
            select_destinations(CTX, too_big(), [uuid])
    ((_kept, _body, digest, source),) = traces._recent
    assert source is not None and SchedulingTraceBody.objects.count() == 1
    # when a request with the same placement question (so the same shortfall answer) but another
    # request fails (hosts ignored: a filter, not placement, reads them)
    with pytest.raises(NoValidHost) as other:
        select_destinations(CTX, {**too_big(), "ignore_hosts": ["c9"]}, ["i4"])
    # then it is a trace of its own, its body stored, not the remembered one's
    assert other.value.trace["request"]["ignore_hosts"] == ["c9"]  # type: ignore[attr-defined]
    explained = server_explanation(instance_uuid="i4")["trace"]
    assert explained == other.value.trace and explained["request"]["ignore_hosts"] == ["c9"]  # type: ignore[attr-defined]
    assert SchedulingTraceBody.objects.count() == 2
    assert SchedulingTraceRecord.objects.get(instance_uuid="i4").body_digest != digest
    # and the first failure asked again still names the first body, its shortfall whole
    with pytest.raises(NoValidHost):
        select_destinations(CTX, too_big(), ["i5"])
    assert SchedulingTraceRecord.objects.get(instance_uuid="i5").body_digest == digest
    assert server_explanation(instance_uuid="i5")["trace"] == server_explanation(instance_uuid="i1")["trace"]


def test_rows_taken_by_a_transaction_that_fails_are_written_when_the_scope_ends(compute_host):
    compute_host("c1", cell="cell1", memory_mb=4096)
    with scope.request_scope():  # as the conductor's build opens it
        with pytest.raises(NoValidHost):
            select_destinations(CTX, too_big(), ["i1"])
        # when the transaction that took the scheduler's rows first (a burial's) fails
        with pytest.raises(RuntimeError), scope.atomic_with_deferred("default"):
            assert SchedulingTraceRecord.objects.count() == 1  # written in it, first
            raise RuntimeError("the burial failed")
        # then they are rolled back with it, but kept by the scope
        assert not SchedulingTraceRecord.objects.exists() and not NotificationRecord.objects.exists()
    # and written when it ends, once
    assert list(SchedulingTraceRecord.objects.values_list("instance_uuid", flat=True)) == ["i1"]
    assert events() == ["scheduler.select_destinations.start"]
