"""Celery tasks of the servers app: IDs in, one service call (STYLE rule 10).

Queues: ``conductor`` for orchestration, ``compute.<host>`` for work on a host (the caller
passes ``queue=``).
"""
from __future__ import annotations

from typing import Any

from celery import shared_task

from cloudcore.core.context import RequestContext


@shared_task(name="servers.schedule_and_build_instances", queue="conductor", acks_late=True,
             time_limit=3600, soft_time_limit=3500)
def schedule_and_build_instances_task(*, ctx: dict[str, Any], instance_uuids: list[str],
                                      admin_pass: str | None = None) -> None:
    from .services.conductor_build import schedule_and_build_instances

    schedule_and_build_instances(RequestContext.from_dict(ctx), instance_uuids=instance_uuids,
                                 admin_pass=admin_pass)


@shared_task(name="servers.build_and_run_instance", acks_late=True, time_limit=3600, soft_time_limit=3500)
def build_and_run_instance_task(*, ctx: dict[str, Any], instance_uuid: str, cell_uuid: str,
                                admin_pass: str | None, alternates: list[dict[str, Any]], attempt: int = 1) -> None:
    from compute.build import build_and_run_instance

    build_and_run_instance(RequestContext.from_dict(ctx), instance_uuid=instance_uuid, cell_uuid=cell_uuid,
                           admin_pass=admin_pass, alternates=alternates, attempt=attempt)


@shared_task(name="servers.terminate_instance", acks_late=True, time_limit=1800)
def terminate_instance_task(*, ctx: dict[str, Any], instance_uuid: str, cell_uuid: str) -> None:
    from compute.terminate import terminate_instance

    terminate_instance(RequestContext.from_dict(ctx), instance_uuid=instance_uuid, cell_uuid=cell_uuid)


@shared_task(name="servers.compute_op", acks_late=True, time_limit=3600, soft_time_limit=3500)
def compute_op_task(*, ctx: dict[str, Any], op: str, instance_uuid: str, cell_uuid: str, **kwargs: Any) -> None:
    """A server action's work on its host (queue ``compute.<host>``): ``compute.ops``."""
    from compute.ops import run_op

    run_op(RequestContext.from_dict(ctx), op_name=op, instance_uuid=instance_uuid, cell_uuid=cell_uuid, **kwargs)


@shared_task(name="servers.unshelve_instance", queue="conductor", acks_late=True, time_limit=3600,
             soft_time_limit=3500)
def unshelve_instance_task(*, ctx: dict[str, Any], instance_uuid: str, cell_uuid: str, host: str | None) -> None:
    from .services.shelve import unshelve_instance

    unshelve_instance(RequestContext.from_dict(ctx), instance_uuid=instance_uuid, cell_uuid=cell_uuid, host=host)


@shared_task(name="servers.resize_instance", queue="conductor", acks_late=True, time_limit=3600,
             soft_time_limit=3500)
def resize_instance_task(*, ctx: dict[str, Any], instance_uuid: str, cell_uuid: str, migration_uuid: str,
                         host: str | None, allow_cross_cell: bool) -> None:
    from .services.resize import resize_instance

    resize_instance(RequestContext.from_dict(ctx), instance_uuid=instance_uuid, cell_uuid=cell_uuid,
                    migration_uuid=migration_uuid, host=host, allow_cross_cell=allow_cross_cell)


@shared_task(name="servers.periodic", queue="conductor", time_limit=600)
def servers_periodic_task() -> dict[str, int]:
    """Beat: offload shelved servers, confirm old resizes, reap stale task_states."""
    from . import periodic

    return {"offloaded": periodic.offload_shelved(), "confirmed": periodic.confirm_resizes(),
            "reaped": periodic.reap_stale_task_states()}


@shared_task(name="servers.destroy_guest", acks_late=True, time_limit=600)
def destroy_guest_task(*, host: str, instance_uuid: str) -> None:
    """Destroy a guest and its disks on ``host`` (queue ``compute.<host>``) when its rows are
    already gone, e.g. the source of a cross-cell resize confirmed by a delete in the API."""
    from types import SimpleNamespace

    from compute.drivers import driver_for

    driver_for(host).destroy(instance=SimpleNamespace(uuid=instance_uuid), destroy_disks=True)
