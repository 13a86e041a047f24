"""Neutron's L3 API: ``/v2.0/routers`` (with ``add_router_interface`` / ``remove_router_interface``) and
``/v2.0/floatingips``: bodies, filters, ``fields=`` selection and error bodies as Neutron's."""
from __future__ import annotations

from typing import Any

from rest_framework.request import Request
from rest_framework.response import Response

from cloudcore.core.exceptions import Invalid

from .. import l3, secgroups
from ..models import FloatingIP, Router
from .views import NeutronView, _known_attributes, _ts


def present_router(r: Router) -> dict[str, Any]:
    gateway = None
    if r.gw_port is not None:
        gateway = {"network_id": r.gw_port.network_id, "enable_snat": r.enable_snat,
                   "external_fixed_ips": [{"subnet_id": a.subnet_id, "ip_address": a.ip_address}
                                          for a in r.gw_port.fixed_ips.all()]}
    return {
        "id": r.id, "name": r.name, "description": r.description, "tenant_id": r.project_id,
        "project_id": r.project_id, "admin_state_up": r.admin_state_up, "status": r.status,
        "external_gateway_info": gateway, "routes": [dict(route) for route in r.routes], "tags": [],
        "created_at": _ts(r.created_at), "updated_at": _ts(r.updated_at or r.created_at),
        "revision_number": r.revision_number,
    }


def present_floatingip(f: FloatingIP) -> dict[str, Any]:
    return {
        "id": f.id, "tenant_id": f.project_id, "project_id": f.project_id, "description": f.description,
        "floating_network_id": f.floating_network_id, "floating_ip_address": f.floating_ip_address,
        "port_id": f.port_id, "fixed_ip_address": f.fixed_ip_address, "router_id": f.router_id,
        "status": f.status, "tags": [], "created_at": _ts(f.created_at),
        "updated_at": _ts(f.updated_at or f.created_at), "revision_number": f.revision_number,
    }


ROUTER_CREATE_ATTRIBUTES = {"name", "description", "admin_state_up", "external_gateway_info", "project_id",
                            "tenant_id"}
FLOATINGIP_CREATE_ATTRIBUTES = {"floating_network_id", "port_id", "fixed_ip_address", "floating_ip_address",
                                "subnet_id", "description", "project_id", "tenant_id"}


class RoutersView(NeutronView):
    def get(self, request: Request) -> Response:
        routers = l3.router_list(self.ctx, filters=self._filters())
        return Response({"routers": [self._fields(present_router(r)) for r in routers]})

    def post(self, request: Request) -> Response:
        body = self._resource("router")
        _known_attributes(body, ROUTER_CREATE_ATTRIBUTES)
        router = l3.router_create(
            self.ctx, name=str(body.get("name") or ""), description=str(body.get("description") or ""),
            admin_state_up=secgroups.as_bool(body.get("admin_state_up", True), "admin_state_up"),
            project_id=body.get("project_id") or body.get("tenant_id"),
            external_gateway_info=body.get("external_gateway_info"))
        return Response({"router": present_router(router)}, status=201)


class RouterView(NeutronView):
    def get(self, request: Request, router_id: str) -> Response:
        return Response({"router": self._fields(present_router(l3.router_get(self.ctx, router_id)))})

    def put(self, request: Request, router_id: str) -> Response:
        body = self._resource("router")
        _known_attributes(body, l3.ROUTER_UPDATABLE)
        router = l3.router_update(self.ctx, l3.router_get(self.ctx, router_id), changes=body)
        return Response({"router": present_router(router)})

    def delete(self, request: Request, router_id: str) -> Response:
        l3.router_delete(self.ctx, l3.router_get(self.ctx, router_id))
        return Response(status=204)


class RouterInterfaceView(NeutronView):
    """``PUT /v2.0/routers/{id}/add_router_interface`` and ``.../remove_router_interface`` with
    ``{"subnet_id": ...}`` or ``{"port_id": ...}``; 200 with the interface's description."""

    operation = "add"

    def put(self, request: Request, router_id: str) -> Response:
        body = request.data
        if not isinstance(body, dict):
            raise Invalid("Bad router request: a JSON object with subnet_id or port_id is required.")
        _known_attributes(body, {"subnet_id", "port_id"})
        router = l3.router_get(self.ctx, router_id)
        subnet_id, port_id = body.get("subnet_id"), body.get("port_id")
        if self.operation == "add":
            info = l3.router_add_interface(self.ctx, router, subnet_id=subnet_id, port_id=port_id)
        else:
            info = l3.router_remove_interface(self.ctx, router, subnet_id=subnet_id, port_id=port_id)
        return Response(info)


class FloatingIPsView(NeutronView):
    def get(self, request: Request) -> Response:
        fips = l3.floatingip_list(self.ctx, filters=self._filters())
        return Response({"floatingips": [self._fields(present_floatingip(f)) for f in fips]})

    def post(self, request: Request) -> Response:
        body = self._resource("floatingip")
        _known_attributes(body, FLOATINGIP_CREATE_ATTRIBUTES)
        if not body.get("floating_network_id"):
            raise Invalid("Invalid input for floating_network_id. Reason: 'None' is not a valid UUID.")
        fip = l3.floatingip_create(
            self.ctx, floating_network_id=str(body["floating_network_id"]),
            project_id=body.get("project_id") or body.get("tenant_id"), port_id=body.get("port_id"),
            fixed_ip_address=body.get("fixed_ip_address"), floating_ip_address=body.get("floating_ip_address"),
            subnet_id=body.get("subnet_id"), description=str(body.get("description") or ""))
        return Response({"floatingip": present_floatingip(fip)}, status=201)


class FloatingIPView(NeutronView):
    def get(self, request: Request, fip_id: str) -> Response:
        return Response({"floatingip": self._fields(present_floatingip(l3.floatingip_get(self.ctx, fip_id)))})

    def put(self, request: Request, fip_id: str) -> Response:
        body = self._resource("floatingip")
        _known_attributes(body, l3.FLOATINGIP_UPDATABLE)
        fip = l3.floatingip_update(self.ctx, l3.floatingip_get(self.ctx, fip_id), changes=body)
        return Response({"floatingip": present_floatingip(fip)})

    def delete(self, request: Request, fip_id: str) -> Response:
        l3.floatingip_delete(self.ctx, l3.floatingip_get(self.ctx, fip_id))
        return Response(status=204)
