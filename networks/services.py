"""Neutron's slice: networks, subnets, ports with fixed IPs, host bindings (API database).

Fixed IPs come from the subnet's allocation pools (the lowest free address, never the gateway).
Ports created for a server are owned by it (``device_owner`` ``compute:<zone>``) and go with it;
ports a user brought are only unbound. Extended bindings (one ACTIVE, others INACTIVE per host)
serve cross-cell moves.
"""
from __future__ import annotations

import ipaddress
import re
import secrets
from collections.abc import Iterable
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import CharField, IntegerField, Q, QuerySet, Value

from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Conflict, Invalid, NotFound
from cloudcore.core.policy import authorize
from cloudcore.core.prepared import prepared_in_rows, prepared_rows
from cloudcore.core.sqlin import values_in

from . import quotas, secgroups
from .firewall import groups_of_ports, port_filters_changed
from .models import FloatingIP, IPAllocation, Network, Port, PortBinding, Subnet
from .selectors import networks_available

#: Marks, in ``binding_profile``, a port that the compute service created for a server.
CREATED_BY_COMPUTE = "cloudcore_created"
#: The ``device_owner`` of the port that holds a floating IP's address.
FLOATINGIP_OWNER = "network:floatingip"


class NetworkNotFound(NotFound):
    message = "Network %(net_id)s could not be found."


class SubnetNotFound(NotFound):
    message = "Subnet %(subnet_id)s could not be found."


class PortNotFound(NotFound):
    message = "Port %(port_id)s could not be found."


class PortInUse(Conflict):
    message = ("Unable to complete operation on port %(port_id)s for network %(net_id)s. Port already has an "
               "attached device %(device_id)s.")


class IpAddressGenerationFailure(Conflict):
    message = "No more IP addresses available on network %(net_id)s."


class IpAddressAlreadyAllocated(Conflict):
    message = "IP address %(ip)s already allocated in subnet %(subnet_id)s"


def _visible_networks(ctx: RequestContext) -> QuerySet[Network]:
    """The project's networks, shared ones and external ones (every project may route to those)."""
    qs = Network.objects.all()
    if not ctx.is_admin:
        qs = qs.filter(Q(project_id=ctx.project_id) | Q(shared=True) | Q(external=True))
    return qs


def _subnet_networks(ctx: RequestContext) -> QuerySet[Network]:
    """The networks whose subnets a project sees: its own and shared ones. An external network is
    visible to every project but its subnets are not (Neutron's rule)."""
    qs = Network.objects.all()
    if not (ctx.is_admin or ctx.is_service):
        qs = qs.filter(Q(project_id=ctx.project_id) | Q(shared=True))
    return qs


def network_get(ctx: RequestContext, net_id: str) -> Network:
    network = _visible_networks(ctx).filter(id=net_id).first()
    if network is None:
        raise NetworkNotFound(net_id=net_id)
    return network


def network_list(ctx: RequestContext, *, filters: dict[str, Any]) -> list[Network]:
    qs = _visible_networks(ctx).prefetch_related("subnets").order_by("created_at", "id")
    for key in ("id", "name", "status"):
        if filters.get(key):
            qs = qs.filter(**{key: filters[key]})
    for key in ("project_id", "tenant_id"):
        if filters.get(key):
            qs = qs.filter(project_id=filters[key])
    for key, col in (("shared", "shared"), ("router:external", "external"), ("admin_state_up", "admin_state_up")):
        if filters.get(key) is not None:
            qs = qs.filter(**{col: str(filters[key]).lower() == "true"})
    return list(qs)


def network_create(ctx: RequestContext, *, name: str = "", project_id: str | None = None, shared: bool = False,
                   admin_state_up: bool = True, description: str = "", external: bool = False,
                   mtu: int = 1500) -> Network:
    if shared and not ctx.is_admin:
        raise Invalid("Only admins may create shared or external networks.")
    if external:
        authorize(ctx, "create_network:router:external", {"project_id": project_id or ctx.project_id})
    owner = project_id if (project_id and ctx.is_admin) else ctx.project_id
    quotas.check(owner or "", "network")
    return Network.objects.create(name=name, project_id=owner or "", shared=shared, admin_state_up=admin_state_up,
                                  description=description, external=external, mtu=mtu)


def _check_owner(ctx: RequestContext, project_id: str) -> None:
    if not (ctx.is_admin or ctx.project_id == project_id):
        raise Invalid("Only the owner or an admin may change this resource.")


def network_update(ctx: RequestContext, network: Network, **changes: Any) -> Network:
    _check_owner(ctx, network.project_id)
    for key in ("name", "description", "admin_state_up", "mtu"):
        if key in changes:
            setattr(network, key, changes[key])
    if "shared" in changes:
        if not ctx.is_admin:
            raise Invalid("Only admins may share networks.")
        network.shared = bool(changes["shared"])
    if "router:external" in changes:
        authorize(ctx, "update_network:router:external", {"project_id": network.project_id})
        external = secgroups.as_bool(changes["router:external"], "router:external")
        if not external and network.external and network.floating_ips.exists():
            raise Conflict(f"Unable to complete operation on network {network.id}. There are one or more floating "
                           "IPs still in use on the network.")
        network.external = external
    network.save()
    return network


def network_delete(ctx: RequestContext, network: Network) -> None:
    """Delete a network (owner or admin) with its subnets. As in Neutron, the floating IPs of an external
    network that are associated with no port go with it (nothing uses those addresses); any other port
    (a server's, a router's gateway or interface, an associated floating IP's) keeps it: 409, and
    nothing is released."""
    _check_owner(ctx, network.project_id)
    with transaction.atomic():
        _delete_ports(network.ports.filter(device_owner=FLOATINGIP_OWNER, floating_ip_of__port__isnull=True))
        if network.ports.exclude(device_owner="network:dhcp").exists():
            raise Conflict(f"Unable to complete operation on network {network.id}. There are one or more ports "
                           "still in use on the network.")
        network.delete()


