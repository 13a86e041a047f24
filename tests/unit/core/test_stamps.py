"""``cloudcore.core.stamps``: a remembered read is given again while its stamp stands, read again
once the stamp moves, never matched by a stamp value a rolled-back write had (values drawn, not
counted), and the stamps are read once per request."""
from __future__ import annotations

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
