"""Deleting a server, wherever it is in its life.

- Still a BuildRequest (not scheduled): the BuildRequest and RequestSpec go, the mapping is
  queued for delete; the conductor notices and drops any allocation it made meanwhile.
- No host (cell0, PENDING, failed build) or host down: deleted locally in its cell.
- On a host: task_state ``deleting`` is claimed with a compare-and-swap, an action ``delete``
  recorded, and ``terminate_instance_task`` cast to ``compute.<host>``.

Either way the API side queues the mapping for delete and drops the request spec (as Nova's API
does once it has cast the terminate): the host's terminate touches only its own cell. The server
stays visible from its cell until the host has marked it deleted.
"""
from __future__ import annotations

from functools import partial

from django.db import transaction
from django.utils import timezone

from cells.context import target_cell
from cells.models import InstanceMapping
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import InstanceInvalidState, InstanceIsLocked
from compute import rpc as compute_rpc
from compute.build import deallocate_networks
from hosts.models import Service
from hosts.services.servicegroup import service_is_up
from scheduling.models import RequestSpec
from scheduling.placement.services import allocations_delete

from ..choices import TaskState, VmState
from ..models import BuildRequest, Instance
from ..selectors import ServerRecord
from . import actions
from .notify import notify_instance
from .resize import resize_confirm_for_delete


def _host_is_up(instance: Instance) -> bool:
    service = Service.objects.filter(host=instance.host, binary="nova-compute").first()
    return service is not None and service_is_up(service)


def server_delete(*, actor: RequestContext, record: ServerRecord, force: bool = False) -> None:
    """Delete the server of ``record`` (see module doc). Raises InstanceIsLocked (409) for a
    server locked by someone who may not override it, InstanceInvalidState (409) while another
    delete is running."""
    if record.build_request is not None:
        _delete_build_request(record.uuid)
        return
    assert record.instance is not None and record.cell is not None
    instance = record.instance
    if instance.locked and not actor.is_admin:
        raise InstanceIsLocked(instance_uuid=instance.uuid)
    with target_cell(record.cell):
        if instance.vm_state == VmState.RESIZED:
            resize_confirm_for_delete(actor=actor, instance=instance, cell=record.cell)
            instance.refresh_from_db()
        claimed = (
            Instance.objects.filter(pk=instance.pk)
            .exclude(task_state=TaskState.DELETING)
            .update(task_state=TaskState.DELETING, updated_at=timezone.now())
        )
        if not claimed:
            raise InstanceInvalidState(method="delete", instance_uuid=instance.uuid, attr="task_state",
                                       state=TaskState.DELETING)
        old_task_state = instance.task_state
        instance.task_state = TaskState.DELETING
        actions.action_start(actor, instance_uuid=instance.uuid, action="delete")
        notify_instance(actor, "instance.update", instance, old_task_state=old_task_state)
        _unmap(instance.uuid)
        if not instance.host or not _host_is_up(instance):
            local_delete(actor, instance)
            return
        transaction.on_commit(partial(compute_rpc.terminate_instance, ctx=actor, host=instance.host,
                                      instance_uuid=instance.uuid, cell_uuid=str(record.cell.uuid)))


def _delete_build_request(instance_uuid: str) -> None:
    with transaction.atomic():
        BuildRequest.objects.filter(instance_uuid=instance_uuid).delete()
        RequestSpec.objects.filter(instance_uuid=instance_uuid).delete()
        InstanceMapping.objects.filter(instance_uuid=instance_uuid).update(queued_for_delete=True)
    # what a scheduling claimed for a build that died before it reached a cell (a live conductor
    # that finds the BuildRequest gone drops its claim itself)
    allocations_delete(consumer_uuid=instance_uuid)


def local_delete(actor: RequestContext, instance: Instance) -> None:
    """Delete in the database only (no host to ask): ports, allocations and the row."""

    notify_instance(actor, "instance.delete.start", instance)
    try:
        deallocate_networks(actor, instance)
    finally:
        allocations_delete(consumer_uuid=instance.uuid)
    mark_deleted(instance)
    notify_instance(actor, "instance.delete.end", instance)


def mark_deleted(instance: Instance) -> None:
    now = timezone.now()
    instance.vm_state = VmState.DELETED
    instance.task_state = None
    instance.terminated_at = now
    instance.deleted = True
    instance.deleted_at = now
    instance.save(update_fields=["vm_state", "task_state", "terminated_at", "deleted", "deleted_at",
                                 "updated_at"])


def _unmap(instance_uuid: str) -> None:
    InstanceMapping.objects.filter(instance_uuid=instance_uuid).update(queued_for_delete=True)
    RequestSpec.objects.filter(instance_uuid=instance_uuid).delete()
