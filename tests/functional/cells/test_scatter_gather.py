"""Scatter-gather over real cells: a cell whose database cannot be reached, and a cell that does
not answer in time, are reported as failed while the other cells still answer; each cell's thread
and connections are kept between calls."""
from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from django.db import connections

from cells import registry, scatter
from cells.models import CellMapping
from cells.scatter import CellFailure, failed, scatter_gather
from servers.models import Instance
from tests.factories import InstanceFactory

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"], transaction=True)


def test_unreachable_cell_database_is_reported_the_others_answer(cells: dict, settings: Any) -> None:
    settings.CELL_SCATTER_INLINE = False  # real threads, real per-cell connections
    InstanceFactory(cell=cells["cell1"])
    dead = CellMapping.objects.create(name="dead", database_connection="postgres://nobody@127.0.0.1:1/nowhere")
    results = scatter_gather(lambda _cell: Instance.objects.count(),
                             [cells["cell1"], cells["cell2"], dead], timeout=30)
    assert results[cells["cell1"].uuid] == 1 and results[cells["cell2"].uuid] == 0
    assert failed(results[dead.uuid]) and results[dead.uuid].reason == "error"


def test_cell_that_does_not_answer_in_time_is_a_timeout(cells: dict, settings: Any) -> None:
    settings.CELL_SCATTER_INLINE = False

    def slow_in_cell2(cell: CellMapping) -> str:
        if cell.name == "cell2":
            time.sleep(3)
        return cell.name or ""

    started = time.monotonic()
    results = scatter_gather(slow_in_cell2, [cells["cell1"], cells["cell2"]], timeout=0.5)
    assert time.monotonic() - started < 2.5  # the caller is not held by the slow cell
    assert results[cells["cell1"].uuid] == "cell1"
    outcome = results[cells["cell2"].uuid]
    assert isinstance(outcome, CellFailure) and outcome.timed_out


@pytest.fixture
def kept_threads(settings: Any) -> Any:
    """Real threads; each test starts with no cell threads and ends with theirs stopped (their
    connections closed)."""
    settings.CELL_SCATTER_INLINE = False
    scatter.shutdown()
    yield settings
    scatter.shutdown()


def _connection_in(cell: CellMapping) -> tuple[int, Any]:
    """This thread, and the DB-API connection it holds to ``cell``'s database after a query."""
    alias = registry.alias_for(cell)
    assert Instance.objects.count() >= 0
    return threading.get_ident(), connections[alias].connection


def test_a_cell_keeps_its_thread_and_its_connection_between_calls(cells: dict, kept_threads: Any) -> None:
    """Kept as a request's are, under CONN_MAX_AGE: two calls in a row use the cell's one thread and
    one connection (per call, a thread and a connection were made: on PostgreSQL a backend forked)."""
    aliases = [registry.alias_for(cells[name]) for name in ("cell1", "cell2")]
    kept_age = {alias: connections.settings[alias]["CONN_MAX_AGE"] for alias in aliases}
    for alias in aliases:
        connections.settings[alias]["CONN_MAX_AGE"] = 300
    try:
        first = scatter_gather(_connection_in, [cells["cell1"], cells["cell2"]])
        second = scatter_gather(_connection_in, [cells["cell1"], cells["cell2"]])
    finally:
        for alias, age in kept_age.items():
            connections.settings[alias]["CONN_MAX_AGE"] = age
    for name in ("cell1", "cell2"):
        uuid = cells[name].uuid
        (thread_1, connection_1), (thread_2, connection_2) = first[uuid], second[uuid]
        assert thread_1 == thread_2 != threading.get_ident()
        assert connection_1 is not None and connection_1 is connection_2
    assert first[cells["cell1"].uuid][0] != first[cells["cell2"].uuid][0]  # a thread per cell


def test_without_a_connection_age_each_call_connects_again(cells: dict, kept_threads: Any) -> None:
    alias = registry.alias_for(cells["cell1"])
    assert connections.settings[alias]["CONN_MAX_AGE"] == 0
    if connections[alias].vendor == "sqlite" and connections[alias].is_in_memory_db():
        pytest.skip("Django never closes a connection to an in-memory SQLite database")
    first = scatter_gather(_connection_in, [cells["cell1"]])[cells["cell1"].uuid]
    second = scatter_gather(_connection_in, [cells["cell1"]])[cells["cell1"].uuid]
    assert first[0] == second[0] and first[1] is not second[1]


def test_calls_queued_behind_a_cell_that_does_not_answer_time_out_and_never_run(cells: dict,
                                                                                 kept_threads: Any) -> None:
    """The cell's threads all held by a call that does not end: the next call in that cell waits
    in its queue, is reported as a timeout, and is dropped; the other cell answers both times."""
    kept_threads.CELL_SCATTER_THREADS = 1
    release, ran = threading.Event(), []

    def held_in_cell2(cell: CellMapping) -> str:
        if cell.name == "cell2":
            release.wait(10)
        return cell.name or ""

    def counted(cell: CellMapping) -> str:
        ran.append(cell.name)
        return cell.name or ""

    both = [cells["cell1"], cells["cell2"]]
    first = scatter_gather(held_in_cell2, both, timeout=0.3)
    second = scatter_gather(counted, both, timeout=0.3)
    release.set()
    scatter.shutdown()  # waits for the held call to end; a queued call would have run by then
    assert first[cells["cell1"].uuid] == "cell1" and second[cells["cell1"].uuid] == "cell1"
    for outcome in (first[cells["cell2"].uuid], second[cells["cell2"].uuid]):
        assert isinstance(outcome, CellFailure) and outcome.timed_out
    assert ran == ["cell1"]
