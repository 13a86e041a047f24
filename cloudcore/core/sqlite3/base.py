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

Between processes (the web workers, the conductor and the compute hosts share the API and cell
databases), the thread holding its process's lock then takes an exclusive ``flock`` on a file
beside the database (``<name>-writers``) before ``BEGIN IMMEDIATE``, and gives it back with the
process's lock: the waiting process tries again every few milliseconds (at most 2 ms apart)
instead of SQLite's busy handler sleeping up to 100 ms between tries while the lock may be free
(sampled under 20 clients booting 100 servers, the conductor's threads spent a third of their time
in ``BEGIN IMMEDIATE``, mostly waiting for the web process's writes and the other way round). It is
waited for within the same busy timeout; when the file cannot be opened or the wait runs out, the
transaction starts without it (SQLite's own wait decides). Each process opens the file itself
(a descriptor inherited across ``fork`` would share its lock with the parent).

Its cursors (``CursorWrapper``) make SQLite's statement of one with positional parameters by a
replace instead of Django's regular expression, where that is the same statement.
"""
from __future__ import annotations

import fcntl
import os
import threading
import time
from typing import Any

from django.db.backends.sqlite3 import base

_guard = threading.Lock()
_writers: dict[str, threading.Lock] = {}
_held = threading.local()
#: database file -> (the process that opened it, descriptor of its ``-writers`` file)
_files: dict[str, tuple[int, int]] = {}
#: the longest pause between two tries of another process's lock
_MAX_PAUSE_S = 0.002


def writer_lock(name: str) -> threading.Lock:
    """The process's lock of database file ``name``."""
    with _guard:
        return _writers.setdefault(name, threading.Lock())


def _writers_file(name: str) -> int | None:
    """This process's descriptor of the file whose ``flock`` queues the writers of ``name``'s
    processes (None when it cannot be opened)."""
    pid = os.getpid()
    with _guard:
        opened = _files.get(name)
        if opened is not None and opened[0] == pid:
            return opened[1]
        try:
            fd = os.open(f"{name}-writers", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError:
            return None
        _files[name] = (pid, fd)
        return fd


def _lock_file(fd: int, timeout: float) -> bool:
    """Take the exclusive ``flock`` of ``fd`` within ``timeout`` seconds."""
    deadline, pause = time.monotonic() + timeout, 0.0005
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            pass
        except OSError:
            return False
        if time.monotonic() >= deadline:
            return False
        time.sleep(pause)
        pause = min(2 * pause, _MAX_PAUSE_S)


def _held_names() -> set[str]:
    names: set[str] | None = getattr(_held, "names", None)
    if names is None:
        names = _held.names = set()
    return names


class CursorWrapper(base.SQLiteCursorWrapper):
    """Django's SQLite cursor, whose statements with positional parameters (``%s``) become SQLite's
    (``?``) by a replace where they can. Django finds each ``%s`` not preceded by ``%`` with a
    regular expression with a look-behind, tried at every character of the statement: some 100,000
    instructions for one of the ORM's long SELECTs, 6% of a ``POST /servers`` in the web. In a
    statement without ``%%`` no ``%s`` is preceded by ``%``, and there is no ``%%`` to make ``%``:
    the replace is the same statement."""

    def convert_query(self, query: str, *, param_names: list[str] | None = None) -> str:
        if param_names is None and "%%" not in query:
            return query.replace("%s", "?")
        return super().convert_query(query, param_names=param_names)  # type: ignore[misc, no-any-return]


class DatabaseWrapper(base.DatabaseWrapper):
    _writer: threading.Lock | None = None
    #: the ``-writers`` file whose ``flock`` this connection holds
    _writer_fd: int | None = None

    def create_cursor(self, name: str | None = None) -> CursorWrapper:
        return self.connection.cursor(factory=CursorWrapper)  # type: ignore[no-any-return]

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
        deadline = time.monotonic() + timeout
        if not lock.acquire(timeout=timeout):
            super()._start_transaction_under_autocommit()  # type: ignore[misc]  # SQLite's busy wait decides
            return
        self._writer = lock
        _held_names().add(name)
        try:
            fd = _writers_file(name)
            if fd is not None and _lock_file(fd, max(0.0, deadline - time.monotonic())):
                self._writer_fd = fd
            super()._start_transaction_under_autocommit()  # type: ignore[misc]
        except BaseException:
            self._release_writer()
            raise

    def _release_writer(self) -> None:
        fd, self._writer_fd = self._writer_fd, None
        if fd is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            except OSError:  # closed meanwhile: its lock went with it
                pass
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
