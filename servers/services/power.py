"""Power and lock actions: ``os-start``, ``os-stop``, ``reboot``, ``lock``, ``unlock``.

API side (this module): policy, lock and state guards, the compare-and-swap claim of task_state,
the instance action record, then a cast to the server's compute host (``compute.<host>``),
where ``compute.ops`` drives the hypervisor and finishes the state change.
"""
from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from cells.transactions import api_on_commit
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import CloudcoreError, Forbidden, InstanceInvalidState
from cloudcore.core.policy import authorize, can
from compute import rpc as compute_rpc

from ..choices import TaskState, VmState
from ..models import Instance
from . import actions
from .guards import check_not_locked, claim_task_state
from .notify import api_publisher, notify_instance

if TYPE_CHECKING:
    from cells.models import CellMapping


def target(instance: Instance) -> dict[str, Any]:
    return {"project_id": instance.project_id, "user_id": instance.user_id}


def cast(send: Callable[..., None], *, actor: RequestContext, instance: Instance, cell: CellMapping,
         **kwargs: Any) -> None:
    """Cast ``send`` (a ``compute.rpc`` operation) to the server's host once the cell write commits."""
    call = partial(send, ctx=actor, host=str(instance.host), instance_uuid=instance.uuid, cell_uuid=str(cell.uuid),
                   **kwargs)
    # Cell writes here are autocommitted; the hook runs at once unless an API-DB transaction is open.
    api_on_commit(call)


def call(send: Callable[..., Any], *, actor: RequestContext, instance: Instance, cell: CellMapping,
         **kwargs: Any) -> dict[str, Any]:
    """Call ``send`` (a ``compute.rpc`` call) on the server's host and wait for its answer; the
    host's failure comes back as the domain error of the HTTP code it names."""
    try:
        return dict(send(ctx=actor, host=str(instance.host), instance_uuid=instance.uuid, cell_uuid=str(cell.uuid),
                         **kwargs))
    except compute_rpc.CallFailed as exc:
        error = CloudcoreError(str(exc))
        error.code = int(exc.details.get("code") or 500)
        raise error from exc


def _require_host(instance: Instance, method: str) -> None:
    if not instance.host:
        raise InstanceInvalidState(method=method, instance_uuid=instance.uuid, attr="host", state=None)


def server_start(*, actor: RequestContext, instance: Instance, cell: CellMapping) -> None:
    """STOPPED → (powering-on) → ACTIVE."""
    authorize(actor, "os_compute_api:servers:start", target(instance))
    check_not_locked(actor, instance)
    _require_host(instance, "start")
    claim_task_state(instance, "start", new_task_state=TaskState.POWERING_ON, vm_states=[VmState.STOPPED])
    actions.action_start(actor, instance_uuid=instance.uuid, action="start")
    cast(compute_rpc.power_on, actor=actor, instance=instance, cell=cell)


def server_stop(*, actor: RequestContext, instance: Instance, cell: CellMapping) -> None:
    """ACTIVE or ERROR → (powering-off) → STOPPED."""
    authorize(actor, "os_compute_api:servers:stop", target(instance))
    check_not_locked(actor, instance)
    _require_host(instance, "stop")
    claim_task_state(instance, "stop", new_task_state=TaskState.POWERING_OFF,
                     vm_states=[VmState.ACTIVE, VmState.ERROR, VmState.RESCUED])
    actions.action_start(actor, instance_uuid=instance.uuid, action="stop")
    cast(compute_rpc.power_off, actor=actor, instance=instance, cell=cell)


SOFT_REBOOT_STATES = [VmState.ACTIVE]
HARD_REBOOT_STATES = [VmState.ACTIVE, VmState.STOPPED, VmState.PAUSED, VmState.SUSPENDED, VmState.ERROR]


def server_reboot(*, actor: RequestContext, instance: Instance, cell: CellMapping, hard: bool) -> None:
    """SOFT needs ACTIVE; HARD also recovers STOPPED/ERROR servers (re-spawning a lost guest)."""
    authorize(actor, "os_compute_api:servers:reboot", target(instance))
    check_not_locked(actor, instance)
    _require_host(instance, "reboot")
    if hard:
        claim_task_state(instance, "reboot", new_task_state=TaskState.REBOOTING_HARD, vm_states=HARD_REBOOT_STATES,
                         expected_task_states=(None, TaskState.REBOOTING, TaskState.REBOOT_PENDING,
                                               TaskState.REBOOT_STARTED))
    else:
        claim_task_state(instance, "reboot", new_task_state=TaskState.REBOOTING, vm_states=SOFT_REBOOT_STATES)
    actions.action_start(actor, instance_uuid=instance.uuid, action="reboot")
    cast(compute_rpc.reboot, actor=actor, instance=instance, cell=cell, hard=hard)


def server_inject_network_info(*, actor: RequestContext, instance: Instance) -> None:
    """``injectNetworkInfo`` (admin): Nova asks the host's driver to push the network settings into
    the guest; no driver here keeps any in the guest to update (a guest reads its network from the
    config drive when it boots, as with Nova's libvirt driver, whose injection does nothing), so the
    request is checked (policy, a host) and accepted."""
    authorize(actor, "os_compute_api:os-admin-actions:inject_network_info", target(instance))
    if not instance.host:
        raise InstanceInvalidState(method="inject_network_info", instance_uuid=instance.uuid, attr="host",
                                   state=None)


def server_lock(*, actor: RequestContext, instance: Instance, reason: str | None = None) -> None:
    authorize(actor, "os_compute_api:os-lock-server:lock", target(instance))
    owner = actor.project_id == instance.project_id and not actor.is_admin
    instance.locked, instance.locked_by = True, "owner" if owner else "admin"
    instance.locked_reason = reason
    instance.save(update_fields=["locked", "locked_by", "locked_reason", "updated_at"])
    actions.action_start(actor, instance_uuid=instance.uuid, action="lock")
    notify_instance(actor, "instance.lock", instance, publisher=api_publisher())


def server_unlock(*, actor: RequestContext, instance: Instance) -> None:
    """The owner unlocks its own lock; a lock taken by an admin needs ``unlock_override``."""
    authorize(actor, "os_compute_api:os-lock-server:unlock", target(instance))
    if instance.locked and instance.locked_by == "admin" and not actor.is_admin:
        if not can(actor, "os_compute_api:os-lock-server:unlock:unlock_override", target(instance)):
            raise Forbidden("Policy doesn't allow os_compute_api:os-lock-server:unlock:unlock_override to be "
                            "performed.")
    instance.locked, instance.locked_by, instance.locked_reason = False, None, None
    instance.save(update_fields=["locked", "locked_by", "locked_reason", "updated_at"])
    actions.action_start(actor, instance_uuid=instance.uuid, action="unlock")
    notify_instance(actor, "instance.unlock", instance, publisher=api_publisher())
