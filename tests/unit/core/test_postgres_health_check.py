"""The health check of a kept PostgreSQL connection (``cloudcore.core.postgresql``): no query while
its socket is idle and silent, Django's ``SELECT 1`` when the server has said something (a
terminated backend's FATAL message, a closed socket) or a transaction is open."""
from __future__ import annotations

import os
import select
import socket
import time
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from psycopg2 import extensions  # type: ignore[import-untyped]

from cells.dburl import POSTGRES_ENGINE, database_config
from cloudcore.core.postgresql.base import DatabaseWrapper, idle_and_silent


class _Connection:
    """What ``idle_and_silent`` reads of a psycopg2 connection, over one end of a socket pair."""

    def __init__(self, sock: socket.socket, status: int = extensions.TRANSACTION_STATUS_IDLE) -> None:
        self.sock, self.closed = sock, 0
        self.info = SimpleNamespace(transaction_status=status)

    def fileno(self) -> int:
        return self.sock.fileno()


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    ours, server = socket.socketpair()
    yield ours, server
    ours.close()
    server.close()


def test_an_idle_silent_socket_is_usable_without_a_query(pair: tuple[socket.socket, socket.socket]) -> None:
    # given a connection whose server has sent nothing since its last answer
    assert idle_and_silent(_Connection(pair[0]))  # type: ignore[arg-type]


def test_a_socket_the_server_wrote_to_or_closed_is_checked_by_a_query(
        pair: tuple[socket.socket, socket.socket]) -> None:
    ours, server = pair
    # when the server sends something unasked (a terminated backend's FATAL message)
    server.send(b"E")
    # then the socket is not taken at its word
    assert not idle_and_silent(_Connection(ours))  # type: ignore[arg-type]
    ours.recv(1)
    # and when the server closes the connection, neither
    server.close()
    assert not idle_and_silent(_Connection(ours))  # type: ignore[arg-type]


def test_a_connection_in_a_transaction_or_closed_is_checked_by_a_query(
        pair: tuple[socket.socket, socket.socket]) -> None:
    assert not idle_and_silent(_Connection(pair[0], extensions.TRANSACTION_STATUS_INTRANS))  # type: ignore[arg-type]
    closed = _Connection(pair[0])
    closed.closed = 1
    assert not idle_and_silent(closed)  # type: ignore[arg-type]


