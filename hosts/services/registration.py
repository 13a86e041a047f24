"""A compute host registering itself in its own cell at start-up (seed 2): its ``nova-compute``
service row and its compute node row, linked by id. The compute agent checks its identity first
(``compute.startup``) and writes nothing when it refuses to start."""
from __future__ import annotations

from typing import Any

from django.utils import timezone

from cloudcore.core import notifications

from ..models import ComputeNode, Service

#: the hypervisor's answers (``get_available_resource``) a node row keeps
NODE_RESOURCE_FIELDS = ("vcpus", "memory_mb", "local_gb", "hypervisor_type", "hypervisor_version", "cpu_info",
                        "host_ip")


def compute_service_register(*, host: str, binary: str, version: int, service: Service | None = None) -> Service:
    """Save ``service`` (the host's existing row; a new one when None) at ``version``, seen up now,
    in the targeted cell."""
    created = service is None
    service = service or Service(host=host, binary=binary, topic="compute")
    service.version = version
    service.last_seen_up = timezone.now()
    service.save()
    if created:
        service_notify("create", service)
    return service


def service_notify(action: str, service: Service, availability_zone: str | None = None) -> None:
    """Nova's versioned ``service.<action>`` (create, update, delete; ServiceStatusPayload 1.1),
    published as the service itself (``nova-compute:<host>``). ``availability_zone``: the host's
    zone when the caller may read it (a compute host registering itself reads no API database, and
    sends none, as Nova's ``service.create`` has none)."""
    last_seen = service.last_seen_up.replace(tzinfo=None).isoformat() + "Z" if service.last_seen_up else None
    notifications.notify(f"service.{action}", {
        "host": service.host, "binary": service.binary, "topic": service.topic,
        "report_count": service.report_count, "disabled": service.disabled,
        "disabled_reason": service.disabled_reason, "availability_zone": availability_zone,
        "last_seen_up": last_seen, "forced_down": service.forced_down, "version": service.version,
        "uuid": str(service.uuid)}, publisher_id=f"{service.binary}:{service.host}",
        payload_name="ServiceStatusPayload", version="1.1")


def compute_node_register(*, uuid: str, host: str, service_id: int, hypervisor_hostname: str,
                          resources: dict[str, Any], node: ComputeNode | None = None) -> ComputeNode:
    """Save ``node`` (the row with ``uuid``, possibly soft-deleted; a new one when None) live again
    on ``host`` and its service, with the hypervisor's ``resources``, in the targeted cell."""
    node = node or ComputeNode(uuid=uuid)
    node.deleted, node.deleted_at = False, None
    node.host, node.service_id, node.hypervisor_hostname = host, service_id, hypervisor_hostname
    for key in NODE_RESOURCE_FIELDS:
        if key in resources:
            setattr(node, key, resources[key])
    node.save()
    return node
