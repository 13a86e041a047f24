"""Neutron's L3: routers (an external gateway, interfaces, extra routes) and floating IPs (API database).

A router belongs to a project. Its gateway is a port (``network:router_gateway``, no project's) on an
external network, with an address of each of that network's subnets unless an admin names
``external_fixed_ips``; ``enable_snat`` (default true) and ``external_fixed_ips`` are admin's to set.
An interface is a port on an internal subnet whose ``device_id`` is the router and whose
``device_owner`` is ``network:router_interface``: added by subnet (a new port holding the subnet's
gateway IP) or by port (the user's port is taken over); removing it deletes the port.

A floating IP is an address of an external network held by its own port (``network:floatingip``). It
is associated with one fixed IPv4 address of a port of its project, through the router whose gateway is
on the floating IP's network and which has an interface on the fixed IP's subnet (else 404
``ExternalGatewayForFloatingIPNotFound``, Neutron's words).
Associated it is ACTIVE, else DOWN. Deleting the port disassociates it (``services.port_delete``);
deleting its external network releases it when it is not associated (``services.network_delete``).

A router's gateway cannot go while a floating IP goes through it, nor an interface while a floating IP
or an extra route needs it (409, as Neutron).
"""
from __future__ import annotations

import ipaddress
from typing import Any

from django.db import transaction
from django.db.models import QuerySet

from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Conflict, Invalid, NotFound
from cloudcore.core.policy import authorize

from . import quotas, secgroups, services
from .models import FloatingIP, IPAllocation, Network, Port, Router, Subnet, new_uuid

ROUTER_INTERFACE = "network:router_interface"
ROUTER_GATEWAY = "network:router_gateway"
FLOATINGIP = services.FLOATINGIP_OWNER
#: Neutron's ``max_routes`` default.
MAX_ROUTES = 30


class RouterNotFound(NotFound):
    message = "Router %(router_id)s could not be found"


class FloatingIPNotFound(NotFound):
    message = "Floating IP %(floatingip_id)s could not be found"


class RouterInUse(Conflict):
    message = "Router %(router_id)s still has ports"


class RouterInterfaceNotFound(NotFound):
    message = "Router %(router_id)s does not have an interface with id %(port_id)s"


class RouterInterfaceNotFoundForSubnet(NotFound):
    message = "Router %(router_id)s has no interface on subnet %(subnet_id)s"


class SubnetMismatchForPort(Invalid):
    message = "Subnet on port %(port_id)s does not match the requested subnet %(subnet_id)s."


class RouterInterfaceInUseByFloatingIP(Conflict):
    message = ("Router interface for subnet %(subnet_id)s on router %(router_id)s cannot be deleted, as it is "
               "required by one or more floating IPs.")


class RouterInterfaceInUseByRoute(Conflict):
    message = ("Router interface for subnet %(subnet_id)s on router %(router_id)s cannot be deleted, as it is "
               "required by one or more routes.")


class RouterExternalGatewayInUseByFloatingIp(Conflict):
    message = ("Gateway cannot be updated for router %(router_id)s, since a gateway to external network "
               "%(net_id)s is required by one or more floating IPs.")


class ExternalGatewayForFloatingIPNotFound(NotFound):
    message = ("External network %(external_network_id)s is not reachable from subnet %(subnet_id)s.  Therefore, "
               "cannot associate Port %(port_id)s with a Floating IP.")


class FloatingIPPortAlreadyAssociated(Conflict):
    message = ("Cannot associate floating IP %(floating_ip_address)s (%(fip_id)s) with port %(port_id)s using "
               "fixed IP %(fixed_ip)s, as that fixed IP already has a floating IP on external network %(net_id)s.")


class InvalidRoutes(Invalid):
    message = "Invalid format for routes: %(routes)s, %(reason)s"


class RoutesExhausted(Invalid):
    message = "Unable to complete operation for %(router_id)s. The number of routes exceeds the maximum %(quota)s."


def bad_request(resource: str, msg: str) -> Invalid:
    """Neutron's ``BadRequest``: "Bad <resource> request: <msg>."."""
    return Invalid(f"Bad {resource} request: {msg}.")


