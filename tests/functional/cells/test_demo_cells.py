"""The demo cells' part of run_cloud: its warning before it starts the processes (the PostgreSQL
server of the cloud's databases accepts fewer connections than the processes may keep:
``cells.demo.warnings``), and the cells' databases made on PostgreSQL when missing."""
from __future__ import annotations

from typing import Any

import pytest
from django.db import connections

from cells import demo as cells_demo
from cloudcore.core.demo import DemoProcess, web_process
from compute import demo as compute_demo
from servers import demo as servers_demo

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])


def _holding(count: int) -> DemoProcess:
    return DemoProcess("p", [], connections=lambda _cells: count)


def test_processes_past_what_the_server_accepts_are_warned_of(cells: dict) -> None:
    if connections["default"].vendor != "postgresql":
        pytest.skip("SQLite has no connection limit")
    with connections["default"].cursor() as cursor:
        cursor.execute("SHOW max_connections")
        most = int(cursor.fetchone()[0])
    (said,) = cells_demo.warnings([_holding(most - 10), _holding(10)])  # one server for all four databases
    assert said.startswith(f"the processes may hold up to {most} connections to the PostgreSQL server at ")
    assert f"(max_connections {most}, " in said and "CLOUDCORE_WEB_THREADS" in said
    assert cells_demo.warnings([_holding(5), _holding(5)]) == []


def test_sqlite_databases_are_not_counted(cells: dict) -> None:
    if connections["default"].vendor != "sqlite":
        pytest.skip("the databases are PostgreSQL's")
    assert cells_demo.warnings([_holding(10**6)]) == []


def test_what_the_demo_processes_may_hold(cells: dict, settings: Any) -> None:
    settings.WEB_WORKERS, settings.WEB_THREADS, settings.CELL_SCATTER_THREADS = 2, 8, 2
    settings.CONDUCTOR_CONCURRENCY, settings.COMPUTE_CONCURRENCY = 4, 8
    # each web thread to the API database and 3 cells', and 2 threads per cell for the cells at once
    assert web_process("127.0.0.1:8000", {}).connections(3) == 2 * (8 * 4 + 2 * 3)
    conductor = next(p for p in servers_demo.processes({}) if p.name == "conductor")
    assert conductor.connections(3) == 4 * 4 + 2 * 3
    hosts = compute_demo.processes({})
    assert hosts and all(host.connections(3) == 8 + 2 for host in hosts)



@pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"], transaction=True)
def test_a_server_that_does_not_answer_is_said_and_not_fatal(cells: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    if connections["default"].vendor != "postgresql":
        pytest.skip("SQLite has no connection limit")
    # cell2's database on a port where nothing listens (the connection made again there)
    connections["cell2"].close()
    monkeypatch.setitem(connections["cell2"].settings_dict, "PORT", 1)
    try:
        said = cells_demo.warnings([_holding(1)])
    finally:
        connections["cell2"].close()
    assert len(said) == 1 and said[0].startswith("could not ask the PostgreSQL server at 127.0.0.1:1 how many "), said


@pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"], transaction=True)
def test_the_demo_creates_a_missing_cell_database_on_postgresql() -> None:
    """``make run`` with the API database on PostgreSQL: the demo cells' databases are created next to
    it when missing (a traceback "database ... does not exist" before)."""
    if connections["default"].vendor != "postgresql":
        pytest.skip("the demo's SQLite cells are files")
    config = connections["default"].settings_dict
    name = f"{config['NAME']}_democell"
    url = f"postgres://{config['USER']}@{config['HOST']}:{config['PORT']}/{name}"
    said: list[str] = []
    try:
        cells_demo.ensure_database(url, said.append)
        cells_demo.ensure_database(url, said.append)  # there now: nothing done
        with connections["default"].cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_database WHERE datname = %s", [name])
            assert cursor.fetchone() == (1,)
        assert said == [f"created database {name}"]
    finally:
        with connections["default"].cursor() as cursor:
            cursor.execute(f"DROP DATABASE IF EXISTS {name}")
