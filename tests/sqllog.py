"""The statements a test made on the API database, grouped by transaction (to show that rows are
written together: one transaction, one INSERT per table)."""
from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from typing import Any

from django.db import connections


@contextlib.contextmanager
def api_db_transactions() -> Iterator[list[list[str]]]:
    """The statements on the API database while active, grouped by transaction: each committed
    transaction one list (its statements after BEGIN), one rolled back the same list after a
    ``"ROLLBACK"``, each statement outside one a list alone. For a test without a transaction of
    its own around it (``django_db(transaction=True)``)."""
    connection = connections["default"]
    done: list[list[str]] = []
    current: list[str] = []
    commit, rollback = connection.commit, connection.rollback

    def counted_commit() -> None:
        commit()
        done.append(list(current))
        current.clear()

    def counted_rollback() -> None:
        rollback()
        done.append(["ROLLBACK", *current])
        current.clear()

    def wrapper(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if sql.startswith("BEGIN"):  # SQLite's; PostgreSQL's is implicit
            pass
        elif connection.in_atomic_block:
            current.append(sql)
        else:
            done.append([sql])
        return execute(sql, params, many, context)

    connection.commit = counted_commit  # type: ignore[method-assign]
    connection.rollback = counted_rollback  # type: ignore[method-assign]
    try:
        with connection.execute_wrapper(wrapper):
            yield done
    finally:
        del connection.commit, connection.rollback


def inserted_tables(transaction: list[str]) -> list[str]:
    """The tables the INSERT statements of ``transaction`` write, in order."""
    return [re.match(r'INSERT INTO "(\w+)"', sql).group(1) for sql in transaction  # type: ignore[union-attr]
            if sql.startswith("INSERT")]
