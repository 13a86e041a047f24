"""``changePassword``, and the guest's encrypted password (``/servers/{id}/os-server-password``).

``changePassword`` is Nova's: an ACTIVE server with no task (else 409), not locked for a non-admin
(409), claims ``updating_password``, records a ``changePassword`` action and calls its host, which
sets the password through the guest's QEMU guest agent and gives the task back
(``compute.admin_password``). The API waits for the host's answer: 202 when the password is set,
the host's 409 (no agent asked for by the image, guest not running, the agent failed) or 501 (an
agent that does not answer) otherwise. A call the host never answered gives the task back too.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from cells.context import target_cell
from cells.transactions import atomic as cells_atomic
from cloudcore.core.context import RequestContext
from cloudcore.core.policy import authorize
from compute import rpc as compute_rpc

from ..choices import TaskState, VmState
from ..models import Instance
from ..selectors import ServerRecord
from . import actions
from .guards import check_not_locked, claim_task_state, record_target
from .power import _require_host, call, target

if TYPE_CHECKING:
    from cells.models import CellMapping


def server_set_password(*, actor: RequestContext, instance: Instance, cell: CellMapping, password: str) -> None:
    """Set ``password`` as the guest's admin password, through its host (the caller waits).

    Preconditions: ACTIVE with no task, a host, not locked (non-admin). Side effects: the task is
    claimed and given back (by the host, or here when the host never answered), a
    ``changePassword`` action with the host's ``compute_set_admin_password`` event; on a server
    with an RSA key pair, the encrypted password in its system metadata.
    Raises: ``PolicyNotAuthorized`` (``os_compute_api:os-admin-password``), ``InstanceIsLocked``,
    ``InstanceInvalidState``, the host's error with its code (409, 501), ``CallTimedOut``.
    """
    authorize(actor, "os_compute_api:os-admin-password", target(instance))
    check_not_locked(actor, instance)
    _require_host(instance, "changePassword")
    claim_task_state(instance, "changePassword", new_task_state=TaskState.UPDATING_PASSWORD,
                     vm_states=[VmState.ACTIVE])
    actions.action_start(actor, instance_uuid=instance.uuid, action="changePassword")
    try:
        call(compute_rpc.set_admin_password, actor=actor, instance=instance, cell=cell, password=password)
    except (compute_rpc.CallTimedOut, compute_rpc.CallNotDelivered):
        Instance.objects.filter(pk=instance.pk, task_state=TaskState.UPDATING_PASSWORD).update(task_state=None)
        raise


#: The guest's encrypted password is kept in four system metadata items (a 255-character column
#: each in Nova), posted there by the metadata service and read by ``nova get-password``.
PASSWORD_KEYS = tuple(f"password_{n}" for n in range(4))


def server_password_of(record: ServerRecord) -> str:
    """The encrypted password a guest posted (empty when none)."""
    if record.instance is None:
        return ""
    sysmeta = record.instance.system_metadata or {}
    return "".join(str(sysmeta.get(key) or "") for key in PASSWORD_KEYS)


def server_password_clear(*, actor: RequestContext, record: ServerRecord) -> None:
    """Forget the encrypted password (``DELETE /servers/{id}/os-server-password``).

    Preconditions: none. Side effects: the four ``password_*`` system metadata items are emptied
    (one UPDATE of the Instance row in its cell); a server not yet in a cell has none to clear.
    Raises: ``PolicyNotAuthorized`` (``os_compute_api:os-server-password:clear``).
    """
    authorize(actor, "os_compute_api:os-server-password:clear", record_target(record))
    if record.instance is None or record.cell is None:
        return
    with target_cell(record.cell), cells_atomic(record.cell):
        inst = Instance.objects.select_for_update().get(uuid=record.uuid)
        inst.system_metadata = {**(inst.system_metadata or {}), **{key: "" for key in PASSWORD_KEYS}}
        inst.save(update_fields=["system_metadata", "updated_at"])
