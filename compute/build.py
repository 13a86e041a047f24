"""Building a server on its compute host: networks, block devices, spawn; reschedule on failure.

``build_and_run_instance`` runs on the ``compute.<host>`` queue, cast by the conductor. The
scheduler has already claimed the instance's allocations on this host; what the build needs of
the request spec (the requested networks) comes in the cast. On a spawn failure the guest and
ports are cleaned up here, then the build goes back to the conductor
(``conductor.rpc.reschedule_build``), which claims the next same-cell alternate and casts the
build there, or puts the server in ERROR (MaxRetriesExceeded). A failure not worth another host
(``BuildAbortException``), or one with no retry at all (no alternates on the first attempt),
puts the server in ERROR with a fault here and drops its allocations.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from django.utils import timezone

from cells.context import target_cell
from cells.registry import drop_broken_connections
from cloudcore.core import notifications
from cloudcore.core.context import RequestContext
from conductor import rpc as conductor_rpc
from servers.choices import PowerState, TaskState, VmState
from servers.selectors import instance_get, vif_preserved_port_ids
from servers.services import actions
from servers.services.build_failure import build_error_out
from servers.services.guards import instance_fields_save, instance_task_state_set
from servers.services.notify import notify_instance
from servers.services.virtual_interfaces import vif_create, vifs_delete

from .block_devices import prep_block_devices
from .clients import images as glance
from .clients import networks as neutron
from .clients import placement
from .drivers import driver_for
from .exceptions import BuildAbortException
from .virt.configdrive import config_drive_required

if TYPE_CHECKING:
    from servers.models import Instance

log = logging.getLogger(__name__)

EVENT_BUILD = "compute_build_and_run_instance"


def allocate_networks(ctx: RequestContext, instance: Instance, requested: Any,
                      security_groups: list[str] | None = None) -> None:
    """Create (or bind) the instance's ports through Neutron's API and record them as VIFs in the
    cell; ``security_groups`` (ids) go on the ports made for the server."""

    if requested == "none":
        return
    if requested == "auto" or requested is None:
        nets = neutron.networks_available(project_id=instance.project_id)
        if not nets:
            return
        requested = [{"network_id": nets[0]["id"]}]
    for req in requested:
        if req.get("port_id"):
            port = neutron.port_bind(port_id=req["port_id"], instance_uuid=instance.uuid, host=instance.host,
                                     zone=instance.availability_zone)
        else:
            port = neutron.port_create(
                network_id=req["network_id"], project_id=instance.project_id, instance_uuid=instance.uuid,
                host=instance.host, zone=instance.availability_zone, fixed_ip=req.get("fixed_ip"),
                security_groups=security_groups,
            )
        vif_create(
            instance_uuid=instance.uuid, port_id=port["id"], network_id=port["network_id"],
            address=port["mac_address"], tag=req.get("tag"), preserve_on_delete=bool(req.get("port_id")),
        )


def deallocate_networks(ctx: RequestContext, instance: Instance) -> None:
    """Free the instance's ports: the ones the user brought (the cell's VIFs say which) are only
    unbound, the ones made for the server deleted."""

    preserve = vif_preserved_port_ids(instance.uuid)
    neutron.ports_release(instance_uuid=instance.uuid, preserve=preserve)
    vifs_delete(instance.uuid)


def image_meta(image_id: str | None, known: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """The image (and kernel/ramdisk) files the driver needs, or None for volume-backed: the
    metadata from Glance's API, or ``known`` when the conductor passed the image of the server's
    request (as Nova's conductor does: the API read it a moment before), the bytes from the image
    store's files."""
    if not image_id:
        return None
    if known is not None and known.get("id") == image_id:
        meta: dict[str, Any] = {key: known.get(key) for key in ("id", "name", "disk_format", "size")}
        meta["properties"] = dict(known.get("properties") or {})
    else:
        image = glance.image_show(image_id=image_id)
        meta = {"id": image.id, "name": image.name, "disk_format": image.disk_format, "size": image.size,
                "properties": dict(image.properties)}
    meta["path"] = str(glance.data_path(image_id=str(meta["id"])))
    properties = meta["properties"]
    for key in ("kernel_id", "ramdisk_id"):
        if properties.get(key):
            meta[key.replace("_id", "_path")] = str(glance.data_path(image_id=str(properties[key])))
    return meta


def build_and_run_instance(
    ctx: RequestContext, *, instance_uuid: str, cell_uuid: str, admin_pass: str | None,
    alternates: list[dict[str, Any]], attempt: int = 1, requested_networks: Any = "auto",
    security_groups: list[str] | None = None, create_action_id: int | None = None,
    has_volumes: bool | None = None, image: dict[str, Any] | None = None,
) -> None:
    """Build on this host; ``attempt`` > 1 when this is a reschedule (an alternate host);
    ``security_groups``: the ids of the groups the server asked for (None: the project's default);
    ``create_action_id``: the ``create`` action the conductor recorded for this build (its event
    goes there, nothing is looked up); None: the request's latest action (a PENDING server's
    rebuild, finished with the build); ``has_volumes``: False when the conductor knows the server
    has no volume block device (none is looked for), None: look."""
    with target_cell(cell_uuid):
        instance = instance_get(instance_uuid)
        if instance is None or instance.task_state == TaskState.DELETING:
            log.info("instance %s was deleted before its build started", instance_uuid)
            return
        host = str(instance.host)
        driver: Any = None
        event = None
        failure: Exception | None = None
        # the build's notifications go to the conductor in two casts, in their order: those up to
        # the spawn before it (``_build``), the rest when it ends or fails (before the failure is
        # handled: a reschedule's cast goes after them)
        with notifications.handed_off_together():
            notify_instance(ctx, "instance.create.start", instance, host=host)
            try:
                with actions.wrap_event(ctx, instance_uuid=instance_uuid, event=EVENT_BUILD, host=host,
                                        action_name=None, action_id=create_action_id) as event:
                    driver = driver_for(host)
                    vifs = _build(ctx, instance, driver, admin_pass, requested_networks, security_groups,
                                  has_volumes, image)
            except Exception as exc:
                failure = exc
            else:
                notify_instance(ctx, "instance.create.end", instance, host=host, network_info=lambda: vifs)
        if failure is not None:
            _build_failed(ctx, instance, driver, failure, cell_uuid=cell_uuid, alternates=alternates,
                          admin_pass=admin_pass, attempt=attempt)
            return
        if create_action_id is None:
            actions.action_finish_named(ctx, instance_uuid=instance_uuid, action="rebuild",
                                        latest=event.action if event is not None else None)


def _build_failed(ctx: RequestContext, instance: Instance, driver: Any, exc: Exception, *, cell_uuid: str,
                  alternates: list[dict[str, Any]], admin_pass: str | None, attempt: int) -> None:
    """The guest and ports of a failed build cleaned up, then the server rescheduled or in ERROR
    (nothing more when it is being deleted meanwhile)."""
    instance_uuid, host = instance.uuid, str(instance.host)
    log.warning("build of %s on %s failed: %s", instance_uuid, host, exc)
    drop_broken_connections()
    _cleanup_failed_build(ctx, instance, driver)
    current = instance_get(instance_uuid, read_deleted=True)
    if current is None or current.deleted or current.task_state == TaskState.DELETING:
        log.info("build of %s stopped: the server is being deleted", instance_uuid)
        return
    if isinstance(exc, BuildAbortException):
        _fail_build(ctx, instance, exc)  # not worth another host (Nova does not reschedule)
    elif alternates or attempt > 1:
        _reschedule(ctx, instance, cell_uuid, alternates, admin_pass, exc, attempt)
    else:
        _fail_build(ctx, instance, exc)


def _build(ctx: RequestContext, instance: Instance, driver: Any, admin_pass: str | None,
           requested_networks: Any, security_groups: list[str] | None,
           has_volumes: bool | None = None, image: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The build's steps; returns the network_info the guest was spawned with."""
    _set_task(ctx, instance, TaskState.NETWORKING)
    allocate_networks(ctx, instance, requested_networks, security_groups)
    _set_task(ctx, instance, TaskState.BLOCK_DEVICE_MAPPING)
    block_device_info = prep_block_devices(ctx, instance, has_volumes=has_volumes)
    _set_task(ctx, instance, TaskState.SPAWNING)
    if config_drive_required(instance) and not instance.config_drive:
        # forced by the operator: the API then shows the drive the guest gets, as Nova does
        instance.config_drive = "True"
        instance.save(update_fields=["config_drive", "updated_at"])
    # a server that asked for no network has no port (one cannot be attached while it builds)
    vifs = [] if requested_networks == "none" else neutron.network_info(instance_uuid=instance.uuid)
    # the build's notifications so far (create.start, the task states up to spawning) go to the
    # conductor now: a spawn may take minutes, and they say the build started
    notifications.hand_off_held()
    driver.spawn(
        instance=instance,
        image_meta=image_meta(instance.image_ref, known=image),
        network_info=vifs,
        block_device_info=block_device_info,
        admin_password=admin_pass,
    )
    old_state = instance.vm_state
    instance.vm_state = VmState.ACTIVE
    instance.task_state = None
    instance.power_state = PowerState.RUNNING
    instance.launched_at = timezone.now()
    instance_fields_save(instance, "vm_state", "task_state", "power_state", "launched_at")
    notify_instance(ctx, "instance.update", instance, old_vm_state=old_state,
                    old_task_state=TaskState.SPAWNING)
    return vifs


def _set_task(ctx: RequestContext, instance: Instance, task_state: str) -> None:
    old = instance.task_state
    if not instance_task_state_set(instance, task_state):
        raise BuildAbortException(instance_uuid=instance.uuid, reason="the server is being deleted")
    instance.task_state = task_state
    notify_instance(ctx, "instance.update", instance, old_vm_state=instance.vm_state, old_task_state=old)


def _cleanup_failed_build(ctx: RequestContext, instance: Instance, driver: Any) -> None:
    try:
        if driver is not None:
            driver.destroy(instance=instance, destroy_disks=True)
    except Exception:
        log.exception("could not destroy the guest of failed build %s", instance.uuid)
    try:
        deallocate_networks(ctx, instance)
    except Exception:
        log.exception("could not free the ports of failed build %s", instance.uuid)


def _fail_build(ctx: RequestContext, instance: Instance, exc: BaseException) -> None:
    build_error_out(ctx, instance=instance, exc=exc)
    placement.allocations_delete(consumer_uuid=instance.uuid)


def _reschedule(
    ctx: RequestContext, instance: Instance, cell_uuid: str, alternates: list[dict[str, Any]],
    admin_pass: str | None, exc: BaseException, attempt: int,
) -> None:
    """Hand the build back to the conductor, which picks the next host (a compute host never
    claims resources on, nor casts to, another host)."""
    instance_task_state_set(instance, TaskState.SCHEDULING)
    conductor_rpc.reschedule_build(ctx=ctx, instance_uuid=instance.uuid, cell_uuid=cell_uuid, admin_pass=admin_pass,
                                   alternates=alternates, attempt=attempt, reason=str(exc) or type(exc).__name__)
