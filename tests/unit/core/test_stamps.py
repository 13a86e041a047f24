"""``cloudcore.core.stamps``: a remembered read is given again while its stamp stands, read again
once the stamp moves, never matched by a stamp value a rolled-back write had (values drawn, not
counted), the stamps are read once per request, and a value missed by several threads at once is
read by one of them."""
from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from django.db import connections, transaction
from django.test.utils import CaptureQueriesContext

from cloudcore.core import scope, stamps
from cloudcore.core.models import ChangeStamp

pytestmark = pytest.mark.django_db


def _counted(value: Callable[[], object]) -> tuple[list[object], Callable[[], object]]:
    reads: list[object] = []

    def read() -> object:
        reads.append(value())
        return reads[-1]

    return reads, read


def test_a_value_is_read_again_once_its_stamp_moved() -> None:
    remembered: stamps.Remembered[str] = stamps.Remembered("test.moved")
    source = {"a": "one"}
    reads, read = _counted(lambda: source["a"])
    # given a value read and remembered
    assert remembered.get("a", read) == "one"
    source["a"] = "two"
    # then it is given again while nothing bumped its stamp
    assert remembered.get("a", read) == "one" and len(reads) == 1
    # and read again once a write bumped it
    stamps.bump("test.moved")
    assert remembered.get("a", read) == "two" and len(reads) == 2


def test_a_stamp_without_a_row_gets_one_before_the_read() -> None:
    remembered: stamps.Remembered[str] = stamps.Remembered("test.new")
    assert not ChangeStamp.objects.filter(key="test.new").exists()
    reads, read = _counted(lambda: "value")
    assert remembered.get("x", read) == "value"
    assert ChangeStamp.objects.filter(key="test.new").exists()
    assert remembered.get("x", read) == "value" and len(reads) == 1


def test_a_value_read_inside_a_rolled_back_write_is_never_given_again() -> None:
    remembered: stamps.Remembered[str] = stamps.Remembered("test.rollback")
    stamps.bump("test.rollback")
    source = {"a": "committed"}
    reads, read = _counted(lambda: source["a"])

    class Abandoned(Exception):
        pass

    # given a write that read its own change (remembered under its new stamp) and was rolled back
    with pytest.raises(Abandoned), transaction.atomic():
        stamps.bump("test.rollback")
        source["a"] = "rolled back"
        assert remembered.get("a", read) == "rolled back"
        raise Abandoned
    source["a"] = "written later"
    # when another write bumps the stamp again (a counter would give the value of the rolled-back one)
    stamps.bump("test.rollback")
    # then the value is read again
    assert remembered.get("a", read) == "written later" and len(reads) == 2


def test_nothing_found_is_not_remembered() -> None:
    remembered: stamps.Remembered[str] = stamps.Remembered("test.none")
    reads, read = _counted(lambda: None)
    assert remembered.get("a", read) is None and remembered.get("a", read) is None
    assert len(reads) == 2


def test_a_request_reads_the_stamps_once_and_again_after_its_own_write() -> None:
    first: stamps.Remembered[str] = stamps.Remembered("test.first")
    second: stamps.Remembered[str] = stamps.Remembered("test.second")
    stamps.bump("test.first")
    stamps.bump("test.second")
    with scope.request_scope(), CaptureQueriesContext(connections["default"]) as captured:
        first.get("a", lambda: "1")
        second.get("a", lambda: "2")
        first.get("b", lambda: "3")
        assert sum("core_changestamp" in q["sql"] for q in captured.captured_queries) == 1
        stamps.bump("test.second")  # (an UPDATE of the stamp)
        assert second.get("a", lambda: "4") == "4"
        assert sum(q["sql"].startswith("SELECT") and "core_changestamp" in q["sql"]
                   for q in captured.captured_queries) == 2