def _pools(cidr: str, gateway: str | None) -> list[dict[str, str]]:
    """Neutron's default pool: the subnet's host addresses (``hosts()``: IPv4 without the network and
    broadcast addresses, IPv6 without the subnet-router anycast one) less a gateway at either end,
    worked out from the bounds, so that an IPv6 /64 costs what a /24 does."""
    net = ipaddress.ip_network(cidr, strict=False)
    first, last = int(net.network_address), int(net.broadcast_address)
    if net.num_addresses > 2:  # else hosts() is the whole network (a /31 or /32, a /127 or /128)
        first += 1
        last -= 1 if net.version == 4 else 0
    if gateway is not None:
        gw = int(ipaddress.ip_address(gateway))
        first += 1 if gw == first else 0
        last -= 1 if gw == last else 0
    address = _address_class(net.version)
    return [{"start": str(address(first)), "end": str(address(last))}] if first <= last else []


def _address_class(version: int) -> type[ipaddress.IPv4Address] | type[ipaddress.IPv6Address]:
    """An address from an integer (``ip_address(1)`` is IPv4 whatever the subnet)."""
    return ipaddress.IPv4Address if version == 4 else ipaddress.IPv6Address


def validate_host_routes(routes: Any, ip_version: int) -> list[dict[str, str]]:
    """Neutron's ``host_routes``: a list of ``{"destination": CIDR, "nexthop": IP}`` of the subnet's
    IP version, no duplicates."""
    if not isinstance(routes, list):
        raise Invalid(f"Invalid input for host_routes. Reason: '{routes}' is not a list.")
    out: list[dict[str, str]] = []
    for route in routes:
        if not isinstance(route, dict) or set(route) != {"destination", "nexthop"}:
            provided = sorted(route) if isinstance(route, dict) else route
            raise Invalid("Invalid input for host_routes. Reason: Validation of dictionary's keys failed. "
                          f"Expected keys: ['destination', 'nexthop'] Provided keys: {provided}.")
        try:
            destination = ipaddress.ip_network(str(route["destination"]), strict=False)
            nexthop = ipaddress.ip_address(str(route["nexthop"]))
        except ValueError as exc:
            raise Invalid(f"Invalid input for host_routes. Reason: {exc}.") from None
        if destination.version != ip_version or nexthop.version != ip_version:
            raise Invalid(f"Invalid input for operation: host route {route} does not match the subnet's IP version.")
        entry = {"destination": str(destination), "nexthop": str(nexthop)}
        if entry in out:
            raise Invalid(f"Invalid input for host_routes. Reason: Duplicate hostroute '{route}'.")
        out.append(entry)
    return out


def _gateway_in(net: ipaddress.IPv4Network | ipaddress.IPv6Network, gateway_ip: str) -> str:
    try:
        addr = ipaddress.ip_address(gateway_ip)
    except ValueError:
        raise Invalid(f"Invalid input for gateway_ip. Reason: '{gateway_ip}' is not a valid IP address.") from None
    if addr not in net:
        raise Invalid(f"Gateway IP {gateway_ip} is not within subnet {net}.")
    return str(addr)


def subnet_create(ctx: RequestContext, *, network_id: str, cidr: str, ip_version: int = 4, name: str = "",
                  gateway_ip: str | None = "auto", enable_dhcp: bool = True,
                  allocation_pools: list[dict[str, str]] | None = None,
                  dns_nameservers: list[str] | None = None, host_routes: list[Any] | None = None,
                  description: str = "") -> Subnet:
    network = network_get(ctx, network_id)
    _check_owner(ctx, network.project_id)
    try:
        net = ipaddress.ip_network(cidr, strict=False)
    except ValueError:
        raise Invalid(f"Invalid input for cidr. Reason: '{cidr}' is not a valid IP subnet.") from None
    if net.version != ip_version:
        raise Invalid("Invalid input for operation: cidr and ip_version must match.")
    quotas.check(network.project_id, "subnet")
    if gateway_ip == "auto":
        gateway_ip = str(next(iter(net.hosts()))) if net.num_addresses > 2 else None
    elif gateway_ip is not None:
        gateway_ip = _gateway_in(net, gateway_ip)
    return Subnet.objects.create(network=network, name=name, project_id=network.project_id, ip_version=ip_version,
                                 cidr=str(net), gateway_ip=gateway_ip, enable_dhcp=enable_dhcp,
                                 allocation_pools=allocation_pools or _pools(str(net), gateway_ip),
                                 dns_nameservers=dns_nameservers or [],
                                 host_routes=validate_host_routes(host_routes or [], ip_version),
                                 description=description)


#: What ``PUT /v2.0/subnets/{id}`` may change (Neutron refuses the read-only ones with 400).
SUBNET_UPDATABLE = ("name", "description", "gateway_ip", "enable_dhcp", "dns_nameservers", "host_routes",
                    "allocation_pools")


