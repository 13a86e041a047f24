"""Cross-cell resize and cold migration (seed 5), with confirm and revert.

Gating (``cross_cell_allowed``): the policy ``compute:servers:resize:cross_cell`` (nobody by
default) and every nova-compute new enough; otherwise moves stay in their cell.

The conductor's workflow (``conductor.cross_cell.cross_cell_resize``) and the hosts' halves
(``compute.cross_cell``, whose ``cross_cell_failed`` undoes a move that failed on a host) share
the helpers here: the copies' rows, volume attachments, the mapping flip, a failed confirm or
revert (``finish_failed``).

Confirm (``cross_cell_confirm``) needs the source compute up (409), cleans the source guest and
hard-deletes the source cell's rows. Revert (``cross_cell_revert``) switches the mapping back to
the source first, then cleans the destination (target rows hard-deleted) and brings the source
guest back, powered on only if it was ACTIVE.
"""
from __future__ import annotations

import logging
from typing import Any

from django.utils import timezone

from cells.context import target_cell
from cells.models import CELL0_UUID, CellMapping, HostMapping, InstanceMapping
from cells.scatter import scatter_gather
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Conflict
from cloudcore.core.policy import can
from compute import rpc as compute_rpc
from hosts.models import Service
from hosts.services.servicegroup import service_is_up
from volumes import services as volumes

from ..choices import MigrationStatus, VmState
from ..models import (
    BlockDeviceMapping,
    Instance,
    InstanceAction,
    InstanceActionEvent,
    InstanceFault,
    Migration,
    Tag,
    VirtualInterface,
)
from . import actions
from .notify import notify_instance

log = logging.getLogger(__name__)

RULE = "compute:servers:resize:cross_cell"
MIN_COMPUTE_CROSS_CELL_RESIZE = 47


class SourceComputeDown(Conflict):
    message = "Compute service of host %(host)s is down; the resize cannot be confirmed now."


def min_compute_version() -> int:
    def per_cell(_cell: CellMapping) -> int | None:
        versions = list(Service.objects.filter(binary="nova-compute").values_list("version", flat=True))
        return min(versions) if versions else None

    found = [v for v in scatter_gather(per_cell, CellMapping.objects.exclude(uuid=CELL0_UUID)).values()
             if isinstance(v, int)]  # a cell that failed or has no compute service has no say
    return min(found) if found else 0


def cross_cell_allowed(actor: RequestContext, instance: Instance) -> bool:
    target = {"project_id": instance.project_id, "user_id": instance.user_id}
    return can(actor, RULE, target) and min_compute_version() >= MIN_COMPUTE_CROSS_CELL_RESIZE


def hard_delete_rows(instance_uuid: str, cell: CellMapping) -> None:
    """Remove every row of the server from ``cell`` (a hard delete: moving back later must not
    hit the unique uuids)."""

    with target_cell(cell):
        InstanceActionEvent.all_objects.filter(action__instance_uuid=instance_uuid).delete()
        for model in (InstanceAction, BlockDeviceMapping, VirtualInterface, Migration, InstanceFault):
            model._base_manager.filter(instance_uuid=instance_uuid).delete()
        Tag.objects.filter(instance_uuid=instance_uuid).delete()
        Instance.all_objects.filter(uuid=instance_uuid).delete()


def volume_bdms(instance_uuid: str) -> list[BlockDeviceMapping]:
    """The server's volume BDMs in the targeted cell."""
    return list(BlockDeviceMapping.objects.filter(instance_uuid=instance_uuid, destination_type="volume",
                                                  volume_id__isnull=False).order_by("id"))


def attachment_delete_quietly(attachment_id: str) -> None:
    """Delete a volume attachment in a cleanup: a failure (mostly: already gone) is logged, never
    raised, so the cleanup goes on to the rows."""

    try:
        volumes.attachment_delete(None, attachment_id=attachment_id)
    except Exception as exc:
        log.info("attachment %s not deleted: %s", attachment_id, exc)


