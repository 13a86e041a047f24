"""The SQLite backend of cloudcore (``cloudcore.core.sqlite3``): the write transactions of one
process's threads on one database file queue on a lock of the process, taken at ``BEGIN
IMMEDIATE`` and given back at commit, rollback or close, and the processes' writers on the
``flock`` of a file beside it; in-memory databases are left alone."""
from __future__ import annotations

import fcntl
import os
import threading
from pathlib import Path
from typing import Any

import pytest
from django.db import connections

from cells.dburl import SQLITE_ENGINE, database_config, sqlite_url
from cloudcore.core.sqlite3.base import DatabaseWrapper, writer_lock


@pytest.fixture(autouse=True)
def _own_connections(django_db_blocker: Any) -> Any:
    """These tests open their own connections to their own files, outside the test databases."""
    with django_db_blocker.unblock():
        yield


def _wrapper(path: Path | str, alias: str) -> DatabaseWrapper:
    config = database_config(sqlite_url(path)) if str(path) != ":memory:" else {
        "ENGINE": SQLITE_ENGINE, "NAME": ":memory:"}
    return DatabaseWrapper(connections.configure_settings({"default": config, alias: config})[alias], alias)


def _begin(conn: DatabaseWrapper) -> None:
    conn.set_autocommit(False, force_begin_transaction_with_broken_autocommit=True)


def _end(conn: DatabaseWrapper, how: str) -> None:
    getattr(conn, how)()
    conn.set_autocommit(True)


def _write_in_thread(conn: DatabaseWrapper, who: str) -> tuple[threading.Thread, threading.Event, list[Any]]:
    """A thread writing ``who`` through ``conn`` in a write transaction of its own, started: the
    thread, set when it committed, and what it saw in the table first."""
    started, done = threading.Event(), threading.Event()
    seen: list[Any] = []

    def write() -> None:
        started.set()
        _begin(conn)
        seen.append(conn.cursor().execute("SELECT who FROM t").fetchall())
        conn.cursor().execute("INSERT INTO t VALUES (%s)", [who])
        _end(conn, "commit")
        done.set()

    conn.inc_thread_sharing()
    thread = threading.Thread(target=write)
    thread.start()
    started.wait(5)
    return thread, done, seen


def test_file_urls_use_the_queueing_backend() -> None:
    assert database_config("sqlite:////tmp/cloudcore-x/api.sqlite3")["ENGINE"] == "cloudcore.core.sqlite3"


def test_a_second_writer_of_the_process_waits_for_the_first_to_commit(tmp_path: Path) -> None:
    # given two connections of this process to one database file, the first inside a write transaction
    first, second = _wrapper(tmp_path / "db.sqlite3", "w1"), _wrapper(tmp_path / "db.sqlite3", "w2")
    first.cursor().execute("CREATE TABLE t (who TEXT)")
    lock = writer_lock(str(tmp_path / "db.sqlite3"))
    _begin(first)
    first.cursor().execute("INSERT INTO t VALUES ('first')")
    assert lock.locked()
    # when a second thread starts its write transaction
    thread, done, seen = _write_in_thread(second, "second")
    # then it waits (on the process's lock) until the first commits, and sees what it wrote
    assert not done.wait(0.3)
    _end(first, "commit")
    thread.join(10)
    assert done.is_set() and seen == [[("first",)]]
    assert not lock.locked()
    assert first.cursor().execute("SELECT who FROM t ORDER BY rowid").fetchall() == [("first",), ("second",)]
    second.dec_thread_sharing()
    first.close()
    second.close()


def test_rollback_and_close_give_the_lock_back(tmp_path: Path) -> None:
    conn = _wrapper(tmp_path / "db.sqlite3", "w3")
    lock = writer_lock(str(tmp_path / "db.sqlite3"))
    _begin(conn)
    assert lock.locked()
    _end(conn, "rollback")
    assert not lock.locked()
    _begin(conn)
    assert lock.locked()
    conn.close()
    assert not lock.locked()


def test_in_memory_databases_take_no_lock() -> None:
    conn = _wrapper(":memory:", "w4")
    _begin(conn)
    assert conn._writer is None
    _end(conn, "commit")


def _taken_by_another_process(path: Path) -> bool:
    """Whether the ``flock`` of ``path``'s ``-writers`` file is held (tried through a descriptor of
    its own, as another process would)."""
    fd = os.open(f"{path}-writers", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def test_a_write_transaction_holds_the_file_lock_other_processes_queue_on(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite3"
    conn = _wrapper(path, "w5")
    conn.cursor().execute("CREATE TABLE t (who TEXT)")
    for how in ("commit", "rollback"):
        _begin(conn)
        conn.cursor().execute("INSERT INTO t VALUES ('x')")
        assert _taken_by_another_process(path)
        _end(conn, how)
        assert not _taken_by_another_process(path)
    _begin(conn)
    assert _taken_by_another_process(path)
    conn.close()
    assert not _taken_by_another_process(path)


def test_a_writer_waits_for_another_processes_transaction_and_then_writes(tmp_path: Path) -> None:
    # given another process (a descriptor of its own) in the middle of a write
    path = tmp_path / "db.sqlite3"
    conn = _wrapper(path, "w6")
    conn.cursor().execute("CREATE TABLE t (who TEXT)")
    other = os.open(f"{path}-writers", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(other, fcntl.LOCK_EX)
    thread, done, _seen = _write_in_thread(conn, "mine")
    # then this process's writer waits for it, and writes as soon as it is done
    assert not done.wait(0.3)
    fcntl.flock(other, fcntl.LOCK_UN)
    os.close(other)
    thread.join(10)
    assert done.is_set()
    assert conn.cursor().execute("SELECT who FROM t").fetchall() == [("mine",)]
    conn.dec_thread_sharing()
    conn.close()