def test_postgres_urls_get_the_backend_unless_told_not_to(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CLOUDCORE_DB_SOCKET_HEALTH_CHECK", raising=False)
    assert database_config("postgres://u:p@127.0.0.1:5432/cloudcore")["ENGINE"] == POSTGRES_ENGINE
    monkeypatch.setenv("CLOUDCORE_DB_SOCKET_HEALTH_CHECK", "0")
    assert database_config("postgres://u:p@127.0.0.1:5432/cloudcore")["ENGINE"] != POSTGRES_ENGINE


# --- against a PostgreSQL server (make test's test-postgres tier) ----------------------------------


def _server_url() -> str:
    """A database URL on a PostgreSQL server: the e2e tiers' (``CLOUDCORE_E2E_DATABASE_URL``), else the
    suite's own API database's when it is on PostgreSQL (``make test-postgres``); empty without one."""
    from urllib.parse import quote

    from django.db import connections

    if os.environ.get("CLOUDCORE_E2E_DATABASE_URL"):
        return os.environ["CLOUDCORE_E2E_DATABASE_URL"]
    if connections["default"].vendor != "postgresql":
        return ""
    given = connections["default"].settings_dict
    password = f":{quote(given['PASSWORD'], safe='')}" if given.get("PASSWORD") else ""
    return f"postgres://{quote(given['USER'], safe='')}{password}@{given['HOST']}:{given['PORT']}/{given['NAME']}"


URL = _server_url()


@pytest.fixture
def wrapper(django_db_blocker: Any) -> Iterator[DatabaseWrapper]:
    """A connection of its own to the server's ``postgres`` database, kept between "requests"."""
    if not URL:
        pytest.skip("needs a PostgreSQL server (make test-postgres)")
    config = database_config(URL.rsplit("/", 1)[0] + "/postgres")
    config.update(TIME_ZONE=None, ATOMIC_REQUESTS=False, AUTOCOMMIT=True, CONN_MAX_AGE=300)
    conn = DatabaseWrapper(config, alias="health_check")
    with django_db_blocker.unblock():
        conn.ensure_connection()
        yield conn
        conn.close()


def _checked(conn: DatabaseWrapper, monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Run the health check of a new request; the ``SELECT 1`` checks it made (their answers)."""
    asked: list[bool] = []
    real = conn.is_usable

    def is_usable() -> bool:
        asked.append(real())
        return asked[-1]

    monkeypatch.setattr(conn, "is_usable", is_usable)
    conn.health_check_done = False
    conn.close_if_health_check_failed()
    return asked


def _backend_pid(conn: DatabaseWrapper) -> int:
    with conn.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return int(cursor.fetchone()[0])


@pytest.mark.postgres
def test_a_kept_connection_is_reused_without_a_query(wrapper: DatabaseWrapper,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    pid = _backend_pid(wrapper)
    # when the next request checks the connection
    asked = _checked(wrapper, monkeypatch)
    # then no statement went to the server, and the same backend serves it
    assert asked == []
    assert _backend_pid(wrapper) == pid


def _terminated(conn: DatabaseWrapper) -> None:
    """Terminate ``conn``'s backend (as a restarted database does) and wait for its FATAL message."""
    import psycopg2  # type: ignore[import-untyped]

    pid = conn.connection.info.backend_pid
    admin: Any = psycopg2.connect(URL.rsplit("/", 1)[0] + "/postgres")
    admin.autocommit = True
    with admin.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", (pid,))
    admin.close()
    poller = select.poll()
    poller.register(conn.connection.fileno(), select.POLLIN)
    deadline = time.monotonic() + 10
    while not poller.poll(100) and time.monotonic() < deadline:
        pass


def _message_not_seen_yet(monkeypatch: pytest.MonkeyPatch) -> None:
    """The race: the socket looked at before the terminated backend's FATAL message came."""
    from cloudcore.core.postgresql import base

    monkeypatch.setattr(base, "idle_and_silent", lambda connection: True)


@pytest.mark.postgres
@pytest.mark.parametrize("logged", [False, True], ids=["cursor", "debug cursor"])
def test_a_backend_terminated_unseen_by_the_check_is_replaced_at_the_first_statement(
        wrapper: DatabaseWrapper, monkeypatch: pytest.MonkeyPatch, logged: bool) -> None:
    wrapper.force_debug_cursor = logged  # (the query log's cursor, as in CaptureQueriesContext)
    pid = _backend_pid(wrapper)
    # given the backend terminated in the instant before the next request's check
    _terminated(wrapper)
    _message_not_seen_yet(monkeypatch)
    # when that request checks the connection (by its socket alone) and sends its first statement
    assert _checked(wrapper, monkeypatch) == []
    new_pid = _backend_pid(wrapper)
    # then the statement was answered by a new backend, and the request goes on with it
    assert new_pid != pid
    assert _backend_pid(wrapper) == new_pid
    assert wrapper.connection.autocommit


@pytest.mark.postgres
def test_an_atomic_block_whose_first_statement_finds_the_backend_gone_commits_on_the_new_one(
        wrapper: DatabaseWrapper, monkeypatch: pytest.MonkeyPatch) -> None:
    from django.db import connections, transaction

    with wrapper.cursor() as cursor:
        cursor.execute("CREATE TEMPORARY TABLE kept (n integer)")
    _terminated(wrapper)
    _message_not_seen_yet(monkeypatch)
    assert _checked(wrapper, monkeypatch) == []
    connections["health_check"] = wrapper
    try:
        # when a transaction's first statement is sent on the connection that died
        with transaction.atomic(using="health_check"), wrapper.cursor() as cursor:
            cursor.execute("CREATE TEMPORARY TABLE kept (n integer)")  # (the old session's is gone)
            cursor.execute("INSERT INTO kept VALUES (1), (2)")
            assert not wrapper.connection.autocommit
    finally:
        del connections["health_check"]
    # then the transaction ran on the new connection and was committed there
    assert wrapper.connection.autocommit
    with wrapper.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM kept")
        assert cursor.fetchone()[0] == 2


@pytest.mark.postgres
def test_a_statement_after_the_first_is_not_sent_again(wrapper: DatabaseWrapper,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from django.db import OperationalError

    _message_not_seen_yet(monkeypatch)
    assert _checked(wrapper, monkeypatch) == []
    _backend_pid(wrapper)  # the request's first statement, answered
    # when the backend is terminated in the middle of the request
    _terminated(wrapper)
    # then its next statement fails: it may have been part of what the dead backend was doing
    with pytest.raises(OperationalError):
        _backend_pid(wrapper)


@pytest.mark.postgres
def test_a_terminated_backend_is_replaced_before_the_request_uses_it(wrapper: DatabaseWrapper,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    pid = _backend_pid(wrapper)
    # given the backend terminated between two requests (as a restarted database does)
    _terminated(wrapper)
    # when the next request checks the connection
    asked = _checked(wrapper, monkeypatch)
    # then the server was asked, the dead connection dropped, and the request gets a new one
    assert asked == [False]
    assert wrapper.connection is None
    assert _backend_pid(wrapper) != pid


@pytest.mark.postgres
def test_a_prepared_statement_sent_again_on_a_new_connection_is_prepared_there(
        wrapper: DatabaseWrapper, monkeypatch: pytest.MonkeyPatch) -> None:
    from django.db import connections

    from cloudcore.core.scope import split_transaction
    from cloudcore.core.serverprepared import server_prepared

    statement = server_prepared("SELECT %s::integer + 1")
    connections["health_check"] = wrapper
    try:
        for round_ in range(2):
            # given the statement prepared on the connection (sent alone, and in a split transaction's query)
            with wrapper.cursor() as cursor:
                cursor.execute(statement, [1])
                assert cursor.fetchone() == (2,)
            # and the backend terminated in the instant before the next request's check
            _terminated(wrapper)
            _message_not_seen_yet(monkeypatch)
            assert _checked(wrapper, monkeypatch) == []
            # when that request's first statement is the prepared one, sent again on a new connection
            if round_ == 0:
                with wrapper.cursor() as cursor:
                    cursor.execute(statement, [41])
                    rows = cursor.fetchall()
            else:
                with split_transaction("health_check") as split:
                    assert split is not None
                    rows = split.first([(statement, [41])])
            # then it was prepared there and answered
            assert rows == [(42,)]
    finally:
        del connections["health_check"]