def subnet_update(ctx: RequestContext, subnet: Subnet, **changes: Any) -> Subnet:
    """Change the updatable attributes of a subnet (owner or admin)."""
    _check_owner(ctx, subnet.project_id)
    net = ipaddress.ip_network(subnet.cidr, strict=False)
    if "gateway_ip" in changes and changes["gateway_ip"] is not None:
        gateway = _gateway_in(net, str(changes["gateway_ip"]))
        if IPAllocation.objects.filter(subnet=subnet, ip_address=gateway).exists():
            raise Conflict(f"Gateway ip {gateway} conflicts with allocation pool or an allocated port's address.")
        changes["gateway_ip"] = gateway
    if "host_routes" in changes:
        changes["host_routes"] = validate_host_routes(changes["host_routes"] or [], subnet.ip_version)
    if "dns_nameservers" in changes:
        servers = changes["dns_nameservers"] or []
        if not isinstance(servers, list) or len(set(servers)) != len(servers):
            raise Invalid("Invalid input for dns_nameservers. Reason: a list of distinct addresses is expected.")
        changes["dns_nameservers"] = servers
    if "enable_dhcp" in changes and not isinstance(changes["enable_dhcp"], bool):
        raise Invalid(f"Invalid input for enable_dhcp. Reason: '{changes['enable_dhcp']}' is not a valid "
                      "boolean value.")
    if "allocation_pools" in changes:
        changes["allocation_pools"] = changes["allocation_pools"] or _pools(subnet.cidr, changes.get(
            "gateway_ip", subnet.gateway_ip))
    for key in SUBNET_UPDATABLE:
        if key in changes:
            setattr(subnet, key, changes[key] if key not in ("name", "description") else str(changes[key] or ""))
    subnet.save()
    return subnet


def subnet_get(ctx: RequestContext, subnet_id: str) -> Subnet:
    subnet = Subnet.objects.filter(id=subnet_id, network__in=_subnet_networks(ctx)).first()
    if subnet is None:
        raise SubnetNotFound(subnet_id=subnet_id)
    return subnet


def subnet_list(ctx: RequestContext, *, filters: dict[str, Any]) -> list[Subnet]:
    qs = Subnet.objects.filter(network__in=_subnet_networks(ctx)).order_by("created_at", "id")
    for key in ("id", "name", "network_id", "cidr", "ip_version"):
        if filters.get(key):
            qs = qs.filter(**{key: filters[key]})
    return list(qs)


def subnet_delete(ctx: RequestContext, subnet: Subnet) -> None:
    _check_owner(ctx, subnet.project_id)
    if subnet.allocations.exists():
        raise Conflict(f"Unable to complete operation on subnet {subnet.id}: One or more ports have an IP "
                       "allocation from this subnet.")
    subnet.delete()


def _mac() -> str:
    return "fa:16:3e:" + ":".join(f"{secrets.randbelow(256):02x}" for _ in range(3))


def _allocate(port: Port, subnet: Subnet, fixed_ip: str | None, *, allow_gateway_ip: bool = False) -> IPAllocation:
    """One fixed IP on ``subnet`` for ``port`` (``fixed_ip``, or the lowest free one), inside the
    caller's transaction. The subnet's row is locked first, so that concurrent allocations on it
    (PostgreSQL; SQLite serialises writers anyway) never pick the same free address."""
    Subnet.objects.select_for_update().filter(pk=subnet.pk).first()
    used = set(IPAllocation.objects.filter(subnet=subnet).values_list("ip_address", flat=True))
    if fixed_ip:
        try:
            addr = ipaddress.ip_address(fixed_ip)
        except ValueError:
            raise Invalid(f"Invalid input for fixed_ips: '{fixed_ip}' is not a valid IP address.") from None
        if addr not in ipaddress.ip_network(subnet.cidr, strict=False):
            raise Invalid(f"IP address {fixed_ip} is not a valid IP for the specified subnet.")
        if fixed_ip in used or (fixed_ip == subnet.gateway_ip and not allow_gateway_ip):
            raise IpAddressAlreadyAllocated(ip=fixed_ip, subnet_id=subnet.id)
        return IPAllocation.objects.create(port=port, subnet=subnet, ip_address=fixed_ip)
    # the lowest free address of the pools, in order: each pool is walked from its start and at
    # most len(used) + 1 addresses are taken before a free one (a /64 is not enumerated)
    address = _address_class(ipaddress.ip_network(subnet.cidr, strict=False).version)
    bounds = sorted((int(address(p["start"])), int(address(p["end"])))
                    for p in subnet.allocation_pools or _pools(subnet.cidr, subnet.gateway_ip))
    for start, end in bounds:
        for value in range(start, end + 1):
            text = str(address(value))
            if text not in used and text != subnet.gateway_ip:
                return IPAllocation.objects.create(port=port, subnet=subnet, ip_address=text)
    raise IpAddressGenerationFailure(net_id=subnet.network_id)


#: Neutron's ``binding:vnic_type`` values.
VNIC_TYPES = ("normal", "direct", "macvtap", "baremetal", "direct-physical", "virtio-forwarder", "smart-nic", "vdpa",
              "remote-managed", "accelerator-direct", "accelerator-direct-physical")


def vnic_type_valid(value: Any) -> str:
    """``value`` if it is one of Neutron's vnic types, else 400 (Invalid)."""
    if value not in VNIC_TYPES:
        raise Invalid(f"Invalid input for binding:vnic_type. Reason: '{value}' is not in {list(VNIC_TYPES)}.")
    return str(value)


