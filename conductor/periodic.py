"""Periodic jobs of the servers app (run by Celery beat, DESIGN.md section 4):

- ``offload_shelved``: SHELVED servers older than ``SHELVED_OFFLOAD_TIME`` seconds are offloaded
  (0 offloads at shelve time, -1 never);
- ``confirm_resizes``: resizes waiting in VERIFY_RESIZE longer than ``RESIZE_CONFIRM_WINDOW``
  (0 = never) are confirmed by a cast to the source host, as a user's confirm is;
- ``reclaim_soft_deleted``: servers SOFT_DELETED longer than ``RECLAIM_INSTANCE_INTERVAL`` (0 =
  never) are deleted for good, as a user's delete is (the conductor, not the host, runs it: the
  delete also drops the server's mapping and request spec in the API database);
- ``reap_stale_task_states``: a server stuck in a task_state for longer than
  ``TASK_STATE_TIMEOUT`` (a worker died mid-operation) is errored out with a fault, or, for an
  unshelve, put back to SHELVED_OFFLOADED; a server that never reached a cell (its BuildRequest
  older than that) is buried in cell0: nothing stays in a task_state forever.
"""
from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from django.conf import settings
from django.utils import timezone

from cells.context import target_cell
from cells.selectors import cell_list, instance_mapping_get
from cells.services import instance_mapping_claim_cell
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import CloudcoreError, InstanceInvalidState
from compute import rpc as compute_rpc
from scheduling.placement.services import allocations_delete
from servers.choices import MigrationStatus, TaskState, VmState
from servers.selectors import (
    build_request_uuids_created_before,
    instance_get,
    instances_idle_in,
    instances_with_stale_task,
    migration_get,
    migration_unfinished_for,
    migrations_with_status,
)
from servers.services import actions
from servers.services.build_requests import build_request_delete
from servers.services.cross_cell import source_cell_of
from servers.services.deferred_delete import reclaim_due
from servers.services.delete import server_reclaim
from servers.services.guards import claim_task_state
from servers.services.move_recovery import error_out_migration
from servers.services.resize import confirm_due, resize_confirm
from servers.services.shelve import offload_due

from .build import bury_in_cell0
from .cross_cell import cross_cell_failed

if TYPE_CHECKING:
    from cells.models import CellMapping
    from servers.models import Instance

log = logging.getLogger(__name__)


class TaskStateTimedOut(CloudcoreError):
    message = "Task %(task_state)s did not finish within %(seconds)s seconds; the server was reset."


def _cells() -> list[CellMapping]:
    return cell_list(cell0=False)


def offload_shelved() -> int:
    count = 0
    for cell in _cells():
        with target_cell(cell):
            for instance in instances_idle_in(VmState.SHELVED):
                if not offload_due(instance, offload_time=settings.SHELVED_OFFLOAD_TIME):
                    continue
                try:
                    claim_task_state(instance, "shelveOffload", new_task_state=TaskState.SHELVING_OFFLOADING)
                except InstanceInvalidState:
                    continue
                ctx = RequestContext.system()
                actions.action_start(ctx, instance_uuid=instance.uuid, action="shelveOffload")
                compute_rpc.shelve_offload(ctx=ctx, host=str(instance.host), instance_uuid=instance.uuid,
                                           cell_uuid=str(cell.uuid))
                count += 1
    return count


def confirm_resizes() -> int:
    count = 0
    for cell in _cells():
        with target_cell(cell):
            for migration in migrations_with_status(MigrationStatus.FINISHED):
                if not confirm_due(migration, window=settings.RESIZE_CONFIRM_WINDOW):
                    continue
                instance = instance_get(migration.instance_uuid)
                if instance is None or instance.vm_state != VmState.RESIZED:
                    continue
                try:
                    resize_confirm(actor=RequestContext.system(), instance=instance, cell=cell, migration=migration)
                except CloudcoreError as exc:  # e.g. the source compute of a cross-cell move is down: next time
                    log.warning("could not confirm the resize of %s yet: %s", instance.uuid, exc)
                    continue
                count += 1
    return count


def reclaim_soft_deleted() -> int:
    count = 0
    for cell in _cells():
        with target_cell(cell):
            for instance in instances_idle_in(VmState.SOFT_DELETED):
                if not reclaim_due(instance, interval=settings.RECLAIM_INSTANCE_INTERVAL):
                    continue
                try:
                    server_reclaim(actor=RequestContext.system(), instance=instance, cell=cell)
                except InstanceInvalidState:  # deleted or restored meanwhile
                    continue
                count += 1
    return count


