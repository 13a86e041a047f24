"""The conductor's half of an evacuation (``evacuate_instance``, cast by
``servers.services.evacuate`` through ``conductor.rpc`` once the API has claimed task_state
``rebuilding`` and the migration holds the source host's allocations).

The scheduling is a move's (``conductor.resize.ScheduleStep``: the source host ignored, server
groups honoured, the trace kept, the destination claimed for the server) restricted to the
server's cell, recorded under the ``rebuild_server`` event as Nova's conductor does. When it
fails the allocations go back to the server, the migration ends ``error``, the server goes to
ERROR with the fault and ``compute_task.rebuild_server.error`` is emitted. Otherwise the migration
gets the destination (``pre-migrating``) and the rebuild is cast to it (``compute.ops.evacuate``).
"""
from __future__ import annotations

from cells.context import target_cell
from cloudcore.core.context import RequestContext
from cloudcore.core.orchestration import run_steps
from compute import rpc as compute_rpc
from servers.choices import MigrationStatus, TaskState, VmState
from servers.selectors import instance_get, migration_get
from servers.services.move_recovery import move_failed
from servers.services.notify import conductor_publisher, notify_instance

from .resize import MoveContext, ScheduleStep, migration_to_destination

EVENT_SCHEDULE = "rebuild_server"


def evacuate_instance(ctx: RequestContext, *, instance_uuid: str, cell_uuid: str, migration_uuid: str,
                      host: str | None, force: bool, admin_pass: str | None, stop: bool) -> None:
    """Schedule the evacuation and cast it to the destination (see module doc). A server no
    longer ``rebuilding`` (deleted meanwhile) is left alone."""
    with target_cell(cell_uuid) as cell:
        instance = instance_get(instance_uuid)
        migration = migration_get(migration_uuid)
        if instance is None or migration is None or instance.task_state != TaskState.REBUILDING:
            return
        move = MoveContext(ctx, instance, migration, cell)
        try:
            run_steps([ScheduleStep(move, host, allow_cross_cell=False, event=EVENT_SCHEDULE, force=force)])
        except Exception as exc:
            move_failed(ctx, instance, migration, exc, vm_state=VmState.ERROR, task="rebuild_server")
            return
        migration_to_destination(migration, move.selection, status=MigrationStatus.PRE_MIGRATING)
        if not (host and force):  # the scheduler chose or checked the destination (Nova's conductor says so)
            notify_instance(ctx, "instance.rebuild_scheduled", instance, publisher=conductor_publisher())
        compute_rpc.evacuate(ctx=ctx, host=str(migration.dest_compute), instance_uuid=instance_uuid,
                             cell_uuid=str(cell.uuid), migration_uuid=migration.uuid, admin_pass=admin_pass,
                             stop=stop)