def port_create(ctx: RequestContext, *, network_id: str, name: str = "", fixed_ips: list[dict[str, str]] | None = None,
                device_id: str = "", device_owner: str = "", admin_state_up: bool = True,
                binding_host_id: str = "", project_id: str | None = None, mac_address: str | None = None,
                created_by_compute: bool = False, description: str = "", port_security_enabled: bool = True,
                security_groups: list[str] | None = None, allowed_address_pairs: Any = None,
                binding_vnic_type: str = "normal", binding_profile: dict[str, Any] | None = None,
                allow_gateway_ip: bool = False) -> Port:
    """A port on ``network_id`` with one fixed IP per requested subnet (default: each subnet), in the given
    security groups (default: its project's ``default`` group) with the given allowed address pairs.
    ``allow_gateway_ip`` lets a router interface take its subnet's gateway address. A project sees external
    networks but makes ports only on its own or shared ones (404 otherwise)."""
    network = network_get(ctx, network_id)
    if (network.external and not network.shared and not (ctx.is_admin or ctx.is_service)
            and network.project_id != ctx.project_id):
        raise NetworkNotFound(net_id=network_id)
    owner = project_id if (project_id and (ctx.is_admin or ctx.is_service)) else ctx.project_id
    owner = owner or network.project_id
    if allowed_address_pairs is not None:
        authorize(ctx, "create_port:allowed_address_pairs", {"project_id": network.project_id})
    binding_profile = secgroups.binding_profile(binding_profile)
    if binding_profile:
        authorize(ctx, "create_port:binding:profile", {"project_id": owner})
    if binding_host_id:
        authorize(ctx, "create_port:binding:host_id", {"project_id": owner})
    if binding_vnic_type != "normal":
        authorize(ctx, "create_port:binding:vnic_type", {"project_id": owner})
    binding_vnic_type = vnic_type_valid(binding_vnic_type)
    groups = secgroups.groups_for_port(project_id=owner, requested=security_groups,
                                       port_security=port_security_enabled, device_owner=device_owner)
    if not device_owner.startswith("network:"):
        quotas.check(owner, "port")
    with transaction.atomic():
        for _attempt in range(5):
            try:
                with transaction.atomic():
                    mac = mac_address or _mac()
                    port = Port.objects.create(
                        network=network, name=name, project_id=owner,
                        mac_address=mac, admin_state_up=admin_state_up,
                        device_id=device_id, device_owner=device_owner, binding_host_id=binding_host_id or "",
                        binding_vif_type="ovs" if binding_host_id else "unbound",
                        status="ACTIVE" if device_id else "DOWN", binding_vnic_type=binding_vnic_type,
                        binding_profile={**(binding_profile or {}),
                                         **({CREATED_BY_COMPUTE: True} if created_by_compute else {})},
                        description=description, port_security_enabled=port_security_enabled,
                        allowed_address_pairs=secgroups.address_pairs(
                            allowed_address_pairs, mac_address=mac, port_security=port_security_enabled),
                    )
                break
            except IntegrityError:
                if mac_address:
                    raise Conflict(f"Unable to complete operation for network {network_id}. The mac address "
                                   f"{mac_address} is in use.") from None
        else:  # pragma: no cover - five MAC collisions in a row
            raise Conflict("Could not generate a unique MAC address.")
        requested = fixed_ips or [{"subnet_id": s.id} for s in network.subnets.order_by("ip_version", "id")]
        for item in requested:
            _allocate(port, _subnet_for(network, item), item.get("ip_address"), allow_gateway_ip=allow_gateway_ip)
        port.security_groups.set(groups)
        port_filters_changed(members_of=[g.id for g in groups], new_port=port.id)
    return port


def _subnet_for(network: Network, item: dict[str, Any]) -> Subnet:
    """The subnet a ``fixed_ips`` entry names, by ``subnet_id`` or by the subnet holding ``ip_address``."""
    subnet = None
    if item.get("subnet_id"):
        subnet = network.subnets.filter(id=str(item["subnet_id"])).first()
    elif item.get("ip_address"):
        try:
            addr = ipaddress.ip_address(str(item["ip_address"]))
        except ValueError:
            raise Invalid(f"Invalid input for fixed_ips: '{item['ip_address']}' is not a valid IP address.") from None
        subnet = next((s for s in network.subnets.all() if addr in ipaddress.ip_network(s.cidr, strict=False)), None)
    if subnet is None:
        raise Invalid(f"Invalid input for fixed_ips: no subnet matches {item}.")
    return subnet


def _fixed_ips(value: Any) -> list[dict[str, Any]]:
    if not (isinstance(value, list) and all(isinstance(f, dict) for f in value)):
        raise Invalid("Invalid input for fixed_ips.")
    return value


def _replace_fixed_ips(port: Port, requested: list[dict[str, Any]]) -> None:
    """Neutron's update of ``fixed_ips``: an entry that names an address the port has (or only a subnet the
    port has an address on) keeps it; other entries get new addresses; the port's other addresses go."""
    current = list(port.fixed_ips.all())
    keep: list[IPAllocation] = []
    new: list[dict[str, Any]] = []
    for item in requested:
        match = next((a for a in current if a not in keep and (
            a.ip_address == str(item["ip_address"]) if item.get("ip_address")
            else a.subnet_id == str(item.get("subnet_id")))), None)
        if match is None:
            new.append(item)
        else:
            keep.append(match)
    IPAllocation.objects.filter(port=port).exclude(id__in=[a.id for a in keep]).delete()
    for item in new:
        _allocate(port, _subnet_for(port.network, item), item.get("ip_address"))


def port_get(ctx: RequestContext, port_id: str) -> Port:
    qs = Port.objects.filter(id=port_id)
    if not ctx.is_admin:
        qs = qs.filter(Q(project_id=ctx.project_id) | Q(network__shared=True, project_id=ctx.project_id))
    port = qs.first()
    if port is None:
        raise PortNotFound(port_id=port_id)
    return port


def port_list(ctx: RequestContext, *, filters: dict[str, Any]) -> list[Port]:
    qs = (Port.objects.select_related("network").prefetch_related("fixed_ips", "security_groups")
          .order_by("created_at", "id"))
    if not ctx.is_admin:
        qs = qs.filter(project_id=ctx.project_id)
    for key in ("id", "name", "network_id", "device_id", "device_owner", "mac_address", "status"):
        if filters.get(key):
            qs = qs.filter(**{key: filters[key]})
    if filters.get("binding:host_id"):
        qs = qs.filter(binding_host_id=filters["binding:host_id"])
    if filters.get("security_groups"):
        qs = qs.filter(security_groups__id=filters["security_groups"])
    for item in filters.get("fixed_ips") or []:
        key, _, value = str(item).partition("=")
        if key in ("ip_address", "subnet_id") and value:
            qs = qs.filter(**{f"fixed_ips__{key}": value})
        else:
            raise Invalid(f"Invalid input for fixed_ips filter: '{item}'.")
    for key in ("project_id", "tenant_id"):
        if filters.get(key):
            qs = qs.filter(project_id=filters[key])
    return list(qs.distinct())


