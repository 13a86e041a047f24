"""Nova's floating IP proxy (``/os-floating-ips`` and ``/os-floating-ip-pools``, gone from 2.36) and the
``addFloatingIp`` / ``removeFloatingIp`` server actions (gone from 2.44): the network service's floating
IPs (``networks.l3``) in nova-network's words.

Nova's policies are checked first; the network service is then called with the caller's context (as Nova
calls Neutron with the user's token), so its own policies and visibility apply too. A pool is an external
network, named by its name or its id; a request that names none takes ``settings.DEFAULT_FLOATING_POOL``
(Nova's ``[neutron] default_floating_pool``). The network service's refusals become Nova's: no address
left is a 404, over quota a 403; an association it refuses is a 400 quoting its reason.

Associating a floating IP already associated with another server moves it to this one (the network
service re-points it); deleting an associated one releases it, association and all.
"""
from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING, Any

from django.conf import settings
from oslo_utils import uuidutils

from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Conflict, Forbidden, Invalid, NotFound
from cloudcore.core.policy import authorize

from ..models import Instance
from .external import (
    FloatingIPNotFound,
    IpAddressGenerationFailure,
    OverQuota,
    floatingip_create,
    floatingip_delete,
    floatingip_get,
    floatingip_list,
    floatingip_update,
    instance_ports_brief,
    network_list,
)
from .power import target

if TYPE_CHECKING:  # annotations only: other apps read networks through its services
    from networks.models import FloatingIP, Network


class FloatingIpPoolNotFound(NotFound):
    message = "Floating IP pool not found."


class FloatingIpPoolAmbiguous(Conflict):
    message = "Multiple floating IP pools matches found for name '%(name)s'"


class FloatingIpNotFoundForId(NotFound):
    message = "Floating IP not found for ID %(id)s"


class FloatingIpNotFoundForAddress(NotFound):
    message = "Floating IP not found for address %(address)s."


class FloatingIpMultipleFoundForAddress(Conflict):
    message = "Multiple floating IPs are found for address %(address)s."


class FloatingIpNotAssociated(Conflict):
    message = "Floating IP %(address)s is not associated with instance %(id)s."


def _own(actor: RequestContext) -> dict[str, Any]:
    return {"project_id": actor.project_id}


def _by_id(actor: RequestContext, fip_id: str) -> FloatingIP:
    try:
        return floatingip_get(actor, fip_id)
    except FloatingIPNotFound:
        raise FloatingIpNotFoundForId(id=fip_id) from None


def _by_address(actor: RequestContext, address: str) -> list[FloatingIP]:
    """The floating IPs with ``address`` that the caller sees (the network service's visibility)."""
    return floatingip_list(actor, filters={"floating_ip_address": address})


def _pool(actor: RequestContext, name_or_id: str) -> Network:
    """The external network named (or whose id is) ``name_or_id``."""
    if not name_or_id:
        raise FloatingIpPoolNotFound()
    key = "id" if uuidutils.is_uuid_like(name_or_id) else "name"
    found = network_list(actor, filters={"router:external": True, key: name_or_id})
    if not found:
        raise FloatingIpPoolNotFound()
    if len(found) > 1:
        raise FloatingIpPoolAmbiguous(name=name_or_id)
    return found[0]


def floating_ip_list(*, actor: RequestContext) -> list[FloatingIP]:
    """The floating IPs of the caller's project (an admin's too: Nova's proxy lists the context's project)."""
    authorize(actor, "os_compute_api:os-floating-ips:list", _own(actor))
    return floatingip_list(actor, filters={"project_id": actor.project_id})


def floating_ip_get(*, actor: RequestContext, fip_id: str) -> FloatingIP:
    """One floating IP by id; FloatingIpNotFoundForId (404) when the caller sees none."""
    authorize(actor, "os_compute_api:os-floating-ips:show", _own(actor))
    return _by_id(actor, fip_id)


def floating_ip_create(*, actor: RequestContext, pool: str | None) -> FloatingIP:
    """Allocate an address of ``pool`` (else the default pool) to the caller's project.
    Raises FloatingIpPoolNotFound (404), NotFound (404: no address left), Forbidden (403: over the
    project's floating IP quota), Invalid (400: the network service's bad request, e.g. no IPv4 subnet)."""
    authorize(actor, "os_compute_api:os-floating-ips:create", _own(actor))
    network = _pool(actor, pool or settings.DEFAULT_FLOATING_POOL)
    try:
        return floatingip_create(actor, floating_network_id=network.id)
    except IpAddressGenerationFailure:
        raise NotFound(f"No more floating IPs in pool {pool}." if pool else "No more floating IPs available.") \
            from None
    except OverQuota:
        raise Forbidden(f"IP allocation over quota in pool {pool}." if pool else "IP allocation over quota.") \
            from None


