"""``scope.written_together``: the transaction of a request's plain INSERTs. On PostgreSQL, outside a
transaction, they are one query (one round trip, which the server runs as one transaction) where
BEGIN, each INSERT and COMMIT were one each; elsewhere it is ``transaction.atomic``. Either way the
rows are stored together or not at all, a statement of another kind made in the block runs after
them in their transaction, and inside a caller's transaction the block is a savepoint.

The statements are captured as Django logs them (``CaptureQueriesContext``: each statement, and
the BEGIN and COMMIT of a transaction), on a database with no transaction of the test around it."""
from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest
from django.db import IntegrityError, connections, transaction
from django.test.utils import CaptureQueriesContext

from cloudcore.core import scope
from cloudcore.core.models import NotificationRecord
from networks.models import InstanceSecurityGroups
from scheduling.models import SchedulingTraceBody

pytestmark = pytest.mark.django_db(transaction=True)


def _groups(*uuids: str) -> list[InstanceSecurityGroups]:
    return [InstanceSecurityGroups(instance_uuid=uuid, security_group_ids=["sg-1"]) for uuid in uuids]


def _bodies(*digests: str) -> list[SchedulingTraceBody]:
    return [SchedulingTraceBody(digest=digest, body='{"100%": "it\'s"}') for digest in digests]


@contextlib.contextmanager
def _statements() -> Iterator[list[str]]:
    """The statements on the API database while active (BEGIN and COMMIT included)."""
    found: list[str] = []
    with CaptureQueriesContext(connections["default"]) as captured:
        yield found
    found.extend(query["sql"] for query in captured.captured_queries)


def _postgresql() -> bool:
    return connections["default"].vendor == "postgresql"


def test_the_rows_of_a_block_are_stored_together() -> None:
    # when rows of two models are written in a block
    with _statements() as statements, scope.written_together():
        scope.insert_plain_now(_groups("a", "b"))
        scope.insert_plain_now(_bodies("d1"))
    # then they are stored as the ORM would have stored them
    assert sorted(InstanceSecurityGroups.objects.values_list("instance_uuid", "security_group_ids")) == [
        ("a", ["sg-1"]), ("b", ["sg-1"])]
    assert SchedulingTraceBody.objects.get().body == '{"100%": "it\'s"}'
    if _postgresql():
        # in one query with no BEGIN or COMMIT of its own: one round trip
        assert len(statements) == 1, statements
        assert statements[0].startswith('INSERT INTO "networks_instancesecuritygroups"')
        assert '; INSERT INTO "scheduling_schedulingtracebody"' in statements[0]
    else:
        # SQLite: the transaction as before, one INSERT per model
        assert [s.split(" (")[0] for s in statements] == [
            "BEGIN IMMEDIATE", 'INSERT INTO "networks_instancesecuritygroups"',
            'INSERT INTO "scheduling_schedulingtracebody"', "COMMIT"]


def test_a_failing_insert_stores_none_of_the_rows_and_leaves_the_connection_usable() -> None:
    # given a row whose key a block will write again
    scope.insert_plain_now(_bodies("taken"))
    # when the block's second INSERT fails
    with pytest.raises(IntegrityError), scope.written_together():
        scope.insert_plain_now(_groups("a"))
        scope.insert_plain_now(_bodies("taken"))
    # then the first one's rows are not stored either, and the connection is usable outside a transaction
    assert not InstanceSecurityGroups.objects.exists()
    assert not connections["default"].in_atomic_block
    scope.insert_plain_now(_groups("b"))
    assert list(InstanceSecurityGroups.objects.values_list("instance_uuid", flat=True)) == ["b"]


def test_an_error_in_the_block_sends_nothing() -> None:
    with _statements() as statements, pytest.raises(RuntimeError), scope.written_together():
        scope.insert_plain_now(_groups("a"))
        raise RuntimeError("the request failed")
    assert not InstanceSecurityGroups.objects.exists()
    # on PostgreSQL nothing reached the server; SQLite rolled its transaction back
    assert statements == [] if _postgresql() else [s.split(" (")[0] for s in statements] == [
        "BEGIN IMMEDIATE", 'INSERT INTO "networks_instancesecuritygroups"', "ROLLBACK"]


