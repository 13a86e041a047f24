"""The build through real Celery queues (not eager): the API enqueues on ``conductor``, a worker runs
the conductor task, which casts to ``compute.<host>``; task arguments must survive JSON."""
from __future__ import annotations

import time

import pytest

ALL = ["default", "cell0", "cell1", "cell2"]


@pytest.fixture
def queued_worker(settings):
    """A solo Celery worker thread on kombu's memory transport consuming conductor and compute.* queues."""
    from celery.contrib.testing.worker import start_worker

    from cloudcore.celery import app

    saved = {k: app.conf[k] for k in ("broker_url", "task_always_eager", "result_backend")}
    saved_pool, saved_producers = app._pool, app.amqp._producer_pool
    settings.CELERY_TASK_ALWAYS_EAGER = False
    app.conf.update(broker_url="memory://", task_always_eager=False, result_backend=None)
    app._pool = None
    app.amqp._producer_pool = None
    queues = ["conductor", "compute.compute1", "compute.compute2", "compute.compute3", "compute.compute4"]
    try:
        with start_worker(app, pool="solo", perform_ping_check=False, queues=queues, shutdown_timeout=20):
            yield app
    finally:
        app.conf.update(saved)
        app._pool, app.amqp._producer_pool = saved_pool, saved_producers


@pytest.mark.slow
@pytest.mark.django_db(databases=ALL, transaction=True)
def test_build_through_the_conductor_and_compute_queues(cloud, queued_worker):
    client = cloud.member()
    server = cloud.create_server(client, "queued", networks="demo-net")
    deadline = time.monotonic() + 30
    status = None
    seen: list[str] = []
    while time.monotonic() < deadline:
        status = cloud.show(client, server["id"])["status"]
        seen.append(status)
        if status != "BUILD":
            break
        time.sleep(0.2)
    assert status == "ACTIVE", seen
    assert cloud.domain(server["id"]).isActive()
