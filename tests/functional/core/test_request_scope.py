"""The request scope: a read memoised once per outermost request (nested requests join it, a
write forgets it), and the notifications of a request stored in one INSERT when it ends, the
same rows in the same order as one at a time."""
from __future__ import annotations

from typing import Any

import pytest
from django.test import override_settings

from cloudcore.core import notifications, scope
from cloudcore.core.models import NotificationRecord

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


def test_deferred_work_runs_once_at_the_outermost_exit_even_on_error() -> None:
    done: list[str] = []
    assert not scope.at_exit("w", lambda: done.append("outside"))
    with pytest.raises(RuntimeError), scope.request_scope():
        with scope.request_scope():
            assert scope.at_exit("w", lambda: done.append("first"))
        assert scope.at_exit("w", lambda: done.append("last"))  # the last registration wins
        assert done == []
        raise RuntimeError("the request failed")
    assert done == ["last"]


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


@override_settings(NOTIFICATIONS_ENABLED=True, NOTIFICATIONS_KEEP=0)
def test_one_insert_when_the_request_ends(django_assert_max_num_queries: Any) -> None:
    with django_assert_max_num_queries(1):  # one INSERT, with no transaction of its own
        with scope.request_scope():
            for i in range(5):
                notifications.notify("compute.instance.update", {"n": i})
    assert NotificationRecord.objects.count() == 5


@override_settings(NOTIFICATIONS_ENABLED=True, NOTIFICATIONS_KEEP=0)
def test_outside_a_request_a_notification_is_stored_at_once() -> None:
    notifications.notify("compute.instance.update", {"n": 1})
    assert NotificationRecord.objects.count() == 1
