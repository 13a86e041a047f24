"""Reads of services and compute nodes in the targeted cell (``cells.target_cell``), for the other
apps, which never query ``hosts.models`` themselves."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .models import ComputeNode, Service

COMPUTE_BINARY = "nova-compute"


def service_list(*, binary: str | None = None) -> list[Service]:
    """Live services by host (of one ``binary`` if given)."""
    qs = Service.objects.order_by("host")
    if binary is not None:
        qs = qs.filter(binary=binary)
    return list(qs)


def compute_service_count() -> int:
    return Service.objects.filter(binary=COMPUTE_BINARY).count()


def enabled_compute_service_exists(*, hosts: Iterable[str] | None = None,
                                   exclude_hosts: Iterable[str] | None = None) -> bool:
    """Is there a live, enabled nova-compute service (on one of ``hosts``; not on
    ``exclude_hosts``)?"""
    qs = Service.objects.filter(binary=COMPUTE_BINARY, disabled=False, deleted=False)
    if hosts is not None:
        qs = qs.filter(host__in=list(hosts))
    if exclude_hosts:
        qs = qs.exclude(host__in=list(exclude_hosts))
    return qs.exists()


def service_field_names() -> list[str]:
    """The column attributes of a service row (for ``compute_node_values(service__<name>)``)."""
    return [f.attname for f in Service._meta.concrete_fields]


def compute_services_values(hosts: Iterable[str], fields: Iterable[str]) -> dict[str, dict[str, Any]]:
    """``{host: {field: value}}`` of the live nova-compute services of ``hosts``."""
    rows = Service.objects.filter(host__in=list(hosts), binary=COMPUTE_BINARY, deleted=False).values(*fields)
    return {row["host"]: row for row in rows}


def compute_nodes() -> list[ComputeNode]:
    """Live compute nodes."""
    return list(ComputeNode.objects.all())


def compute_node_values(*fields: str, uuids: Iterable[str] | None = None, hosts: Iterable[str] | None = None,
                        nodes: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """Live compute nodes as ``{field: value}`` rows (``service__<field>`` follows the node's
    service), filtered by uuid, host or hypervisor hostname when given (empty filters are no
    filter, except ``uuids``)."""
    qs = ComputeNode.objects.filter(deleted=False)
    if uuids is not None:
        qs = qs.filter(uuid__in=list(uuids))
    if hosts:
        qs = qs.filter(host__in=list(hosts))
    if nodes:
        qs = qs.filter(hypervisor_hostname__in=list(nodes))
    return list(qs.values(*fields))


def compute_node_uuids(host: str) -> list[str]:
    """Uuids of ``host``'s live compute nodes."""
    return list(ComputeNode.objects.filter(host=host, deleted=False).values_list("uuid", flat=True))


def compute_node_ids_by_name() -> dict[tuple[str | None, str | None], int]:
    """``{(host, hypervisor hostname): node id}`` of every node, deleted ones included."""
    return {(n.host, n.hypervisor_hostname): n.id for n in ComputeNode.all_objects.all()}
