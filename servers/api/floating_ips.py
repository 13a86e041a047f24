"""Nova's floating IP proxy (``/os-floating-ips``, ``/os-floating-ip-pools``; gone from 2.36): the network
service's floating IPs in nova-network's shape. The ``addFloatingIp`` / ``removeFloatingIp`` actions are in
``actions.py``."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rest_framework.request import Request
from rest_framework.response import Response

from cloudcore.core.api.validation import validate
from cloudcore.core.api.views import ComputeProxyAPIView

from ..services import floating_ip_proxy as proxy

if TYPE_CHECKING:  # annotations only: other apps read networks through its services
    from networks.models import FloatingIP

#: Nova's create body: optional, and so is its ``pool`` (other keys are let through, as Nova does)
CREATE = {"type": ["object", "null"], "properties": {"pool": {"type": ["string", "null"]}}}


def present_floating_ip(fip: FloatingIP) -> dict[str, Any]:
    """``instance_id`` is the associated port's device (Nova shows it whatever the device is)."""
    network = fip.floating_network
    return {"id": fip.id, "ip": fip.floating_ip_address, "pool": network.name or network.id,
            "fixed_ip": fip.fixed_ip_address, "instance_id": fip.port.device_id if fip.port is not None else None}


class FloatingIPsView(ComputeProxyAPIView):
    def get(self, request: Request) -> Response:
        return Response({"floating_ips": [present_floating_ip(f) for f in proxy.floating_ip_list(actor=self.ctx)]})

    def post(self, request: Request) -> Response:
        body = validate(self.body(), CREATE)
        fip = proxy.floating_ip_create(actor=self.ctx, pool=(body or {}).get("pool"))
        return Response({"floating_ip": present_floating_ip(fip)})


class FloatingIPView(ComputeProxyAPIView):
    def get(self, request: Request, fip_id: str) -> Response:
        return Response({"floating_ip": present_floating_ip(proxy.floating_ip_get(actor=self.ctx, fip_id=fip_id))})

    def delete(self, request: Request, fip_id: str) -> Response:
        proxy.floating_ip_delete(actor=self.ctx, fip_id=fip_id)
        return Response(status=202)


class FloatingIPPoolsView(ComputeProxyAPIView):
    def get(self, request: Request) -> Response:
        pools = proxy.floating_ip_pools(actor=self.ctx)
        return Response({"floating_ip_pools": [{"name": n.name or n.id} for n in pools]})
