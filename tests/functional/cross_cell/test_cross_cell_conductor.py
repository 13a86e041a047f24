"""The conductor drives a cross-cell move (issue 16, item 3): it calls each compute host's step
synchronously and does the cross-cell and API-database work itself. Here: the conductor, not a
compute host, flips the instance mapping; the destination refuses a volume it cannot connect
before the source guest is touched; a destination that never answers times out after
``LONG_RPC_TIMEOUT`` and the move is rolled back.
"""
from __future__ import annotations

import time
from typing import Any

import pytest

from cells.context import target_cell
from cells.isolation import service_side
from cells.models import InstanceMapping
from servers.models import BlockDeviceMapping, InstanceFault, Migration
from tests.cloud import Cloud
from tests.functional.cross_cell.test_cross_cell_scenarios import (  # noqa: F401 - xcloud is a fixture
    assert_rolled_back,
    boot,
    live_attachments,
    resize_onto_compute3_only,
    resize_to_cell2,
    xcloud,
)

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])


def guest_id(cloud: Cloud, server_id: str) -> int:
    """The running domain's id: a guest powered off and on again gets a new one."""
    domain = cloud.domain(server_id)
    assert domain is not None and domain.isActive()
    return int(domain.ID())


def fault_messages(cloud: Cloud, server_id: str) -> list[str]:
    with target_cell(cloud.cells["cell1"]):
        return list(InstanceFault.objects.filter(instance_uuid=server_id).values_list("message", flat=True))


def test_the_conductor_flips_the_mapping_after_the_destination_answered(xcloud: Cloud) -> None:  # noqa: F811
    import compute.cross_cell

    client = xcloud.member()
    server = boot(xcloud, client)
    sid = server["id"]
    # given the destination hosts record where the mapping points while they spawn the copy
    seen: list[str] = []
    for host in ("compute3", "compute4"):
        driver = xcloud.driver(host)

        def spawn(*, _spawn: Any = driver.spawn, **kw: Any) -> None:
            with service_side():  # the test's own look, not the compute host's
                seen.append(InstanceMapping.objects.get(instance_uuid=sid).cell.name)
            _spawn(**kw)

        driver.spawn = spawn
    # when resized into cell2
    resize_to_cell2(xcloud, client, sid)
    # then the destination's finish ran with the mapping still on the source; the conductor
    # switched it to the target once the destination had answered
    assert seen == ["cell1"]
    assert InstanceMapping.objects.get(instance_uuid=sid).cell.name == "cell2"
    # and the hosts' steps have no access to the mapping or the other cell at all
    assert not {"InstanceMapping", "CellMapping", "target_cell"} & set(vars(compute.cross_cell))


def test_prep_at_destination_refuses_a_volume_it_cannot_connect_before_the_source_is_touched(
        xcloud: Cloud) -> None:  # noqa: F811
    from volumes.models import Volume

    client = xcloud.member()
    server = boot(xcloud, client, volume_backed=True)
    sid, source_host = server["id"], xcloud.instance(server["id"]).host
    with target_cell(xcloud.cells["cell1"]):
        root = BlockDeviceMapping.objects.get(instance_uuid=sid).volume_id
    before = guest_id(xcloud, sid)
    # given the destination cannot reach the server's volume
    xcloud.driver("compute3").fail_volume_connects = 1
    # when resized with compute3 the only host open
    resize_onto_compute3_only(xcloud, client, sid)
    # then the move was refused at the destination and rolled back; the check was made
    assert xcloud.driver("compute3").fail_volume_connects == 0
    assert_rolled_back(xcloud, client, sid, source_host, status="ACTIVE")
    assert any("cannot be connected to host compute3" in m for m in fault_messages(xcloud, sid))
    # the source guest was never powered off, the volume is attached to the source host only
    assert guest_id(xcloud, sid) == before
    assert [(a.attach_status, a.attached_host) for a in live_attachments(root)] == [("attached", source_host)]
    assert Volume.objects.get(pk=root).status == "in-use"


@pytest.fixture
def queued(settings: Any) -> Any:
    """Tasks go through kombu's in-memory broker with results in memory, and no worker runs: the
    test takes the conductor's message off its queue and runs it, as the conductor worker would;
    nobody consumes ``compute.<host>``."""
    from cloudcore.celery import app

    saved = {k: app.conf[k] for k in ("broker_url", "task_always_eager", "result_backend")}
    saved_pool, saved_producers = app._pool, app.amqp._producer_pool
    saved_backend, saved_local = app._backend_cache, getattr(app._local, "backend", None)
    settings.CELERY_TASK_ALWAYS_EAGER = False
    app.conf.update(broker_url="memory://", task_always_eager=False, result_backend="cache+memory://")
    app._pool, app.amqp._producer_pool, app._backend_cache, app._local.backend = None, None, None, None
    try:
        yield app
    finally:
        app.conf.update(saved)
        app._pool, app.amqp._producer_pool = saved_pool, saved_producers
        app._backend_cache, app._local.backend = saved_backend, saved_local


def run_next_conductor_task(app: Any) -> None:
    with app.connection_for_read() as conn:
        queue = conn.SimpleQueue("conductor")
        message = queue.get(timeout=1)
        args, kwargs, _embed = message.decode()
        message.ack()
        queue.close()
    app.tasks[message.headers["task"]].apply(args=args, kwargs=kwargs)


def waiting(app: Any, queue_name: str) -> list[dict[str, Any]]:
    with app.connection_for_read() as conn:
        queue = conn.SimpleQueue(queue_name)
        found = []
        while True:
            try:
                message = queue.get(block=False)
            except queue.Empty:
                break
            found.append(message.headers)
        queue.close()
    return found


def test_a_destination_that_never_answers_times_out_and_the_move_is_rolled_back(
        xcloud: Cloud, settings: Any, queued: Any) -> None:  # noqa: F811
    client = xcloud.member()
    settings.CELERY_TASK_ALWAYS_EAGER = True
    queued.conf.task_always_eager = True
    server = boot(xcloud, client)  # built the usual way
    queued.conf.task_always_eager = False
    sid, source_host = server["id"], xcloud.instance(server["id"]).host
    before = guest_id(xcloud, sid)
    settings.LONG_RPC_TIMEOUT = 1
    # when resized with compute3 the only host open, and compute3's worker never answers
    started: list[float] = []

    def conductor() -> None:
        started.append(time.monotonic())
        run_next_conductor_task(queued)

    resize_onto_compute3_only(xcloud, client, sid, while_closed=conductor)
    waited = time.monotonic() - started[0]
    # then the conductor gave up after LONG_RPC_TIMEOUT and rolled the move back
    assert 1 <= waited < 10
    assert_rolled_back(xcloud, client, sid, source_host, status="ACTIVE")
    assert any("compute3 did not answer cross_cell_prep_at_dest within 1 seconds" in m
               for m in fault_messages(xcloud, sid))
    assert guest_id(xcloud, sid) == before
    with target_cell(xcloud.cells["cell1"]):
        assert Migration.objects.get(instance_uuid=sid).status == "error"
    # the unanswered call still waits on compute3's queue, and expires: a late worker drops it
    (call,) = waiting(queued, "compute.compute3")
    assert call["task"] == "compute.call_operation" and call["expires"]
