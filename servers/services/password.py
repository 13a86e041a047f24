"""``changePassword``: set the administrator password inside a running guest.

The libvirt driver here has no guest agent channel to carry the password, so after the policy
check the answer is Nova's for a driver without ``set_admin_password``: 501.
"""
from __future__ import annotations

from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import NotImplementedYet
from cloudcore.core.policy import authorize

from ..models import Instance


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
