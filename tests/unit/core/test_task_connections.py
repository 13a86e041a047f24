"""A worker's database connections around its tasks: closed as Django closes them around a request
(past ``CONN_MAX_AGE`` or unusable), not all of them after every task as Celery's Django fixup
would (the conductor keeps its connections between tasks when ``CLOUDCORE_DB_CONN_MAX_AGE`` says so)."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from celery.fixups.django import DjangoWorkerFixup
from celery.signals import task_postrun, task_prerun
from django.db import connections

from cells.dburl import database_config, sqlite_url
from cloudcore.celery import app


@pytest.fixture
def file_database(tmp_path: Path, django_db_blocker: Any, settings: Any) -> Any:
    """A connection alias of the default connection handler to a database file of its own."""
    alias = "task_connections"
    settings.DATABASES = {**settings.DATABASES, alias: database_config(sqlite_url(tmp_path / "db.sqlite3"))}
    connections.settings[alias] = connections.configure_settings(settings.DATABASES)[alias]
    with django_db_blocker.unblock():
        yield alias
        connections[alias].close()
    del connections.settings[alias]
    delattr(connections._connections, alias)


class _Task:
    """What the signals' receivers read of the task that runs."""

    def __init__(self, *, eager: bool) -> None:
        self.request = SimpleNamespace(is_eager=eager)


def _task(*, eager: bool) -> Any:
    return _Task(eager=eager)


def test_celerys_fixup_does_not_close_every_connection_after_each_task(monkeypatch: Any) -> None:
    fixup = DjangoWorkerFixup(app)
    closed: list[int] = []
    monkeypatch.setattr(fixup, "_close_database", lambda *a, **k: closed.append(1))
    for _ in range(1000):
        fixup.close_database()
    assert closed == []


@pytest.mark.parametrize(("max_age", "kept"), [(300, True), (0, False)])
def test_a_tasks_connection_is_kept_within_conn_max_age(file_database: str, max_age: int, kept: bool) -> None:
    conn = connections[file_database]
    conn.settings_dict["CONN_MAX_AGE"] = max_age
    conn.close()
    task_prerun.send(sender=_task(eager=False))
    conn.cursor().execute("SELECT 1")  # the task uses the database
    opened = conn.connection
    task_postrun.send(sender=_task(eager=False))
    task_prerun.send(sender=_task(eager=False))  # the next task of the thread
    assert (conn.connection is opened) is kept


def test_eager_tasks_leave_the_connections_alone(file_database: str) -> None:
    conn = connections[file_database]
    conn.settings_dict["CONN_MAX_AGE"] = 0
    conn.cursor().execute("SELECT 1")
    opened = conn.connection
    task_postrun.send(sender=_task(eager=True))
    assert conn.connection is opened
