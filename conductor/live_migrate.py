"""The conductor's half of a live migration (``live_migrate_instance``, cast by
``servers.services.live_migrate`` through ``conductor.rpc`` once the API has claimed task_state
``migrating`` and the migration holds the source host's allocations).

Nova's ``LiveMigrationTask``: the source's compute service must be up, a named destination must
not be the source and its compute service must be up (``check_destination``); then the
scheduling is a move's (``conductor.resize.ScheduleStep``: the source host ignored, server groups
honoured, the trace kept, the destination claimed for the server) restricted to the server's
cell, recorded under the ``conductor_live_migrate_instance`` event. When a check or the
scheduling fails the allocations go back to the server, the migration ends ``error``, the server
keeps its vm_state (task_state cleared, fault recorded, ``compute_task.migrate_server.error``).
Otherwise the migration gets the destination (``queued``) and the move is cast to the source host
(``compute.live_migration``).
"""
from __future__ import annotations

from cells.context import target_cell
from cloudcore.core.context import RequestContext
from cloudcore.core.orchestration import run_steps
from compute import rpc as compute_rpc
from hosts.selectors import service_for_host
from hosts.services.servicegroup import service_is_up
from servers.choices import MigrationStatus, TaskState
from servers.selectors import instance_get, migration_get
from servers.services.live_migrate import ComputeServiceUnavailable, check_destination
from servers.services.move_recovery import move_failed

from .resize import MoveContext, ScheduleStep, migration_to_destination

EVENT_SCHEDULE = "conductor_live_migrate_instance"


def live_migrate_instance(ctx: RequestContext, *, instance_uuid: str, cell_uuid: str, migration_uuid: str,
                          host: str | None, force: bool, block_migration: bool | str) -> None:
    """Check, schedule and cast the move to the source host (see module doc). A server no longer
    ``migrating`` (deleted meanwhile) is left alone. ``block_migration`` is the client's; the
    hosts of this machine copy the disks whatever it says."""
    with target_cell(cell_uuid) as cell:
        instance = instance_get(instance_uuid)
        migration = migration_get(migration_uuid)
        if instance is None or migration is None or instance.task_state != TaskState.MIGRATING:
            return
        move = MoveContext(ctx, instance, migration, cell)
        try:
            source = service_for_host(str(instance.host))
            if source is None or not service_is_up(source):
                raise ComputeServiceUnavailable(host=instance.host)
            if host:
                check_destination(instance, host)
            run_steps([ScheduleStep(move, host, allow_cross_cell=False, event=EVENT_SCHEDULE, force=force)])
        except Exception as exc:
            move_failed(ctx, instance, migration, exc)
            return
        migration_to_destination(migration, move.selection, status=MigrationStatus.QUEUED)
        compute_rpc.live_migration_prepare(ctx=ctx, host=str(instance.host), instance_uuid=instance_uuid,
                                           cell_uuid=str(cell.uuid), migration_uuid=migration.uuid)