#: The port attributes a change of which changes the port's filter or the members of its groups.
FILTERED_ATTRIBUTES = {"security_groups", "fixed_ips", "port_security_enabled"}


def port_update(ctx: RequestContext, port: Port, **changes: Any) -> Port:
    """Change the port's attributes; ``security_groups`` and ``allowed_address_pairs`` replace the
    port's (validated as on create, against the port's ``port_security_enabled`` after the change)."""
    _check_owner(ctx, port.project_id)
    for key in ("name", "admin_state_up", "device_id", "device_owner", "description"):
        if key in changes:
            setattr(port, key, changes[key])
    if "device_id" in changes:
        port.status = "ACTIVE" if port.device_id else "DOWN"  # as on create: a device's port is up
    if "port_security_enabled" in changes:
        port.port_security_enabled = secgroups.as_bool(changes["port_security_enabled"], "port_security_enabled")
    if "binding:host_id" in changes:
        authorize(ctx, "update_port:binding:host_id", {"project_id": port.project_id})
        port.binding_host_id = changes["binding:host_id"] or ""
        port.binding_vif_type = "ovs" if port.binding_host_id else "unbound"
    if "binding:vnic_type" in changes:
        authorize(ctx, "update_port:binding:vnic_type", {"project_id": port.project_id})
        port.binding_vnic_type = vnic_type_valid(changes["binding:vnic_type"] or "normal")
    if "binding:profile" in changes:
        authorize(ctx, "update_port:binding:profile", {"project_id": port.project_id})
        created = (port.binding_profile or {}).get(CREATED_BY_COMPUTE)
        port.binding_profile = {**secgroups.binding_profile(changes["binding:profile"]),
                                **({CREATED_BY_COMPUTE: True} if created else {})}
    if "allowed_address_pairs" in changes:
        authorize(ctx, "update_port:allowed_address_pairs", {"project_id": port.network.project_id})
        port.allowed_address_pairs = secgroups.address_pairs(
            changes["allowed_address_pairs"], mac_address=port.mac_address, port_security=port.port_security_enabled)
    groups = None
    if "security_groups" in changes:
        groups = secgroups.groups_for_port(project_id=port.project_id, requested=changes["security_groups"] or [],
                                           port_security=port.port_security_enabled, device_owner=port.device_owner)
    elif not port.port_security_enabled and port.security_groups.exists():
        raise secgroups.PortSecurityPortHasSecurityGroup()
    if not port.port_security_enabled and port.allowed_address_pairs:
        raise secgroups.AddressPairAndPortSecurityRequired()
    with transaction.atomic():
        before = groups_of_ports([port.id])
        port.save()
        if groups is not None:
            port.security_groups.set(groups)
        if "fixed_ips" in changes:
            _replace_fixed_ips(port, _fixed_ips(changes["fixed_ips"]))
        if FILTERED_ATTRIBUTES & set(changes):
            port_filters_changed(members_of=before | {g.id for g in groups or []}, ports=[port.id])
    return port


class ServicePortInUse(Conflict):
    message = "Port %(port_id)s cannot be deleted directly via the port API: has device owner %(device_owner)s."


#: Ports that their router or floating IP owns: only the L3 API removes them.
L3_OWNERS = ("network:router_interface", "network:router_gateway", FLOATINGIP_OWNER)


def port_delete(ctx: RequestContext, port: Port) -> None:
    """Delete a port (a router's or a floating IP's own: 409); its floating IPs are disassociated."""
    _check_owner(ctx, port.project_id)
    if port.device_owner in L3_OWNERS:
        raise ServicePortInUse(port_id=port.id, device_owner=port.device_owner)
    _delete_ports(Port.objects.filter(id=port.id))


def _delete_ports(ports: QuerySet[Port]) -> None:
    """Delete ports, first disassociating the floating IPs on them (as Neutron does)."""
    with transaction.atomic():
        FloatingIP.objects.filter(port__in=ports).update(port=None, fixed_ip_address=None, router=None,
                                                          status="DOWN")
        port_filters_changed(members_of=groups_of_ports(ports.values_list("id", flat=True)))
        ports.delete()


# --- the compute service's calls ----------------------------------------------------------------


def networks_available_to(*, project_id: str) -> list[Network]:
    """The networks a server of ``project_id`` may be put on: its own first, then shared ones."""
    available = networks_available(project_id)
    own = list(available.filter(project_id=project_id).order_by("created_at"))
    shared = list(available.exclude(project_id=project_id).order_by("created_at"))
    return own + shared


def port_brief(port: Port) -> dict[str, Any]:
    """What the compute API shows of a server's port: id, network, MAC, status, fixed IPs."""
    return {"id": port.id, "network_id": port.network_id, "mac_address": port.mac_address, "status": port.status,
            "device_id": port.device_id,
            "fixed_ips": [{"subnet_id": a.subnet_id, "ip_address": a.ip_address}
                          for a in sorted(port.fixed_ips.all(), key=lambda a: a.id)]}


def instance_ports_brief(instance_uuid: str) -> list[dict[str, Any]]:
    """``port_brief`` of each port whose device is the server, in creation order."""
    ports = Port.objects.filter(device_id=instance_uuid).prefetch_related("fixed_ips").order_by("created_at", "id")
    return [port_brief(p) for p in ports]


