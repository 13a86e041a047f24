"""A build that will not be retried: the server goes to ERROR with a fault.

Shared by the compute host (a failure not worth another host) and the conductor (no alternate
left for a reschedule, ``conductor.build.reschedule_build``). The caller drops the server's
placement allocations by its own means (the conductor in-process, a compute host over HTTP).
"""
from __future__ import annotations

from cloudcore.core.context import RequestContext

from ..choices import TaskState, VmState
from ..models import Instance
from . import actions
from .notify import notify_instance


def build_error_out(ctx: RequestContext, *, instance: Instance, exc: BaseException) -> None:
    """vm_state ERROR (task_state cleared), a fault from ``exc`` naming the instance's host, the
    ``create`` action finished failed, ``instance.update`` and ``instance.create.error`` emitted.
    The instance's cell is targeted."""
    old = instance.vm_state
    instance.vm_state = VmState.ERROR
    instance.task_state = None
    instance.save(update_fields=["vm_state", "task_state", "updated_at"])
    actions.fault_add(instance_uuid=instance.uuid, exc=exc, host=instance.host)
    actions.action_finish(ctx, instance_uuid=instance.uuid, failed=True)
    notify_instance(ctx, "instance.update", instance, old_vm_state=old, old_task_state=TaskState.SPAWNING)
    notify_instance(ctx, "instance.create.error", instance, fault=exc)
