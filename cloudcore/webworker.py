"""The gunicorn worker ``manage.py run_cloud`` serves the API with (``WEB_PREPARE_THREADS``):
gunicorn's threaded worker, whose threads are all started, each with what its first request would
make, before the worker accepts its first connection.

Gunicorn's thread pool starts a thread only when a request finds none idle, and a thread makes its
own things at its first request: Django its database connections (on PostgreSQL a backend forked
per thread and database, on SQLite a file opened and its pragmas set), Celery its result backend
and the id its casts reply to; and kombu opens a broker connection, and declares the conductor's
queue on it, for each producer that threads use at the same time (``cloudcore.wsgi.warm_up``
leaves one). The first burst of clients after a start paid for all of it, on the cores its own
requests needed: with 20 clients booting 100 servers, a client's first ``POST /servers`` took about
twice as long as its next ones."""
from __future__ import annotations

import contextlib
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from gunicorn.workers.gthread import ThreadWorker  # type: ignore[import-untyped]

logger = logging.getLogger(__name__)

#: seconds the pool's threads wait for one another to start
START_TIMEOUT_S = 30.0


def prepare_thread() -> None:
    """Make this thread's database connections (the API database's and every mapped cell's, each
    PostgreSQL backend's catalog caches filled: ``warm_catalog``), and its Celery result backend and
    reply id. A database that cannot be reached does not keep the others closed: the first such
    error is raised once all were tried."""
    from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections

    from cells.registry import alias_for, register_all
    from cloudcore.celery import app

    app.backend  # noqa: B018 - the property makes this thread's backend
    app.thread_oid  # noqa: B018 - the property makes this thread's reply id
    failures: list[DatabaseError] = []
    for alias in [DEFAULT_DB_ALIAS, *(alias_for(cell) for cell in register_all())]:  # (a cell's is never the API's)
        try:
            connections[alias].ensure_connection()
            warm_catalog(connections[alias])
        except DatabaseError as exc:
            failures.append(exc)
    if failures:
        raise failures[0]


#: database alias: ``warm_catalog``'s query of its tables
_warm_up_queries: dict[str, str] = {}


def warm_catalog(connection: Any) -> None:
    """On PostgreSQL, fill this connection's backend's caches of the catalog with every table of its
    database: one query of ``SELECT * FROM <table> WHERE false``, one per table, which plans each
    table with its indexes and reads no row. A new backend otherwise looks each table up in the
    catalog at the first statement that uses it: the 80 tables of the API database took 35-57 ms the
    first time and about 3 ms the next (a busy machine), and those 35-57 ms come once per thread. On
    SQLite there is no backend: nothing is sent. The tables are listed by the process's first thread
    that warms the database (``_warm_up_queries``); the others send the query it made."""
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        query = _warm_up_queries.get(connection.alias)
        if query is None:
            quote = connection.ops.quote_name
            query = _warm_up_queries.setdefault(connection.alias, "; ".join(
                f"SELECT * FROM {quote(table)} WHERE false"  # noqa: S608 - the catalog's names
                for table in connection.introspection.table_names(cursor)))
        cursor.execute(query)


def connect_producers(count: int) -> None:
    """``count`` producers of Celery's pool (no more than the pool holds) connected, each with the
    conductor's queue declared: they are taken all at once, then given back."""
    from cloudcore.celery import app, connected_producer

    limit = app.conf.broker_pool_limit
    with contextlib.ExitStack() as held:
        for _ in range(min(count, limit) if limit else count):
            held.enter_context(connected_producer(app))


def start_threads(pool: ThreadPoolExecutor, count: int) -> None:
    """Make ``pool`` start ``count`` threads now, each prepared (``prepare_thread``): ``count``
    tasks that wait for one another, so that no thread takes two of them; then the producers those
    threads may use at once connected. What cannot be reached now (a database, the broker) is left
    to the requests, which meet it again and report it; it is logged here once."""
    started = threading.Barrier(count)
    failures: list[BaseException] = []

    def prepare() -> None:
        started.wait(START_TIMEOUT_S)
        prepare_thread()

    for future in [pool.submit(prepare) for _ in range(count)]:
        if (error := future.exception()) is not None:
            failures.append(error)
    try:
        connect_producers(count)
    except Exception as exc:  # noqa: BLE001 - any broker failure: the first cast meets it again
        failures.append(exc)
    if failures:
        logger.warning("web worker serving before it was prepared (%d failure(s)), the first: %r",
                       len(failures), failures[0])


class PreparedThreadWorker(ThreadWorker):  # type: ignore[misc]  # gunicorn is untyped
    """Gunicorn's ``gthread`` worker, its threads started and prepared before it serves."""

    tpool: Any

    def run(self) -> None:
        start_threads(self.tpool, self.cfg.threads)
        super().run()