def port_create_for_instance(ctx: RequestContext, *, network_id: str, instance_uuid: str, host: str | None,
                             fixed_ip: str | None, project_id: str, zone: str | None = None) -> Port:
    system = RequestContext(user_id=ctx.user_id, project_id=project_id, roles=["admin"], is_admin=True,
                            is_service=True, request_id=ctx.request_id)
    network = Network.objects.filter(id=network_id).first()
    if network is None:
        raise NetworkNotFound(net_id=network_id)
    return port_create(system, network_id=network_id, fixed_ips=[{"ip_address": fixed_ip}] if fixed_ip else None,
                       device_id=instance_uuid, device_owner=f"compute:{zone or 'nova'}",
                       binding_host_id=host or "", project_id=project_id, created_by_compute=True,
                       security_groups=secgroups.requested_groups_for_instance(instance_uuid))


def port_bind(port_id: str, host: str | None, *, device_id: str) -> Port:
    """Attach a user's port to a server on ``host`` (409 PortInUse if another device has it)."""
    with transaction.atomic():
        port = Port.objects.select_for_update().filter(id=port_id).first()
        if port is None:
            raise PortNotFound(port_id=port_id)
        if port.device_id and port.device_id != device_id:
            raise PortInUse(port_id=port_id, net_id=port.network_id, device_id=port.device_id)
        port.device_id, port.device_owner = device_id, port.device_owner or "compute:nova"
        port.binding_host_id, port.binding_vif_type, port.status = host or "", "ovs", "ACTIVE"
        port.save()
    return port


def port_unbind(port_id: str) -> None:
    Port.objects.filter(id=port_id).update(device_id="", device_owner="", binding_host_id="", status="DOWN",
                                           binding_vif_type="unbound")


def ports_unbind_and_delete_for_instance(instance_uuid: str) -> None:
    """Delete the ports created for the server; unbind the ones its user brought."""
    for port in Port.objects.filter(device_id=instance_uuid):
        if (port.binding_profile or {}).get(CREATED_BY_COMPUTE):
            _delete_ports(Port.objects.filter(id=port.id))
        else:
            port_unbind(port.id)


def ports_release(instance_uuid: str, *, preserve: Iterable[str]) -> None:
    """Release a server's ports where it is deleted without a host (the API side's local delete):
    the ones in ``preserve`` (its user brought them) are unbound, the ones made for it deleted."""
    keep = set(preserve)
    for port in Port.objects.filter(device_id=instance_uuid):
        if port.id in keep:
            port_unbind(port.id)
        else:
            _delete_ports(Port.objects.filter(id=port.id))


def ports_rebind_host(instance_uuid: str, host: str | None) -> None:
    Port.objects.filter(device_id=instance_uuid).update(binding_host_id=host or "",
                                                        binding_vif_type="ovs" if host else "unbound")


def network_info(instance_uuid: str) -> list[dict[str, Any]]:
    """Nova's network_info for a server: one VIF per port with its network and fixed IPs."""
    out = []
    ports = (Port.objects.filter(device_id=instance_uuid).select_related("network")
             .prefetch_related("fixed_ips__subnet").order_by("created_at", "id"))
    floating = _floating_by_fixed_ip([p.id for p in ports])
    for port in ports:
        subnets: dict[str, dict[str, Any]] = {}
        for alloc in port.fixed_ips.all():
            sub = subnets.setdefault(alloc.subnet_id, {"cidr": alloc.subnet.cidr, "gateway": alloc.subnet.gateway_ip,
                                                       "ips": []})
            sub["ips"].append({"address": alloc.ip_address, "type": "fixed", "version": alloc.subnet.ip_version,
                               "floating_ips": [{"address": f, "type": "floating", "version": 4}
                                                for f in floating.get((port.id, alloc.ip_address), [])]})
        out.append({
            "id": port.id, "address": port.mac_address, "type": port.binding_vif_type or "ovs",
            "vnic_type": port.binding_vnic_type, "active": port.status == "ACTIVE",
            "network": {"id": port.network_id, "label": port.network.name, "subnets": list(subnets.values()),
                        "mtu": port.network.mtu},
            "ips": [ip for s in subnets.values() for ip in s["ips"]],
        })
    return out


def _floating_by_fixed_ip(port_ids: list[str]) -> dict[tuple[str, str], list[str]]:
    """``{(port id, fixed IP): [floating IPs]}`` of the floating IPs associated with the ports."""
    out: dict[tuple[str, str], list[str]] = {}
    # for a server's one port (a show: a client's status poll) by a statement built once per process
    for port_id, fixed, address in prepared_in_rows("networks.floating", _floating_of, port_ids):
        out.setdefault((port_id, str(fixed)), []).append(address)  # never None: excluded above
    return out


def _floating_of(port_ids: Any) -> QuerySet[FloatingIP, tuple[str, str | None, str]]:
    return FloatingIP.objects.filter(port_id__in=port_ids).exclude(fixed_ip_address=None)\
        .values_list("port_id", "fixed_ip_address", "floating_ip_address").order_by("created_at", "id")


def addresses_for_instances(instance_uuids: Iterable[str]) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """``{uuid: {network name: [{"addr", "version", "OS-EXT-IPS:type", "OS-EXT-IPS-MAC:mac_addr"}]}}`` in
    two queries for a whole page of servers: each fixed IP followed by its floating IPs (type
    ``floating``), as Nova's network info cache lists them."""
    uuids = list(instance_uuids)
    if not uuids:
        return {}
    # for one server (a show: a client's status poll) by a statement built once per process; the
    # columns need no conversion (text and integers)
    return _addresses_of_rows(prepared_in_rows("networks.addresses", _addresses, uuids))


