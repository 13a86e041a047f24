"""Neutron's ``network-ip-availability``: per network and per subnet, how many addresses the allocation
pools hold (``total_ips``) and how many are allocated (``used_ips``). Admin's by default."""
from __future__ import annotations

import ipaddress
from typing import Any

from django.db.models import Count

from cloudcore.core.context import RequestContext
from cloudcore.core.policy import authorize

from . import services
from .models import Network, Subnet


def _pool_size(subnet: Subnet) -> int:
    return sum(int(ipaddress.ip_address(p["end"])) - int(ipaddress.ip_address(p["start"])) + 1
               for p in subnet.allocation_pools or [])


def _availability(network: Network, subnets: list[Subnet]) -> dict[str, Any]:
    per_subnet = [{"subnet_id": s.id, "subnet_name": s.name, "cidr": s.cidr, "ip_version": s.ip_version,
                   "total_ips": _pool_size(s), "used_ips": s.used} for s in subnets]  # type: ignore[attr-defined]
    return {"network_id": network.id, "network_name": network.name, "tenant_id": network.project_id,
            "project_id": network.project_id, "total_ips": sum(s["total_ips"] for s in per_subnet),
            "used_ips": sum(s["used_ips"] for s in per_subnet), "subnet_ip_availability": per_subnet}


def _subnets_by_network(network_ids: list[str], ip_version: Any = None) -> dict[str, list[Subnet]]:
    qs = Subnet.objects.filter(network_id__in=network_ids).annotate(used=Count("allocations")).order_by(
        "created_at", "id")
    if ip_version:
        qs = qs.filter(ip_version=ip_version)
    out: dict[str, list[Subnet]] = {}
    for subnet in qs:
        out.setdefault(subnet.network_id, []).append(subnet)
    return out


def ip_availability_list(ctx: RequestContext, *, filters: dict[str, Any]) -> list[dict[str, Any]]:
    authorize(ctx, "get_network_ip_availability", {"project_id": ctx.project_id})
    networks = services.network_list(ctx, filters={
        "id": filters.get("network_id"), "name": filters.get("network_name"),
        "project_id": filters.get("project_id") or filters.get("tenant_id")})
    subnets = _subnets_by_network([n.id for n in networks], filters.get("ip_version"))
    return [_availability(n, subnets.get(n.id, [])) for n in networks
            if not filters.get("ip_version") or n.id in subnets]


def ip_availability_show(ctx: RequestContext, network_id: str) -> dict[str, Any]:
    network = services.network_get(ctx, network_id)
    authorize(ctx, "get_network_ip_availability", {"project_id": network.project_id})
    return _availability(network, _subnets_by_network([network.id]).get(network.id, []))
