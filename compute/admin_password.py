"""The compute host's half of ``changePassword``: the guest's admin password set by its QEMU guest
agent, called by ``servers.services.password`` through ``compute.rpc`` (the API waits).

As Nova's compute manager and libvirt driver do it:

- the guest must be running, else ``Failed to set admin password on <uuid> because instance
  <uuid> is not running`` (409);
- the image must have asked for the agent (``hw_qemu_guest_agent``, kept in the server's system
  metadata), else ``QEMU guest agent is not enabled`` (409);
- the user is the image's ``os_admin_user``, else ``Administrator`` for a Windows image
  (``os_type``) and ``root`` for any other;
- an agent that does not answer is the API's 501; any other failure is ``Failed to set admin
  password on <uuid> because error setting admin password`` (409: the cause is logged and kept in
  the fault's details, never the password);
- with a password set and an RSA key pair named at create, the password encrypted with the public
  key is kept in the server's system metadata, where ``os-server-password`` reads it.

The task (``updating_password``) is given back in every case; the server's ``vm_state`` does not
change. A ``compute_set_admin_password`` event is recorded on the ``changePassword`` action, a
fault and ``compute.exception`` on failure.
"""
from __future__ import annotations

import base64
import logging
from typing import TYPE_CHECKING, Any

import libvirt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Conflict, NotImplementedYet
from servers.choices import TaskState
from servers.services import actions
from servers.services.notify import notify_compute_exception
from servers.services.password import PASSWORD_KEYS

from .drivers import driver_for
from .registry import host_call
from .virt.libvirt import AdminPasswordNotImplemented, wants_guest_agent

if TYPE_CHECKING:
    from servers.models import Instance

log = logging.getLogger(__name__)

#: libvirt's domain states of a running guest (running, blocked on a resource)
_RUNNING = (libvirt.VIR_DOMAIN_RUNNING, libvirt.VIR_DOMAIN_BLOCKED)
#: one system metadata item holds 255 characters (Nova's column), four hold the whole
_CHUNK = 255


class QemuGuestAgentNotEnabled(Conflict):
    message = "QEMU guest agent is not enabled"


class InstancePasswordSetFailed(Conflict):
    message = "Failed to set admin password on %(instance)s because %(reason)s"


class SetPasswordNotImplemented(NotImplementedYet):
    message = "Unable to set password on instance"


def admin_user(instance: Instance) -> str:
    """Whose password is set: the image's ``os_admin_user``, else by its ``os_type``."""
    sysmeta = instance.system_metadata or {}
    if sysmeta.get("image_os_admin_user"):
        return str(sysmeta["image_os_admin_user"])
    return "Administrator" if str(sysmeta.get("image_os_type") or "").lower() == "windows" else "root"


def encrypted_password_items(key_data: str | None, password: str) -> dict[str, str]:
    """The ``password_0..3`` system metadata items of ``password`` encrypted with an RSA public
    key (``ssh-rsa ...``, PKCS#1 v1.5, base64): what ``os-server-password`` gives the key's owner to
    decrypt. Empty for no key or a key of another kind."""
    if not key_data or not key_data.startswith("ssh-rsa"):
        return {}
    key = serialization.load_ssh_public_key(key_data.strip().encode())
    if not isinstance(key, rsa.RSAPublicKey):
        return {}
    text = base64.b64encode(key.encrypt(password.encode(), padding.PKCS1v15())).decode()
    return {name: text[i * _CHUNK:(i + 1) * _CHUNK] for i, name in enumerate(PASSWORD_KEYS)}


def _give_back_task(instance: Instance) -> None:
    instance.refresh_from_db(fields=["task_state"])
    if instance.task_state == TaskState.UPDATING_PASSWORD:
        instance.task_state = None
        instance.save(update_fields=["task_state", "updated_at"])


def _set(instance: Instance, password: str) -> None:
    driver = driver_for(str(instance.host))
    try:
        running = driver.get_info(instance).get("state") in _RUNNING
    except Exception:
        running = False
    if not running:
        raise InstancePasswordSetFailed(instance=instance.uuid, reason=f"instance {instance.uuid} is not running")
    if not wants_guest_agent(instance):
        raise QemuGuestAgentNotEnabled()
    try:
        driver.set_admin_password(instance=instance, user=admin_user(instance), password=password)
    except AdminPasswordNotImplemented as exc:
        raise SetPasswordNotImplemented() from exc
    except Exception as exc:
        # the caller sees no detail of the cause (it could hold the password); the log has it
        log.warning("set_admin_password of %s failed: %s", instance.uuid, exc)
        raise InstancePasswordSetFailed(instance=instance.uuid, reason="error setting admin password") from exc
    items = encrypted_password_items(instance.key_data, password)
    if items:
        instance.system_metadata = {**(instance.system_metadata or {}), **items}
        instance.save(update_fields=["system_metadata", "updated_at"])


@host_call("set_admin_password")
def set_admin_password(ctx: RequestContext, instance: Instance, password: str) -> dict[str, Any]:
    try:
        with actions.wrap_event(ctx, instance_uuid=instance.uuid, event="compute_set_admin_password",
                                host=instance.host, action_name="changePassword"):
            _set(instance, password)
    except Exception as exc:
        _give_back_task(instance)
        actions.fault_add(instance_uuid=instance.uuid, exc=exc, host=instance.host)
        actions.action_finish(ctx, instance_uuid=instance.uuid, failed=True)
        notify_compute_exception(exc, host=instance.host)
        raise
    _give_back_task(instance)
    actions.action_finish(ctx, instance_uuid=instance.uuid)
    return {}