def _system() -> RequestContext:
    return RequestContext(user_id=None, project_id=None, roles=["admin"], is_admin=True, is_service=True)


def _target(project_id: str) -> dict[str, Any]:
    return {"project_id": project_id}


def _owner(ctx: RequestContext, project_id: Any) -> str:
    return str(project_id) if (project_id and ctx.is_admin) else str(ctx.project_id or "")


# --- routers ------------------------------------------------------------------------------------


def _visible_routers(ctx: RequestContext) -> QuerySet[Router]:
    qs = Router.objects.select_related("gw_port__network").prefetch_related("gw_port__fixed_ips")
    return qs if ctx.is_admin else qs.filter(project_id=ctx.project_id)


def router_get(ctx: RequestContext, router_id: str) -> Router:
    router = _visible_routers(ctx).filter(id=router_id).first()
    if router is None:
        raise RouterNotFound(router_id=router_id)
    authorize(ctx, "get_router", _target(router.project_id))
    return router


def router_list(ctx: RequestContext, *, filters: dict[str, Any]) -> list[Router]:
    authorize(ctx, "get_router", _target(str(ctx.project_id)))
    qs = _visible_routers(ctx).order_by("created_at", "id")
    for key in ("id", "name", "status", "description"):
        if filters.get(key) is not None:
            qs = qs.filter(**{key: filters[key]})
    for key in ("project_id", "tenant_id"):
        if filters.get(key):
            qs = qs.filter(project_id=filters[key])
    if filters.get("admin_state_up") is not None:
        qs = qs.filter(admin_state_up=secgroups.as_bool(filters["admin_state_up"], "admin_state_up"))
    return list(qs)


def router_interfaces(router: Router) -> list[Port]:
    return list(Port.objects.filter(device_id=router.id, device_owner=ROUTER_INTERFACE)
                .prefetch_related("fixed_ips__subnet").order_by("created_at", "id"))


def _gateway_info(value: Any) -> dict[str, Any] | None:
    if value is None or value == {}:
        return None
    if not isinstance(value, dict):
        raise Invalid(f"Invalid input for external_gateway_info. Reason: '{value}' is not a dictionary.")
    unknown = sorted(set(value) - {"network_id", "enable_snat", "external_fixed_ips"})
    if unknown:
        raise Invalid(f"Invalid input for external_gateway_info. Reason: Unrecognized attribute(s) "
                      f"'{', '.join(unknown)}'.")
    if not value.get("network_id"):
        raise Invalid("Invalid input for external_gateway_info. Reason: network_id is required.")
    fixed = value.get("external_fixed_ips")
    if fixed is not None and not (isinstance(fixed, list) and all(isinstance(f, dict) for f in fixed)):
        raise Invalid("Invalid input for external_fixed_ips. Reason: a list of dictionaries is expected.")
    return value


def _external_network(ctx: RequestContext, network_id: str, resource: str) -> Network:
    network = services.network_get(ctx, network_id)
    if not network.external:
        raise bad_request(resource, f"Network {network_id} is not a valid external network")
    return network


def _set_gateway(ctx: RequestContext, router: Router, info: dict[str, Any] | None, *, op: str) -> None:
    """Point the router's gateway at ``info`` (None: no gateway). ``op`` is ``create`` or ``update`` (the
    policy rules' prefix)."""
    if info is not None:
        for attr in ("enable_snat", "external_fixed_ips"):
            if attr in info:
                authorize(ctx, f"{op}_router:external_gateway_info:{attr}", _target(router.project_id))
    current = router.gw_port
    new_net = _external_network(ctx, str(info["network_id"]), "router") if info else None
    if current is not None and (new_net is None or new_net.id != current.network_id):
        if router.floating_ips.exists():
            raise RouterExternalGatewayInUseByFloatingIp(router_id=router.id, net_id=current.network_id)
        router.gw_port = None
        current.delete()
        current = None
    if info is None:
        router.enable_snat = True
        return
    if "enable_snat" in info:
        router.enable_snat = secgroups.as_bool(info["enable_snat"], "enable_snat")
    fixed = info.get("external_fixed_ips")
    if current is None:
        assert new_net is not None
        router.gw_port = services.port_create(
            _system(), network_id=new_net.id, fixed_ips=fixed or None, device_id=router.id,
            device_owner=ROUTER_GATEWAY, project_id=None)
    elif fixed is not None:
        services.port_update(_system(), current, fixed_ips=fixed)


