"""Neutron v2.0 subset: version document, networks, subnets, ports, extensions; Neutron's error
body ``{"NeutronError": {"type", "message", "detail"}}``."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from django.conf import settings
from django.db import transaction
from rest_framework.request import Request
from rest_framework.response import Response

from cloudcore.core.api.views import PublicMixin, UnversionedAPIView
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Invalid, NotFound
from cloudcore.core.policy import can

from .. import agents, l3, quotas, secgroups, services
from ..models import Network, Port, PortBinding, Subnet

_T = TypeVar("_T")

ERROR_TYPES = {400: "HTTPBadRequest", 401: "HTTPUnauthorized", 403: "HTTPForbidden", 404: "HTTPNotFound",
               409: "Conflict", 500: "HTTPInternalServerError"}


def _ts(value: Any) -> str | None:
    return value.strftime("%Y-%m-%dT%H:%M:%SZ") if value else None


def present_network(n: Network) -> dict[str, Any]:
    return {
        "id": n.id, "name": n.name, "description": n.description, "tenant_id": n.project_id,
        "project_id": n.project_id, "admin_state_up": n.admin_state_up, "status": n.status, "shared": n.shared,
        "router:external": n.external, "mtu": n.mtu, "subnets": [s.id for s in n.subnets.all()],
        "availability_zone_hints": [], "availability_zones": ["nova"], "ipv4_address_scope": None,
        "ipv6_address_scope": None, "port_security_enabled": True, "is_default": False, "tags": [],
        "created_at": _ts(n.created_at), "updated_at": _ts(n.updated_at or n.created_at), "revision_number": 1,
    }


def present_subnet(s: Subnet) -> dict[str, Any]:
    return {
        "id": s.id, "name": s.name, "network_id": s.network_id, "tenant_id": s.project_id, "project_id": s.project_id,
        "ip_version": s.ip_version, "cidr": s.cidr, "gateway_ip": s.gateway_ip, "enable_dhcp": s.enable_dhcp,
        "allocation_pools": s.allocation_pools, "dns_nameservers": s.dns_nameservers,
        "host_routes": s.host_routes or [], "description": s.description,
        "ipv6_ra_mode": None, "ipv6_address_mode": None, "subnetpool_id": None,
        "service_types": [], "tags": [], "created_at": _ts(s.created_at),
        "updated_at": _ts(s.updated_at or s.created_at), "revision_number": 0,
    }


#: The port binding attributes Neutron shows only to admins (``get_port:binding:*`` rules).
ADMIN_BINDING_ATTRIBUTES = ("binding:host_id", "binding:vif_type", "binding:vif_details", "binding:profile")


def present_port(p: Port, ctx: RequestContext) -> dict[str, Any]:
    """Neutron's port body; the binding attributes the ``get_port:binding:*`` rules deny ``ctx`` are left out."""
    body: dict[str, Any] = {
        "id": p.id, "name": p.name, "network_id": p.network_id, "tenant_id": p.project_id, "project_id": p.project_id,
        "mac_address": p.mac_address, "admin_state_up": p.admin_state_up, "status": p.status,
        "device_id": p.device_id, "device_owner": p.device_owner,
        "fixed_ips": [{"subnet_id": a.subnet_id, "ip_address": a.ip_address} for a in p.fixed_ips.all()],
        "binding:host_id": p.binding_host_id, "binding:vif_type": p.binding_vif_type,
        "binding:vnic_type": p.binding_vnic_type, "binding:vif_details": {},
        "binding:profile": {k: v for k, v in (p.binding_profile or {}).items() if k != services.CREATED_BY_COMPUTE},
        "security_groups": [g.id for g in p.security_groups.all()],
        "allowed_address_pairs": [dict(pair) for pair in p.allowed_address_pairs], "extra_dhcp_opts": [],
        "description": p.description, "port_security_enabled": p.port_security_enabled, "tags": [],
        "created_at": _ts(p.created_at),
        "updated_at": _ts(p.updated_at or p.created_at), "revision_number": 1,
    }
    target = {"project_id": p.project_id}
    for key in ADMIN_BINDING_ATTRIBUTES:
        if not can(ctx, f"get_port:{key}", target):
            del body[key]
    return body


