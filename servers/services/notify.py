"""Versioned notifications about instances (``instance.*``), in Nova's payload shape."""
from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from cloudcore.core import notifications
from cloudcore.core.context import RequestContext
from scheduling.trace import failure_summary

from ..models import Instance
from .external import network_info

log = logging.getLogger(__name__)


def _iso(value: Any) -> str | None:
    return value.isoformat() if value else None


def instance_payload(instance: Instance) -> dict[str, Any]:
    flavor = instance.flavor or {}
    return {
        "uuid": instance.uuid,
        "user_id": instance.user_id,
        "tenant_id": instance.project_id,
        "display_name": instance.display_name,
        "display_description": instance.display_description,
        "host": instance.host,
        "node": instance.node,
        "host_name": instance.hostname,
        "availability_zone": instance.availability_zone,
        "flavor": {
            "nova_object.name": "FlavorPayload",
            "nova_object.namespace": "nova",
            "nova_object.version": "1.4",
            "nova_object.data": {
                "flavorid": flavor.get("flavorid"),
                "name": flavor.get("name"),
                "memory_mb": flavor.get("memory_mb"),
                "vcpus": flavor.get("vcpus"),
                "root_gb": flavor.get("root_gb"),
                "ephemeral_gb": flavor.get("ephemeral_gb"),
                "swap": flavor.get("swap"),
                "extra_specs": flavor.get("extra_specs", {}),
            },
        },
        "image_uuid": instance.image_ref,
        "key_name": instance.key_name,
        "state": instance.vm_state,
        "power_state": {0: "pending", 1: "running", 3: "paused", 4: "shutdown", 6: "crashed",
                        7: "suspended"}.get(instance.power_state, "pending"),
        "task_state": instance.task_state,
        "progress": instance.progress,
        "launched_at": _iso(instance.launched_at),
        "terminated_at": _iso(instance.terminated_at),
        "created_at": _iso(instance.created_at),
        "updated_at": _iso(instance.updated_at),
        "metadata": instance.metadata,
        "locked": instance.locked,
        "locked_reason": instance.locked_reason,
        "architecture": None,
        "os_type": None,
        "kernel_id": instance.kernel_id,
        "ramdisk_id": instance.ramdisk_id,
        "reservation_id": instance.reservation_id,
        "auto_disk_config": "MANUAL",
        "ip_addresses": [],
        "block_devices": [],
    }


#: Where a compute agent's notification gets the server's network_info (Nova's VIF list).
NetworkInfoSource = Callable[[], list[dict[str, Any]]]

#: Events whose payload lists the instance's fixed IPs (others keep the list empty: no lookup).
_WITH_IPS = {"instance.create.end", "instance.delete.start"}


def _ip_addresses(instance_uuid: str, source: NetworkInfoSource | None) -> list[dict[str, Any]]:
    """IpPayload entries for the instance's ports (Nova's ``ip_addresses``), from ``source`` (a
    compute agent's, which may not read the network service's database) or the network service."""
    try:
        vifs = source() if source is not None else network_info(instance_uuid)
    except Exception:  # a notification must never fail the operation
        log.exception("could not read the ports of %s", instance_uuid)
        return []
    out = []
    for vif in vifs:
        network = vif.get("network") or {}
        ips = list(vif.get("ips") or [])
        for subnet in network.get("subnets") or []:  # Nova's network_info shape
            ips.extend({"address": ip.get("address"), "version": subnet.get("version") or ip.get("version")}
                       for ip in subnet.get("ips") or [])
        for ip in ips:
            out.append({
                "nova_object.name": "IpPayload", "nova_object.namespace": "nova", "nova_object.version": "1.0",
                "nova_object.data": {
                    "address": ip.get("address"), "version": ip.get("version"), "mac": vif.get("address"),
                    "port_uuid": vif.get("id"), "network_id": network.get("id"), "label": network.get("label"),
                    "device_name": vif.get("devname"), "meta": {},
                },
            })
    return out


def notify_instance(
    ctx: RequestContext, event_type: str, instance: Instance, *, priority: str = "INFO",
    old_vm_state: str | None = None, old_task_state: str | None = None,
    fault: BaseException | None = None, host: str | None = None, network_info: NetworkInfoSource | None = None,
) -> None:
    """Emit ``event_type`` for ``instance`` (instance.update carries ``state_update``); the events
    that list IP addresses take them from ``network_info`` when given (called only for them)."""
    payload = instance_payload(instance)
    if event_type in _WITH_IPS:
        payload["ip_addresses"] = _ip_addresses(instance.uuid, network_info)
    payload["request_id"] = ctx.request_id
    payload["action_initiator_user"] = ctx.user_id
    payload["action_initiator_project"] = ctx.project_id
    name = "InstanceActionPayload"
    if event_type == "instance.update":
        name = "InstanceUpdatePayload"
        payload["state_update"] = {
            "old_state": old_vm_state or instance.vm_state,
            "state": instance.vm_state,
            "old_task_state": old_task_state,
            "new_task_state": instance.task_state,
        }
        payload["old_display_name"] = None
        payload["tags"] = []
    if fault is not None:
        payload["fault"] = {"exception": type(fault).__name__, "exception_message": str(fault)}
        priority = "ERROR"
    try:
        notifications.notify(
            event_type, payload, priority=priority,
            publisher_id=f"nova-compute:{host or instance.host or 'api'}", payload_name=name,
        )
    except Exception:  # a notification must never fail the operation
        log.exception("could not emit %s", event_type)


def notify_compute_task_error(task: str, *, instance_uuid: str, vm_state: str, exc: BaseException,
                              request_spec: dict[str, Any]) -> None:
    """The conductor's ``compute_task.<task>.error`` (``build_instances``, ``migrate_server``,
    ``rebuild_server``): what failed, the state the server was left in and the request."""
    payload: dict[str, Any] = {"instance_uuid": instance_uuid, "state": vm_state, "request_spec": request_spec,
                               "reason": {"exception": type(exc).__name__, "exception_message": str(exc)}}
    summary = failure_summary(exc)
    if summary is not None:  # cloudcore: where the shortfall is, for the PENDING seed's external service
        payload["scheduling_trace"] = summary
    notifications.notify(
        f"compute_task.{task}.error", payload,
        priority="ERROR", publisher_id="nova-conductor", payload_name="ComputeTaskPayload",
    )