def test_another_statement_in_the_block_runs_after_the_rows_in_their_transaction() -> None:
    # when a block reads (a statement of another kind) after its first rows, then writes more
    with _statements() as statements, scope.written_together():
        scope.insert_plain_now(_groups("a"))
        seen = list(InstanceSecurityGroups.objects.values_list("instance_uuid", flat=True))
        scope.insert_plain_now(_groups("b"))
        assert connections["default"].in_atomic_block
    # then the read saw the rows queued before it, and the block was one transaction
    assert seen == ["a"]
    assert sorted(InstanceSecurityGroups.objects.values_list("instance_uuid", flat=True)) == ["a", "b"]
    assert [s.split(" ")[0] for s in statements] == ["BEGIN", "INSERT", "SELECT", "INSERT", "COMMIT"]


def test_another_statement_then_an_error_rolls_every_row_back() -> None:
    with pytest.raises(RuntimeError), scope.written_together():
        scope.insert_plain_now(_groups("a"))
        assert InstanceSecurityGroups.objects.count() == 1
        scope.insert_plain_now(_groups("b"))
        raise RuntimeError("the request failed")
    assert not InstanceSecurityGroups.objects.exists()
    assert not connections["default"].in_atomic_block


def test_inside_a_transaction_the_block_is_a_savepoint() -> None:
    # given a caller's transaction
    with transaction.atomic():
        scope.insert_plain_now(_groups("outer"))
        # when a block in it fails
        with pytest.raises(IntegrityError), scope.written_together():
            scope.insert_plain_now(_groups("a"))
            scope.insert_plain_now(_groups("outer"))
        # then its rows are rolled back to the savepoint, the caller's kept
        assert list(InstanceSecurityGroups.objects.values_list("instance_uuid", flat=True)) == ["outer"]
        # and a block that succeeds is part of the caller's transaction
        with scope.written_together():
            scope.insert_plain_now(_groups("c"))
    assert sorted(InstanceSecurityGroups.objects.values_list("instance_uuid", flat=True)) == ["c", "outer"]


def test_on_commit_after_the_block_runs_once_the_rows_are_committed() -> None:
    seen: list[list[str]] = []
    with scope.written_together():
        scope.insert_plain_now(_groups("a"))
    transaction.on_commit(lambda: seen.append(list(InstanceSecurityGroups.objects.values_list("instance_uuid",
                                                                                              flat=True))))
    assert seen == [["a"]]


def _notes(*kinds: str) -> list[NotificationRecord]:
    return [NotificationRecord(event_type=kind, priority="INFO", publisher_id="p", payload={"k": kind})
            for kind in kinds]


def test_rows_that_give_their_keys_back_get_them_and_the_query_stays_one() -> None:
    # when rows are written in a block, the last ones giving their keys back (RETURNING)
    notes = _notes("n1", "n2")
    with _statements() as statements, scope.written_together():
        scope.insert_plain_now(_groups("a"))
        scope.insert_plain("default", NotificationRecord, notes, returning=True)
        # (queued on PostgreSQL: no key yet)
    # then each row has its own stored id, saved as bulk_create leaves it
    stored = dict(NotificationRecord.objects.values_list("event_type", "id"))
    assert [(n.pk, n._state.adding, n._state.db) for n in notes] == [
        (stored["n1"], False, "default"), (stored["n2"], False, "default")]
    if _postgresql():
        # and the keys are the answer of the one query that stored them
        assert len(statements) == 1, statements
        assert statements[0].endswith('RETURNING "id"'), statements
    # when rows are queued after rows that give keys back, the block's transaction is opened for them
    more = _notes("n3")
    with _statements() as statements, scope.written_together():
        scope.insert_plain("default", NotificationRecord, more, returning=True)
        scope.insert_plain_now(_groups("b"))
    assert more[0].pk == NotificationRecord.objects.get(event_type="n3").pk
    assert InstanceSecurityGroups.objects.filter(instance_uuid="b").exists()
    if _postgresql():
        assert [s.split(" ")[0] for s in statements] == ["BEGIN", "INSERT", "INSERT", "COMMIT"], statements
