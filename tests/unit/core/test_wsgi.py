"""Loading the WSGI application imports what the first request would."""
from __future__ import annotations

from typing import Any

import pytest
from django.urls import clear_url_caches, get_resolver

from cloudcore import wsgi
from cloudcore.core import policy


def test_warm_up_loads_policies_urlconf_and_result_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    # given: a process that has not discovered the policies yet, and no URLconf loaded
    monkeypatch.setattr(policy, "_DISCOVERED", False)
    clear_url_caches()
    # when
    wsgi.warm_up()
    # then: rules are known without another discovery, and the resolver is populated
    assert policy._DISCOVERED
    assert "os_compute_api:servers:create" in {rule.name for rule in policy._REGISTRY.values()}
    assert "url_patterns" in get_resolver().__dict__  # the cached property has been computed
    assert wsgi.celery_app._local.backend is wsgi.celery_app.backend  # made on this thread, kept


def test_warm_up_does_what_the_first_cast_would(monkeypatch: pytest.MonkeyPatch) -> None:
    from celery import Celery

    # given: a Celery app as a gunicorn worker has it before its first request (a task registered,
    # the app not finalized, no broker connection opened)
    app = Celery("warm", broker="memory://", set_as_current=False)
    app.conf.task_default_queue = "conductor"

    @app.task(name="warm.noop", shared=False)
    def noop() -> None:
        pass

    monkeypatch.setattr(wsgi, "celery_app", app)
    assert not app.finalized
    # when
    wsgi.warm_up()
    # then: its tasks are bound, its message sender made, and the producer a cast acquires next
    # holds an open connection on which the default queue is already declared
    assert app.finalized and "warm.noop" in app.tasks
    assert "send_task_message" in app.amqp.__dict__
    with app.producer_or_acquire() as producer:
        assert producer.connection.connected
        assert hash(app.amqp.queues["conductor"]) in producer.connection.declared_entities


def test_warm_up_leaves_an_unreachable_broker_to_the_first_cast(monkeypatch: pytest.MonkeyPatch,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    from celery import Celery

    # given a broker nobody listens on
    app = Celery("warm", broker="redis://127.0.0.1:1/0", set_as_current=False)
    app.conf.broker_connection_timeout = 0.5
    monkeypatch.setattr(wsgi, "celery_app", app)
    # when the application loads: then it loads, and says why the broker was not reached
    wsgi.warm_up()
    assert app.finalized
    assert any("broker not reached" in record.getMessage() for record in caplog.records)


def test_the_web_and_worker_processes_hand_the_gil_over_at_the_configured_interval(settings: Any) -> None:
    import importlib
    import sys

    from celery.signals import worker_init

    default = sys.getswitchinterval()
    settings.GIL_SWITCH_INTERVAL_MS = 0.5
    try:
        importlib.reload(wsgi)  # what a gunicorn worker does when it loads the application
        assert sys.getswitchinterval() == pytest.approx(0.0005)
        sys.setswitchinterval(default)
        worker_init.send(sender=None)  # a Celery worker starting
        assert sys.getswitchinterval() == pytest.approx(0.0005)
    finally:
        sys.setswitchinterval(default)


@pytest.mark.parametrize(("configured", "own", "expected"), [(5, 0, 5), (5, 10, None), (0, 0, None)])
def test_a_worker_lowers_its_priority_to_the_configured_niceness(settings: Any, monkeypatch: pytest.MonkeyPatch,
                                                                 configured: int, own: int,
                                                                 expected: int | None) -> None:
    import os

    from celery.signals import worker_init

    # given a configured niceness and the niceness the worker was started with
    settings.WORKER_NICE = configured
    set_to: list[int] = []
    monkeypatch.setattr(os, "getpriority", lambda which, who: own)
    monkeypatch.setattr(os, "setpriority", lambda which, who, value: set_to.append(value))
    # when a Celery worker starts
    worker_init.send(sender=None)
    # then it is lowered to the configured niceness, never raised back above its own
    assert set_to == ([] if expected is None else [expected])


def _worker_nice(tmp_path: Any, **env: str) -> str:
    """``WORKER_NICE`` as a process started with ``env`` (and no database of the suite's) loads it."""
    from tests.settings_process import settings_loaded

    loaded = settings_loaded("print(settings.WORKER_NICE)", {"CLOUDCORE_VAR_DIR": str(tmp_path), **env},
                             own_only=True)
    assert loaded.returncode == 0, loaded.stderr
    return loaded.stdout.strip()


@pytest.mark.parametrize(("env", "expected"), [
    ({}, "0"),
    ({"CLOUDCORE_DATABASE_URL": "postgres://cloudcore@db.example/api"}, "10"),
    ({"CLOUDCORE_COMPUTE_CELL": "c1", "CLOUDCORE_COMPUTE_CELL_DATABASE_URL": "postgres://cloudcore@db.example/c1"},
     "10"),
    ({"CLOUDCORE_COMPUTE_CELL": "c1", "CLOUDCORE_COMPUTE_CELL_DATABASE_URL": "sqlite:///{var}/c1.sqlite3"}, "0"),
    ({"CLOUDCORE_DATABASE_URL": "postgres://cloudcore@db.example/api", "CLOUDCORE_WORKER_NICE": "0"}, "0"),
    ({"CLOUDCORE_WORKER_NICE": "5"}, "5"),
])
def test_the_workers_niceness_defaults_to_10_on_postgresql_and_0_on_sqlite(tmp_path: Any, env: dict[str, str],
                                                                         expected: str) -> None:
    # given a worker's database (the API database, or an isolated compute host's cell database)
    # when its settings load with no niceness set, or with one set
    # then a worker on PostgreSQL yields the CPU to the web and one on SQLite does not (a niced worker
    # would hold SQLite's one write lock while the web waits), and a niceness set is used as it is
    assert _worker_nice(tmp_path, **{k: v.format(var=tmp_path) for k, v in env.items()}) == expected


@pytest.mark.parametrize("freeze", [True, False])
def test_the_web_and_worker_processes_freeze_what_start_up_left_out_of_full_collections(
        settings: Any, freeze: bool) -> None:
    import gc
    import importlib

    from celery.signals import worker_init

    settings.GC_FREEZE = freeze
    gc.unfreeze()
    try:
        # when a gunicorn worker loads the application
        importlib.reload(wsgi)
        # then every object start-up left (the test process's: tens of thousands) is frozen, or none
        frozen_by_web = gc.get_freeze_count()
        gc.unfreeze()
        # and likewise when a Celery worker starts
        worker_init.send(sender=None)
        frozen_by_worker = gc.get_freeze_count()
    finally:
        gc.unfreeze()
    if freeze:
        assert frozen_by_web > 20_000 and frozen_by_worker > 20_000
    else:
        assert frozen_by_web == frozen_by_worker == 0