def release_attachments(instance_uuid: str, cell: CellMapping) -> None:
    """Delete the volume attachments held by the server's BDMs in ``cell``."""
    with target_cell(cell):
        bdms = volume_bdms(instance_uuid)
    for bdm in bdms:
        if bdm.attachment_id:
            attachment_delete_quietly(bdm.attachment_id)


def notify(ctx: RequestContext, event: str, instance: Instance, **kw: Any) -> None:
    notify_instance(ctx, event, instance, **kw)


def finish_failed(ctx: RequestContext, *, instance_uuid: str, migration_uuid: str, exc: BaseException,
                  action: str) -> None:
    """A confirm or revert that failed: in the targeted (mapped) cell the migration ends ``error``
    and the server ERROR with a fault; the operator hard-deletes the unmapped cell's copy."""
    Migration.objects.filter(uuid=migration_uuid).update(status=MigrationStatus.ERROR, updated_at=timezone.now())
    Instance.all_objects.filter(uuid=instance_uuid).update(vm_state=VmState.ERROR, task_state=None,
                                                           updated_at=timezone.now())
    instance = Instance.all_objects.get(uuid=instance_uuid)
    actions.fault_add(instance_uuid=instance_uuid, exc=exc, host=instance.host)
    actions.action_finish(ctx, instance_uuid=instance_uuid, failed=True)
    notify(ctx, f"instance.{action}.error", instance, fault=exc)


def flip_to(instance_uuid: str, *, visible: CellMapping, hidden: CellMapping) -> None:
    """Show the server from ``visible``: that copy unhidden → mapping → the other copy hidden."""
    with target_cell(visible):
        Instance.all_objects.filter(uuid=instance_uuid).update(hidden=False)
    InstanceMapping.objects.filter(instance_uuid=instance_uuid).update(cell=visible)
    with target_cell(hidden):
        Instance.all_objects.filter(uuid=instance_uuid).update(hidden=True)


def source_cell_of(migration: Migration) -> CellMapping:
    return HostMapping.objects.select_related("cell").get(host=migration.source_compute).cell


def cross_cell_confirm(*, actor: RequestContext, instance: Instance, cell: CellMapping, migration: Migration,
                       synchronous: bool = False) -> None:
    """Confirm: the source compute must be up; the op on the source host cleans it."""

    source = source_cell_of(migration)
    with target_cell(source):
        service = Service.objects.filter(host=migration.source_compute, binary="nova-compute").first()
        up = service is not None and service_is_up(service)
    if not up and not synchronous:
        raise SourceComputeDown(host=migration.source_compute)
    migration.status = MigrationStatus.CONFIRMING
    migration.save(update_fields=["status", "updated_at"])
    actions.action_start(actor, instance_uuid=instance.uuid, action="confirmResize")
    if synchronous:
        # a delete or beat confirms in this process (the source guest is destroyed on its host's queue)
        from compute.ops import run_op  # the one API-side use of compute: an in-process synchronous confirm

        run_op(actor, op_name="cross_cell_confirm", instance_uuid=instance.uuid, cell_uuid=cell.uuid,
               migration_uuid=migration.uuid, source_cell_uuid=str(source.uuid))
        return
    compute_rpc.cross_cell_confirm(ctx=actor, host=str(migration.source_compute), instance_uuid=instance.uuid,
                                   cell_uuid=str(cell.uuid), migration_uuid=migration.uuid,
                                   source_cell_uuid=str(source.uuid))


def cross_cell_revert(*, actor: RequestContext, instance: Instance, cell: CellMapping, migration: Migration) -> None:
    source = source_cell_of(migration)
    compute_rpc.cross_cell_revert_at_dest(ctx=actor, host=str(instance.host), instance_uuid=instance.uuid,
                                          cell_uuid=str(cell.uuid), migration_uuid=migration.uuid,
                                          source_cell_uuid=str(source.uuid))
