"""Resize and cold migration within a cell, with confirm and revert.

API side (this module): policy, guards, the task_state claim (``resize_prep``), a Migration row
(``pre-migrating``), the ``resize``/``migrate`` action, and the swap of the server's source
allocations to the migration consumer; on commit a cast to the conductor
(``conductor.rpc.resize_instance``), whose move (``conductor.resize``, ``conductor.cross_cell``
for a destination in another cell) is a list of ``Step``s with rollback: when scheduling or the
move fails, allocations go back to the server, the migration ends ``error`` and the server keeps
its vm_state (task_state cleared, fault recorded).

At VERIFY_RESIZE (vm_state ``resized``) the server runs on the destination with the new flavor;
the migration (``finished``) holds the old flavor's allocations on the source.
``confirm`` cleans the source and drops those allocations (a cast to the source host; the
conductor's beat confirms a resize older than RESIZE_CONFIRM_WINDOW the same way); ``revert``
destroys the destination guest and puts the server back on the source with its old flavor.
Deleting a server in VERIFY_RESIZE confirms its move first (``resize_confirm_for_delete``), with no
compute work in the API process: the claim on the source goes here and the source guest is
destroyed by a cast to its host.
"""
from __future__ import annotations

import logging
from functools import partial
from typing import TYPE_CHECKING

from django.utils import timezone

from cells.transactions import api_on_commit
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Conflict, InstanceInvalidState, Invalid
from cloudcore.core.policy import authorize
from compute import rpc as compute_rpc
from conductor import rpc as conductor_rpc
from scheduling.placement.services import allocations_delete, allocations_move

from ..choices import MigrationStatus, MigrationType, TaskState, VmState
from ..models import Flavor, Instance, Migration
from . import actions
from .cross_cell import cross_cell_allowed, cross_cell_confirm, cross_cell_revert
from .guards import check_compute_host, check_not_locked, check_state, claim_task_state
from .notify import notify_instance
from .power import target
from .quotas import quota_check

if TYPE_CHECKING:
    from cells.models import CellMapping

log = logging.getLogger(__name__)

MOVE_STATES = [VmState.ACTIVE, VmState.STOPPED]
CROSS_CELL_RULE = "compute:servers:resize:cross_cell"


class FlavorNotChanged(Invalid):
    message = "When resizing, instances must change flavor!"


class CannotResizeDisk(Invalid):
    message = "Resize error: Unable to resize disk down."


class CannotMigrateToSameHost(Invalid):
    message = "Cannot migrate to the host where the server exists."


class MigrationNotFinished(Conflict):
    message = "Migration for instance %(instance_uuid)s is not in finished status."


def _flavor(ref: str) -> Flavor:
    flavor = Flavor.objects.filter(flavorid=str(ref).rstrip("/").rsplit("/", 1)[-1]).first()
    if flavor is None or flavor.disabled:
        raise Invalid(f"Flavor {ref} could not be found.")
    return flavor


def server_resize(*, actor: RequestContext, instance: Instance, cell: CellMapping, flavor_ref: str | None,
                  host: str | None = None, auto_disk_config: bool | None = None) -> Migration:
    """``flavor_ref`` None means a cold migration (optionally to ``host``, 2.56). ``auto_disk_config``:
    the resize body's ``OS-DCF:diskConfig``, written with the claim as Nova's resize updates the
    instance (None keeps the server's)."""

    if flavor_ref is None:  # naming a host is its own rule, Nova's (a project manager may not)
        authorize(actor, "os_compute_api:os-migrate-server:migrate:host" if host
                  else "os_compute_api:os-migrate-server:migrate", target(instance))
    else:
        authorize(actor, "os_compute_api:servers:resize", target(instance))
    check_not_locked(actor, instance)
    method = "resize" if flavor_ref is not None else "migrate"
    check_state(instance, method, vm_states=MOVE_STATES)  # before the body's checks, as Nova's decorator
    old = dict(instance.flavor or {})
    new = old
    if flavor_ref is not None:
        flavor = _flavor(flavor_ref)
        if flavor.flavorid == old.get("flavorid"):
            raise FlavorNotChanged()
        new = flavor.as_dict()
        if not instance.is_volume_backed and flavor.root_gb < int(old.get("root_gb", 0)):
            raise CannotResizeDisk()
        quota_check(project_id=instance.project_id, instances=0,
                    cores=max(0, flavor.vcpus - int(old.get("vcpus", 0))),
                    ram=max(0, flavor.memory_mb - int(old.get("memory_mb", 0))))
    if host:
        if host == instance.host:
            raise CannotMigrateToSameHost()
        # Without the cross-cell rule the host must be in the server's own cell (Nova).
        check_compute_host(host, cell=None if cross_cell_allowed(actor, instance) else cell)
    claim_task_state(instance, method, new_task_state=TaskState.RESIZE_PREP, vm_states=MOVE_STATES)
    instance.system_metadata = {**(instance.system_metadata or {}), "old_vm_state": instance.vm_state}
    update_fields = ["system_metadata", "updated_at"]
    if auto_disk_config is not None:
        instance.auto_disk_config = auto_disk_config
        update_fields.append("auto_disk_config")
    instance.save(update_fields=update_fields)
    migration = Migration.objects.create(
        instance_uuid=instance.uuid, source_compute=instance.host, source_node=instance.node,
        status=MigrationStatus.PRE_MIGRATING,
        migration_type=MigrationType.RESIZE if flavor_ref is not None else MigrationType.MIGRATION,
        old_instance_type_id=old.get("id"), new_instance_type_id=new.get("id"), old_flavor=old, new_flavor=new,
        user_id=actor.user_id, project_id=instance.project_id,
    )
    actions.action_start(actor, instance_uuid=instance.uuid, action=method)

    allocations_move(from_consumer_uuid=instance.uuid, to_consumer_uuid=migration.uuid,
                     project_id=instance.project_id, user_id=instance.user_id)

    allow_cross_cell = cross_cell_allowed(actor, instance)
    api_on_commit(partial(conductor_rpc.resize_instance, ctx=actor, instance_uuid=instance.uuid,
                          cell_uuid=str(cell.uuid), migration_uuid=migration.uuid, host=host,
                          allow_cross_cell=allow_cross_cell))
    return migration


