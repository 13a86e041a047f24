"""Periodic jobs of the servers app (run by Celery beat, DESIGN.md section 4):

- ``offload_shelved``: SHELVED servers older than ``SHELVED_OFFLOAD_TIME`` seconds are offloaded
  (0 offloads at shelve time, -1 never);
- ``confirm_resizes``: resizes waiting in VERIFY_RESIZE longer than ``RESIZE_CONFIRM_WINDOW``
  (0 = never) are confirmed by a cast to the source host, as a user's confirm is;
- ``reap_stale_task_states``: a server stuck in a task_state for longer than
  ``TASK_STATE_TIMEOUT`` (a worker died mid-operation) is errored out with a fault, or, for an
  unshelve, put back to SHELVED_OFFLOADED; a server that never reached a cell (its BuildRequest
  older than that) is buried in cell0: nothing stays in a task_state forever.
"""
from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models.functions import Coalesce
from django.utils import timezone

from cells.context import target_cell
from cells.models import CELL0_UUID, CellMapping, InstanceMapping
from cells.selectors import cell_list
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import CloudcoreError
from compute import rpc as compute_rpc
from scheduling.placement.services import allocations_delete
from servers.choices import MigrationStatus, TaskState, VmState
from servers.models import BuildRequest, Instance, Migration
from servers.services import actions
from servers.services.cross_cell import source_cell_of
from servers.services.move_recovery import error_out_migration
from servers.services.resize import confirm_due, resize_confirm
from servers.services.shelve import offload_due

from .build import bury_in_cell0
from .cross_cell import cross_cell_failed

log = logging.getLogger(__name__)


class TaskStateTimedOut(CloudcoreError):
    message = "Task %(task_state)s did not finish within %(seconds)s seconds; the server was reset."


def _cells() -> list[CellMapping]:
    return list(CellMapping.objects.exclude(uuid=CELL0_UUID))


def offload_shelved() -> int:
    count = 0
    for cell in _cells():
        with target_cell(cell):
            for instance in Instance.objects.filter(vm_state=VmState.SHELVED, task_state__isnull=True):
                if not offload_due(instance, offload_time=settings.SHELVED_OFFLOAD_TIME):
                    continue
                if not Instance.objects.filter(pk=instance.pk, task_state__isnull=True).update(
                        task_state=TaskState.SHELVING_OFFLOADING):
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
            for migration in Migration.objects.filter(status=MigrationStatus.FINISHED, hidden=False):
                if not confirm_due(migration, window=settings.RESIZE_CONFIRM_WINDOW):
                    continue
                instance = Instance.objects.filter(uuid=migration.instance_uuid, vm_state=VmState.RESIZED).first()
                if instance is None:
                    continue
                try:
                    resize_confirm(actor=RequestContext.system(), instance=instance, cell=cell, migration=migration)
                except CloudcoreError as exc:  # e.g. the source compute of a cross-cell move is down: next time
                    log.warning("could not confirm the resize of %s yet: %s", instance.uuid, exc)
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
            stale = (Instance.objects.filter(task_state__isnull=False, hidden=False)
                     .annotate(last_change=Coalesce("updated_at", "created_at"))
                     .filter(last_change__lt=cutoff).exclude(task_state=TaskState.DELETING))
            for instance in stale:
                old_task = instance.task_state
                if old_task == TaskState.UNSHELVING:
                    updated = Instance.objects.filter(pk=instance.pk, task_state=old_task).update(
                        task_state=None, vm_state=VmState.SHELVED_OFFLOADED, updated_at=timezone.now())
                else:
                    updated = Instance.objects.filter(pk=instance.pk, task_state=old_task).update(
                        task_state=None, vm_state=VmState.ERROR, updated_at=timezone.now())
                if updated:
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
    for uuid in BuildRequest.objects.filter(created_at__lt=cutoff).values_list("instance_uuid", flat=True):
        if not InstanceMapping.objects.filter(instance_uuid=uuid, cell__isnull=True).exists():
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
        return Instance.all_objects.filter(uuid=uuid).exists()


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

    InstanceMapping.objects.filter(instance_uuid=instance.uuid, cell__isnull=True).update(cell=cell)
    BuildRequest.objects.filter(instance_uuid=instance.uuid).delete()
    migration = (Migration.objects.filter(instance_uuid=instance.uuid, status__in=MigrationStatus.UNFINISHED)
                 .order_by("-id").first())
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
        return Migration.objects.filter(uuid=migration_uuid).exists()
