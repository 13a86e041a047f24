"""Django's PostgreSQL backend with the health check of a kept connection done without a query.

A connection kept between requests and tasks (``CLOUDCORE_DB_CONN_MAX_AGE``) is checked before
its first use in each request or task (``CONN_HEALTH_CHECKS``, ``cells.dburl``), so that one the
server has closed meanwhile (the database restarted, the backend terminated) is replaced instead of
failing the request. Django checks by running ``SELECT 1``: one more round trip to the server for
every database a request touches. Under 20 clients booting 100 servers on PostgreSQL + Redis
(``bench/scenarios/live_load.py``) those were about one statement in ten of all the processes'
(970 of 9,479, pg_stat_statements), the most frequent statement of all.

Here the check first looks at the connection's socket: a server that ends a connection says so
(a backend terminated or shut down sends its FATAL message; a crash or a dead peer closes the
socket or reports an error on it), and a connection idle between requests has nothing else to
read. An idle socket with nothing to read is taken as usable without a query; anything to read,
an error on the socket, a connection not idle (inside a transaction) or one psycopg2 already
knows is closed goes through Django's ``SELECT 1`` as before. A peer that vanished without a
word (no packet at all) is found by neither check before TCP's keepalives give up on it
(``cells.dburl.POSTGRES_OPTIONS``), after which the socket reports the error.

The socket cannot tell everything: a backend terminated an instant before the check may not have
written its FATAL message yet, and the request's first statement then finds the connection dead.
Measured on a live cloud (PostgreSQL, load average 12-15), that made 3 of 36 requests sent right
after every backend was terminated answer 500. So the first statement after a check the socket
passed is tried again, once, on a new connection when the old one turns out to be closed
(``FirstStatementRetried``): nothing had reached the server on the old one (the statement failed,
and it was the first since the last request ended idle), so nothing is done twice. Inside an
atomic block the new connection is given the block's state (autocommit off; psycopg2 sends
``BEGIN`` with the statement). Statements after the first are not tried again: their transaction
was on the connection that died. Django's ``SELECT 1`` has the same race between its check and the
first statement, and no retry.

On by default; ``CLOUDCORE_DB_SOCKET_HEALTH_CHECK=0`` gives Django's ``SELECT 1`` back (``cells.dburl``).

Only the health check changes: after an error (``close_if_unusable_or_obsolete``,
``cells.registry.drop_broken_connections``) ``is_usable`` still asks the server.
"""
from __future__ import annotations

import datetime
import decimal
import functools
import logging
import re
import select
import uuid
from collections.abc import Callable
from typing import Any

from django.db import InterfaceError, OperationalError
from django.db.backends import utils
from django.db.backends.postgresql import base
from django.db.backends.signals import connection_created
from psycopg2 import extensions  # type: ignore[import-untyped]

from cloudcore.core.serverprepared import ServerPrepared

logger = logging.getLogger(__name__)

#: what ``poll`` reports on a socket the server wrote to, closed or that failed
_SPOKE = select.POLLIN | select.POLLPRI | select.POLLERR | select.POLLHUP | select.POLLNVAL


def idle_and_silent(connection: Any) -> bool:
    """Whether ``connection`` is open, idle (no transaction) and its socket has nothing to read
    and no error: nothing the server could have said since the last statement."""
    if connection.closed or connection.info.transaction_status != extensions.TRANSACTION_STATUS_IDLE:
        return False
    try:
        poller = select.poll()
        poller.register(connection.fileno(), _SPOKE)
        return not poller.poll(0)
    except (OSError, ValueError):
        return False


class FirstStatementRetried:
    """The cursor of a connection whose health check was its socket's (mixed into Django's cursor
    wrappers): the first statement after that check, when it fails on a connection that is then
    closed, is sent again on a new connection (``DatabaseWrapper.reopen``)."""

    db: DatabaseWrapper
    cursor: Any

    def _execute(self, sql: Any, params: Any, *ignored_wrapper_args: Any) -> Any:
        if server_prepares(self.db, sql, params):
            return self._retried(self._execute_prepared, sql, params, *ignored_wrapper_args)
        return self._retried(super()._execute, sql, params, *ignored_wrapper_args)  # type: ignore[misc]

    def _execute_prepared(self, sql: str, params: Any, *ignored_wrapper_args: Any) -> Any:
        """``sql`` as the connection's prepared statement (``DatabaseWrapper.prepared_statement``),
        worked out at each try, so that a statement sent again on a new connection prepares it
        there."""
        text, prepared = self.db.prepared_statement(sql, params)
        result = super()._execute(text, params, *ignored_wrapper_args)  # type: ignore[misc]
        prepared()
        return result

    def _executemany(self, sql: Any, param_list: Any, *ignored_wrapper_args: Any) -> Any:
        return self._retried(super()._executemany, sql, param_list, *ignored_wrapper_args)  # type: ignore[misc]

    def _retried(self, send: Any, *args: Any) -> Any:
        if not self.db.unconfirmed:
            return send(*args)
        self.db.unconfirmed = False
        try:
            return send(*args)
        except (OperationalError, InterfaceError):
            if not self.db.connection.closed or self.cursor.name is not None:
                raise
        logger.warning("connection to database %r found closed at its first statement: sent again on a new one",
                       self.db.alias)
        self.cursor = self.db.reopen()
        return send(*args)


def _nothing() -> None:
    pass


def server_prepares(db: Any, sql: Any, params: Any) -> bool:
    """Whether ``sql`` with ``params`` goes as a prepared statement (``cloudcore.core.serverprepared``)
    on ``db``, a connection of this backend: marked, switched on for its database (``SERVER_PREPARE``
    of its settings, ``cells.dburl``), and parameters it can take."""
    return type(sql) is ServerPrepared and db.settings_dict.get("SERVER_PREPARE", False) and _preparable(params)


