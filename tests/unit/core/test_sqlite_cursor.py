"""The cursor of cloudcore's SQLite backend (``cloudcore.core.sqlite3``): a statement with
positional parameters becomes SQLite's as Django's cursor makes it, by a replace where the
statement has no ``%%`` (and by Django's regular expression where it has)."""
from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from django.db import connections
from django.db.backends.sqlite3.base import SQLiteCursorWrapper

from cells.dburl import database_config, sqlite_url
from cloudcore.core.sqlite3.base import CursorWrapper, DatabaseWrapper

STATEMENTS = [
    'SELECT "a"."id" FROM "a" WHERE "a"."name" = %s AND "a"."x" IN (%s, %s)',
    "%s",
    "SELECT 1",
    "SELECT %s%s",
    "SELECT '%%s' WHERE x = %s",  # a literal %s: left alone
    "SELECT x FROM t WHERE x LIKE '%%a%%' AND y = %s",
    "SELECT '%%%s'",  # a literal % then a parameter
    "SELECT '%%%%s', %s",
    "SELECT '100%' WHERE 1",  # a % no parameter follows
]


def _cursors() -> tuple[Any, Any]:
    """Cloudcore's cursor and Django's, on a bare sqlite3 connection."""
    raw = sqlite3.connect(":memory:")
    return raw.cursor(factory=CursorWrapper), raw.cursor(factory=SQLiteCursorWrapper)


@pytest.mark.parametrize("statement", STATEMENTS)
def test_a_statement_becomes_what_djangos_cursor_makes_of_it(statement: str) -> None:
    ours, djangos = _cursors()
    assert ours.convert_query(statement) == djangos.convert_query(statement)


def test_named_parameters_are_left_to_django() -> None:
    ours, _ = _cursors()
    statement = "INSERT INTO t (a, b) VALUES (%(p0)s, %(p1)s)"
    assert ours.convert_query(statement, param_names=["p0", "p1"]) == "INSERT INTO t (a, b) VALUES (:p0, :p1)"


@pytest.fixture
def connection(tmp_path: Path, django_db_blocker: Any) -> Any:
    with django_db_blocker.unblock():
        config = database_config(sqlite_url(tmp_path / "db.sqlite3"))
        conn = DatabaseWrapper(connections.configure_settings({"default": config, "c": config})["c"], "c")
        yield conn
        conn.close()


def test_the_backends_cursors_run_statements_with_parameters_and_literal_percents(connection: Any) -> None:
    # given a table through cloudcore's backend
    with connection.cursor() as cursor:
        assert isinstance(cursor.cursor, CursorWrapper)
        cursor.execute("CREATE TABLE t (name TEXT, n INTEGER)")
        cursor.executemany("INSERT INTO t VALUES (%s, %s)", [("100%", 1), ("abc", 2), ("%s", 3)])
        # when rows are read by positional parameters, with and without literal percents
        cursor.execute("SELECT n FROM t WHERE name = %s OR n = %s ORDER BY n", ["abc", 3])
        by_value = cursor.fetchall()
        cursor.execute("SELECT n FROM t WHERE name LIKE '%%0%%' OR name = %s ORDER BY n", ["%s"])
        by_pattern = cursor.fetchall()
    # then each reads what it asked for
    assert by_value == [(2,), (3,)]
    assert by_pattern == [(1,), (3,)]
