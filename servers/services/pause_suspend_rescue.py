"""``pause``/``unpause``, ``suspend``/``resume``, ``rescue``/``unrescue`` and ``trigger_crash_dump``.

API side (this module), as ``services.power`` does for os-start/os-stop: policy, lock and state
guards, the compare-and-swap claim of task_state, the instance action record, then a cast to the
server's compute host once the cell write commits (``compute.pause_suspend_rescue`` drives the
hypervisor, finishes the state change and emits ``instance.<action>.start/end``).

Transitions (Nova's):

- pause: ACTIVE → (pausing) → PAUSED; unpause: PAUSED → (unpausing) → ACTIVE;
- suspend: ACTIVE → (suspending) → SUSPENDED; resume: SUSPENDED → (resuming) → ACTIVE;
- rescue: ACTIVE, STOPPED or ERROR → (rescuing) → RESCUED, booted from a rescue image (the
  server's own image unless ``rescue_image_ref`` names one) with its own disk attached second;
  a volume-backed server only from 2.87 (``allow_volume_backed``), before it 400;
  unrescue: RESCUED → (unrescuing) → ACTIVE;
- trigger_crash_dump (2.17): ACTIVE, PAUSED, RESCUED, RESIZED or ERROR with no task; the
  task_state does not change (the guest's reaction to the NMI is its own business).

A wrong state is Nova's 409 ``Cannot '<action>' instance <uuid> while it is in vm_state <state>``,
a locked server (non-admin) 409, a policy denial 403.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Invalid
from cloudcore.core.policy import authorize
from compute import rpc as compute_rpc

from ..choices import TaskState, VmState
from ..models import Instance
from . import actions
from .guards import check_not_locked, check_state, claim_task_state
from .power import _require_host, cast, target

if TYPE_CHECKING:
    from cells.models import CellMapping

RESCUE_STATES = [VmState.ACTIVE, VmState.STOPPED, VmState.ERROR]
CRASH_DUMP_STATES = [VmState.ACTIVE, VmState.PAUSED, VmState.RESCUED, VmState.RESIZED, VmState.ERROR]


class InstanceNotRescuable(Invalid):
    message = "Instance %(instance_id)s cannot be rescued: %(reason)s"


def _begin(*, actor: RequestContext, instance: Instance, rule: str, action: str, vm_states: list[str],
           new_task_state: str) -> None:
    """Authorize ``rule``, refuse a locked server, claim ``new_task_state`` from ``vm_states`` with no
    task, and record ``action``."""
    authorize(actor, rule, target(instance))
    check_not_locked(actor, instance)
    _require_host(instance, action)
    claim_task_state(instance, action, new_task_state=new_task_state, vm_states=vm_states)
    actions.action_start(actor, instance_uuid=instance.uuid, action=action)


def server_pause(*, actor: RequestContext, instance: Instance, cell: CellMapping) -> None:
    """ACTIVE → (pausing) → PAUSED: the guest's vCPUs stop, its memory stays."""
    _begin(actor=actor, instance=instance, rule="os_compute_api:os-pause-server:pause", action="pause",
           vm_states=[VmState.ACTIVE], new_task_state=TaskState.PAUSING)
    cast(compute_rpc.pause, actor=actor, instance=instance, cell=cell)


def server_unpause(*, actor: RequestContext, instance: Instance, cell: CellMapping) -> None:
    """PAUSED → (unpausing) → ACTIVE."""
    _begin(actor=actor, instance=instance, rule="os_compute_api:os-pause-server:unpause", action="unpause",
           vm_states=[VmState.PAUSED], new_task_state=TaskState.UNPAUSING)
    cast(compute_rpc.unpause, actor=actor, instance=instance, cell=cell)


def server_suspend(*, actor: RequestContext, instance: Instance, cell: CellMapping) -> None:
    """ACTIVE → (suspending) → SUSPENDED: the guest's memory is saved to disk and the guest stops."""
    _begin(actor=actor, instance=instance, rule="os_compute_api:os-suspend-server:suspend", action="suspend",
           vm_states=[VmState.ACTIVE], new_task_state=TaskState.SUSPENDING)
    cast(compute_rpc.suspend, actor=actor, instance=instance, cell=cell)


def server_resume(*, actor: RequestContext, instance: Instance, cell: CellMapping) -> None:
    """SUSPENDED → (resuming) → ACTIVE: the guest restarts from its saved memory."""
    _begin(actor=actor, instance=instance, rule="os_compute_api:os-suspend-server:resume", action="resume",
           vm_states=[VmState.SUSPENDED], new_task_state=TaskState.RESUMING)
    cast(compute_rpc.resume, actor=actor, instance=instance, cell=cell)


def server_rescue(*, actor: RequestContext, instance: Instance, cell: CellMapping, admin_pass: str,
                  rescue_image_ref: str | None = None, allow_volume_backed: bool = False) -> None:
    """ACTIVE, STOPPED or ERROR → (rescuing) → RESCUED. ``allow_volume_backed`` (2.87+): a
    volume-backed server may be rescued (its volumes stay attached in their order, the rescue disk
    is added); without it a volume-backed server is ``InstanceNotRescuable`` (400)."""
    authorize(actor, "os_compute_api:os-rescue", target(instance))
    check_not_locked(actor, instance)
    _require_host(instance, "rescue")
    check_state(instance, "rescue", vm_states=RESCUE_STATES)
    if instance.is_volume_backed and not allow_volume_backed:
        raise InstanceNotRescuable(instance_id=instance.uuid, reason="Cannot rescue a volume-backed instance")
    claim_task_state(instance, "rescue", new_task_state=TaskState.RESCUING, vm_states=RESCUE_STATES)
    actions.action_start(actor, instance_uuid=instance.uuid, action="rescue")
    cast(compute_rpc.rescue, actor=actor, instance=instance, cell=cell, admin_pass=admin_pass,
         rescue_image_ref=rescue_image_ref)


def server_unrescue(*, actor: RequestContext, instance: Instance, cell: CellMapping) -> None:
    """RESCUED → (unrescuing) → ACTIVE, booted from its own disk again."""
    _begin(actor=actor, instance=instance, rule="os_compute_api:os-unrescue", action="unrescue",
           vm_states=[VmState.RESCUED], new_task_state=TaskState.UNRESCUING)
    cast(compute_rpc.unrescue, actor=actor, instance=instance, cell=cell)


def server_trigger_crash_dump(*, actor: RequestContext, instance: Instance, cell: CellMapping) -> None:
    """An NMI to the guest (2.17+); no task_state is claimed, the state must allow it and no task run."""
    authorize(actor, "os_compute_api:servers:trigger_crash_dump", target(instance))
    check_not_locked(actor, instance)
    _require_host(instance, "trigger_crash_dump")
    check_state(instance, "trigger_crash_dump", vm_states=CRASH_DUMP_STATES)
    actions.action_start(actor, instance_uuid=instance.uuid, action="trigger_crash_dump")
    cast(compute_rpc.trigger_crash_dump, actor=actor, instance=instance, cell=cell)