def test_the_least_recently_used_value_is_dropped_first() -> None:
    remembered: stamps.Remembered[str] = stamps.Remembered("test.lru", max_entries=2)
    stamps.bump("test.lru")
    remembered.get("a", lambda: "a")
    remembered.get("b", lambda: "b")
    remembered.get("a", lambda: "not read")  # a used again: b is the oldest now
    remembered.get("c", lambda: "c")
    reads, read = _counted(lambda: "b again")
    assert remembered.get("a", read) == "a" and remembered.get("b", read) == "b again" and len(reads) == 1


def _in_thread(call: Callable[[], object]) -> tuple[threading.Thread, list[object]]:
    result: list[object] = []
    thread = threading.Thread(target=lambda: result.append(call()), daemon=True)
    thread.start()
    return thread, result


def test_threads_missing_a_value_together_wait_for_one_read(monkeypatch: pytest.MonkeyPatch) -> None:
    # (the stamps as a request read them: fixed, so that the threads need no database of their own)
    monkeypatch.setattr(stamps, "current", lambda: {"test.together": 7})
    remembered: stamps.Remembered[str] = stamps.Remembered("test.together")
    reading, release = threading.Event(), threading.Event()
    reads: list[str] = []

    def slow_read() -> str:
        reads.append("first")
        reading.set()
        release.wait(10)
        return "read once"

    def other_read() -> str:
        reads.append("other")
        return "read again"

    # given one thread reading the value
    first, first_result = _in_thread(lambda: remembered.get("a", slow_read))
    assert reading.wait(10)
    # when other threads miss it while that read is under way
    others = [_in_thread(lambda: remembered.get("a", other_read)) for _ in range(3)]
    # then they wait for it rather than read it themselves
    for thread, _ in others:
        thread.join(0.3)
        assert thread.is_alive()
    release.set()
    for thread, _ in [(first, first_result), *others]:
        thread.join(10)
    # and take its value: one read in all
    assert first_result == ["read once"] and all(result == ["read once"] for _, result in others)
    assert reads == ["first"]


@pytest.mark.parametrize("outcome", ["nothing found", "failed"])
def test_a_waiter_reads_for_itself_when_the_read_it_waited_for_gave_nothing(
        monkeypatch: pytest.MonkeyPatch, outcome: str) -> None:
    monkeypatch.setattr(stamps, "current", lambda: {"test.gave_nothing": 7})
    remembered: stamps.Remembered[str] = stamps.Remembered("test.gave_nothing")
    reading, release = threading.Event(), threading.Event()

    def first_read() -> str | None:
        reading.set()
        release.wait(10)
        if outcome == "failed":
            raise RuntimeError("the database went away")
        return None

    def first_call() -> object:
        try:
            return remembered.get("a", first_read)
        except RuntimeError as exc:
            return exc

    first, first_result = _in_thread(first_call)
    assert reading.wait(10)
    waiter, waiter_result = _in_thread(lambda: remembered.get("a", lambda: "its own read"))
    waiter.join(0.3)
    assert waiter.is_alive()
    release.set()
    first.join(10)
    waiter.join(10)
    assert waiter_result == ["its own read"]
    assert first_result == [None] if outcome == "nothing found" else isinstance(first_result[0], RuntimeError)


def test_a_read_under_an_older_stamp_is_not_waited_for(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = {"test.older": 1}
    monkeypatch.setattr(stamps, "current", lambda: dict(seen))
    remembered: stamps.Remembered[str] = stamps.Remembered("test.older")
    reading, release = threading.Event(), threading.Event()

    def old_read() -> str:
        reading.set()
        release.wait(10)
        return "before the write"

    # given a read under way under stamp 1
    first, first_result = _in_thread(lambda: remembered.get("a", old_read))
    assert reading.wait(10)
    # when a request that read the stamp after a write (stamp 2) misses the value
    seen["test.older"] = 2
    later, later_result = _in_thread(lambda: remembered.get("a", lambda: "after the write"))
    later.join(10)
    # then it reads it itself, without waiting for the older read
    assert later_result == ["after the write"]
    release.set()
    first.join(10)
    assert first_result == ["before the write"]
