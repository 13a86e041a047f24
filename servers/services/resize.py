"""Resize and cold migration within a cell, with confirm and revert.

API side: policy, guards, the task_state claim (``resize_prep``), a Migration row
(``pre-migrating``), the ``resize``/``migrate`` action, and the swap of the server's source
allocations to the migration consumer; then the conductor schedules (``resize_instance`` below).
The conductor's move is a list of ``Step``s with rollback: when scheduling or the move fails,
allocations go back to the server, the migration ends ``error`` and the server keeps its
vm_state (task_state cleared, fault recorded).

At VERIFY_RESIZE (vm_state ``resized``) the server runs on the destination with the new flavor;
the migration (``finished``) holds the old flavor's allocations on the source.
``confirm`` cleans the source and drops those allocations; ``revert`` destroys the destination
guest and puts the server back on the source with its old flavor.

Cross-cell moves (seed 5) plug in at ``_cross_cell_hook``: when the scheduler picks a host in
another cell and ``servers.services.cross_cell`` provides ``cross_cell_resize``, the conductor
hands the move over to it.
"""
from __future__ import annotations

import importlib
import logging
from functools import partial
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from cells.context import target_cell
from cells.models import CellMapping, HostMapping
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Conflict, Invalid, NoValidHost
from cloudcore.core.orchestration import Step, run_steps
from cloudcore.core.policy import authorize
from compute import rpc as compute_rpc
from conductor import rpc as conductor_rpc
from scheduling.models import RequestSpec

from ..choices import MigrationStatus, MigrationType, TaskState, VmState
from ..models import Flavor, Instance, Migration
from . import actions
from .guards import check_not_locked, check_state, claim_task_state
from .move_recovery import move_failed
from .power import target

log = logging.getLogger(__name__)

MOVE_STATES = [VmState.ACTIVE, VmState.STOPPED]
CROSS_CELL_RULE = "compute:servers:resize:cross_cell"


class FlavorNotChanged(Invalid):
    message = "When resizing, instances must change flavor!"


class CannotResizeDisk(Invalid):
    message = "Resize error: Unable to resize disk down."


class CannotMigrateToSameHost(Invalid):
    message = "Cannot migrate to the host where the server exists."


class ComputeHostNotFound(Invalid):
    message = "Compute host %(host)s could not be found."


class MigrationNotFinished(Conflict):
    message = "Migration for instance %(instance_uuid)s is not in finished status."


def _flavor(ref: str) -> Flavor:
    flavor = Flavor.objects.filter(flavorid=str(ref).rstrip("/").rsplit("/", 1)[-1]).first()
    if flavor is None or flavor.disabled:
        raise Invalid(f"Flavor {ref} could not be found.")
    return flavor


def server_resize(*, actor: RequestContext, instance: Instance, cell: CellMapping, flavor_ref: str | None,
                  host: str | None = None) -> Migration:
    """``flavor_ref`` None means a cold migration (optionally to ``host``, 2.56)."""
    from .quotas import quota_check

    if flavor_ref is None:
        authorize(actor, "os_compute_api:os-migrate-server:migrate", target(instance))
        if host:
            authorize(actor, "os_compute_api:os-migrate-server:migrate:host", target(instance))
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
        if not HostMapping.objects.filter(host=host).exists():
            raise ComputeHostNotFound(host=host)
    claim_task_state(instance, method, new_task_state=TaskState.RESIZE_PREP, vm_states=MOVE_STATES)
    instance.system_metadata = {**(instance.system_metadata or {}), "old_vm_state": instance.vm_state}
    instance.save(update_fields=["system_metadata", "updated_at"])
    migration = Migration.objects.create(
        instance_uuid=instance.uuid, source_compute=instance.host, source_node=instance.node,
        status=MigrationStatus.PRE_MIGRATING,
        migration_type=MigrationType.RESIZE if flavor_ref is not None else MigrationType.MIGRATION,
        old_instance_type_id=old.get("id"), new_instance_type_id=new.get("id"), old_flavor=old, new_flavor=new,
        user_id=actor.user_id, project_id=instance.project_id,
    )
    actions.action_start(actor, instance_uuid=instance.uuid, action=method)
    from scheduling.placement.services import allocations_move

    allocations_move(from_consumer_uuid=instance.uuid, to_consumer_uuid=migration.uuid,
                     project_id=instance.project_id, user_id=instance.user_id)
    from .cross_cell import cross_cell_allowed

    allow_cross_cell = cross_cell_allowed(actor, instance)
    transaction.on_commit(partial(conductor_rpc.resize_instance, ctx=actor, instance_uuid=instance.uuid,
                                  cell_uuid=str(cell.uuid), migration_uuid=migration.uuid, host=host,
                                  allow_cross_cell=allow_cross_cell), using="default")
    return migration


# --- conductor ---------------------------------------------------------------------------------


class MoveContext:
    def __init__(self, ctx: RequestContext, instance: Instance, migration: Migration, cell: CellMapping) -> None:
        self.ctx, self.instance, self.migration, self.cell = ctx, instance, migration, cell
        self.selection: dict[str, Any] = {}


