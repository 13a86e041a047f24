"""``changePassword``, and the guest's encrypted password (``/servers/{id}/os-server-password``).

The libvirt driver here has no guest agent channel to carry the password, so after the policy
check the answer is Nova's for a driver without ``set_admin_password``: 501.
"""
from __future__ import annotations

from cells.context import target_cell
from cells.transactions import atomic as cells_atomic
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import NotImplementedYet
from cloudcore.core.policy import authorize

from ..models import Instance
from ..selectors import ServerRecord
from .guards import record_target


class SetPasswordNotSupported(NotImplementedYet):
    message = "Unable to set password on instance"


def server_set_password(*, actor: RequestContext, instance: Instance, password: str) -> None:
    """Set ``password`` as the guest's admin password.

    Preconditions: none beyond policy (nothing is changed). Side effects: none.
    Raises: ``PolicyNotAuthorized`` (``os_compute_api:os-admin-password``), then always
    ``SetPasswordNotSupported`` (501).
    """
    authorize(actor, "os_compute_api:os-admin-password",
              {"project_id": instance.project_id, "user_id": instance.user_id})
    raise SetPasswordNotSupported()


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
