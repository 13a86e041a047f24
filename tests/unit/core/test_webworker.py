"""The web worker's threads are started and prepared before it serves (``cloudcore.webworker``)."""
from __future__ import annotations

import contextlib
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from django.db import connections

from cloudcore import webworker


def test_start_threads_starts_every_thread_of_the_pool_and_prepares_each_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # given a pool of 4 threads, none started yet (as gunicorn makes it)
    pool = ThreadPoolExecutor(max_workers=4)
    prepared: list[int] = []
    monkeypatch.setattr(webworker, "prepare_thread", lambda: prepared.append(threading.get_ident()))
    monkeypatch.setattr(webworker, "connect_producers", lambda count: None)
    try:
        assert len(pool._threads) == 0
        # when
        webworker.start_threads(pool, 4)
        # then the pool has all 4 threads, and each was prepared once
        assert len(pool._threads) == 4
        assert sorted(prepared) == sorted(t.ident for t in pool._threads)
    finally:
        pool.shutdown()


def test_a_thread_that_cannot_be_prepared_is_reported_once_and_the_worker_serves(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    from django.db import OperationalError

    # given a database nobody can reach
    def unreachable() -> None:
        raise OperationalError("connection refused")

    monkeypatch.setattr(webworker, "prepare_thread", unreachable)
    monkeypatch.setattr(webworker, "connect_producers", lambda count: None)
    pool = ThreadPoolExecutor(max_workers=3)
    try:
        # when: then the threads are started all the same, and one warning says why
        webworker.start_threads(pool, 3)
        assert len(pool._threads) == 3
        warnings = [r.getMessage() for r in caplog.records if r.name == webworker.__name__]
        assert len(warnings) == 1
        assert "3 failure(s)" in warnings[0] and "connection refused" in warnings[0]
    finally:
        pool.shutdown()


def _map_cells(*names: str) -> None:
    from cells.models import CellMapping

    for name in names:  # the test's own cell databases: the mapping's URL is not read for them
        CellMapping.objects.get_or_create(name=name, defaults={"database_connection": f"{name}://"})


ALIASES = ("default", "cell0", "cell1", "cell2")


def _prepared_in_a_new_thread() -> dict[str, Any]:
    """What ``prepare_thread`` left in a thread of its own: the error it raised, the aliases whose
    connections were open, the thread's Celery reply id and result backend, the statements it sent
    each database."""
    from cloudcore.celery import app

    seen: dict[str, Any] = {"sql": {alias: [] for alias in ALIASES}}

    def recorded(alias: str) -> Any:
        def wrapper(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
            seen["sql"][alias].append(sql)
            return execute(sql, params, many, context)
        return wrapper

    def run() -> None:
        try:
            with contextlib.ExitStack() as stack:
                for alias in ALIASES:
                    stack.enter_context(connections[alias].execute_wrapper(recorded(alias)))
                webworker.prepare_thread()
        except Exception as exc:  # noqa: BLE001 - the caller asserts it
            seen["error"] = exc
        seen["open"] = {alias for alias in ALIASES
                        if connections[alias].connection is not None}
        seen["oid"], seen["backend"] = getattr(app._local, "oid", None), app._backend
        connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    return seen


@pytest.mark.django_db(transaction=True, databases=["default", "cell0", "cell1", "cell2"])
def test_prepare_thread_opens_the_api_and_cell_databases_and_the_result_backend_in_its_thread() -> None:
    # given two mapped cells
    _map_cells("cell1", "cell2")
    # when a thread of its own is prepared
    seen = _prepared_in_a_new_thread()
    # then it had the API database's and the mapped cells' connections open, and its reply id and
    # result backend made
    assert "error" not in seen
    assert {"default", "cell1", "cell2"} <= seen["open"]
    assert seen["oid"] and seen["backend"] is not None


@pytest.mark.django_db(transaction=True, databases=["default", "cell0", "cell1", "cell2"])
def test_a_postgresql_backend_has_every_table_of_its_database_planned_before_the_first_request(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from cloudcore import webworker

    monkeypatch.setattr(webworker, "_warm_up_queries", {})  # (a new process)
    # given two mapped cells
    _map_cells("cell1", "cell2")
    # when a thread of its own is prepared, then another
    seen, again = _prepared_in_a_new_thread(), _prepared_in_a_new_thread()
    assert "error" not in seen and "error" not in again
    for alias in ("default", "cell1", "cell2"):
        warming = [sql for sql in seen["sql"][alias] if "WHERE false" in sql]
        if connections[alias].vendor == "postgresql":
            # then each PostgreSQL database was sent one query naming each of its tables, which reads no row
            (query,) = warming
            named = re.findall(r'SELECT \* FROM "([^"]+)" WHERE false', query)
            assert sorted(named) == sorted(connections[alias].introspection.table_names())
            assert "servers_buildrequest" in named or "servers_instance" in named
            # and the second thread sent that query without listing the tables (once in the process)
            assert [sql for sql in again["sql"][alias] if "WHERE false" in sql] == [query]
            assert [sum("pg_class" in sql for sql in thread["sql"][alias]) for thread in (seen, again)] == [1, 0]
        else:
            # and SQLite none (it has no backend whose caches a first request would fill)
            assert warming == []


@pytest.mark.django_db(transaction=True, databases=["default", "cell0", "cell1", "cell2"])
def test_a_cell_database_that_cannot_be_reached_leaves_the_others_open_and_is_raised(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from django.db import OperationalError

    # given cell1 and cell2 mapped, the database of the cell tried first down (its connections refused)
    _map_cells("cell1", "cell2")
    wrapper = type(connections["cell2"])
    connect = wrapper.ensure_connection
    down: list[str] = []

    def refused(self: Any) -> None:
        if self.alias in ("cell1", "cell2") and down in ([], [self.alias]):
            down[:] = [self.alias]
            raise OperationalError("connection refused")
        connect(self)

    monkeypatch.setattr(wrapper, "ensure_connection", refused)
    # when a thread is prepared
    seen = _prepared_in_a_new_thread()
    # then the error is that cell's, and the API database and the other cell were opened all the same
    assert isinstance(seen["error"], OperationalError) and "refused" in str(seen["error"])
    (other,) = {"cell1", "cell2"} - set(down)
    assert {"default", other} <= seen["open"] and down[0] not in seen["open"]


def test_connect_producers_leaves_that_many_connected_producers_in_the_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    from celery import Celery

    import cloudcore.celery

    # given a Celery app whose producer pool holds at most 3
    app = Celery("prepared", broker="memory://", set_as_current=False)
    app.conf.task_default_queue = "conductor"
    app.conf.broker_pool_limit = 3
    monkeypatch.setattr(cloudcore.celery, "app", app)
    # when 5 are asked for (more than the pool holds: the pool's limit, not a wait)
    webworker.connect_producers(5)
    # then the next 3 producers taken at once are connected, each with the queue declared
    with app.producer_or_acquire() as a, app.producer_or_acquire() as b, app.producer_or_acquire() as c:
        assert len({id(a), id(b), id(c)}) == 3
        for producer in (a, b, c):
            assert producer.connection.connected
            assert hash(app.amqp.queues["conductor"]) in producer.connection.declared_entities
