"""``/servers/{id}/os-interface``: list, show, attach (200 with the interface) and detach (202) a
server's ports; ``tag`` from 2.70 in the bodies (2.49 in the attach request)."""
from __future__ import annotations

from typing import Any

from rest_framework.request import Request
from rest_framework.response import Response

from cells.context import target_cell
from cloudcore.core.api.versioned import present

from ..presenter import INTERFACE_ATTACHMENT_FIELDS
from ..services import interfaces as service
from .schemas import INTERFACE_ATTACH
from .subresource import ServerSubresourceView


class _Base(ServerSubresourceView):
    def render(self, interface: dict[str, Any]) -> dict[str, Any]:
        return present(INTERFACE_ATTACHMENT_FIELDS, interface, self.v)


class InterfacesView(_Base):
    def get(self, request: Request, server_id: str) -> Response:
        record = self.server(server_id)
        with target_cell(record.cell):
            interfaces = service.interface_list(actor=self.ctx, instance=record.instance)
        return Response({"interfaceAttachments": [self.render(i) for i in interfaces]})

    def post(self, request: Request, server_id: str) -> Response:
        body = INTERFACE_ATTACH.validate(self.body() or {}, self.v).get("interfaceAttachment") or {}
        record = self.server(server_id)
        fixed = body.get("fixed_ips") or [{}]
        with target_cell(record.cell):
            interface = service.interface_attach(
                actor=self.ctx, instance=record.instance, cell=record.cell, network_id=body.get("net_id"),
                port_id=body.get("port_id"), fixed_ip=fixed[0].get("ip_address"), tag=body.get("tag"))
        return Response({"interfaceAttachment": self.render(interface)})


class InterfaceView(_Base):
    def get(self, request: Request, server_id: str, port_id: str) -> Response:
        record = self.server(server_id)
        with target_cell(record.cell):
            interface = service.interface_get(actor=self.ctx, instance=record.instance, port_id=port_id)
        return Response({"interfaceAttachment": self.render(interface)})

    def delete(self, request: Request, server_id: str, port_id: str) -> Response:
        record = self.server(server_id)
        with target_cell(record.cell):
            service.interface_detach(actor=self.ctx, instance=record.instance, cell=record.cell, port_id=port_id)
        return Response(status=202)