class NeutronView(UnversionedAPIView):
    #: The error being answered; a security group or L3 error is typed by its own name as Neutron does
    #: (``SecurityGroupRuleExists``, ``RouterInUse``), the others by their HTTP kind.
    _error: Exception | None = None

    def handle_exception(self, exc: Exception) -> Response:
        self._error = exc
        return super().handle_exception(exc)

    def error_body(self, code: int, message: str) -> dict[str, Any]:
        kind = ERROR_TYPES.get(code, "HTTPError")
        named = (secgroups.__name__, l3.__name__, quotas.__name__, agents.__name__)
        if self._error is not None and (type(self._error).__module__ in named
                                        or isinstance(self._error, services.ServicePortInUse)):
            kind = type(self._error).__name__
        return {"NeutronError": {"type": kind, "message": message, "detail": ""}}

    def _fields(self, body: dict[str, Any]) -> dict[str, Any]:
        """Neutron's ``fields=a&fields=b`` selection of a resource's attributes."""
        wanted = self.request.query_params.getlist("fields")
        return {k: v for k, v in body.items() if k in wanted} if wanted else body

    def _resource(self, key: str) -> dict[str, Any]:
        data = self.request.data
        if not isinstance(data, dict) or not isinstance(data.get(key), dict):
            raise Invalid(f"Resource body required: a JSON object with '{key}'.")
        return data[key]

    def _created(self, key: str, collection: str, create: Callable[[dict[str, Any]], _T],
                 present: Callable[[_T], dict[str, Any]]) -> Response:
        """201 for Neutron's create of one resource (``{key: {...}}``) or of several (``{collection:
        [{...}, ...]}``, its bulk create): every one or none, the first refused item's error answered
        and the ones before it rolled back."""
        data = self.request.data
        if not (isinstance(data, dict) and collection in data):
            return Response({key: present(create(self._resource(key)))}, status=201)
        items = data[collection]
        if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
            raise Invalid(f"Invalid input: '{collection}' must be a list of JSON objects.")
        if not items:
            raise Invalid("Resources required")
        with transaction.atomic():
            made = [create(item) for item in items]
        return Response({collection: [present(m) for m in made]}, status=201)

    def _filters(self) -> dict[str, Any]:
        return {k: v for k, v in self.request.query_params.items() if k not in ("fields", "limit", "marker")}


class NetworkVersionsView(PublicMixin, NeutronView):
    def get(self, request: Request) -> Response:
        base = settings.PUBLIC_URL.rstrip("/") + "/network"
        return Response({"versions": [{"id": "v2.0", "status": "CURRENT",
                                       "links": [{"rel": "self", "href": f"{base}/v2.0/"}]}]})


class NetworkRootView(NeutronView):
    def get(self, request: Request) -> Response:
        base = settings.PUBLIC_URL.rstrip("/") + "/network/v2.0"
        return Response({"resources": [{"name": n, "collection": f"{n}s",
                                        "links": [{"rel": "self", "href": f"{base}/{n}s"}]}
                                       for n in ("network", "subnet", "port", "router", "floatingip")]})


EXTENSIONS = [("binding", "Port Binding"), ("binding-extended", "Port Bindings Extended"),
              ("external-net", "Neutron external network"), ("network-mtu", "Network MTU"),
              ("standard-attr-timestamp", "Resource timestamps"), ("project-id", "project_id field enabled"),
              ("security-group", "security-group"), ("stateful-security-group", "Stateful security group"),
              ("allowed-address-pairs", "Allowed Address Pairs"), ("port-security", "Port Security"),
              ("standard-attr-revisions", "Resource revision numbers"),
              ("standard-attr-description", "standard-attr-description"), ("router", "Neutron L3 Router"),
              ("ext-gw-mode", "Neutron L3 Configurable external gateway mode"), ("extraroute", "Neutron Extra Route"),
              ("quotas", "Quota management support"), ("quota_details", "Quota details extension"),
              ("network-ip-availability", "Network IP Availability"), ("agent", "agent")]


def _extension(alias: str, name: str) -> dict[str, Any]:
    return {"alias": alias, "name": name, "description": name, "links": [], "updated": "2013-01-01T00:00:00-00:00"}


class ExtensionsView(NeutronView):
    def get(self, request: Request) -> Response:
        return Response({"extensions": [_extension(a, n) for a, n in EXTENSIONS]})


class ExtensionView(NeutronView):
    def get(self, request: Request, alias: str) -> Response:
        for known, name in EXTENSIONS:
            if known == alias:
                return Response({"extension": _extension(known, name)})
        raise NotFound(f"Extension with alias {alias} does not exist")


class AgentsView(NeutronView):
    def get(self, request: Request) -> Response:
        return Response({"agents": [self._fields(a) for a in agents.agent_list(self.ctx, filters=self._filters())]})


class AgentView(NeutronView):
    def get(self, request: Request, agent_id: str) -> Response:
        return Response({"agent": self._fields(agents.agent_get(self.ctx, agent_id))})


