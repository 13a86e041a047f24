"""Nova's network proxies (``/os-networks`` and ``/os-tenant-networks``, list and show; gone from
2.36): the network service's networks in nova-network's shapes, for clients that still read them.
The nova-network writes (create, delete, associate) are 410 Gone, as in Nova since nova-network
was removed."""
from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING, Any

from rest_framework.request import Request
from rest_framework.response import Response

from cloudcore.core.api.views import ComputeProxyAPIView
from cloudcore.core.exceptions import CloudcoreError, NotFound
from cloudcore.core.policy import authorize
from networks import services as networks

if TYPE_CHECKING:  # annotations only: other apps read networks through its services
    from networks.models import Network

ADMIN_FIELDS = ("created_at", "updated_at", "deleted_at", "deleted", "injected", "bridge", "vlan",
                "vpn_public_address", "vpn_public_port", "vpn_private_address", "dhcp_start", "project_id", "host",
                "bridge_interface", "multi_host", "priority", "rxtx_base", "mtu", "dhcp_server", "enable_dhcp",
                "share_address")


class Gone(CloudcoreError):
    code = 410
    message = "Network API is not supported: nova-network was removed."


def network_body(network: Network, *, admin: bool) -> dict[str, Any]:
    subnets = sorted(network.subnets.all(), key=lambda s: (s.ip_version, s.created_at))
    v4 = next((s for s in subnets if s.ip_version == 4), None)
    v6 = next((s for s in subnets if s.ip_version == 6), None)
    dns = list(v4.dns_nameservers or []) if v4 else []
    body: dict[str, Any] = {
        "id": network.id, "label": network.name, "cidr": v4.cidr if v4 else None,
        "netmask": str(ipaddress.ip_network(v4.cidr, strict=False).netmask) if v4 else None,
        "gateway": v4.gateway_ip if v4 else None,
        "broadcast": str(ipaddress.ip_network(v4.cidr, strict=False).broadcast_address) if v4 else None,
        "dns1": dns[0] if dns else None, "dns2": dns[1] if len(dns) > 1 else None,
        "cidr_v6": v6.cidr if v6 else None, "gateway_v6": v6.gateway_ip if v6 else None,
        "netmask_v6": str(ipaddress.ip_network(v6.cidr, strict=False).prefixlen) if v6 else None,
    }
    if admin:
        body.update(dict.fromkeys(ADMIN_FIELDS))
        body.update(project_id=network.project_id, mtu=network.mtu, deleted=False,
                    enable_dhcp=bool(v4 and v4.enable_dhcp), share_address=network.shared)
    return body


def tenant_network_body(network: Network) -> dict[str, Any]:
    """``/os-tenant-networks``' short shape: id, label and the first IPv4 subnet's CIDR."""
    v4 = sorted((s for s in network.subnets.all() if s.ip_version == 4), key=lambda s: s.created_at)
    return {"id": network.id, "label": network.name, "cidr": v4[0].cidr if v4 else None}


class _ProxyView(ComputeProxyAPIView):
    """The nova-network writes are gone (410)."""

    def post(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        raise Gone()

    def delete(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        raise Gone()


class NetworksView(_ProxyView):
    def get(self, request: Request) -> Response:
        authorize(self.ctx, "os_compute_api:os-networks:list", {"project_id": self.ctx.project_id})
        found = networks.network_list(self.ctx, filters={})
        return Response({"networks": [network_body(n, admin=self.ctx.is_admin) for n in found]})


class NetworkView(_ProxyView):
    def get(self, request: Request, network_id: str) -> Response:
        authorize(self.ctx, "os_compute_api:os-networks:show", {"project_id": self.ctx.project_id})
        try:
            network = networks.network_get(self.ctx, network_id)
        except NotFound:
            raise NotFound("Network could not be found.") from None
        return Response({"network": network_body(network, admin=self.ctx.is_admin)})


class TenantNetworksView(_ProxyView):
    """The networks the project sees (its own, shared and external ones)."""

    def get(self, request: Request) -> Response:
        authorize(self.ctx, "os_compute_api:os-tenant-networks:list", {"project_id": self.ctx.project_id})
        found = networks.network_list(self.ctx, filters={})
        return Response({"networks": [tenant_network_body(n) for n in found]})


class TenantNetworkView(_ProxyView):
    def get(self, request: Request, network_id: str) -> Response:
        authorize(self.ctx, "os_compute_api:os-tenant-networks:show", {"project_id": self.ctx.project_id})
        try:
            network = networks.network_get(self.ctx, network_id)
        except NotFound:
            raise NotFound("Network could not be found.") from None
        return Response({"network": tenant_network_body(network)})