def _routes(router: Router, value: Any) -> list[dict[str, str]]:
    """Validated extra routes: each nexthop on a subnet of one of the router's interfaces and not one of
    the router's own addresses."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise InvalidRoutes(routes=value, reason="a list of routes is expected")
    routes: list[dict[str, str]] = []
    for route in value:
        version = 6 if isinstance(route, dict) and ":" in str(route.get("destination", "")) else 4
        try:
            (checked,) = services.validate_host_routes([route], version)
        except Invalid as exc:
            raise InvalidRoutes(routes=[route], reason=str(exc)) from None
        if checked in routes:
            raise InvalidRoutes(routes=[route], reason="duplicate route")
        routes.append(checked)
    if len(routes) > MAX_ROUTES:
        raise RoutesExhausted(router_id=router.id, quota=MAX_ROUTES)
    allocations = [a for p in router_interfaces(router) for a in p.fixed_ips.all()]
    for route in routes:
        nexthop = ipaddress.ip_address(route["nexthop"])
        if any(a.ip_address == route["nexthop"] for a in allocations):
            raise InvalidRoutes(routes=[route], reason="the nexthop is used by router")
        if not any(nexthop in ipaddress.ip_network(a.subnet.cidr, strict=False) for a in allocations):
            raise InvalidRoutes(routes=[route], reason="the nexthop is not connected with router")
    return routes


def router_create(ctx: RequestContext, *, name: str = "", description: str = "", admin_state_up: bool = True,
                  project_id: str | None = None, external_gateway_info: Any = None) -> Router:
    """A router of the actor's project (an admin may name another), with a gateway when asked.
    Raises NetworkNotFound (404), Invalid (400) for a network that is not external, PolicyNotAuthorized
    (403) for the admin-only gateway attributes."""
    owner = _owner(ctx, project_id)
    authorize(ctx, "create_router", _target(owner))
    info = _gateway_info(external_gateway_info)
    quotas.check(owner, "router")
    with transaction.atomic():
        router = Router.objects.create(name=name, description=description, admin_state_up=admin_state_up,
                                       project_id=owner)
        if info is not None:
            _set_gateway(ctx, router, info, op="create")
            router.save()
    return Router.objects.select_related("gw_port__network").get(id=router.id)


ROUTER_UPDATABLE = {"name", "description", "admin_state_up", "external_gateway_info", "routes"}


def router_update(ctx: RequestContext, router: Router, *, changes: dict[str, Any]) -> Router:
    """Rename, (dis)able, change the gateway or the extra routes. 409 RouterExternalGatewayInUseByFloatingIp
    when a floating IP still needs the gateway being replaced."""
    authorize(ctx, "update_router", _target(router.project_id))
    with transaction.atomic():
        for key in ("name", "description"):
            if key in changes:
                setattr(router, key, str(changes[key] or ""))
        if "admin_state_up" in changes:
            router.admin_state_up = secgroups.as_bool(changes["admin_state_up"], "admin_state_up")
        if "external_gateway_info" in changes:
            _set_gateway(ctx, router, _gateway_info(changes["external_gateway_info"]), op="update")
        if "routes" in changes:
            router.routes = _routes(router, changes["routes"])
        router.revision_number += 1
        router.save()
    return Router.objects.select_related("gw_port__network").get(id=router.id)


def router_delete(ctx: RequestContext, router: Router) -> None:
    """Delete a router without interfaces (409 RouterInUse otherwise), and its gateway port."""
    authorize(ctx, "delete_router", _target(router.project_id))
    with transaction.atomic():
        if Port.objects.filter(device_id=router.id, device_owner=ROUTER_INTERFACE).exists():
            raise RouterInUse(router_id=router.id)
        if router.gw_port is not None:
            router.gw_port.delete()
        router.delete()


def _interface_info(router: Router, port: Port, subnet_ids: list[str]) -> dict[str, Any]:
    return {"id": router.id, "tenant_id": router.project_id, "project_id": router.project_id, "port_id": port.id,
            "network_id": port.network_id, "subnet_id": subnet_ids[0] if subnet_ids else None,
            "subnet_ids": subnet_ids}


def _check_subnets_free(router: Router, subnets: list[Subnet]) -> None:
    """A router has one port per subnet and its subnets do not overlap."""
    attached = [a.subnet for p in router_interfaces(router) for a in p.fixed_ips.all()]
    for subnet in subnets:
        for other in attached:
            if other.id == subnet.id:
                raise bad_request("router", f"Router already has a port on subnet {subnet.id}")
            if ipaddress.ip_network(other.cidr).overlaps(ipaddress.ip_network(subnet.cidr)):
                raise bad_request("router", f"Cidr {subnet.cidr} of subnet {subnet.id} overlaps with cidr "
                                            f"{other.cidr} of subnet {other.id}")


def router_add_interface(ctx: RequestContext, router: Router, *, subnet_id: str | None = None,
                         port_id: str | None = None) -> dict[str, Any]:
    """Attach a subnet (a new port with its gateway IP) or a port of the router's project to the router.
    Raises SubnetNotFound/PortNotFound (404), Invalid (400: neither or both given, no gateway IP, a subnet
    already attached or overlapping), PortInUse (409)."""
    authorize(ctx, "add_router_interface", _target(router.project_id))
    if subnet_id and port_id:
        raise bad_request("router", "Cannot specify both subnet-id and port-id")
    if not (subnet_id or port_id):
        raise bad_request("router", "Either subnet_id or port_id must be specified")
    with transaction.atomic():
        if port_id:
            port = services.port_get(ctx, port_id)
            if port.device_id and port.device_id != router.id:
                raise services.PortInUse(port_id=port.id, net_id=port.network_id, device_id=port.device_id)
            subnets = [a.subnet for a in port.fixed_ips.all()]
            if not subnets:
                raise bad_request("router", "Router port must have at least one fixed IP")
            _check_subnets_free(router, subnets)
            port.device_id, port.device_owner, port.status = router.id, ROUTER_INTERFACE, "ACTIVE"
            port.save(update_fields=["device_id", "device_owner", "status", "updated_at"])
            port.security_groups.clear()
        else:
            subnet = services.subnet_get(ctx, str(subnet_id))
            if not subnet.gateway_ip:
                raise bad_request("router", "Subnet for router interface must have a gateway IP")
            _check_subnets_free(router, [subnet])
            port = services.port_create(
                _system(), network_id=subnet.network_id, fixed_ips=[{"subnet_id": subnet.id,
                                                                     "ip_address": subnet.gateway_ip}],
                device_id=router.id, device_owner=ROUTER_INTERFACE, project_id=router.project_id,
                allow_gateway_ip=True)
            subnets = [subnet]
        Router.objects.filter(id=router.id).update(revision_number=router.revision_number + 1)
    return _interface_info(router, port, [s.id for s in subnets])


def router_remove_interface(ctx: RequestContext, router: Router, *, subnet_id: str | None = None,
                            port_id: str | None = None) -> dict[str, Any]:
    """Detach an interface (by port or by subnet) and delete its port. Raises RouterInterfaceNotFound /
    RouterInterfaceNotFoundForSubnet (404), SubnetMismatchForPort (400), RouterInterfaceInUseByFloatingIP
    or RouterInterfaceInUseByRoute (409)."""
    authorize(ctx, "remove_router_interface", _target(router.project_id))
    if not (subnet_id or port_id):
        raise bad_request("router", "Either subnet_id or port_id must be specified")
    interfaces = router_interfaces(router)
    if port_id:
        port = next((p for p in interfaces if p.id == port_id), None)
        if port is None:
            raise RouterInterfaceNotFound(router_id=router.id, port_id=port_id)
        if subnet_id and not any(a.subnet_id == subnet_id for a in port.fixed_ips.all()):
            raise SubnetMismatchForPort(port_id=port_id, subnet_id=subnet_id)
    else:
        found = next((p for p in interfaces if any(a.subnet_id == subnet_id for a in p.fixed_ips.all())), None)
        if found is None:
            raise RouterInterfaceNotFoundForSubnet(router_id=router.id, subnet_id=subnet_id)
        port = found
    subnets = [a.subnet for a in port.fixed_ips.all()]
    for subnet in subnets:
        cidr = ipaddress.ip_network(subnet.cidr, strict=False)
        if any(ipaddress.ip_address(f) in cidr for f in router.floating_ips.values_list("fixed_ip_address", flat=True)
               if f):
            raise RouterInterfaceInUseByFloatingIP(subnet_id=subnet.id, router_id=router.id)
        if any(ipaddress.ip_address(r["nexthop"]) in cidr for r in router.routes):
            raise RouterInterfaceInUseByRoute(subnet_id=subnet.id, router_id=router.id)
    info = _interface_info(router, port, [s.id for s in subnets])
    with transaction.atomic():
        port.delete()
        Router.objects.filter(id=router.id).update(revision_number=router.revision_number + 1)
    return info


# --- floating IPs -------------------------------------------------------------------------------


def _visible_fips(ctx: RequestContext) -> QuerySet[FloatingIP]:
    # the network and the associated port: Nova's proxy shows the pool's name and the port's device
    qs = FloatingIP.objects.select_related("floating_port", "floating_network", "port")
    return qs if ctx.is_admin else qs.filter(project_id=ctx.project_id)


def floatingip_get(ctx: RequestContext, fip_id: str) -> FloatingIP:
    fip = _visible_fips(ctx).filter(id=fip_id).first()
    if fip is None:
        raise FloatingIPNotFound(floatingip_id=fip_id)
    authorize(ctx, "get_floatingip", _target(fip.project_id))
    return fip


def floatingip_list(ctx: RequestContext, *, filters: dict[str, Any]) -> list[FloatingIP]:
    authorize(ctx, "get_floatingip", _target(str(ctx.project_id)))
    qs = _visible_fips(ctx).order_by("created_at", "id")
    for key in ("id", "floating_ip_address", "floating_network_id", "port_id", "router_id", "fixed_ip_address",
                "status", "description"):
        if filters.get(key) is not None:
            qs = qs.filter(**{key: filters[key] or None} if key in ("port_id", "router_id") else
                           {key: filters[key]})
    for key in ("project_id", "tenant_id"):
        if filters.get(key):
            qs = qs.filter(project_id=filters[key])
    return list(qs)


def _fixed_ip_of(port: Port, fixed_ip_address: str | None) -> IPAllocation:
    v4 = [a for a in port.fixed_ips.select_related("subnet") if a.subnet.ip_version == 4]
    if fixed_ip_address:
        match = next((a for a in v4 if a.ip_address == fixed_ip_address), None)
        if match is None:
            raise bad_request("floatingip", f"Port {port.id} does not have fixed ip {fixed_ip_address}")
        return match
    if not v4:
        raise bad_request("floatingip", f"Cannot add floating IP to port {port.id} that has no fixed IPv4 addresses")
    if len(v4) > 1:
        raise bad_request("floatingip", f"Port {port.id} has multiple fixed IPv4 addresses.  Must provide a specific "
                                        "IPv4 address when assigning a floating IP")
    return v4[0]


def _associate(ctx: RequestContext, fip: FloatingIP, port_id: str, fixed_ip_address: str | None) -> None:
    """Point ``fip`` at ``port_id``'s fixed IP through the router that reaches it (see the module doc)."""
    port = services.port_get(ctx, port_id)
    if port.project_id != fip.project_id and not ctx.is_admin:
        raise bad_request("floatingip", f"Cannot create floating IP and bind it to Port {port.id}, since that port "
                                        "is owned by a different tenant")
    if port.device_owner.startswith("network:"):
        raise bad_request("floatingip", f"Port {port.id} has owner {port.device_owner} and therefore cannot be "
                                        "associated with a floating IP")
    fixed = _fixed_ip_of(port, fixed_ip_address)
    router = (Router.objects.filter(gw_port__network_id=fip.floating_network_id)
              .filter(id__in=Port.objects.filter(device_owner=ROUTER_INTERFACE, fixed_ips__subnet_id=fixed.subnet_id)
                      .values("device_id"))
              .order_by("created_at", "id").first())
    if router is None:
        raise ExternalGatewayForFloatingIPNotFound(external_network_id=fip.floating_network_id,
                                                   subnet_id=fixed.subnet_id, port_id=port.id)
    taken = (FloatingIP.objects.filter(port=port, fixed_ip_address=fixed.ip_address,
                                       floating_network_id=fip.floating_network_id).exclude(id=fip.id).first())
    if taken is not None:
        raise FloatingIPPortAlreadyAssociated(floating_ip_address=fip.floating_ip_address, fip_id=fip.id,
                                              port_id=port.id, fixed_ip=fixed.ip_address,
                                              net_id=fip.floating_network_id)
    fip.port, fip.fixed_ip_address, fip.router, fip.status = port, fixed.ip_address, router, "ACTIVE"