class NetworksView(NeutronView):
    def get(self, request: Request) -> Response:
        return Response({"networks": [self._fields(present_network(n))
                                      for n in services.network_list(self.ctx, filters=self._filters())]})

    def post(self, request: Request) -> Response:
        return self._created("network", "networks", self._create, present_network)

    def _create(self, body: dict[str, Any]) -> Network:
        return services.network_create(self.ctx, name=str(body.get("name", "")),
                                       project_id=body.get("project_id") or body.get("tenant_id"),
                                       shared=bool(body.get("shared", False)),
                                       admin_state_up=bool(body.get("admin_state_up", True)),
                                       description=str(body.get("description", "")),
                                       external=bool(body.get("router:external", False)))


class NetworkView(NeutronView):
    def get(self, request: Request, net_id: str) -> Response:
        return Response({"network": self._fields(present_network(services.network_get(self.ctx, net_id)))})

    def put(self, request: Request, net_id: str) -> Response:
        net = services.network_update(self.ctx, services.network_get(self.ctx, net_id), **self._resource("network"))
        return Response({"network": present_network(net)})

    def delete(self, request: Request, net_id: str) -> Response:
        services.network_delete(self.ctx, services.network_get(self.ctx, net_id))
        return Response(status=204)


class SubnetsView(NeutronView):
    def get(self, request: Request) -> Response:
        return Response({"subnets": [self._fields(present_subnet(s))
                                     for s in services.subnet_list(self.ctx, filters=self._filters())]})

    def post(self, request: Request) -> Response:
        return self._created("subnet", "subnets", self._create, present_subnet)

    def _create(self, body: dict[str, Any]) -> Subnet:
        _known_attributes(body, SUBNET_CREATE_ATTRIBUTES)
        for key in ("ipv6_ra_mode", "ipv6_address_mode", "subnetpool_id", "segment_id"):
            if body.get(key) is not None:
                raise Invalid(f"Invalid input: {key} is not supported by this cloud.")
        if body.get("service_types"):
            raise Invalid("Invalid input: service_types is not supported by this cloud.")
        if not body.get("network_id") or not body.get("cidr"):
            raise Invalid("Invalid input: network_id and cidr are required.")
        try:
            version = int(body.get("ip_version", 4))
        except (TypeError, ValueError):
            raise Invalid("Invalid input for ip_version.") from None
        return services.subnet_create(
            self.ctx, network_id=str(body["network_id"]), cidr=str(body["cidr"]), ip_version=version,
            name=str(body.get("name", "")), gateway_ip=body.get("gateway_ip", "auto"),
            enable_dhcp=bool(body.get("enable_dhcp", True)), allocation_pools=body.get("allocation_pools"),
            dns_nameservers=body.get("dns_nameservers"), host_routes=body.get("host_routes"),
            description=str(body.get("description") or ""))


class SubnetView(NeutronView):
    def get(self, request: Request, subnet_id: str) -> Response:
        return Response({"subnet": self._fields(present_subnet(services.subnet_get(self.ctx, subnet_id)))})

    def put(self, request: Request, subnet_id: str) -> Response:
        body = self._resource("subnet")
        read_only = sorted(set(body) & {"id", "network_id", "cidr", "ip_version", "project_id", "tenant_id",
                                        "subnetpool_id", "ipv6_ra_mode", "ipv6_address_mode"})
        if read_only:
            raise Invalid(f"Cannot update read-only attribute {read_only[0]}")
        _known_attributes(body, set(services.SUBNET_UPDATABLE))
        subnet = services.subnet_update(self.ctx, services.subnet_get(self.ctx, subnet_id), **body)
        return Response({"subnet": present_subnet(subnet)})

    def delete(self, request: Request, subnet_id: str) -> Response:
        services.subnet_delete(self.ctx, services.subnet_get(self.ctx, subnet_id))
        return Response(status=204)


#: The port attributes this cloud stores; anything else a client sends is refused as Neutron refuses an
#: attribute of an extension it does not have (never silently dropped).
PORT_UPDATE_ATTRIBUTES = {"name", "description", "admin_state_up", "device_id", "device_owner", "binding:host_id",
                          "binding:vnic_type", "binding:profile", "port_security_enabled", "security_groups",
                          "allowed_address_pairs", "fixed_ips"}
PORT_CREATE_ATTRIBUTES = PORT_UPDATE_ATTRIBUTES | {"network_id", "mac_address", "project_id", "tenant_id"}
SUBNET_CREATE_ATTRIBUTES = {"network_id", "cidr", "ip_version", "name", "description", "gateway_ip", "enable_dhcp",
                            "allocation_pools", "dns_nameservers", "host_routes", "project_id", "tenant_id",
                            "ipv6_ra_mode", "ipv6_address_mode", "subnetpool_id", "segment_id", "service_types"}


