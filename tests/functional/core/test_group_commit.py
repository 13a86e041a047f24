"""The rows the threads of one process store at the same time (the conductor's threads keeping the
notifications the compute hosts hand over, one task each) are committed together: the first
thread writes what the others queued meanwhile in one transaction, and each thread returns only
once its own rows are committed (a task that answered has its rows in the database, whoever reads
them); when the group's transaction fails, each thread writes its own rows alone, and only the
thread whose row is bad sees the failure."""
from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from django.db import IntegrityError, connection

from cloudcore.core import notifications, scope
from cloudcore.core.models import NotificationRecord
from scheduling.models import SchedulingTraceRecord

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _notifications_kept(settings: Any) -> None:
    settings.NOTIFICATIONS_ENABLED, settings.NOTIFICATIONS_KEEP = True, 0


def _stored(message_id: str) -> bool:
    return NotificationRecord.objects.filter(payload__message_id=message_id).exists()


class _HeldFirstWrite:
    """``scope._write_batch`` recorded, its first call (the first thread's rows) held until
    ``queued`` other threads have queued theirs behind it."""

    def __init__(self, monkeypatch: Any, queued: int) -> None:
        self.queued, self.batches = queued, []  # type: list[int]
        self.real = scope._write_batch
        monkeypatch.setattr(scope, "_write_batch", self)

    def __call__(self, database: str, batch: list[Any]) -> bool:
        if not self.batches:
            deadline = time.monotonic() + 30
            while len(scope._group.queued.get(database, [])) < self.queued and time.monotonic() < deadline:
                time.sleep(0.01)
        self.batches.append(len(batch))
        return self.real(database, batch)


def _in_threads(*calls: Any) -> list[Any]:
    """Run each call in a thread of its own (the first started first); what each returned or raised,
    and whether its rows were visible to another thread's connection as soon as it returned."""
    results: list[Any] = [None] * len(calls)

    def run(i: int) -> None:
        try:
            results[i] = calls[i]()
        except Exception as exc:
            results[i] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    threads[0].start()
    time.sleep(0.1)  # the first thread is the one writing
    for thread in threads[1:]:
        thread.start()
    for thread in threads:
        thread.join(60)
    return results


def _keep_and_look(event: str) -> bool:
    """The conductor's task: keep a notification a compute host handed over; then, before the task
    answers, whether another thread (its own connection) finds the row."""
    message = notifications.envelope(event, {"n": 1})
    notifications.keep(message)
    seen: list[bool] = []
    reader = threading.Thread(target=lambda: (seen.append(_stored(message["message_id"])), connection.close()))
    reader.start()
    reader.join()
    return seen[0]


def test_rows_stored_by_threads_at_once_are_committed_together_before_each_returns(monkeypatch: Any) -> None:
    # given four threads keeping a notification each, three of them while the first one writes
    held = _HeldFirstWrite(monkeypatch, queued=3)
    results = _in_threads(*[lambda i=i: _keep_and_look(f"compute.instance.event{i}") for i in range(4)])
    # then the first one's row alone, the three others' in one transaction
    assert held.batches == [1, 3]
    # and each thread's row was committed (another connection saw it) when its call returned
    assert results == [True, True, True, True]
    assert NotificationRecord.objects.count() == 4


def test_a_failing_group_keeps_the_others_rows_and_fails_only_its_own_thread(monkeypatch: Any) -> None:
    # given a trace row that cannot be written (no result: NOT NULL) queued with two notifications
    held = _HeldFirstWrite(monkeypatch, queued=3)
    bad = SchedulingTraceRecord(instance_uuid="bad", request_id="r", result=None, body_digest="d")
    results = _in_threads(lambda: _keep_and_look("compute.instance.first"),
                          lambda: _keep_and_look("compute.instance.a"),
                          lambda: scope.insert([bad]),
                          lambda: _keep_and_look("compute.instance.b"))
    # then the group of three failed, and each thread wrote its own again: the notifications are
    # stored (and were when their calls returned), the bad row's thread got the error
    assert held.batches == [1, 3]
    assert results[0] is True and results[1] is True and results[3] is True
    assert isinstance(results[2], IntegrityError)
    assert sorted(NotificationRecord.objects.values_list("event_type", flat=True)) == [
        "compute.instance.a", "compute.instance.b", "compute.instance.first"]
    assert not SchedulingTraceRecord.objects.exists()


def test_an_interrupted_writer_does_not_stop_the_rows_queued_behind_it(monkeypatch: Any) -> None:
    # given a first thread whose write is interrupted (a task's time limit) while two others queue
    queued_behind = threading.Event()

    def interrupted(database: str, batch: list[Any]) -> bool:
        if not queued_behind.is_set():
            deadline = time.monotonic() + 30
            while len(scope._group.queued.get(database, [])) < 2 and time.monotonic() < deadline:
                time.sleep(0.01)
            queued_behind.set()
            raise KeyboardInterrupt
        return real(database, batch)

    real = scope._write_batch
    monkeypatch.setattr(scope, "_write_batch", interrupted)

    def first() -> Any:
        try:
            return _keep_and_look("compute.instance.lost")
        except KeyboardInterrupt:
            return "interrupted"

    results = _in_threads(first, lambda: _keep_and_look("compute.instance.a"),
                          lambda: _keep_and_look("compute.instance.b"))
    # then the interrupted thread's row is not written (its task did not answer: redelivered), the
    # rows queued behind it are, and were when their calls returned
    assert results == ["interrupted", True, True]
    assert sorted(NotificationRecord.objects.values_list("event_type", flat=True)) == [
        "compute.instance.a", "compute.instance.b"]