class ScheduleStep(Step):
    name = "schedule"

    def __init__(self, move: MoveContext, host: str | None, allow_cross_cell: bool) -> None:
        self.move, self.host, self.allow_cross_cell = move, host, allow_cross_cell

    def execute(self) -> None:
        from scheduling.request_spec import spec_for_move
        from scheduling.scheduler import select_destinations

        inst, mig = self.move.instance, self.move.migration
        row = RequestSpec.objects.filter(instance_uuid=inst.uuid).first()
        base = dict(row.spec) if row else {}
        base.setdefault("project_id", inst.project_id)
        base.setdefault("user_id", inst.user_id)
        host_cell = None
        if self.host:
            mapping = HostMapping.objects.select_related("cell").get(host=self.host)
            host_cell = mapping.cell.uuid
        spec = spec_for_move(
            base, source_cell_uuid=self.move.cell.uuid, source_host=inst.host, flavor=mig.new_flavor,
            allow_cross_cell_move=self.allow_cross_cell,
            allow_same_host=settings.ALLOW_RESIZE_TO_SAME_HOST and mig.migration_type == MigrationType.RESIZE,
            host=self.host, cell_uuid=host_cell if self.allow_cross_cell else (host_cell or self.move.cell.uuid),
        )
        with actions.wrap_event(self.move.ctx, instance_uuid=inst.uuid, event="conductor_migrate_server",
                                action_name=None):
            selection = select_destinations(self.move.ctx, spec, [inst.uuid], return_alternates=False)[0][0]
        self.move.selection = selection.to_dict() if hasattr(selection, "to_dict") else dict(selection)

    def rollback(self) -> None:
        from scheduling.placement.services import allocations_delete

        allocations_delete(consumer_uuid=self.move.instance.uuid)


def resize_instance(ctx: RequestContext, *, instance_uuid: str, cell_uuid: str, migration_uuid: str,
                    host: str | None, allow_cross_cell: bool) -> None:
    """Conductor: schedule the move and cast the source half to the source host."""
    with target_cell(cell_uuid) as cell:
        instance = Instance.objects.filter(uuid=instance_uuid).first()
        migration = Migration.objects.filter(uuid=migration_uuid).first()
        if instance is None or migration is None:
            return
        move = MoveContext(ctx, instance, migration, cell)
        try:
            run_steps([ScheduleStep(move, host, allow_cross_cell)])
        except Exception as exc:
            move_failed(ctx, instance, migration, exc)
            return
        dest_cell = move.selection.get("cell_uuid")
        if dest_cell and dest_cell != cell.uuid:
            if _cross_cell_hook(ctx, instance, migration, move.selection):
                return
            move_failed(ctx, instance, migration, NoValidHost(reason="cross-cell moves are not available"))
            return
        from hosts.models import ComputeNode

        node = ComputeNode.objects.filter(uuid=move.selection["compute_node_uuid"]).first()
        migration.dest_compute = move.selection["service_host"]
        migration.dest_host = migration.dest_compute
        migration.dest_node = move.selection.get("nodename") or (node.hypervisor_hostname if node else None)
        migration.dest_compute_id = node.id if node else None
        migration.status = MigrationStatus.MIGRATING
        migration.save()
        Instance.objects.filter(pk=instance.pk).update(task_state=TaskState.RESIZE_MIGRATING)
        compute_rpc.resize_at_source(ctx=ctx, host=str(instance.host), instance_uuid=instance.uuid,
                                     cell_uuid=str(cell.uuid), migration_uuid=migration.uuid)


def _cross_cell_hook(ctx: RequestContext, instance: Instance, migration: Migration, selection: dict[str, Any]) -> bool:
    try:
        module = importlib.import_module("servers.services.cross_cell")
    except ImportError:
        return False
    handler = getattr(module, "cross_cell_resize", None)
    if handler is None:
        return False
    handler(ctx, instance=instance, migration=migration, selection=selection)
    return True


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
        from cloudcore.core.exceptions import InstanceInvalidState

        raise InstanceInvalidState(method="confirmResize", instance_uuid=instance.uuid, attr="vm_state",
                                   state=instance.vm_state)
    migration = _finished_migration(instance)
    if migration.cross_cell_move:
        from .cross_cell import cross_cell_confirm

        cross_cell_confirm(actor=actor, instance=instance, cell=cell, migration=migration)
        return
    migration.status = MigrationStatus.CONFIRMING
    migration.save(update_fields=["status", "updated_at"])
    actions.action_start(actor, instance_uuid=instance.uuid, action="confirmResize")
    compute_rpc.confirm_resize(ctx=actor, host=str(migration.source_compute), instance_uuid=instance.uuid,
                               cell_uuid=str(cell.uuid), migration_uuid=migration.uuid)


def resize_confirm_for_delete(*, actor: RequestContext, instance: Instance, cell: CellMapping) -> None:
    """Deleting a server in VERIFY_RESIZE confirms the resize first, synchronously."""
    from compute.ops import run_op

    migration = Migration.objects.filter(instance_uuid=instance.uuid, status=MigrationStatus.FINISHED).first()
    if migration is None:
        return
    if migration.cross_cell_move:
        from .cross_cell import cross_cell_confirm

        cross_cell_confirm(actor=actor, instance=instance, cell=cell, migration=migration, synchronous=True)
        return
    migration.status = MigrationStatus.CONFIRMING
    migration.save(update_fields=["status", "updated_at"])
    actions.action_start(actor, instance_uuid=instance.uuid, action="confirmResize")
    run_op(actor, op_name="confirm_resize", instance_uuid=instance.uuid, cell_uuid=cell.uuid,
           migration_uuid=migration.uuid)


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
        from .cross_cell import cross_cell_revert

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