def _known_attributes(body: dict[str, Any], known: set[str]) -> None:
    unknown = sorted(set(body) - known)
    if unknown:
        raise Invalid(f"Unrecognized attribute(s) '{', '.join(unknown)}'")


class PortsView(NeutronView):
    def get(self, request: Request) -> Response:
        filters = {**self._filters(), "fixed_ips": self.request.query_params.getlist("fixed_ips")}
        ports = services.port_list(self.ctx, filters=filters)
        return Response({"ports": [self._fields(present_port(p, self.ctx)) for p in ports]})

    def post(self, request: Request) -> Response:
        return self._created("port", "ports", self._create, lambda port: present_port(port, self.ctx))

    def _create(self, body: dict[str, Any]) -> Port:
        _known_attributes(body, PORT_CREATE_ATTRIBUTES)
        if not body.get("network_id"):
            raise Invalid("Invalid input: network_id is required.")
        fixed_ips = body.get("fixed_ips")
        if fixed_ips is not None and not (isinstance(fixed_ips, list) and all(isinstance(f, dict) for f in fixed_ips)):
            raise Invalid("Invalid input for fixed_ips.")
        return services.port_create(
            self.ctx, network_id=str(body["network_id"]), name=str(body.get("name", "")), fixed_ips=fixed_ips,
            device_id=str(body.get("device_id", "")), device_owner=str(body.get("device_owner", "")),
            admin_state_up=bool(body.get("admin_state_up", True)),
            binding_host_id=str(body.get("binding:host_id", "") or ""),
            project_id=body.get("project_id") or body.get("tenant_id"), mac_address=body.get("mac_address"),
            description=str(body.get("description") or ""),
            port_security_enabled=secgroups.as_bool(body.get("port_security_enabled", True), "port_security_enabled"),
            security_groups=body.get("security_groups"), allowed_address_pairs=body.get("allowed_address_pairs"),
            binding_vnic_type=str(body.get("binding:vnic_type") or "normal"),
            binding_profile=body.get("binding:profile"))


class PortView(NeutronView):
    def get(self, request: Request, port_id: str) -> Response:
        return Response({"port": self._fields(present_port(services.port_get(self.ctx, port_id), self.ctx))})

    def put(self, request: Request, port_id: str) -> Response:
        body = self._resource("port")
        _known_attributes(body, PORT_UPDATE_ATTRIBUTES)
        port = services.port_update(self.ctx, services.port_get(self.ctx, port_id), **body)
        return Response({"port": present_port(port, self.ctx)})

    def delete(self, request: Request, port_id: str) -> Response:
        services.port_delete(self.ctx, services.port_get(self.ctx, port_id))
        return Response(status=204)


def present_binding(b: PortBinding) -> dict[str, Any]:
    return {"host": b.host, "vif_type": b.vif_type, "vif_details": {}, "vnic_type": b.vnic_type,
            "profile": dict(b.profile or {}), "status": b.status}


BINDING_CREATE_ATTRIBUTES = {"host", "vnic_type", "profile"}


class PortBindingsView(NeutronView):
    """Neutron's ``binding-extended``: ``/v2.0/ports/{port_id}/bindings`` (admin or service)."""

    def get(self, request: Request, port_id: str) -> Response:
        bindings = services.port_bindings(self.ctx, port_id, filters=self._filters())
        return Response({"bindings": [self._fields(present_binding(b)) for b in bindings]})

    def post(self, request: Request, port_id: str) -> Response:
        body = self._resource("binding")
        _known_attributes(body, BINDING_CREATE_ATTRIBUTES)
        binding = services.port_binding_add(self.ctx, port_id, host=str(body.get("host") or ""),
                                            vnic_type=str(body.get("vnic_type") or "normal"),
                                            profile=body.get("profile"))
        return Response({"binding": present_binding(binding)}, status=201)


class PortBindingView(NeutronView):
    def get(self, request: Request, port_id: str, host: str) -> Response:
        return Response({"binding": self._fields(present_binding(services.port_binding_show(self.ctx, port_id, host)))})

    def delete(self, request: Request, port_id: str, host: str) -> Response:
        services.port_binding_remove(self.ctx, port_id, host)
        return Response(status=204)


class PortBindingActivateView(NeutronView):
    def put(self, request: Request, port_id: str, host: str) -> Response:
        return Response({"binding": present_binding(services.port_binding_make_active(self.ctx, port_id, host))})
