"""A hot ``values_list`` query whose SQL is built once per process, then only executed.

Django builds a query's SQL again on every evaluation (the filters resolved, the joins set up, the
compiler run): for the few statements every ``POST /servers`` makes, building costs more CPU than
SQLite spends running them. ``prepared_rows(key, build, args)`` builds the queryset ``build`` makes
from placeholder arguments once, compiles it, and remembers where each placeholder landed among the
statement's parameters; each call then sends that SQL with the caller's ``args`` in their places, on
the database the router chose for the queryset.

Only for arguments Django passes to the database as they are (strings compared with a
``CharField``), and rows wanted as the database gives them (no field converters: a boolean
expression comes back as 0/1 from SQLite). When a placeholder does not reach the parameters
unchanged the query is built by the ORM on every call, as before.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from django.db import connections
from django.db.models import QuerySet

#: key: (database alias, SQL, for each parameter: the index of the argument or None, the constants)
_statements: dict[str, tuple[str, str, list[int | None], list[Any]] | None] = {}


def _placeholder(index: int) -> str:
    return f"\x00prepared-argument-{index}\x00"


def _prepare(build: Callable[..., QuerySet[Any]], count: int) -> tuple[str, str, list[int | None],
                                                                                  list[Any]] | None:
    placeholders = [_placeholder(i) for i in range(count)]
    queryset = build(*placeholders)
    sql, params = queryset.query.get_compiler(using=queryset.db).as_sql()
    where: list[int | None] = [placeholders.index(p) if isinstance(p, str) and p in placeholders else None
                               for p in params]
    if sorted(i for i in where if i is not None) != list(range(count)) or any(
            isinstance(p, str) and "\x00prepared-argument-" in p for p, i in zip(params, where, strict=True)
            if i is None):
        return None  # an argument was changed on its way (or used twice): not preparable
    return queryset.db, sql, where, list(params)


def prepared_rows(key: str, build: Callable[..., QuerySet[Any]], args: Sequence[str]) -> list[tuple[Any, ...]]:
    """The rows of ``build(*args)`` (a ``values_list`` queryset), its SQL built once per process
    under ``key``."""
    if key not in _statements:
        _statements[key] = _prepare(build, len(args))
    statement = _statements[key]
    if statement is None:
        return [tuple(row) for row in build(*args)]
    database, sql, where, constants = statement
    params = [constants[n] if i is None else args[i] for n, i in enumerate(where)]
    with connections[database].cursor() as cursor:
        cursor.execute(sql, params)
        return [tuple(row) for row in cursor.fetchall()]
