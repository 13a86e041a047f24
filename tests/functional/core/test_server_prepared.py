"""A statement marked ``server_prepared`` (``cloudcore.core.serverprepared``) is prepared by
PostgreSQL once per connection and executed by name after that, with its rows as the statement
sent as text gives them; on SQLite it is sent as it is. Each test runs on the suite's backend
(the fast tier runs on both)."""
from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from django.db import DatabaseError, connection, transaction
from django.test.utils import CaptureQueriesContext

from cloudcore.core.serverprepared import ServerPrepared, server_prepared
from servers.models import QuotaLimit

pytestmark = pytest.mark.django_db

TABLE = QuotaLimit._meta.db_table
#: a boolean in a select list and a parameter compared to a column, as the token's stamps query has
SQL = f"SELECT resource, hard_limit, %s AS flag FROM {TABLE} WHERE project_id = %s ORDER BY resource"  # noqa: S608


def _rows(sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [tuple(row) for row in cursor.fetchall()]


def _prepared_here() -> list[str]:
    """The statements prepared on this test's connection (PostgreSQL), as the server lists them."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements ORDER BY prepare_time")
        return [row[0] for row in cursor.fetchall()]


@pytest.fixture
def limits() -> None:
    QuotaLimit.objects.create(project_id="p1", resource="instances", hard_limit=7)
    QuotaLimit.objects.create(project_id="p1", resource="cores", hard_limit=3)
    QuotaLimit.objects.create(project_id="p2", resource="ram", hard_limit=512)


def test_a_marked_statement_gives_the_rows_of_the_text_and_is_prepared_once(limits: None) -> None:
    before = _prepared_here() if connection.vendor == "postgresql" else []
    # when the same marked statement is sent with several arguments
    marked = server_prepared(SQL)
    assert isinstance(marked, ServerPrepared) and marked == SQL
    got = {(flag, project): _rows(marked, [flag, project]) for flag in (True, False) for project in ("p1", "p2")}
    # then each gives the rows the statement sent as text gives, the boolean a boolean
    assert got == {key: _rows(SQL, list(key)) for key in got}
    assert got[True, "p1"] == [("cores", 3, True), ("instances", 7, True)]
    assert got[False, "p2"] == [("ram", 512, False)]
    if connection.vendor == "postgresql":
        # and the server prepared it once on this connection, its parameters typed by their values
        prepared = [s for s in _prepared_here() if s not in before]
        assert len(prepared) == 1, prepared
        assert prepared[0].startswith("PREPARE cloudcore_") and "(boolean, unknown)" in prepared[0]
        assert "project_id = $2" in prepared[0]


def test_another_type_at_a_parameter_is_prepared_apart(limits: None) -> None:
    before = _prepared_here() if connection.vendor == "postgresql" else []
    # given a statement prepared with an integer at a place (compared to a bigint column)
    sql = server_prepared(f"SELECT resource FROM {TABLE} WHERE hard_limit = %s")  # noqa: S608
    assert _rows(sql, [7]) == [("instances",)]
    # when it is sent with a NULL there
    assert _rows(sql, [None]) == []
    # then both ran; on PostgreSQL as two statements (bigint, then a type left to the server)
    if connection.vendor == "postgresql":
        assert len([s for s in _prepared_here() if "hard_limit = $1" in s and s not in before]) == 2


def test_a_failed_execution_leaves_the_statement_usable(limits: None) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("SQLite divides by zero without an error")
    # given a marked statement that fails for some arguments (a division by zero) in a transaction
    sql = server_prepared(f"SELECT hard_limit / %s FROM {TABLE} WHERE project_id = %s")  # noqa: S608
    with pytest.raises(DatabaseError), transaction.atomic():
        _rows(sql, [0, "p2"])
    # when it is sent again, with the transaction rolled back
    # then it runs (prepared again under a new name, or executed if it was kept)
    assert _rows(sql, [2, "p2"]) == [(256,)]
    assert _rows(sql, [4, "p2"]) == [(128,)]


@pytest.mark.django_db(transaction=True)
def test_each_connection_prepares_it_for_itself() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("SQLite prepares nothing on a server")
    sql = server_prepared(f"SELECT count(*) FROM {TABLE} WHERE project_id = %s")  # noqa: S608
    other = connection.copy()
    try:
        # given the statement prepared on one connection
        with other.cursor() as cursor:
            cursor.execute(sql, ["p1"])
            assert cursor.fetchone() == (0,)
        # when that connection is replaced by a new one (as after the server closed it)
        other.close()
        other.connect()
        with other.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_prepared_statements")
            assert cursor.fetchone() == (0,)
            # then the statement is prepared again there, and runs
            cursor.execute(sql, ["p1"])
            assert cursor.fetchone() == (0,)
            cursor.execute(sql, ["p2"])
            assert cursor.fetchone() == (0,)
            cursor.execute("SELECT count(*) FROM pg_prepared_statements")
            assert cursor.fetchone() == (1,)
    finally:
        other.close()


def test_the_queries_log_shows_the_statement_not_its_execute(limits: None) -> None:
    with CaptureQueriesContext(connection) as captured:
        _rows(server_prepared(SQL), [True, "p1"])
    (logged,) = [q["sql"] for q in captured.captured_queries]
    assert logged.startswith("SELECT resource, hard_limit") and "'p1'" in logged, logged


def test_switched_off_it_is_sent_as_text(limits: None, monkeypatch: pytest.MonkeyPatch) -> None:
    # the database's own switch (cells.dburl: CLOUDCORE_DB_SERVER_PREPARE=0 gives it false)
    monkeypatch.setitem(connection.settings_dict, "SERVER_PREPARE", False)
    before = _prepared_here() if connection.vendor == "postgresql" else []
    assert _rows(server_prepared(SQL), [True, "p2"]) == [("ram", 512, True)]
    if connection.vendor == "postgresql":
        assert _prepared_here() == before


def test_dates_and_lists_of_values(limits: None) -> None:
    # a datetime is declared a timestamp with a time zone; a tuple (expanded by psycopg2) is sent as text
    moment = datetime(2026, 1, 1, tzinfo=UTC)
    sql = server_prepared(f"SELECT resource FROM {TABLE} WHERE created_at > %s ORDER BY resource")  # noqa: S608
    assert _rows(sql, [moment]) == [("cores",), ("instances",), ("ram",)]
    if connection.vendor == "postgresql":
        listed = server_prepared(f"SELECT resource FROM {TABLE} WHERE project_id IN %s")  # noqa: S608
        assert _rows(listed, [("p2",)]) == [("ram",)]
        assert any("created_at > $1" in s and "(timestamptz)" in s for s in _prepared_here())
        assert not any("project_id IN" in s for s in _prepared_here())
