"""The resource tracker: what a compute node has and uses, reported to its cell and to placement.

A ResourceProvider per ComputeNode (uuid = node uuid, name = hypervisor hostname) with VCPU,
MEMORY_MB and DISK_GB inventories (allocation ratios and reserved amounts from settings) and the
node's traits: ``COMPUTE_REBUILD_BFV`` when the driver can reimage a boot volume,
``COMPUTE_STATUS_DISABLED`` while the service is disabled. Identical reports write nothing.
"""
from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db.models import Sum

from hosts.models import ComputeNode, Service
from scheduling.placement import services as placement
from servers.models import Instance


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
    if service.disabled:
        traits.append("COMPUTE_STATUS_DISABLED")
    return traits


def report_to_placement(*, node: ComputeNode, service: Service, driver: Any,
                        resources: dict[str, Any] | None = None) -> None:
    resources = resources or driver.get_available_resource()
    rp = placement.provider_ensure(uuid=node.uuid, name=node.hypervisor_hostname, host=node.host)
    placement.inventories_set(rp=rp, inventories=inventories_for(resources))
    placement.traits_set(rp=rp, traits=traits_for(service, driver))


def update_usage(*, node: ComputeNode, driver: Any) -> None:
    """Refresh the node row from the hypervisor and its instances (periodic)."""

    resources = driver.get_available_resource()
    used = Instance.objects.filter(compute=node, deleted=False).exclude(vm_state="shelved_offloaded").aggregate(
        vcpus=Sum("vcpus"), ram=Sum("memory_mb"), disk=Sum("root_gb"))
    node.vcpus, node.memory_mb, node.local_gb = resources["vcpus"], resources["memory_mb"], resources["local_gb"]
    node.vcpus_used = used["vcpus"] or 0
    node.memory_mb_used = (used["ram"] or 0) + settings.RESERVED_HOST_MEMORY_MB
    node.local_gb_used = used["disk"] or 0
    node.free_ram_mb = node.memory_mb - node.memory_mb_used
    node.free_disk_gb = node.local_gb - node.local_gb_used
    node.running_vms = Instance.objects.filter(compute=node, deleted=False, vm_state="active").count()
    node.host_uptime = driver.get_host_uptime()
    node.save()
    service = Service.objects.get(id=node.service_id)
    report_to_placement(node=node, service=service, driver=driver, resources=resources)
