"""``/servers/{id}/ips`` and ``/servers/{id}/ips/{network_label}``: a server's addresses by network,
in Nova's basic address view (``version`` and ``addr``; the ``OS-EXT-IPS`` attributes belong to the
server body only)."""
from __future__ import annotations

from typing import Any

from rest_framework.request import Request
from rest_framework.response import Response

from cloudcore.core.api.views import ComputeAPIView
from cloudcore.core.exceptions import NotFound

from ..services.external import addresses_for_instances
from .servers import get_server


def _basic(addresses: dict[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    return {label: [{"version": a["version"], "addr": a["addr"]} for a in entries]
            for label, entries in addresses.items()}


class ServerIpsView(ComputeAPIView):
    def get(self, request: Request, server_id: str) -> Response:
        record = get_server(self.ctx, server_id, "os_compute_api:ips:index")
        return Response({"addresses": _basic(addresses_for_instances([record.uuid]).get(record.uuid, {}))})


class ServerIpsNetworkView(ComputeAPIView):
    def get(self, request: Request, server_id: str, network_label: str) -> Response:
        record = get_server(self.ctx, server_id, "os_compute_api:ips:show")
        addresses = _basic(addresses_for_instances([record.uuid]).get(record.uuid, {}))
        if network_label not in addresses:
            raise NotFound("Instance is not a member of specified network")
        return Response({network_label: addresses[network_label]})
