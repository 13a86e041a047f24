"""Celery tasks of a compute host (queue ``compute.<host>``, chosen by ``compute.rpc``): ids in,
one call of the compute side (STYLE rule 10). Only ``compute.rpc`` sends them, by name."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from celery import shared_task
from django.conf import settings

from cells.context import resolve_cell
from cells.isolation import IsolationViolation, agent_cell, compute_agent
from cloudcore.core.context import RequestContext

from . import rpc
from .build import build_and_run_instance
from .drivers import driver_for
from .firewall import refresh_port_filters
from .image_cache import cache_images
from .ops import run_op
from .terminate import terminate_instance

if TYPE_CHECKING:
    from cells.models import CellMapping

#: the cell of each host this process serves, by the cell's uuid: the mapping ``manage.py compute``
#: resolved at start-up (its heartbeat targets that one for the process's life too)
_served_cells: dict[str, CellMapping] = {}


def serve_cell(cell: CellMapping) -> None:
    """This process serves a host of ``cell``: its tasks for that cell are run as its compute agent
    without reading the cell's mapping from the API database again (a read and, on PostgreSQL, the
    API connection's health check per task, where a compute agent reads no API database)."""
    _served_cells[str(cell.uuid)] = cell


@contextmanager
def _as_agent(cell_uuid: str) -> Iterator[None]:
    """Run the task as the compute agent of ``cell_uuid`` (``cells.isolation``)."""
    agent = agent_cell()
    if agent is not None:
        if not agent.owns(cell_uuid):
            raise IsolationViolation(f"compute agent of cell {agent.uuid} got a task for cell {cell_uuid}")
        yield
    elif settings.COMPUTE_ISOLATION:
        with compute_agent(_served_cells.get(cell_uuid) or resolve_cell(cell_uuid)):
            yield
    else:
        yield


@shared_task(name=rpc.BUILD_AND_RUN_INSTANCE, acks_late=True, time_limit=3600, soft_time_limit=3500)
def build_and_run_instance_task(*, ctx: dict[str, Any], instance_uuid: str, cell_uuid: str,
                                admin_pass: str | None, alternates: list[dict[str, Any]], attempt: int = 1,
                                requested_networks: Any = "auto", security_groups: list[str] | None = None,
                                create_action_id: int | None = None, has_volumes: bool | None = None,
                                image: dict[str, Any] | None = None) -> None:
    with _as_agent(cell_uuid):
        build_and_run_instance(RequestContext.from_dict(ctx), instance_uuid=instance_uuid, cell_uuid=cell_uuid,
                               admin_pass=admin_pass, alternates=alternates, attempt=attempt,
                               requested_networks=requested_networks, security_groups=security_groups,
                               create_action_id=create_action_id, has_volumes=has_volumes, image=image)


@shared_task(name=rpc.TERMINATE_INSTANCE, acks_late=True, time_limit=1800)
def terminate_instance_task(*, ctx: dict[str, Any], instance_uuid: str, cell_uuid: str,
                            action: str = "delete") -> None:
    with _as_agent(cell_uuid):
        terminate_instance(RequestContext.from_dict(ctx), instance_uuid=instance_uuid, cell_uuid=cell_uuid,
                           action=action)


@shared_task(name=rpc.RUN_OPERATION, acks_late=True, time_limit=3600, soft_time_limit=3500)
def run_operation_task(*, ctx: dict[str, Any], op: str, instance_uuid: str, cell_uuid: str, **kwargs: Any) -> None:
    """A server action's work on its host: the operation ``op`` of ``compute.registry``."""
    with _as_agent(cell_uuid):
        run_op(RequestContext.from_dict(ctx), op_name=op, instance_uuid=instance_uuid, cell_uuid=cell_uuid, **kwargs)


# not acks_late: a call lost with its worker is not run again; its caller times out and rolls back
@shared_task(name=rpc.CALL_OPERATION, acks_late=False, ignore_result=False, time_limit=3600, soft_time_limit=3500)
def call_operation_task(*, ctx: dict[str, Any], op: str, instance_uuid: str, cell_uuid: str,
                        **kwargs: Any) -> dict[str, Any]:
    """An operation the conductor waits for (``compute.rpc._call``): its answer is the result."""
    with _as_agent(cell_uuid):
        answer = run_op(RequestContext.from_dict(ctx), op_name=op, instance_uuid=instance_uuid, cell_uuid=cell_uuid,
                        **kwargs)
    if answer is None:  # the server is gone here (deleted meanwhile)
        return {"failed": True, "message": f"Instance {instance_uuid} could not be found on this host's cell."}
    return dict(answer)


@shared_task(name=rpc.DESTROY_GUEST, acks_late=True, time_limit=600)
def destroy_guest_task(*, host: str, instance_uuid: str) -> None:
    """Destroy a guest and its disks on ``host`` when its rows are already gone, e.g. the source
    of a cross-cell resize confirmed by a delete in the API."""
    driver_for(host).destroy(instance=SimpleNamespace(uuid=instance_uuid), destroy_disks=True)


@shared_task(name=rpc.REFRESH_PORT_FILTERS, acks_late=True, time_limit=600)
def refresh_port_filters_task(*, host: str, instance_uuids: list[str]) -> None:
    """Redefine the port filters of these servers' guests on ``host`` (their security groups changed)."""
    refresh_port_filters(host=host, instance_uuids=instance_uuids)


# not acks_late: a call lost with its worker is not run again (its caller counts the host's images failed)
@shared_task(name=rpc.CACHE_IMAGES, acks_late=False, ignore_result=False, time_limit=3600, soft_time_limit=3500)
def cache_images_task(*, ctx: dict[str, Any], host: str, image_ids: list[str]) -> dict[str, str]:
    """An aggregate's image pre-caching on ``host`` (``compute.rpc.cache_images``): its answer is
    what became of each image. No row is read on the host, so no cell is named."""
    return cache_images(host=host, image_ids=image_ids)
