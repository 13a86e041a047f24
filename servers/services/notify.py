"""Versioned notifications about instances (``instance.*``), in Nova's payload shape.

Only Nova's event types are emitted. A failure has ``instance.<action>.error`` only for the
actions Nova defines one for (``NOVA_INSTANCE_ERRORS``); a failed compute host operation emits
``compute.exception`` (what Nova's exception wrapper around every compute manager method emits),
and a failed conductor task ``compute_task.<task>.error``. Faults are ``ExceptionPayload``s.
"""
from __future__ import annotations

import logging
import traceback
from collections.abc import Callable
from typing import Any

from cloudcore.core import notifications
from cloudcore.core.context import RequestContext
from scheduling.trace import failure_summary

from ..models import Instance, Migration
from .disk_config import disk_config_to_api
from .external import network_info

log = logging.getLogger(__name__)


def _iso(value: Any) -> str | None:
    return value.isoformat() if value else None


#: The instance actions Nova has an ``instance.<action>.error`` notification for (its samples:
#: create, resize, reboot, rebuild, interface_attach, volume_attach, volume_swap); any other
#: failure has no ``.error`` event (e.g. no ``resize_confirm.error``, ``resize_revert.error``).
NOVA_INSTANCE_ERRORS = frozenset({"create", "resize", "reboot", "rebuild", "interface_attach", "volume_attach",
                                  "volume_swap"})


def flavor_payload(flavor: dict[str, Any] | None) -> dict[str, Any]:
    """Nova's ``FlavorPayload`` (1.4) of a flavor snapshot (an instance's or a migration's)."""
    flavor = flavor or {}
    return {
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
            "rxtx_factor": flavor.get("rxtx_factor", 1.0),
            "vcpu_weight": flavor.get("vcpu_weight", 0),
            "disabled": flavor.get("disabled", False),
            "is_public": flavor.get("is_public", True),
            "projects": flavor.get("projects"),
            "description": flavor.get("description"),
            "extra_specs": flavor.get("extra_specs", {}),
        },
    }


def exception_payload(exc: BaseException) -> dict[str, Any]:
    """Nova's ``ExceptionPayload`` (1.1): the exception, its message, the function and module it
    was raised in (the innermost frame of its traceback) and the traceback."""
    frames = traceback.extract_tb(exc.__traceback__) if exc.__traceback__ else []
    module_name = function_name = ""
    if exc.__traceback__ is not None:
        tb = exc.__traceback__
        while tb.tb_next is not None:
            tb = tb.tb_next
        function_name = tb.tb_frame.f_code.co_name
        module_name = str(tb.tb_frame.f_globals.get("__name__", ""))
    return {
        "nova_object.name": "ExceptionPayload",
        "nova_object.namespace": "nova",
        "nova_object.version": "1.1",
        "nova_object.data": {
            "exception": type(exc).__name__,
            "exception_message": str(exc),
            "function_name": function_name,
            "module_name": module_name,
            "traceback": "".join(traceback.format_list(frames)),
        },
    }


def instance_payload(instance: Instance) -> dict[str, Any]:
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
        "flavor": flavor_payload(instance.flavor),
        "image_uuid": instance.image_ref,
        "key_name": instance.key_name,
        "state": instance.vm_state,
        "power_state": {0: "pending", 1: "running", 3: "paused", 4: "shutdown", 6: "crashed",
                        7: "suspended"}.get(instance.power_state, "pending"),
        "task_state": instance.task_state,
        "progress": instance.progress,
        "launched_at": _iso(instance.launched_at),
        "terminated_at": _iso(instance.terminated_at),
        "deleted_at": _iso(instance.deleted_at),
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
        "auto_disk_config": disk_config_to_api(instance.auto_disk_config),
        "ip_addresses": [],
        "block_devices": [],
    }


#: Where a compute agent's notification gets the server's network_info (Nova's VIF list).
NetworkInfoSource = Callable[[], list[dict[str, Any]]]

#: Events whose payload lists the instance's fixed IPs (others keep the list empty: no lookup).
_WITH_IPS = {"instance.create.end", "instance.delete.start", "instance.shutdown.start"}


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


def api_publisher() -> str:
    """The publisher id of the notifications the API itself sends (Nova's ``nova-api:<host>``)."""
    return notifications.publisher("nova-api")


def conductor_publisher() -> str:
    """The publisher id of the notifications the conductor sends (Nova's ``nova-conductor:<host>``)."""
    return notifications.publisher("nova-conductor")


