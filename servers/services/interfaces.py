"""``os-interface``: list, show, attach and detach a server's ports.

API side (this module): policy, lock and state guards, Nova's input checks with their codes (a port
or network the user cannot see: 404; a port another device holds: 409; both or neither given in a
way that cannot work: 400), the instance action, then the host. Attach is a call, as in Nova: the
API waits for the host (``compute.interfaces.attach_interface``) to bind or create the port through
the network service and plug it, and answers with the port; a refusal on the host comes back with
its code. Detach is a cast (202); the host unplugs and frees the port. Ports live in the network
service (API database); the cell's VIF rows hold the tags (2.49 attach, shown from 2.70).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import CloudcoreError, Conflict, Invalid, NotFound
from cloudcore.core.policy import authorize
from compute import rpc as compute_rpc

from ..choices import VmState
from ..models import Instance
from ..selectors import vif_tags
from . import actions
from .external import PortInUse, instance_ports_brief, network_get, networks_available_to, port_get
from .guards import check_not_locked, check_state
from .power import cast, target

if TYPE_CHECKING:
    from cells.models import CellMapping


class InterfaceNotFound(NotFound):
    message = "Port %(port_id)s could not be found."


class NoNetworkAvailable(Invalid):
    message = "No specific network was requested and none are available for project '%(project_id)s'."


class NetworkAmbiguous(Invalid):
    message = "Multiple possible networks found, use a Network ID to be more specific."


class InterfaceAttachFailed(CloudcoreError):
    message = "Failed to attach network adapter device to %(instance_uuid)s"


#: Nova attaches and detaches interfaces on running, paused and stopped servers with no task.
INTERFACE_VM_STATES = (VmState.ACTIVE, VmState.PAUSED, VmState.STOPPED)


def interface_list(*, actor: RequestContext, instance: Instance) -> list[dict[str, Any]]:
    """The server's ports (network service) with the tags of its VIFs (targeted cell)."""
    authorize(actor, "os_compute_api:os-attach-interfaces:list", target(instance))
    return _interfaces(instance)


def _interfaces(instance: Instance) -> list[dict[str, Any]]:
    tags = vif_tags(instance.uuid)
    return [{**port, "tag": tags.get(port["id"])} for port in instance_ports_brief(instance.uuid)]


def _interface(instance: Instance, port_id: str) -> dict[str, Any]:
    found = next((i for i in _interfaces(instance) if i["id"] == port_id), None)
    if found is None:
        raise InterfaceNotFound(port_id=port_id)
    return found


def interface_get(*, actor: RequestContext, instance: Instance, port_id: str) -> dict[str, Any]:
    """One of the server's ports; 404 if the port is not the server's."""
    authorize(actor, "os_compute_api:os-attach-interfaces:show", target(instance))
    return _interface(instance, port_id)


def _network_for(actor: RequestContext, instance: Instance, network_id: str | None) -> str:
    """The network a port is created on: the one asked for (404 if the user cannot see it), else the
    project's only available network (400 when there is none or more than one)."""
    if network_id:
        return network_get(actor, network_id).id
    available = networks_available_to(project_id=instance.project_id)
    if not available:
        raise NoNetworkAvailable(project_id=instance.project_id)
    if len(available) > 1:
        raise NetworkAmbiguous()
    return available[0].id


def interface_attach(*, actor: RequestContext, instance: Instance, cell: CellMapping, network_id: str | None = None,
                     port_id: str | None = None, fixed_ip: str | None = None,
                     tag: str | None = None) -> dict[str, Any]:
    """Attach ``port_id`` (the user's port, kept when detached) or a new port on ``network_id``
    (with ``fixed_ip``; deleted when detached) to the server; waits for its host and returns the
    interface. Records the ``attach_interface`` action."""
    authorize(actor, "os_compute_api:os-attach-interfaces:create", target(instance))
    if network_id and port_id:
        raise Invalid("Must not input both network_id and port_id")
    if fixed_ip and not network_id:
        raise Invalid("Must input network_id when request IP address")
    check_not_locked(actor, instance)
    check_state(instance, "attach_interface", vm_states=INTERFACE_VM_STATES)
    if port_id:
        port = port_get(actor, port_id)
        if port.device_id:
            raise PortInUse(port_id=port.id, net_id=port.network_id, device_id=port.device_id)
    else:
        network_id = _network_for(actor, instance, network_id)

    actions.action_start(actor, instance_uuid=instance.uuid, action="attach_interface")
    try:
        answer = compute_rpc.attach_interface(ctx=actor, host=str(instance.host), instance_uuid=instance.uuid,
                                              cell_uuid=str(cell.uuid), port_id=port_id, network_id=network_id,
                                              fixed_ip=fixed_ip, tag=tag)
    except compute_rpc.CallFailed as exc:
        raise _refusal(exc, instance) from exc
    return _interface(instance, str(answer["port_id"]))


def _refusal(exc: compute_rpc.CallFailed, instance: Instance) -> CloudcoreError:
    """The host's refusal with the code it had (404, 409, 400), else Nova's InterfaceAttachFailed (500)."""
    code = int(exc.details.get("code") or 500)
    for kind in (NotFound, Conflict, Invalid):
        if code == kind.code:
            return kind(str(exc))
    return InterfaceAttachFailed(instance_uuid=instance.uuid)


def interface_detach(*, actor: RequestContext, instance: Instance, cell: CellMapping, port_id: str) -> None:
    """Cast the detach of the server's port ``port_id`` to its host (404 if the port is not the
    server's). Records the ``detach_interface`` action."""
    authorize(actor, "os_compute_api:os-attach-interfaces:delete", target(instance))
    check_not_locked(actor, instance)
    check_state(instance, "detach_interface", vm_states=INTERFACE_VM_STATES)
    _interface(instance, port_id)
    actions.action_start(actor, instance_uuid=instance.uuid, action="detach_interface")
    cast(compute_rpc.detach_interface, actor=actor, instance=instance, cell=cell, port_id=port_id)
