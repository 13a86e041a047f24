"""``/servers/{id}/ips`` and ``/servers/{id}/ips/{network_label}``: a server's addresses by network,
in Nova's basic address view (``version`` and ``addr``; the ``OS-EXT-IPS`` attributes belong to the
server body only)."""
from __future__ import annotations

from rest_framework.request import Request
from rest_framework.response import Response

from cloudcore.core.api.views import ComputeAPIView
from cloudcore.core.exceptions import NotFound

from ..presenter import basic_addresses
from ..services.external import addresses_for_instances
from .servers import get_server


class ServerIpsView(ComputeAPIView):
    def get(self, request: Request, server_id: str) -> Response:
        record = get_server(self.ctx, server_id, "os_compute_api:ips:index")
        return Response({"addresses": basic_addresses(addresses_for_instances([record.uuid]).get(record.uuid, {}))})


class ServerIpsNetworkView(ComputeAPIView):
    def get(self, request: Request, server_id: str, network_label: str) -> Response:
        record = get_server(self.ctx, server_id, "os_compute_api:ips:show")
        addresses = basic_addresses(addresses_for_instances([record.uuid]).get(record.uuid, {}))
        if network_label not in addresses:
            raise NotFound("Instance is not a member of specified network")
        return Response({network_label: addresses[network_label]})
