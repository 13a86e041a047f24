"""The compute host's half of ``os-interface``: attach (a call the API waits for) and detach (a cast).

Attach binds the user's port to the server on this host, or creates one on the requested network
in the server's project, both through Neutron's API; records the VIF in the cell; and plugs it into
the guest. If plugging fails the port is given back as it was (a port made here is deleted, a user's
port unbound) and the VIF dropped. Detach unplugs, then frees the port the same way the server's
delete does: deleted when it was made for the server, only unbound when the user brought it.
Both run as ``server_action``s: ``instance.interface_attach`` / ``interface_detach`` notifications,
``compute_attach_interface`` / ``compute_detach_interface`` events.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Conflict, Invalid, NotFound
from servers.selectors import vif_get
from servers.services.virtual_interfaces import vif_create, vif_delete

from .clients import networks as neutron
from .clients.session import ServiceCallFailed
from .drivers import driver_for
from .registry import server_action

if TYPE_CHECKING:
    from servers.models import Instance

log = logging.getLogger(__name__)


def _vif(instance: Instance, port_id: str) -> dict[str, Any]:
    """The server's VIF for ``port_id`` in Nova's network_info shape (what the driver plugs)."""
    for vif in neutron.network_info(instance_uuid=instance.uuid):
        if vif["id"] == port_id:
            return vif
    raise NotFound(f"Port {port_id} is not attached")


def _release(port_id: str, *, preserve: bool) -> None:
    if preserve:
        neutron.port_unbind(port_id=port_id)
    else:
        neutron.port_delete(port_id=port_id)


@server_action("attach_interface", action="attach_interface", notification="interface_attach",
               event="compute_attach_interface")
def attach_interface(ctx: RequestContext, instance: Instance, port_id: str | None = None,
                     network_id: str | None = None, fixed_ip: str | None = None,
                     tag: str | None = None) -> dict[str, Any]:
    """Bind ``port_id`` or create a port on ``network_id`` (with ``fixed_ip``), record and plug it;
    answers ``{"port_id"}``. Neutron's refusals (in use, address taken) propagate with their code."""
    try:
        if port_id:
            port = neutron.port_bind(port_id=port_id, instance_uuid=instance.uuid, host=instance.host,
                                     zone=instance.availability_zone)
        else:
            port = neutron.port_create(network_id=str(network_id), project_id=instance.project_id,
                                       instance_uuid=instance.uuid, host=instance.host,
                                       zone=instance.availability_zone, fixed_ip=fixed_ip)
    except ServiceCallFailed as exc:
        status = int(exc.kwargs.get("status") or 0)  # type: ignore[call-overload]
        refusal = {400: Invalid, 404: NotFound, 409: Conflict}.get(status)
        if refusal is None:
            raise
        raise refusal(str(exc.kwargs.get("detail") or exc)) from exc  # Neutron's refusal keeps its code
    preserve = bool(port_id)
    try:
        vif_create(instance_uuid=instance.uuid, port_id=port["id"], network_id=port["network_id"],
                   address=port["mac_address"], tag=tag, preserve_on_delete=preserve)
        plug = getattr(driver_for(str(instance.host)), "attach_interface", None)
        if plug is not None:
            plug(instance=instance, vif=_vif(instance, port["id"]))
    except Exception:
        vif_delete(instance.uuid, port["id"])
        _release(port["id"], preserve=preserve)
        raise
    return {"port_id": port["id"]}


@server_action("detach_interface", action="detach_interface", notification="interface_detach",
               event="compute_detach_interface")
def detach_interface(ctx: RequestContext, instance: Instance, port_id: str) -> None:
    """Unplug ``port_id`` from the guest, free the port (deleted if made for the server, else
    unbound) and drop its VIF."""
    vif = vif_get(instance.uuid, port_id)
    unplug = getattr(driver_for(str(instance.host)), "detach_interface", None)
    if unplug is not None:
        unplug(instance=instance, vif=_vif(instance, port_id))
    _release(port_id, preserve=vif.preserve_on_delete if vif is not None else True)
    vif_delete(instance.uuid, port_id)
