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

Off by default (``CLOUDCORE_DB_SOCKET_HEALTH_CHECK=1`` turns it on, ``cells.dburl``): a backend
terminated a moment before the check may not have written its FATAL message yet, and the request
then fails on its first statement where ``SELECT 1`` would have found the connection dead and
opened another. Measured on a live cloud (PostgreSQL, load average 12-15): 3 of 36 requests sent
right after every backend was terminated answered 500 with this check, none with Django's; none
either way when they were sent a second later.

Only the health check changes: after an error (``close_if_unusable_or_obsolete``,
``cells.registry.drop_broken_connections``) ``is_usable`` still asks the server.
"""
from __future__ import annotations

import select
from typing import Any

from django.db.backends.postgresql import base
from psycopg2 import extensions  # type: ignore[import-untyped]

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


class DatabaseWrapper(base.DatabaseWrapper):
    # (django-stubs do not declare the health check's attributes)
    health_check_enabled: bool
    health_check_done: bool

    def close_if_health_check_failed(self) -> None:
        if (self.connection is not None and self.health_check_enabled and not self.health_check_done
                and idle_and_silent(self.connection)):
            self.health_check_done = True
            return
        super().close_if_health_check_failed()