def _addresses_of_rows(rows: list[tuple[Any, ...]]) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """``addresses_for_instances``' answer from ``_addresses``' rows (in their order)."""
    out: dict[str, dict[str, list[dict[str, Any]]]] = {}
    floating = _floating_by_fixed_ip(list({row[5] for row in rows}))
    for device_id, net_name, ip, version, mac, port_id in rows:
        entries = out.setdefault(device_id, {}).setdefault(net_name, [])
        entries.append({"addr": ip, "version": version, "OS-EXT-IPS:type": "fixed", "OS-EXT-IPS-MAC:mac_addr": mac})
        entries.extend({"addr": address, "version": 4, "OS-EXT-IPS:type": "floating", "OS-EXT-IPS-MAC:mac_addr": mac}
                       for address in floating.get((port_id, ip), []))
    return out


#: a fixed IP's columns as ``_addresses_of_rows`` reads them
_ADDRESS_COLUMNS = ("port__device_id", "port__network__name", "ip_address", "subnet__ip_version",
                    "port__mac_address", "port_id")


def _addresses(uuids: Any) -> QuerySet[IPAllocation, tuple[str, str, str, int, str, str]]:
    return IPAllocation.objects.filter(port__device_id__in=uuids).values_list(*_ADDRESS_COLUMNS)\
        .order_by("port__created_at", "id")


def _addresses_and_port_groups(address_uuids: Any, group_uuids: Any) -> QuerySet[IPAllocation, tuple[Any, ...]]:
    """``_addresses``' columns then the port's creation and the row's id, and the ports' groups in the
    same columns (the group's name where the network's is, its id where the MAC is, no IP), one
    ``UNION ALL``."""
    addresses = IPAllocation.objects.filter(port__device_id__in=address_uuids).values_list(
        *_ADDRESS_COLUMNS, "port__created_at", "id")
    groups = Port.security_groups.through.objects.filter(port__device_id__in=group_uuids).values_list(
        "port__device_id", "securitygroup__name", Value(None, output_field=CharField()),
        Value(None, output_field=IntegerField()), "securitygroup_id", "port_id", "port__created_at", "id")
    return addresses.union(groups, all=True)


def addresses_and_group_names(instance_uuids: Iterable[str], *, building: Iterable[str] = ()
                              ) -> tuple[dict[str, dict[str, list[dict[str, Any]]]], dict[str, list[str]]]:
    """``addresses_for_instances`` and the names of ``secgroups.security_groups_of_instances``' groups,
    as a server's body shows them: the fixed IPs and the ports' groups read by one statement (a
    ``UNION ALL``; for one server, a status poll, built once per process), then the floating IPs
    when there are fixed IPs. A server still ``building`` with neither has its port, if any, looked
    for, and without one the groups it asked for are its (``secgroups.requested_groups_of_portless``)."""
    uuids = list(instance_uuids)
    if not uuids:
        return {}, {}
    if len(uuids) == 1:
        rows = prepared_rows("networks.addresses_and_port_groups",
                             lambda a, g: _addresses_and_port_groups([a], [g]), (uuids[0], uuids[0]))
    else:
        rows = [tuple(row) for row in _addresses_and_port_groups(values_in(uuids), values_in(uuids))]
    fixed = sorted((row for row in rows if row[2] is not None), key=lambda row: (row[6], row[7]))
    addresses = _addresses_of_rows([row[:6] for row in fixed])
    names: dict[str, list[str]] = {}
    seen: set[tuple[str, str]] = set()
    for device_id, name, _ip, _version, group_id, _port_id, _created, _id in sorted(
            (row for row in rows if row[2] is None), key=lambda row: (row[6], row[5], row[7])):
        if (device_id, group_id) not in seen:
            seen.add((device_id, group_id))
            names.setdefault(device_id, []).append(name)
    asked = set(uuids)
    with_rows = {row[0] for row in rows}
    portless = [u for u in dict.fromkeys(building) if u in asked and u not in with_rows]
    for uuid, groups in secgroups.requested_groups_of_portless(portless).items():
        names[uuid] = [group.name for group in groups]
    return addresses, names


def addresses_for_instance(instance_uuid: str) -> dict[str, list[dict[str, Any]]]:
    return addresses_for_instances([instance_uuid]).get(instance_uuid, {})


def instance_uuids_with_ip(*, ip: str | None = None, ip6: str | None = None) -> set[str]:
    """Servers with a fixed IP matching ``ip``/``ip6`` as regular expressions (Nova's filters)."""
    out: set[str] = set()
    for pattern, version in ((ip, 4), (ip6, 6)):
        if not pattern:
            continue
        try:
            regex = re.compile(pattern)
        except re.error as exc:
            raise Invalid(f"Invalid regular expression {pattern!r}") from exc
        rows = (IPAllocation.objects.filter(subnet__ip_version=version).exclude(port__device_id="")
                .values_list("port__device_id", "ip_address"))
        out.update(device for device, addr in rows if regex.search(addr))
    return out


# --- extended bindings (cross-cell moves) -----------------------------------------------------------


class PortBindingNotFound(NotFound):
    message = "Binding for port %(port_id)s for host %(host)s could not be found."


class PortBindingAlreadyExists(Conflict):
    message = "Binding for port %(port_id)s on host %(host)s already exists."


class PortBindingAlreadyActive(Conflict):
    message = "Binding for port %(port_id)s on host %(host)s is already active."