def _disassociate(fip: FloatingIP) -> None:
    fip.port, fip.fixed_ip_address, fip.router, fip.status = None, None, None, "DOWN"


def floatingip_create(ctx: RequestContext, *, floating_network_id: str, project_id: str | None = None,
                      port_id: str | None = None, fixed_ip_address: str | None = None,
                      floating_ip_address: str | None = None, subnet_id: str | None = None,
                      description: str = "") -> FloatingIP:
    """Allocate an address of the external network ``floating_network_id`` (a given one: admin only), and
    associate it with ``port_id`` when given. Raises NetworkNotFound (404), Invalid (400: not an external
    network, bad port or address), ExternalGatewayForFloatingIPNotFound (404), IpAddressGenerationFailure /
    IpAddressAlreadyAllocated (409)."""
    owner = _owner(ctx, project_id)
    authorize(ctx, "create_floatingip", _target(owner))
    if floating_ip_address:
        authorize(ctx, "create_floatingip:floating_ip_address", _target(owner))
    network = _external_network(ctx, floating_network_id, "floatingip")
    quotas.check(owner, "floatingip")
    if subnet_id:
        subnet = network.subnets.filter(id=subnet_id).first()
        if subnet is None:
            raise bad_request("floatingip", f"Subnet {subnet_id} is not on network {network.id}")
        fixed: list[dict[str, str]] = [{"subnet_id": subnet.id}]
    elif floating_ip_address:
        fixed = [{"ip_address": floating_ip_address}]
    else:
        v4 = network.subnets.filter(ip_version=4).order_by("created_at", "id").first()
        if v4 is None:
            raise bad_request("floatingip", f"Network {network.id} does not contain any IPv4 subnet")
        fixed = [{"subnet_id": v4.id}]
    fip_id = new_uuid()
    with transaction.atomic():
        fport = services.port_create(_system(), network_id=network.id, fixed_ips=fixed, device_id=fip_id,
                                     device_owner=FLOATINGIP, project_id=None)
        fip = FloatingIP(id=fip_id, project_id=owner, description=description, floating_network=network,
                         floating_port=fport, floating_ip_address=fport.fixed_ips.first().ip_address)
        if port_id:
            _associate(ctx, fip, port_id, fixed_ip_address)
        fip.save()
    return fip


FLOATINGIP_UPDATABLE = {"port_id", "fixed_ip_address", "description"}


def floatingip_update(ctx: RequestContext, fip: FloatingIP, *, changes: dict[str, Any]) -> FloatingIP:
    """Associate (``port_id``, ``fixed_ip_address``), disassociate (``port_id`` null) or describe."""
    authorize(ctx, "update_floatingip", _target(fip.project_id))
    if "description" in changes:
        fip.description = str(changes["description"] or "")
    with transaction.atomic():
        port_id = changes.get("port_id", fip.port_id)
        if "port_id" in changes or "fixed_ip_address" in changes:
            if port_id:
                _associate(ctx, fip, str(port_id), changes.get("fixed_ip_address"))
            else:
                _disassociate(fip)
        fip.revision_number += 1
        fip.save()
    return fip


def floatingip_delete(ctx: RequestContext, fip: FloatingIP) -> None:
    """Release the address (its port goes, the floating IP with it)."""
    authorize(ctx, "delete_floatingip", _target(fip.project_id))
    fip.floating_port.delete()
