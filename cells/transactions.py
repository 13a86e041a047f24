"""Transactions per database, and the names of those databases (STYLE rules 7 and 9).

Only ``cells/`` knows connection aliases. A service writes each database inside that database's
own transaction and enqueues work once that transaction commits::

    with api_atomic() as tx:          # the API database
        flavor.save()
        tx.on_commit(lambda: ...)
    with atomic(cell) as tx:          # one cell's database
        ...

``tx.on_commit`` runs the callback after the outermost transaction of *that* database commits
(at once when there is none), never after another database's commit.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.db import DEFAULT_DB_ALIAS, connections, router, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Model

from cloudcore.core import scope

from . import registry

if TYPE_CHECKING:
    from .models import CellMapping


@dataclass(frozen=True)
class Transaction:
    """A transaction block on one database."""

    alias: str

    def on_commit(self, callback: Callable[[], object]) -> None:
        """Run ``callback`` once this database commits (at once outside any transaction)."""
        transaction.on_commit(callback, using=self.alias)


def api_db() -> str:
    """The connection alias of the API database."""
    return DEFAULT_DB_ALIAS


def cell_db(cell: CellMapping) -> str:
    """The connection alias of ``cell``'s database (registered on first use)."""
    return registry.alias_for(cell)


def connection_for(model: type[Model]) -> BaseDatabaseWrapper:
    """The connection that reads ``model``: the API database's, or the targeted cell's for a cell
    model (raw SQL that must hit the same database as the ORM would)."""
    return connections[router.db_for_read(model)]


def is_api_db(alias: str | None) -> bool:
    """Is ``alias`` the API database (for signal handlers that receive a ``using``)?"""
    return alias == DEFAULT_DB_ALIAS


@contextmanager
def api_atomic(*, with_deferred: bool = False) -> Iterator[Transaction]:
    """A transaction on the API database. ``with_deferred``: it also writes the API-database rows
    the request scope deferred (``scope.atomic_with_deferred``: a scheduling trace,
    notifications), committed with the block's writes, by one commit, and readable exactly when
    those are (a failure of theirs never fails the block)."""
    alias = api_db()
    with scope.atomic_with_deferred(alias) if with_deferred else transaction.atomic(using=alias):
        yield Transaction(alias)


@contextmanager
def atomic(cell: CellMapping) -> Iterator[Transaction]:
    """A transaction on ``cell``'s database."""
    alias = cell_db(cell)
    with transaction.atomic(using=alias):
        yield Transaction(alias)


@contextmanager
def written_together(cell: CellMapping) -> Iterator[None]:
    """``atomic`` on ``cell``'s database for rows written by plain INSERTs: on PostgreSQL, outside a
    transaction, they are one query (``cloudcore.core.scope.written_together``)."""
    with scope.written_together(cell_db(cell)):
        yield


def api_on_commit(callback: Callable[[], object]) -> None:
    """Run ``callback`` once the API database commits (at once outside any transaction)."""
    Transaction(api_db()).on_commit(callback)