def port_binding_create(port_id: str, host: str, *, vnic_type: str = "normal", profile: dict[str, Any] | None = None,
                        active: bool = False) -> PortBinding:
    """An INACTIVE binding of the port on ``host`` (409 if one exists); ``active`` makes it the port's
    own binding too (a port bound nowhere, as Neutron's ``binding-extended`` does)."""
    with transaction.atomic():
        port = Port.objects.select_for_update().filter(id=port_id).first()
        if port is None:
            raise PortNotFound(port_id=port_id)
        binding, created = PortBinding.objects.get_or_create(port=port, host=host, defaults={
            "status": "ACTIVE" if active else "INACTIVE", "vnic_type": vnic_type, "profile": profile or {}})
        if not created:
            raise PortBindingAlreadyExists(port_id=port_id, host=host)
        if active:
            port.binding_host_id, port.binding_vif_type, port.binding_vnic_type = host, binding.vif_type, vnic_type
            port.save(update_fields=["binding_host_id", "binding_vif_type", "binding_vnic_type", "updated_at"])
    return binding


def port_binding_activate(port_id: str, host: str) -> None:
    """Make ``host``'s binding the active one: the port's previous binding stays as an INACTIVE one (as
    Neutron keeps it, for a revert), the others become INACTIVE; updates the port."""
    with transaction.atomic():
        binding = PortBinding.objects.filter(port_id=port_id, host=host).first()
        if binding is None:
            raise PortBindingNotFound(port_id=port_id, host=host)
        port = Port.objects.select_for_update().get(id=port_id)
        previous = port.binding_host_id
        if previous and previous != host:
            PortBinding.objects.get_or_create(port=port, host=previous, defaults={
                "status": "INACTIVE", "vnic_type": port.binding_vnic_type})
        PortBinding.objects.filter(port_id=port_id).exclude(host=host).update(status="INACTIVE")
        binding.status = "ACTIVE"
        binding.save(update_fields=["status", "updated_at"])
        Port.objects.filter(id=port_id).update(binding_host_id=host, binding_vif_type="ovs")


def port_binding_delete(port_id: str, host: str) -> None:
    PortBinding.objects.filter(port_id=port_id, host=host).delete()


# The API's entries (``/v2.0/ports/{id}/bindings``): policy first, then the calls above.


def _binding_view(port: Port) -> list[PortBinding]:
    """The port's bindings: its rows, and its own (ACTIVE) binding when no row stands for it."""
    rows = list(PortBinding.objects.filter(port=port).order_by("created_at", "id"))
    if port.binding_host_id and not any(b.host == port.binding_host_id for b in rows):
        rows.insert(0, PortBinding(port=port, host=port.binding_host_id, status="ACTIVE",
                                   vif_type=port.binding_vif_type, vnic_type=port.binding_vnic_type,
                                   profile={k: v for k, v in (port.binding_profile or {}).items()
                                            if k != CREATED_BY_COMPUTE}))
    return rows


def port_bindings(ctx: RequestContext, port_id: str, *, filters: dict[str, Any] | None = None) -> list[PortBinding]:
    authorize(ctx, "get_port_binding", {"project_id": ctx.project_id})
    port = port_get(ctx, port_id)
    wanted = {k: v for k, v in (filters or {}).items() if k in ("host", "status", "vif_type", "vnic_type") and v}
    return [b for b in _binding_view(port) if all(str(getattr(b, k)) == str(v) for k, v in wanted.items())]


def port_binding_show(ctx: RequestContext, port_id: str, host: str) -> PortBinding:
    authorize(ctx, "get_port_binding", {"project_id": ctx.project_id})
    binding = next((b for b in _binding_view(port_get(ctx, port_id)) if b.host == host), None)
    if binding is None:
        raise PortBindingNotFound(port_id=port_id, host=host)
    return binding


def port_binding_add(ctx: RequestContext, port_id: str, *, host: str, vnic_type: str = "normal",
                     profile: dict[str, Any] | None = None) -> PortBinding:
    authorize(ctx, "create_port_binding", {"project_id": ctx.project_id})
    port = port_get(ctx, port_id)
    if not host:
        raise Invalid("Invalid input for operation: host is required.")
    if port.binding_host_id == host:
        raise PortBindingAlreadyExists(port_id=port_id, host=host)
    return port_binding_create(port_id, host, vnic_type=vnic_type or "normal",
                               profile=secgroups.binding_profile(profile) or {}, active=not port.binding_host_id)


def port_binding_make_active(ctx: RequestContext, port_id: str, host: str) -> PortBinding:
    authorize(ctx, "activate", {"project_id": ctx.project_id})
    port = port_get(ctx, port_id)
    row = PortBinding.objects.filter(port=port, host=host).first()
    if row is None and port.binding_host_id != host:
        raise PortBindingNotFound(port_id=port_id, host=host)
    if row is None or row.status == "ACTIVE":
        raise PortBindingAlreadyActive(port_id=port_id, host=host)
    port_binding_activate(port_id, host)
    return PortBinding.objects.get(pk=row.pk)


def port_binding_remove(ctx: RequestContext, port_id: str, host: str) -> None:
    """Delete ``host``'s binding; deleting the active one leaves the port unbound (Neutron's)."""
    authorize(ctx, "delete_port_binding", {"project_id": ctx.project_id})
    port = port_get(ctx, port_id)
    with transaction.atomic():
        deleted = PortBinding.objects.filter(port=port, host=host).delete()[0]
        if port.binding_host_id == host:
            Port.objects.filter(id=port.id).update(binding_host_id="", binding_vif_type="unbound")
        elif not deleted:
            raise PortBindingNotFound(port_id=port_id, host=host)


# --- used by cross-cell ---


def port_binding_ensure(port_id: str, host: str) -> PortBinding:
    """The port's binding on ``host``, an INACTIVE one created if it has none (a revert's binding
    back on the source host)."""
    binding, _created = PortBinding.objects.get_or_create(port_id=port_id, host=host)
    return binding
