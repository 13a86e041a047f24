"""The resource tracker: what a compute node has and uses, reported to its cell and to placement.

A ResourceProvider per ComputeNode (uuid = node uuid, name = hypervisor hostname) with VCPU,
MEMORY_MB and DISK_GB inventories (allocation ratios and reserved amounts from settings) and the
node's traits: ``COMPUTE_REBUILD_BFV`` when the driver can reimage a boot volume,
``COMPUTE_STATUS_DISABLED`` while the service is disabled.

Placement is reached over its HTTP API as the service user (``compute.clients.placement``), never
its tables. Like nova-compute's report client, the tracker keeps a copy of what it last reported
per provider (generation, inventories, traits): a periodic report whose wanted inventories and
traits equal that copy sends nothing; a changed one sends only the PUTs that differ, with the
copy's generation (a 409 generation conflict re-reads it and retries). The copy is read again
from placement at start-up, after a failed report and every
``RESOURCE_PROVIDER_ASSOCIATION_REFRESH`` seconds (0: never).
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.conf import settings

from hosts.selectors import service_get_by_id
from servers.selectors import instance_usage_on_node

from .clients import placement

if TYPE_CHECKING:
    from hosts.models import ComputeNode, Service


def inventories_for(resources: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        "VCPU": {"total": int(resources["vcpus"]), "reserved": settings.RESERVED_HOST_CPUS,
                 "max_unit": int(resources["vcpus"]), "allocation_ratio": settings.CPU_ALLOCATION_RATIO},
        "MEMORY_MB": {"total": int(resources["memory_mb"]),
                      "reserved": min(settings.RESERVED_HOST_MEMORY_MB, int(resources["memory_mb"]) - 1),
                      "max_unit": int(resources["memory_mb"]), "allocation_ratio": settings.RAM_ALLOCATION_RATIO},
        "DISK_GB": {"total": max(int(resources["local_gb"]), 1),
                    "reserved": settings.RESERVED_HOST_DISK_MB // 1024,
                    "max_unit": max(int(resources["local_gb"]), 1), "allocation_ratio": settings.DISK_ALLOCATION_RATIO},
    }


def traits_for(service: Service, driver: Any) -> list[str]:
    traits = ["COMPUTE_NODE"]
    if getattr(driver, "capabilities", {}).get("supports_rebuild_bfv"):
        traits.append("COMPUTE_REBUILD_BFV")
    if getattr(driver, "capabilities", {}).get("supports_multiattach"):
        traits.append("COMPUTE_VOLUME_MULTI_ATTACH")
    if service.disabled:
        traits.append("COMPUTE_STATUS_DISABLED")
    return traits


@dataclass
class _Reported:
    """What placement holds for one provider, as this process last read or wrote it."""

    generation: int
    inventories: dict[str, dict[str, Any]]
    traits: list[str]
    read_at: float  # time.monotonic() of the last read from placement

    def stale(self) -> bool:
        refresh = settings.RESOURCE_PROVIDER_ASSOCIATION_REFRESH
        return bool(refresh) and time.monotonic() - self.read_at >= refresh


_lock = threading.Lock()
_reported: dict[str, _Reported] = {}


def forget_reported(uuid: str | None = None) -> None:
    """Drop the copy of one provider (or all): the next report reads placement again."""
    with _lock:
        if uuid is None:
            _reported.clear()
        else:
            _reported.pop(uuid, None)


def _same_inventories(current: dict[str, dict[str, Any]], wanted: dict[str, dict[str, Any]]) -> bool:
    """Placement's answer holds every field (defaults included): compare the ones we set."""
    return current.keys() == wanted.keys() and all(
        current[rc].get(key) == value for rc, fields in wanted.items() for key, value in fields.items())


def _read(node: ComputeNode) -> _Reported:
    placement.provider_ensure(uuid=node.uuid, name=str(node.hypervisor_hostname))
    generation, inventories = placement.inventories_get(uuid=node.uuid)
    _gen, traits = placement.traits_get(uuid=node.uuid)
    return _Reported(generation=generation, inventories=inventories, traits=traits, read_at=time.monotonic())


def report_to_placement(*, node: ComputeNode, service: Service, driver: Any,
                        resources: dict[str, Any] | None = None, refresh: bool = False) -> int:
    """Bring the node's provider in placement to what the node has; returns the number of writes
    sent (0 when the copy of the last report already says so). ``refresh``: read placement first
    (start-up)."""
    resources = resources or driver.get_available_resource()
    wanted_inventories = inventories_for(resources)
    wanted_traits = sorted(traits_for(service, driver))
    with _lock:
        known = None if refresh else _reported.get(node.uuid)
    if known is not None and known.stale():
        known = None
    if known is not None and known.traits == wanted_traits and _same_inventories(known.inventories,
                                                                                 wanted_inventories):
        return 0
    writes = 0
    try:
        if known is None:
            known = _read(node)
        if not _same_inventories(known.inventories, wanted_inventories):
            known.generation = placement.inventories_put(uuid=node.uuid, inventories=wanted_inventories,
                                                         generation=known.generation)
            known.inventories = wanted_inventories
            writes += 1
        if known.traits != wanted_traits:
            known.generation = placement.traits_put(uuid=node.uuid, traits=wanted_traits, generation=known.generation)
            known.traits = wanted_traits
            writes += 1
    except Exception:
        forget_reported(node.uuid)  # read placement again next time
        raise
    with _lock:
        _reported[node.uuid] = known
    return writes


def update_usage(*, node: ComputeNode, driver: Any) -> None:
    """Refresh the node row from the hypervisor and its instances (periodic)."""

    resources = driver.get_available_resource()
    used = instance_usage_on_node(node.id)
    node.vcpus, node.memory_mb, node.local_gb = resources["vcpus"], resources["memory_mb"], resources["local_gb"]
    node.vcpus_used = used["vcpus"]
    node.memory_mb_used = used["memory_mb"] + settings.RESERVED_HOST_MEMORY_MB
    node.local_gb_used = used["root_gb"]
    node.free_ram_mb = node.memory_mb - node.memory_mb_used
    node.free_disk_gb = node.local_gb - node.local_gb_used
    node.running_vms = used["running"]
    node.host_uptime = driver.get_host_uptime()
    node.save()
    service = service_get_by_id(node.service_id) if node.service_id is not None else None
    if service is None:
        raise LookupError(f"compute node {node.uuid} has no live service")
    report_to_placement(node=node, service=service, driver=driver, resources=resources)