def reap_stale_task_states() -> int:
    """Error out (or, for an unshelve, re-shelve) every server whose task_state has not moved for
    TASK_STATE_TIMEOUT seconds (a server never updated since its creation counts from its
    creation), and finish what the dead worker left half-done (``_repair_interrupted``)."""
    cutoff = timezone.now() - timedelta(seconds=settings.TASK_STATE_TIMEOUT)
    count = 0
    for cell in cell_list():  # cell0 too: a rebuild of a PENDING server starts there
        with target_cell(cell):
            # A hidden copy (the other cell's half of a cross-cell move) is repaired with its
            # visible one.
            for instance in instances_with_stale_task(cutoff):
                old_task = instance.task_state
                vm_state = VmState.SHELVED_OFFLOADED if old_task == TaskState.UNSHELVING else VmState.ERROR
                try:
                    claim_task_state(instance, "reset", new_task_state=None, expected_task_states=(old_task,),
                                     vm_state=vm_state)
                except InstanceInvalidState:  # it moved on meanwhile
                    continue
                exc = TaskStateTimedOut(task_state=old_task, seconds=settings.TASK_STATE_TIMEOUT)
                if not _repair_interrupted(instance, cell, exc):
                    actions.fault_add(instance_uuid=instance.uuid, code=500, host=instance.host, exc=exc)
                log.warning("reset server %s stuck in %s", instance.uuid, old_task)
                count += 1
    return count + _bury_stale_build_requests(cutoff)


def _bury_stale_build_requests(cutoff: datetime) -> int:
    """A server accepted by the API that never reached a cell (the conductor's cast was lost with
    the broker, or the conductor died or failed before creating it in its cell) would be shown
    from its BuildRequest, in BUILD/scheduling, forever: it is buried in cell0 (ERROR with a
    fault), as a failed scheduling is, and whatever allocations the scheduler claimed go."""

    count = 0
    for uuid in build_request_uuids_created_before(cutoff):
        mapping = instance_mapping_get(uuid)
        if mapping is None or mapping.cell_id is not None:
            continue
        if any(_has_instance(cell, uuid) for cell in _cells()):
            continue  # created in its cell, not stale there yet: the cell loop repairs it
        allocations_delete(consumer_uuid=uuid)
        bury_in_cell0(RequestContext.system(), instance_uuid=uuid, exc=TaskStateTimedOut(
            task_state=TaskState.SCHEDULING, seconds=settings.TASK_STATE_TIMEOUT))
        log.warning("buried server %s that never reached a cell", uuid)
        count += 1
    return count


def _has_instance(cell: CellMapping, uuid: str) -> bool:
    with target_cell(cell):
        return instance_get(uuid, read_deleted=True) is not None


def _repair_interrupted(instance: Instance, cell: CellMapping, exc: Exception) -> bool:
    """What the interrupted operation would have done on failure. Returns True when the fault
    was recorded here (the cross-cell rollback records it).

    - a build whose conductor died after creating the instance but before mapping it or
      deleting its BuildRequest: the mapping points at this cell and the BuildRequest goes (else
      the server is shown from its BuildRequest, in BUILD, forever);
    - a move (resize, cold migration) that never finished: the migration ends ``error`` and the
      allocations are those of where the server is: back from the migration to the server while
      it is still on the source host, else the migration's (source) allocations are dropped;
      a cross-cell move is rolled back as a failed one (the target cell's copy, attachments and
      port bindings go, the mapping stays on the source).
    """

    instance_mapping_claim_cell(instance.uuid, cell)
    build_request_delete(instance.uuid)
    migration = migration_unfinished_for(instance.uuid)
    if migration is None:
        return False
    if migration.cross_cell_move:
        source = source_cell_of(migration)
        if source.uuid == cell.uuid:
            target = next((c for c in _cells() if c.uuid != cell.uuid and _has_migration(c, migration.uuid)), None)
            if target is not None:
                cross_cell_failed(RequestContext.system(), instance_uuid=instance.uuid,
                                  migration_uuid=migration.uuid, source=source, target=target,
                                  dest_host=migration.dest_compute, exc=exc, guest_destroyed=True)
                return True

    error_out_migration(instance, migration)
    return False


def _has_migration(cell: CellMapping, migration_uuid: str) -> bool:
    with target_cell(cell):
        return migration_get(migration_uuid) is not None
