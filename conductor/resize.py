"""The conductor's half of a resize or cold migration (``resize_instance``, cast by
``servers.services.resize`` through ``conductor.rpc``).

The move is a list of ``Step``s with rollback: the scheduler picks a destination (claiming its
allocations); when scheduling or the move fails, the allocations go back to the server, the
migration ends ``error`` and the server keeps its vm_state (task_state cleared, fault recorded,
``compute_task.migrate_server.error`` emitted). A destination in the same cell gets the
migration's destination (``prep_resize``, with ``instance.resize_prep.start/end``) and the source
host is cast ``resize_at_source``; a destination in another cell hands the move over to
``conductor.cross_cell``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.conf import settings

from cells.context import target_cell
from cells.selectors import host_mapping_get
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import NoValidHost
from cloudcore.core.orchestration import Step, run_steps
from compute import rpc as compute_rpc
from hosts.selectors import compute_node_get
from scheduling.placement.services import allocations_delete
from scheduling.request_spec import spec_for_move
from scheduling.scheduler import select_destinations
from scheduling.services.request_specs import request_spec_get
from servers.choices import MigrationStatus, MigrationType, TaskState
from servers.selectors import instance_get, migration_get
from servers.services import actions
from servers.services.move_recovery import move_failed
from servers.services.notify import notify_resize_prep

from .cross_cell import cross_cell_resize

if TYPE_CHECKING:
    from cells.models import CellMapping
    from servers.models import Instance, Migration


class MoveContext:
    def __init__(self, ctx: RequestContext, instance: Instance, migration: Migration, cell: CellMapping) -> None:
        self.ctx, self.instance, self.migration, self.cell = ctx, instance, migration, cell
        self.selection: dict[str, Any] = {}


class ScheduleStep(Step):
    name = "schedule"

    def __init__(self, move: MoveContext, host: str | None, allow_cross_cell: bool, *,
                 event: str = "conductor_migrate_server", force: bool = False) -> None:
        """``event``: the action event the scheduling is recorded under; ``force``: ``host`` is
        taken without the filters (an evacuation forced to a host, 2.29–2.67)."""
        self.move, self.host, self.allow_cross_cell = move, host, allow_cross_cell
        self.event, self.force = event, force
        self.claimed = False

    def execute(self) -> None:
        inst, mig = self.move.instance, self.move.migration
        base = request_spec_get(inst.uuid) or {}
        base.setdefault("project_id", inst.project_id)
        base.setdefault("user_id", inst.user_id)
        host_cell = None
        if self.host:
            mapping = host_mapping_get(self.host)
            if mapping is None:
                raise NoValidHost(reason=f"Host {self.host} is not mapped to any cell")
            host_cell = mapping.cell.uuid
        spec = spec_for_move(
            base, source_cell_uuid=self.move.cell.uuid, source_host=inst.host, flavor=mig.new_flavor,
            allow_cross_cell_move=self.allow_cross_cell,
            allow_same_host=settings.ALLOW_RESIZE_TO_SAME_HOST and mig.migration_type == MigrationType.RESIZE,
            host=self.host, cell_uuid=host_cell if self.allow_cross_cell else (host_cell or self.move.cell.uuid),
            force_host=self.force,
        )
        with actions.wrap_event(self.move.ctx, instance_uuid=inst.uuid, event=self.event, action_name=None):
            selection = select_destinations(self.move.ctx, spec, [inst.uuid], return_alternates=False)[0][0]
        self.claimed = True  # the scheduler claimed the destination for the server
        self.move.selection = selection.to_dict() if hasattr(selection, "to_dict") else dict(selection)

    def rollback(self) -> None:
        if self.claimed:
            allocations_delete(consumer_uuid=self.move.instance.uuid)


def resize_instance(ctx: RequestContext, *, instance_uuid: str, cell_uuid: str, migration_uuid: str,
                    host: str | None, allow_cross_cell: bool) -> None:
    """Conductor: schedule the move and cast the source half to the source host."""
    with target_cell(cell_uuid) as cell:
        instance = instance_get(instance_uuid)
        migration = migration_get(migration_uuid)
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
            cross_cell_resize(ctx, instance=instance, migration=migration, selection=move.selection)
            return
        try:
            prep_resize(move)
        except Exception as exc:
            move_failed(ctx, instance, migration, exc)


def prep_resize(move: MoveContext) -> None:
    """A same-cell move's preparation at its destination (Nova's ``prep_resize``, between
    ``instance.resize_prep.start`` and ``.end``): the migration gets the destination and goes
    ``migrating``; then the server's task_state ``resize_migrating`` and the source host is cast
    ``resize_at_source``. A failure is the caller's (``move_failed``)."""
    ctx, instance, migration = move.ctx, move.instance, move.migration
    dest_host = str(move.selection["service_host"])
    notify_resize_prep(ctx, "start", instance, migration, host=dest_host)
    migration_to_destination(migration, move.selection, status=MigrationStatus.MIGRATING)
    notify_resize_prep(ctx, "end", instance, migration, host=dest_host)
    instance.task_state = TaskState.RESIZE_MIGRATING
    instance.save(update_fields=["task_state"])
    compute_rpc.resize_at_source(ctx=ctx, host=str(instance.host), instance_uuid=instance.uuid,
                                 cell_uuid=str(move.cell.uuid), migration_uuid=migration.uuid)


def migration_to_destination(migration: Migration, selection: dict[str, Any], *, status: str) -> None:
    """The scheduler's ``selection`` becomes the migration's destination (host, node, compute id)."""
    dest_host = str(selection["service_host"])
    node = compute_node_get(selection["compute_node_uuid"])
    migration.dest_compute = dest_host
    migration.dest_host = dest_host
    migration.dest_node = selection.get("nodename") or (node.hypervisor_hostname if node else None)
    migration.dest_compute_id = node.id if node else None
    migration.status = status
    migration.save()
