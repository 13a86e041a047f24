"""Django's SQLite backend with the writers of one process queued in the process.

SQLite lets one connection write a database file at a time; the others wait in ``BEGIN
IMMEDIATE`` (``cells.dburl.SQLITE_OPTIONS``) by polling: SQLite's busy handler sleeps 1, 2, 5, 10,
... up to 100 ms between tries, and a waiter asleep when the lock is freed loses it to whoever
asks next. With several threads per process (gunicorn's, the conductor's), most of the waiting
was threads of the same process polling for a lock another of its threads held: sampled under 20
clients booting 100 servers, 4 in 10 of the conductor's busy threads sat in ``BEGIN IMMEDIATE``.

Here a write transaction on a database file first takes that file's lock in this process (one
``threading.Lock`` per file): the threads of a process queue and each is woken as soon as the one
before it commits or rolls back, and only one of them at a time polls SQLite for the writers of
other processes. The lock is waited for at most the connection's busy timeout, after which the
transaction starts as it would without it (SQLite's own wait then decides, as before); a thread
that already holds a file's lock through another connection does not take it again. In-memory
databases (the tests) are left as they are.
"""
from __future__ import annotations

import threading
from typing import Any

from django.db.backends.sqlite3 import base

_guard = threading.Lock()
_writers: dict[str, threading.Lock] = {}
_held = threading.local()


def writer_lock(name: str) -> threading.Lock:
    """The process's lock of database file ``name``."""
    with _guard:
        return _writers.setdefault(name, threading.Lock())


def _held_names() -> set[str]:
    names: set[str] | None = getattr(_held, "names", None)
    if names is None:
        names = _held.names = set()
    return names


class DatabaseWrapper(base.DatabaseWrapper):
    _writer: threading.Lock | None = None

    def _queued_name(self) -> str | None:
        """The file whose writers queue here, None for an in-memory database."""
        name = str(self.settings_dict.get("NAME") or "")
        return None if not name or self.is_in_memory_db() or name.startswith("file:") else name

    def _start_transaction_under_autocommit(self) -> None:
        name = self._queued_name()
        if name is None or name in _held_names():
            super()._start_transaction_under_autocommit()  # type: ignore[misc]
            return
        lock = writer_lock(name)
        timeout = float(self.settings_dict.get("OPTIONS", {}).get("timeout", 5))
        if not lock.acquire(timeout=timeout):
            super()._start_transaction_under_autocommit()  # type: ignore[misc]  # SQLite's busy wait decides
            return
        try:
            super()._start_transaction_under_autocommit()  # type: ignore[misc]
        except BaseException:
            lock.release()
            raise
        self._writer = lock
        _held_names().add(name)

    def _release_writer(self) -> None:
        lock, self._writer = self._writer, None
        if lock is not None:
            _held_names().discard(self._queued_name() or "")
            lock.release()

    def _commit(self) -> Any:
        try:
            return super()._commit()  # type: ignore[misc]
        finally:
            self._release_writer()

    def _rollback(self) -> Any:
        try:
            return super()._rollback()  # type: ignore[misc]
        finally:
            self._release_writer()

    def _close(self) -> Any:
        try:
            return super()._close()  # type: ignore[misc]
        finally:
            self._release_writer()
