"""Periodic jobs of the servers app (run by Celery beat, DESIGN.md section 4):

- ``offload_shelved``: SHELVED servers older than ``SHELVED_OFFLOAD_TIME`` seconds are offloaded
  (0 offloads at shelve time, -1 never);
- ``confirm_resizes``: resizes waiting in VERIFY_RESIZE longer than ``RESIZE_CONFIRM_WINDOW``
  (0 = never) are confirmed;
- ``reap_stale_task_states``: a server stuck in a task_state for longer than
  ``TASK_STATE_TIMEOUT`` (a worker died mid-operation) is errored out with a fault, or, for an
  unshelve, put back to SHELVED_OFFLOADED: nothing stays in a task_state forever.
"""
from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from cells.context import target_cell
from cells.models import CELL0_UUID, CellMapping
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import CloudcoreError

from .choices import MigrationStatus, TaskState, VmState
from .models import Instance, Migration
from .services import actions

log = logging.getLogger(__name__)


class TaskStateTimedOut(CloudcoreError):
    message = "Task %(task_state)s did not finish within %(seconds)s seconds; the server was reset."


def _cells() -> list[CellMapping]:
    return list(CellMapping.objects.exclude(uuid=CELL0_UUID))


def offload_shelved() -> int:
    from .services.shelve import offload_due
    from .tasks import compute_op_task

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
                compute_op_task.apply_async(kwargs={"ctx": ctx.to_dict(), "op": "shelve_offload",
                                                    "instance_uuid": instance.uuid, "cell_uuid": cell.uuid},
                                            queue=f"compute.{instance.host}")
                count += 1
    return count


def confirm_resizes() -> int:
    from .services.resize import confirm_due, resize_confirm_for_delete

    count = 0
    for cell in _cells():
        with target_cell(cell):
            for migration in Migration.objects.filter(status=MigrationStatus.FINISHED, hidden=False):
                if not confirm_due(migration, window=settings.RESIZE_CONFIRM_WINDOW):
                    continue
                instance = Instance.objects.filter(uuid=migration.instance_uuid, vm_state=VmState.RESIZED).first()
                if instance is None:
                    continue
                resize_confirm_for_delete(actor=RequestContext.system(), instance=instance, cell=cell)
                count += 1
    return count


def reap_stale_task_states() -> int:
    cutoff = timezone.now() - timedelta(seconds=settings.TASK_STATE_TIMEOUT)
    count = 0
    for cell in _cells():
        with target_cell(cell):
            stale = Instance.objects.filter(task_state__isnull=False, updated_at__lt=cutoff).exclude(
                task_state=TaskState.DELETING)
            for instance in stale:
                old_task = instance.task_state
                if old_task == TaskState.UNSHELVING:
                    updated = Instance.objects.filter(pk=instance.pk, task_state=old_task).update(
                        task_state=None, vm_state=VmState.SHELVED_OFFLOADED, updated_at=timezone.now())
                else:
                    updated = Instance.objects.filter(pk=instance.pk, task_state=old_task).update(
                        task_state=None, vm_state=VmState.ERROR, updated_at=timezone.now())
                if updated:
                    actions.fault_add(instance_uuid=instance.uuid, code=500, host=instance.host,
                                      exc=TaskStateTimedOut(task_state=old_task, seconds=settings.TASK_STATE_TIMEOUT))
                    log.warning("reset server %s stuck in %s", instance.uuid, old_task)
                    count += 1
    return count
