"""Soft delete and ``restore`` (Nova's deferred delete, ``RECLAIM_INSTANCE_INTERVAL`` > 0).

With the interval on, ``DELETE /servers/{id}`` of a server that has been launched does not
delete it: task_state ``soft-deleting`` is claimed (with ``deleted_at`` stamped, the reclaim's
clock), an action ``delete`` recorded and ``compute.soft_delete`` cast to its host, which powers
the guest off and leaves the server SOFT_DELETED (``instance.soft_delete.start/end``). Nothing is
freed: ports, volumes, allocations and the quota it counts for stay, so ``restore`` can bring it
back. A server with no host, or whose host is down, is soft-deleted in its cell at once.

``restore``: SOFT_DELETED (no task) → (restoring) → ACTIVE, the guest powered on by the host
(``instance.restore.start/end``, event ``compute_restore_instance``); without a host at once.

The conductor's periodic ``reclaim_soft_deleted`` deletes for good the servers soft-deleted
longer than the interval (``servers.services.delete.server_reclaim``); ``forceDelete`` does it at
once (``servers.services.delete.server_force_delete``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from django.utils import timezone

from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import InstanceInvalidState
from cloudcore.core.policy import authorize
from compute import rpc as compute_rpc
from hosts.selectors import compute_services
from hosts.services.servicegroup import service_is_up

from ..choices import TaskState, VmState
from ..models import Instance
from . import actions
from .guards import check_not_locked, claim_task_state
from .notify import notify_instance
from .power import cast, target

if TYPE_CHECKING:
    from cells.models import CellMapping


def host_is_up(instance: Instance) -> bool:
    service = compute_services([str(instance.host)]).get(str(instance.host))
    return service is not None and service_is_up(service)


def can_soft_delete(instance: Instance) -> bool:
    """Nova soft-deletes only a server that was launched once (else the delete is immediate) and
    one that is not soft-deleted already (its delete is for good)."""
    return instance.launched_at is not None and instance.vm_state != VmState.SOFT_DELETED


def server_soft_delete(*, actor: RequestContext, instance: Instance, cell: CellMapping) -> None:
    """Any vm_state (``can_soft_delete``) → (soft-deleting) → SOFT_DELETED. The caller
    (``server_delete``) has authorized the delete and checked the lock, in the server's cell.
    Raises InstanceInvalidState (409) while a delete is already under way."""
    old_task_state = instance.task_state
    claimed = (
        Instance.objects.filter(pk=instance.pk)
        .exclude(task_state__in=[TaskState.DELETING, TaskState.SOFT_DELETING])
        .update(task_state=TaskState.SOFT_DELETING, deleted_at=timezone.now(), updated_at=timezone.now())
    )
    if not claimed:
        instance.refresh_from_db(fields=["task_state"])
        raise InstanceInvalidState(method="soft_delete", instance_uuid=instance.uuid, attr="task_state",
                                   state=instance.task_state)
    instance.refresh_from_db(fields=["task_state", "deleted_at", "updated_at"])
    actions.action_start(actor, instance_uuid=instance.uuid, action="delete")
    notify_instance(actor, "instance.update", instance, old_task_state=old_task_state)
    if not instance.host or not host_is_up(instance):
        notify_instance(actor, "instance.soft_delete.start", instance)
        instance.vm_state, instance.task_state = VmState.SOFT_DELETED, None
        instance.save(update_fields=["vm_state", "task_state", "updated_at"])
        actions.action_finish(actor, instance_uuid=instance.uuid)
        notify_instance(actor, "instance.soft_delete.end", instance)
        return
    cast(compute_rpc.soft_delete, actor=actor, instance=instance, cell=cell)


def server_restore(*, actor: RequestContext, instance: Instance, cell: CellMapping) -> None:
    """SOFT_DELETED → (restoring) → ACTIVE: the guest is powered on again; ``deleted_at`` is
    cleared. Raises Forbidden (policy), InstanceIsLocked or InstanceInvalidState (409)."""
    authorize(actor, "os_compute_api:os-deferred-delete:restore", target(instance))
    check_not_locked(actor, instance)
    if not instance.host:
        claim_task_state(instance, "restore", new_task_state=None, vm_states=[VmState.SOFT_DELETED],
                         vm_state=VmState.ACTIVE, deleted_at=None)
        actions.action_start(actor, instance_uuid=instance.uuid, action="restore")
        return
    claim_task_state(instance, "restore", new_task_state=TaskState.RESTORING, vm_states=[VmState.SOFT_DELETED],
                     deleted_at=None)
    actions.action_start(actor, instance_uuid=instance.uuid, action="restore")
    cast(compute_rpc.restore, actor=actor, instance=instance, cell=cell)


def reclaim_due(instance: Instance, *, interval: int) -> bool:
    """Has ``instance`` been SOFT_DELETED (no task) for ``interval`` seconds (0: never reclaimed)?"""
    if interval <= 0 or instance.vm_state != VmState.SOFT_DELETED or instance.task_state is not None:
        return False
    since = instance.deleted_at or instance.updated_at
    return since is not None and (timezone.now() - since).total_seconds() >= interval