def floating_ip_delete(*, actor: RequestContext, fip_id: str) -> None:
    """Release a floating IP (disassociated with it, when it is associated). FloatingIpNotFoundForId (404)."""
    authorize(actor, "os_compute_api:os-floating-ips:delete", _own(actor))
    floatingip_delete(actor, _by_id(actor, fip_id))


def floating_ip_pools(*, actor: RequestContext) -> list[Network]:
    """The external networks (every project sees them)."""
    authorize(actor, "os_compute_api:os-floating-ip-pools", _own(actor))
    return network_list(actor, filters={"router:external": True})


def _fixed_address(instance: Instance, address: str, fixed_address: str | None,
                   fixed_ips: list[tuple[str, str]]) -> str:
    """The server's fixed IP to associate with: ``fixed_address`` if the server has it, else its first
    IPv4 address (Nova's words for each refusal, 400)."""
    if fixed_address is not None:
        if fixed_address not in {ip for _port, ip in fixed_ips}:
            raise Invalid("Specified fixed address not assigned to instance")
        return fixed_address
    first = next((ip for _port, ip in fixed_ips if ipaddress.ip_address(ip).version == 4), None)
    if first is None:
        raise Invalid(f"Unable to associate floating IP {address} to any fixed IPs for instance {instance.uuid}. "
                      "Instance has no fixed IPv4 addresses to associate.")
    return first


def server_add_floating_ip(*, actor: RequestContext, instance: Instance, address: str,
                           fixed_address: str | None = None) -> None:
    """Associate the floating IP ``address`` with the server's fixed IP (``fixed_address`` or the first
    IPv4 one), moving it from any server it was associated with. Raises Invalid (400: the server has no
    port or fixed IP, or not ``fixed_address``; the network service refused the association, e.g. no
    router reaches the fixed IP's subnet from the floating IP's network), NotFound (404: no floating IP
    with that address), PolicyNotAuthorized (403)."""
    authorize(actor, "os_compute_api:os-floating-ips:add", target(instance))
    ports = instance_ports_brief(instance.uuid)
    if not ports:
        raise Invalid("Instance network is not ready yet")
    fixed_ips = [(port["id"], ip["ip_address"]) for port in ports for ip in port["fixed_ips"]]
    if not fixed_ips:
        raise Invalid("No fixed IPs associated to instance")
    fixed = _fixed_address(instance, address, fixed_address, fixed_ips)
    port_id = next(port for port, ip in fixed_ips if ip == fixed)
    failed = f"Unable to associate floating IP {address} to fixed IP {fixed} for instance {instance.uuid}. Error: "
    found = _by_address(actor, address)
    if not found:
        raise NotFound("floating IP not found")
    if len(found) > 1:
        raise Invalid(failed + FloatingIpMultipleFoundForAddress(address=address).msg)
    try:
        floatingip_update(actor, found[0], changes={"port_id": port_id, "fixed_ip_address": fixed})
    except Conflict as exc:  # e.g. the fixed IP has a floating IP of that network already
        raise Invalid(exc.msg) from None
    except (NotFound, Invalid) as exc:
        raise Invalid(failed + exc.msg) from None


def server_remove_floating_ip(*, actor: RequestContext, instance: Instance, address: str) -> None:
    """Disassociate the floating IP ``address`` from the server. Raises FloatingIpNotFoundForAddress
    (404), FloatingIpMultipleFoundForAddress or FloatingIpNotAssociated (409: not associated, or with
    another server), PolicyNotAuthorized (403; checked against the project of the port it is associated
    with, else its own)."""
    found = _by_address(actor, address)
    if not found:
        raise FloatingIpNotFoundForAddress(address=address)
    if len(found) > 1:
        raise FloatingIpMultipleFoundForAddress(address=address)
    fip = found[0]
    port = fip.port
    authorize(actor, "os_compute_api:os-floating-ips:remove",
              {"project_id": port.project_id if port is not None else fip.project_id})
    if port is None or port.device_id != instance.uuid:
        raise FloatingIpNotAssociated(address=address, id=instance.uuid)
    floatingip_update(actor, fip, changes={"port_id": None})