# --- confirm / revert ---------------------------------------------------------------------------


def _finished_migration(instance: Instance) -> Migration:
    migration = (Migration.objects.filter(instance_uuid=instance.uuid, status=MigrationStatus.FINISHED)
                 .order_by("-id").first())
    if migration is None:
        raise MigrationNotFinished(instance_uuid=instance.uuid)
    return migration


def server_confirm_resize(*, actor: RequestContext, instance: Instance, cell: CellMapping) -> None:
    authorize(actor, "os_compute_api:servers:confirm_resize", target(instance))
    check_not_locked(actor, instance)
    if instance.vm_state != VmState.RESIZED:
        raise InstanceInvalidState(method="confirmResize", instance_uuid=instance.uuid, attr="vm_state",
                                   state=instance.vm_state)
    resize_confirm(actor=actor, instance=instance, cell=cell, migration=_finished_migration(instance))


def resize_confirm(*, actor: RequestContext, instance: Instance, cell: CellMapping, migration: Migration) -> None:
    """Confirm the finished ``migration`` of a server in VERIFY_RESIZE: a cast to the source host
    (``confirmResize`` action, migration ``confirming``). No policy or lock check: the caller's
    (the API's ``server_confirm_resize``, or the conductor's beat for an old resize). A cross-cell
    move raises SourceComputeDown (409) while its source compute is down."""
    if migration.cross_cell_move:
        cross_cell_confirm(actor=actor, instance=instance, cell=cell, migration=migration)
        return
    migration.status = MigrationStatus.CONFIRMING
    migration.save(update_fields=["status", "updated_at"])
    actions.action_start(actor, instance_uuid=instance.uuid, action="confirmResize")
    compute_rpc.confirm_resize(ctx=actor, host=str(migration.source_compute), instance_uuid=instance.uuid,
                               cell_uuid=str(cell.uuid), migration_uuid=migration.uuid)


def resize_confirm_for_delete(*, actor: RequestContext, instance: Instance, cell: CellMapping) -> None:
    """Deleting a server in VERIFY_RESIZE confirms its move first (see module doc): the source
    host's allocations (the migration's) go, the migration ends ``confirmed`` with a finished
    ``confirmResize`` action, and once the API database commits the source guest is destroyed on
    its host (unless the move stayed on one host, whose guest the terminate destroys). A cross-cell
    move is confirmed by ``cross_cell_confirm``."""
    migration = Migration.objects.filter(instance_uuid=instance.uuid, status=MigrationStatus.FINISHED).first()
    if migration is None:
        return
    if migration.cross_cell_move:
        cross_cell_confirm(actor=actor, instance=instance, cell=cell, migration=migration, synchronous=True)
        return
    actions.action_start(actor, instance_uuid=instance.uuid, action="confirmResize")
    notify_instance(actor, "instance.resize_confirm.start", instance)
    allocations_delete(consumer_uuid=migration.uuid)
    migration.status = MigrationStatus.CONFIRMED
    migration.save(update_fields=["status", "updated_at"])
    actions.action_finish(actor, instance_uuid=instance.uuid)
    notify_instance(actor, "instance.resize_confirm.end", instance)
    source = migration.source_compute
    if source and source != instance.host:
        api_on_commit(partial(compute_rpc.destroy_guest, host=str(source), instance_uuid=instance.uuid))


def server_revert_resize(*, actor: RequestContext, instance: Instance, cell: CellMapping) -> None:
    authorize(actor, "os_compute_api:servers:revert_resize", target(instance))
    check_not_locked(actor, instance)
    claim_task_state(instance, "revertResize", new_task_state=TaskState.RESIZE_REVERTING,
                     vm_states=[VmState.RESIZED])
    migration = _finished_migration(instance)
    migration.status = MigrationStatus.REVERTING
    migration.save(update_fields=["status", "updated_at"])
    actions.action_start(actor, instance_uuid=instance.uuid, action="revertResize")
    if migration.cross_cell_move:
        cross_cell_revert(actor=actor, instance=instance, cell=cell, migration=migration)
        return
    compute_rpc.revert_resize(ctx=actor, host=str(instance.host), instance_uuid=instance.uuid,
                              cell_uuid=str(cell.uuid), migration_uuid=migration.uuid)


def confirm_due(migration: Migration, *, window: int) -> bool:
    """Is a finished migration older than RESIZE_CONFIRM_WINDOW (seconds, 0 = never)?"""
    if window <= 0 or migration.status != MigrationStatus.FINISHED:
        return False
    stamp = migration.updated_at or migration.created_at
    return (timezone.now() - stamp).total_seconds() >= window

