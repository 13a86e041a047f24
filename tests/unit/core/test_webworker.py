"""The web worker's threads are started and prepared before it serves (``cloudcore.webworker``)."""
from __future__ import annotations

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


@pytest.mark.django_db(transaction=True, databases=["default", "cell0", "cell1", "cell2"])
def test_prepare_thread_opens_the_api_and_cell_databases_and_the_result_backend_in_its_thread() -> None:
    from cells.models import CellMapping
    from cloudcore.celery import app

    # given two mapped cells (their databases the test's cell1 and cell2)
    for name in ("cell1", "cell2"):
        CellMapping.objects.get_or_create(name=name, defaults={"database_connection": f"{name}://"})
    seen: dict[str, Any] = {}

    def in_a_new_thread() -> None:
        try:
            webworker.prepare_thread()
        except Exception as exc:  # noqa: BLE001 - asserted below
            seen["error"] = exc
        seen["open"] = {alias for alias in ("default", "cell0", "cell1", "cell2")
                        if connections[alias].connection is not None}
        seen["oid"] = app._local.oid
        seen["backend"] = app._backend
        connections.close_all()

    # when a thread of its own is prepared
    thread = threading.Thread(target=in_a_new_thread)
    thread.start()
    thread.join()
    # then it had the API database's and the mapped cells' connections open, and its reply id and
    # result backend made
    assert "error" not in seen
    assert {"default", "cell1", "cell2"} <= seen["open"]
    assert seen["oid"] and seen["backend"] is not None


@pytest.mark.django_db(transaction=True, databases=["default", "cell0", "cell1", "cell2"])
def test_a_cell_database_that_cannot_be_reached_leaves_the_others_open_and_is_raised(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from django.db import OperationalError

    from cells.models import CellMapping

    # given cell1 and cell2 mapped, cell2's database down (its connections refused)
    for name in ("cell1", "cell2"):
        CellMapping.objects.get_or_create(name=name, defaults={"database_connection": f"{name}://"})
    wrapper = type(connections["cell2"])
    connect = wrapper.ensure_connection

    def refused(self: Any) -> None:
        if self.alias == "cell2":
            raise OperationalError("connection refused")
        connect(self)

    monkeypatch.setattr(wrapper, "ensure_connection", refused)
    seen: dict[str, Any] = {}

    def in_a_new_thread() -> None:
        try:
            webworker.prepare_thread()
        except Exception as exc:  # noqa: BLE001 - asserted below
            seen["error"] = exc
        seen["open"] = {alias for alias in ("default", "cell1", "cell2") if connections[alias].connection is not None}
        connections.close_all()

    # when a thread is prepared
    thread = threading.Thread(target=in_a_new_thread)
    thread.start()
    thread.join()
    # then the error is cell2's, and the API database and cell1 were opened all the same
    assert isinstance(seen["error"], OperationalError) and "refused" in str(seen["error"])
    assert seen["open"] == {"default", "cell1"}


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
