"""Nova's floating IP proxy (``/os-floating-ips`` and ``/os-floating-ip-pools``, gone from 2.36): the
network service's floating IPs (``networks.l3``) in nova-network's words.

Nova's policies are checked first; the network service is then called with the caller's context (as Nova
calls Neutron with the user's token), so its own policies and visibility apply too. A pool is an external
network, named by its name or its id; a request that names none takes ``settings.DEFAULT_FLOATING_POOL``
(Nova's ``[neutron] default_floating_pool``). The network service's refusals become Nova's: no address
left is a 404, over quota a 403. Deleting an associated floating IP releases it, association and all.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.conf import settings
from oslo_utils import uuidutils

from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Conflict, Forbidden, NotFound
from cloudcore.core.policy import authorize

from .external import (
    FloatingIPNotFound,
    IpAddressGenerationFailure,
    OverQuota,
    floatingip_create,
    floatingip_delete,
    floatingip_get,
    floatingip_list,
    network_list,
)

if TYPE_CHECKING:  # annotations only: other apps read networks through its services
    from networks.models import FloatingIP, Network


class FloatingIpPoolNotFound(NotFound):
    message = "Floating IP pool not found."


class FloatingIpPoolAmbiguous(Conflict):
    message = "Multiple floating IP pools matches found for name '%(name)s'"


class FloatingIpNotFoundForId(NotFound):
    message = "Floating IP not found for ID %(id)s"


def _own(actor: RequestContext) -> dict[str, Any]:
    return {"project_id": actor.project_id}


def _by_id(actor: RequestContext, fip_id: str) -> FloatingIP:
    try:
        return floatingip_get(actor, fip_id)
    except FloatingIPNotFound:
        raise FloatingIpNotFoundForId(id=fip_id) from None


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
    authorize(actor, "os_compute_api:os-floating-ip-pools:list", _own(actor))
    return network_list(actor, filters={"router:external": True})
