"""The conductor's RPC surface: one keyword-only function per workflow the API side casts to it.

Every cast to queue ``conductor`` goes through here, by Celery task name (``conductor.tasks``),
so the API services never import the conductor side. All are casts sent at once; the API side
sends them after its commit (``transaction.on_commit``).
"""
from __future__ import annotations

from typing import Any

from celery import current_app

from cloudcore.core.context import RequestContext

QUEUE = "conductor"

SCHEDULE_AND_BUILD_INSTANCES = "conductor.schedule_and_build_instances"
UNSHELVE_INSTANCE = "conductor.unshelve_instance"
RESIZE_INSTANCE = "conductor.resize_instance"
COMPUTE_HOST_STARTED = "conductor.compute_host_started"


def _send(task_name: str, **kwargs: Any) -> None:
    # By name: applied in-process when this process registered the task (eager tests), otherwise
    # sent to the broker.
    current_app.signature(task_name, kwargs=kwargs, queue=QUEUE).apply_async()


def schedule_and_build_instances(*, ctx: RequestContext, instance_uuids: list[str],
                                 admin_pass: str | None = None) -> None:
    _send(SCHEDULE_AND_BUILD_INSTANCES, ctx=ctx.to_dict(), instance_uuids=instance_uuids, admin_pass=admin_pass)


def unshelve_instance(*, ctx: RequestContext, instance_uuid: str, cell_uuid: str, host: str | None) -> None:
    _send(UNSHELVE_INSTANCE, ctx=ctx.to_dict(), instance_uuid=instance_uuid, cell_uuid=cell_uuid, host=host)


def resize_instance(*, ctx: RequestContext, instance_uuid: str, cell_uuid: str, migration_uuid: str,
                    host: str | None, allow_cross_cell: bool) -> None:
    _send(RESIZE_INSTANCE, ctx=ctx.to_dict(), instance_uuid=instance_uuid, cell_uuid=cell_uuid,
          migration_uuid=migration_uuid, host=host, allow_cross_cell=allow_cross_cell)


def compute_host_started(*, host: str, cell_uuid: str) -> None:
    """A compute host registered itself in its cell and in placement: the conductor maps it (the
    compute never writes the API database)."""
    _send(COMPUTE_HOST_STARTED, host=host, cell_uuid=cell_uuid)