def notify_instance(
    ctx: RequestContext, event_type: str, instance: Instance, *, priority: str = "INFO",
    old_vm_state: str | None = None, old_task_state: str | None = None,
    fault: BaseException | None = None, host: str | None = None, network_info: NetworkInfoSource | None = None,
    new_flavor: dict[str, Any] | None = None, publisher: str | None = None,
) -> None:
    """Emit ``event_type`` for ``instance`` (instance.update carries ``state_update``, the others
    ``fault``; ``instance.resize_prep.*`` the ``new_flavor``); the events that list IP addresses
    take them from ``network_info`` when given (called only for them). ``publisher``: the
    publisher id when not the compute host's (``api_publisher()`` for the API's own events). An
    ``instance.<action>.error``
    Nova does not define is a programming error: logged, not emitted."""
    if event_type.endswith(".error") and event_type.split(".")[1] not in NOVA_INSTANCE_ERRORS:
        log.error("%s is not one of Nova's notifications: not emitted", event_type)
        return
    payload = instance_payload(instance)
    if event_type in _WITH_IPS:
        payload["ip_addresses"] = _ip_addresses(instance.uuid, network_info)
    payload["request_id"] = ctx.request_id
    payload["action_initiator_user"] = ctx.user_id
    payload["action_initiator_project"] = ctx.project_id
    name = "InstanceActionPayload"
    if event_type.startswith("instance.resize_prep."):
        name = "InstanceActionResizePrepPayload"
        payload["new_flavor"] = flavor_payload(new_flavor)
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
    else:
        payload["fault"] = exception_payload(fault) if fault is not None else None
    if fault is not None:
        priority = "ERROR"
    try:
        notifications.notify(
            event_type, payload, priority=priority,
            publisher_id=publisher or f"nova-compute:{host or instance.host or 'api'}", payload_name=name,
        )
    except Exception:  # a notification must never fail the operation
        log.exception("could not emit %s", event_type)


def notify_compute_task_error(task: str, *, instance_uuid: str, vm_state: str, exc: BaseException,
                              request_spec: dict[str, Any]) -> None:
    """The conductor's ``compute_task.<task>.error`` (``build_instances``, ``migrate_server``,
    ``rebuild_server``): what failed, the state the server was left in and the request."""
    payload: dict[str, Any] = {"instance_uuid": instance_uuid, "state": vm_state, "request_spec": request_spec,
                               "reason": exception_payload(exc)}
    summary = failure_summary(exc)
    if summary is not None:  # cloudcore: where the shortfall is, for the PENDING seed's external service
        payload["scheduling_trace"] = summary
    notifications.notify(
        f"compute_task.{task}.error", payload,
        priority="ERROR", publisher_id="nova-conductor", payload_name="ComputeTaskPayload",
    )


def notify_compute_exception(exc: BaseException, *, host: str | None) -> None:
    """``compute.exception``: what Nova's exception wrapper around a compute manager method emits
    when the method fails (an ``ExceptionPayload``, from ``nova-compute:<host>``)."""
    try:
        notifications.notify(
            "compute.exception", exception_payload(exc)["nova_object.data"], priority="ERROR",
            publisher_id=f"nova-compute:{host or 'compute'}", payload_name="ExceptionPayload", version="1.1",
        )
    except Exception:  # a notification must never fail the operation
        log.exception("could not emit compute.exception")


def notify_compute_failure(ctx: RequestContext, action: str, instance: Instance, exc: BaseException) -> None:
    """A compute host's operation on ``instance`` failed: ``instance.<action>.error`` where Nova
    defines one for the action, then ``compute.exception`` (Nova's wrapper emits it last)."""
    if action in NOVA_INSTANCE_ERRORS:
        notify_instance(ctx, f"instance.{action}.error", instance, fault=exc)
    notify_compute_exception(exc, host=instance.host)


def notify_resize_prep(ctx: RequestContext, phase: str, instance: Instance, migration: Migration, *,
                       host: str) -> None:
    """``instance.resize_prep.start`` / ``.end`` of a resize or cold migration (same-cell or
    cross-cell) around the preparation at the destination ``host``, with the migration's new
    flavor (the same flavor for a cold migration), as Nova's ``prep_resize`` emits them."""
    notify_instance(ctx, f"instance.resize_prep.{phase}", instance, new_flavor=migration.new_flavor, host=host)
