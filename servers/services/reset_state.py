"""``os-resetState``: an admin forces vm_state to ``active`` or ``error`` (task_state cleared).

Works on a PENDING server too (seed 3: PENDING -> ERROR).
"""
from __future__ import annotations

from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Invalid
from cloudcore.core.policy import authorize

from ..choices import VmState
from ..models import Instance
from . import actions
from .notify import notify_instance

ALLOWED = {"active": VmState.ACTIVE, "error": VmState.ERROR}


def server_reset_state(*, actor: RequestContext, instance: Instance, state: str) -> None:
    """Force ``instance`` to vm_state ``state`` (``active`` or ``error``) with no task.

    Precondition: ``instance`` is loaded inside its targeted cell; any current state.
    Side effects: one UPDATE of the Instance row, action ``resetState``, ``instance.update``.
    Raises: ``PolicyNotAuthorized`` (``os_compute_api:os-admin-actions:reset_state``), ``Invalid``
    for another state.
    """
    authorize(actor, "os_compute_api:os-admin-actions:reset_state",
              {"project_id": instance.project_id, "user_id": instance.user_id})
    if state not in ALLOWED:
        raise Invalid(f"Invalid state {state!r}; must be one of 'active', 'error'.")
    old_vm, old_task = instance.vm_state, instance.task_state
    instance.vm_state = ALLOWED[state]
    instance.task_state = None
    instance.save(update_fields=["vm_state", "task_state", "updated_at"])
    actions.action_start(actor, instance_uuid=instance.uuid, action="resetState")
    notify_instance(actor, "instance.update", instance, old_vm_state=old_vm, old_task_state=old_task)