def _preparable(params: Any) -> bool:
    """Whether ``params`` can be a prepared statement's arguments: positional plain values (psycopg2
    expands a tuple into a list of values, and a dict names them)."""
    return params is None or (isinstance(params, (list, tuple))
                              and not any(isinstance(p, (list, tuple, dict)) for p in params))


#: the server's type of a prepared statement's parameter, by the Python type of its value; others
#: (a string, None, JSON) "unknown": the server takes the type the statement gives it (a column's)
_PARAMETER_TYPES: dict[type, str] = {
    bool: "boolean", int: "bigint", float: "double precision", decimal.Decimal: "numeric",
    datetime.datetime: "timestamptz", datetime.date: "date", uuid.UUID: "uuid",
}

_PLACEHOLDER = re.compile(r"%%|%s")


def _numbered(sql: str) -> str:
    """``sql`` with its ``%s`` placeholders as ``$1``, ``$2``, ... (``%%`` is left to psycopg2)."""
    count = iter(range(1, sql.count("%s") + 1))
    return _PLACEHOLDER.sub(lambda m: m.group(0) if m.group(0) == "%%" else f"${next(count)}", sql)


class CursorWrapper(FirstStatementRetried, utils.CursorWrapper):
    pass


class CursorDebugWrapper(FirstStatementRetried, base.CursorDebugWrapper):
    def execute(self, sql: Any, params: Any = None) -> Any:
        """A prepared statement is logged (``connection.queries``, the ``django.db.backends``
        logger) as the statement with its parameters, as others are, not as the ``EXECUTE`` sent."""
        if type(sql) is not ServerPrepared:
            return super().execute(sql, params)
        shown = sql if params is None else self.cursor.mogrify(sql, params).decode(errors="replace")
        with self.debug_sql(shown, use_last_executed_query=False):
            return utils.CursorWrapper.execute(self, sql, params)


class DatabaseWrapper(base.DatabaseWrapper):
    # (django-stubs do not declare the health check's attributes)
    health_check_enabled: bool
    health_check_done: bool
    #: the connection was taken as usable by its socket alone and has not answered a statement since
    unconfirmed = False
    #: the DB-API connection the prepared statements below were made on, and what made them: the
    #: statement's text and its parameters' types -> its name on the server (``prepared_name``)
    _prepared_on: Any = None
    _prepared: dict[tuple[str, tuple[str, ...]], str]
    _prepared_count = 0

    def prepared_statement(self, sql: str, params: Any) -> tuple[str, Callable[[], None]]:
        """What sends ``sql`` with ``params`` as this connection's prepared statement
        (``cloudcore.core.serverprepared``), with the same parameters: ``EXECUTE`` when the
        connection has it, else ``PREPARE`` and ``EXECUTE`` in one round trip; and what to call
        once that ran. Its parameters are declared of the types of these values
        (``_PARAMETER_TYPES``: a boolean in a select list would otherwise be taken as text), so a
        statement is prepared once per connection for each set of types it is given. A prepared
        statement outlives a rolled back transaction (PostgreSQL's are not transactional), but one
        whose ``PREPARE`` may have failed is never named again: each attempt prepares under a new
        name, and a statement is known as prepared only once the call says it ran."""
        types = tuple(_PARAMETER_TYPES.get(type(value), "unknown") for value in params or ())
        name, known = self.prepared_name(sql, types)
        arguments = f"({', '.join(['%s'] * len(types))})" if types else ""
        if known:
            return f"EXECUTE {name}{arguments}", _nothing
        declared = f" ({', '.join(types)})" if types else ""
        return (f"PREPARE {name}{declared} AS {_numbered(sql)}; EXECUTE {name}{arguments}",
                functools.partial(self.prepared_as, sql, types, name))

    def prepared_name(self, sql: str, types: tuple[str, ...]) -> tuple[str, bool]:
        """The name of the prepared statement of ``sql`` with parameters of ``types`` on this
        connection, and whether it is prepared there already; a new name (never given before on
        this connection) when it is not."""
        if self._prepared_on is not self.connection:
            self._prepared_on, self._prepared = self.connection, {}
        name = self._prepared.get((sql, types))
        if name is not None:
            return name, True
        self._prepared_count += 1
        return f"cloudcore_{self._prepared_count}", False

    def prepared_as(self, sql: str, types: tuple[str, ...], name: str) -> None:
        """``sql`` with parameters of ``types`` is prepared as ``name`` on this connection."""
        if self._prepared_on is self.connection:
            self._prepared[sql, types] = name

    def close_if_health_check_failed(self) -> None:
        if self.connection is None or not self.health_check_enabled or self.health_check_done:
            return
        self.unconfirmed = idle_and_silent(self.connection)
        if self.unconfirmed:
            self.health_check_done = True
            return
        super().close_if_health_check_failed()

    def make_cursor(self, cursor: Any) -> Any:
        return CursorWrapper(cursor, self)

    def make_debug_cursor(self, cursor: Any) -> Any:
        return CursorDebugWrapper(cursor, self)

    def reopen(self) -> Any:
        """A new connection in place of the closed one, in the state the old one was in for Django
        (the atomic block it is in, autocommit off in it), set up as ``connect`` sets one up; a
        new DB-API cursor on it."""
        self.connection.close()  # (psycopg2: nothing to do on a closed one)
        with self.wrap_database_errors:
            connection = self.get_new_connection(self.get_connection_params())
            connection.autocommit = True  # the time zone and role set outside a transaction
            self._configure_connection(connection)  # type: ignore[attr-defined]
            connection.autocommit = self.autocommit
        self.connection = connection
        self.errors_occurred = False
        connection_created.send(sender=type(self), connection=self)
        return self.create_cursor()
