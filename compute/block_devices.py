"""Block devices of a build, as nova-compute handles them over Cinder's API (``compute.clients.volumes``,
the service user): volumes are attached through attachments (create, update with the host
connector, ``os-complete`` → ``in-use``) and handed to the virt driver; on delete they are
detached and the ``delete_on_termination`` ones deleted. The volumes a boot-from-volume server
asks for are created in its project by the conductor before the build reaches this host
(``conductor.block_devices``); the host waits for them to be ``available``."""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from django.conf import settings

from cloudcore.core.context import RequestContext
from servers.selectors import BlockDeviceMappingNotFound, bdm_get, bdms_of
from servers.services.build_requests import VOLUME_CREATING_SOURCES
from servers.services.delete import bdms_mark_deleted

from .clients import volumes as cinder
from .drivers import driver_for
from .exceptions import BuildAbortException
from .registry import host_event, server_action
from .virt.driver import VirtDriverError

if TYPE_CHECKING:
    from servers.models import BlockDeviceMapping, Instance

log = logging.getLogger(__name__)
#: the statuses of a volume that exists and may be attached (by this server)
USABLE = ("available", "reserved", "attaching", "in-use")


def host_connector(instance: Instance) -> dict[str, Any]:
    return {"host": instance.host, "initiator": f"iqn.cloudcore:{instance.host}", "platform": "x86_64",
            "os_type": "linux", "multipath": False}


def _device_name(index: int) -> str:
    return "/dev/vd" + "abcdefghijklmnopqrstuvwxyz"[min(index, 25)]


class MultiattachNotSupportedByVirtDriver(VirtDriverError):
    code = 409
    message = ("Volume %(volume_id)s has 'multiattach' set, which is not supported for this instance "
               "(its host's virt driver cannot share a volume between guests).")


def attach_bdm(ctx: RequestContext, instance: Instance, bdm: BlockDeviceMapping) -> dict[str, Any]:
    """Update ``bdm``'s attachment with this host's connector, complete it; return the driver's view.

    A multiattach volume (Cinder's ``connection_info`` says so) on a host whose driver lacks
    ``supports_multiattach`` raises MultiattachNotSupportedByVirtDriver before the attachment is
    completed or the guest touched (the callers release the attachment)."""

    if not bdm.attachment_id:
        bdm.attachment_id = cinder.attachment_create(volume_id=str(bdm.volume_id), instance_uuid=instance.uuid).id
    att = cinder.attachment_update(attachment_id=bdm.attachment_id, connector=host_connector(instance),
                                   mountpoint=bdm.device_name)
    if att.connection_info.get("multiattach") and \
            not getattr(driver_for(str(instance.host)), "capabilities", {}).get("supports_multiattach"):
        raise MultiattachNotSupportedByVirtDriver(volume_id=bdm.volume_id)
    cinder.attachment_complete(attachment_id=att.id)
    bdm.connection_info = att.connection_info
    bdm.save(update_fields=["attachment_id", "connection_info", "updated_at"])
    return _driver_view(bdm)


def _await_volume_created(instance: Instance, bdm: BlockDeviceMapping) -> None:
    """A volume the cloud created for ``bdm`` (image, snapshot or blank source, not attached yet) must be
    ``available`` before it is attached: wait while Cinder still creates it (nova's
    ``block_device_allocate_retries``); BuildAbortException when it is missing or failed."""
    if bdm.source_type not in VOLUME_CREATING_SOURCES or bdm.attachment_id:
        return
    if not bdm.volume_id:
        raise BuildAbortException(instance_uuid=instance.uuid,
                                  reason=f"The volume of block device {bdm.uuid} could not be created.")
    retries = int(settings.BLOCK_DEVICE_ALLOCATE_RETRIES)
    interval = float(settings.BLOCK_DEVICE_ALLOCATE_RETRIES_INTERVAL)
    vol = cinder.volume_wait_settled(volume_id=str(bdm.volume_id), timeout=retries * interval, interval=interval)
    if vol.status not in USABLE:
        raise BuildAbortException(instance_uuid=instance.uuid,
                                  reason=f"Volume {vol.id} did not finish being created (status {vol.status}).")


def _boot_order(bdm: BlockDeviceMapping) -> tuple[bool, int]:
    return (bdm.boot_index is None or bdm.boot_index < 0, bdm.boot_index or 0)


def _driver_view(bdm: BlockDeviceMapping) -> dict[str, Any]:
    return {"connection_info": bdm.connection_info, "mount_device": bdm.device_name, "boot_index": bdm.boot_index,
            "delete_on_termination": bdm.delete_on_termination}


def local_disks(instance: Instance) -> dict[str, Any]:
    """The flavor's local disks as Nova's block device info names them: the ephemeral disk
    (``ephemerals``, ``/dev/vdb``, formatted with ``DEFAULT_EPHEMERAL_FORMAT`` or left blank when
    that is unset) and then the swap disk (``swap``, the next device, blank), right after the root
    disk (``/dev/vda``, an image's disk or the root volume)."""
    ephemeral_gb = int(instance.ephemeral_gb or 0)
    swap_mb = int((instance.flavor or {}).get("swap") or 0)
    names = iter(_device_name(i) for i in range(1, 26))
    ephemerals = [{"device_name": next(names), "size": ephemeral_gb, "disk_bus": "virtio", "device_type": "disk",
                   "guest_format": settings.DEFAULT_EPHEMERAL_FORMAT or None}] if ephemeral_gb else []
    swap = {"device_name": next(names), "swap_size": swap_mb, "disk_bus": "virtio"} if swap_mb else None
    return {"ephemerals": ephemerals, "swap": swap}


def local_device_names(instance: Instance) -> set[str]:
    """The devices the flavor's ephemeral and swap disks take (volumes are named after them)."""
    local = local_disks(instance)
    names = {str(e["device_name"]) for e in local["ephemerals"]}
    return names | ({str(local["swap"]["device_name"])} if local["swap"] else set())


def connect_unconnected_volumes(ctx: RequestContext, instance: Instance) -> None:
    """Connect to this host the volumes attached while the server had none (shelved offloaded):
    their attachments have no connection yet."""
    for bdm in bdms_of(instance.uuid, volumes_only=True):
        if bdm.volume_id and not bdm.connection_info:
            attach_bdm(ctx, instance, bdm)


def block_device_info(instance: Instance) -> dict[str, Any]:
    """The virt driver's view of the server's volumes already connected to this host (their
    BDMs' ``connection_info``), root first, and of its flavor's local disks (``local_disks``):
    what every spawn after the build (reboot, rebuild, unshelve, moves) gives the driver so that
    the guest keeps its volumes (Nova's ``_get_instance_block_device_info``)."""
    bdms = sorted((b for b in bdms_of(instance.uuid, volumes_only=True) if b.connection_info), key=_boot_order)
    mapping = [_driver_view(b) for b in bdms]
    return {"block_device_mapping": mapping,
            "root_device_name": str(mapping[0]["mount_device"]) if mapping else "/dev/vda", **local_disks(instance)}


def prep_block_devices(ctx: RequestContext, instance: Instance, *, has_volumes: bool | None = None) -> dict[str, Any]:
    """Attach every volume BDM (waiting for the volumes the cloud creates). Raises
    BuildAbortException on a volume error. ``has_volumes=False``: the caller knows there is none
    (a build's conductor: none can be attached while the server builds), nothing is read."""

    bdms = [] if has_volumes is False else sorted(bdms_of(instance.uuid, volumes_only=True), key=_boot_order)
    mapping = []
    local = local_device_names(instance)
    names = iter(name for name in map(_device_name, range(26)) if name not in local)
    for bdm in bdms:
        name = next(names)
        if not bdm.device_name:
            bdm.device_name = name
            bdm.save(update_fields=["device_name", "updated_at"])
        try:
            _await_volume_created(instance, bdm)
            mapping.append(attach_bdm(ctx, instance, bdm))
        except BuildAbortException:
            raise
        except Exception as exc:
            raise BuildAbortException(instance_uuid=instance.uuid, reason=str(exc)) from exc
    root = "/dev/vda" if not mapping else str(mapping[0]["mount_device"])
    return {"block_device_mapping": mapping, "root_device_name": root, **local_disks(instance)}


def detach_all_volumes(ctx: RequestContext, instance: Instance) -> None:
    """Delete every attachment of the server; delete the volumes marked delete_on_termination."""

    for bdm in bdms_of(instance.uuid):
        if bdm.is_volume and bdm.volume_id:
            try:
                if bdm.attachment_id:
                    cinder.attachment_delete(attachment_id=bdm.attachment_id)
                if bdm.delete_on_termination:
                    cinder.volume_delete(volume_id=str(bdm.volume_id))
            except Exception:
                log.exception("could not release volume %s of %s", bdm.volume_id, instance.uuid)
    bdms_mark_deleted(instance.uuid)


# --- attach / detach of a running server's volumes (os-volume_attachments) --------------------

def _bdm(bdm_uuid: str) -> BlockDeviceMapping:
    bdm = bdm_get(bdm_uuid)
    if bdm is None:
        raise BlockDeviceMappingNotFound(bdm_id=bdm_uuid)
    return bdm


@server_action("attach_volume", action="attach_volume", notification="volume_attach", event="compute_attach_volume")
def attach_volume(ctx: RequestContext, instance: Instance, bdm_uuid: str) -> None:
    """Update the reserved attachment with this host's connector, complete it, attach the disk."""
    bdm = _bdm(bdm_uuid)
    try:
        info = attach_bdm(ctx, instance, bdm)
        attach = getattr(driver_for(str(instance.host)), "attach_volume", None)
        if attach is not None:  # a driver without volume support keeps the attachment as bookkeeping
            attach(instance=instance, connection_info=info["connection_info"], mountpoint=str(bdm.device_name))
    except Exception:
        if bdm.attachment_id:
            cinder.attachment_delete(attachment_id=bdm.attachment_id)
        bdm.delete()
        raise


@server_action("detach_volume", action="detach_volume", notification="volume_detach", event="compute_detach_volume")
def detach_volume(ctx: RequestContext, instance: Instance, bdm_uuid: str) -> None:
    bdm = _bdm(bdm_uuid)
    detach = getattr(driver_for(str(instance.host)), "detach_volume", None)
    if bdm.connection_info and detach is not None:
        detach(instance=instance, connection_info=bdm.connection_info, mountpoint=str(bdm.device_name))
    if bdm.attachment_id:
        cinder.attachment_delete(attachment_id=bdm.attachment_id)
    bdm.delete()


@host_event("extend_volume", event="compute_extend_volume", action="extend_volume")
def extend_volume(ctx: RequestContext, instance: Instance, volume_id: str) -> None:
    """Cinder extended an attached volume (its ``volume-extended`` event): read the new size and
    let the guest see it. A volume the server does not have is an error (Nova's)."""
    bdm = next((b for b in bdms_of(instance.uuid, volumes_only=True) if str(b.volume_id) == volume_id), None)
    if bdm is None:
        raise BlockDeviceMappingNotFound(bdm_id=f"volume {volume_id} of {instance.uuid}")
    size = cinder.volume_get(volume_id=volume_id).size
    extend = getattr(driver_for(str(instance.host)), "extend_volume", None)
    if bdm.connection_info and extend is not None:
        extend(instance=instance, connection_info=bdm.connection_info, new_size=size * 1024 ** 3)


@server_action("swap_volume", action="swap_volume", notification="volume_swap", event="compute_swap_volume")
def swap_volume(ctx: RequestContext, instance: Instance, bdm_uuid: str, new_volume_id: str,
                new_attachment_id: str) -> None:
    """Copy the old volume's data into the new one, attach it in the old one's place and release
    the old volume; on failure the new attachment is dropped and the old volume stays."""

    bdm = _bdm(bdm_uuid)
    old_volume_id, old_attachment_id, old_info = bdm.volume_id, bdm.attachment_id, bdm.connection_info
    driver = driver_for(str(instance.host))
    try:
        bdm.volume_id, bdm.attachment_id = new_volume_id, new_attachment_id
        info = attach_bdm(ctx, instance, bdm)
        # the host copies the data between the two devices Cinder connected it to
        with open(_device_path(old_info), "rb") as src, open(_device_path(info["connection_info"]), "r+b") as dst:
            while block := src.read(1024 * 1024):
                dst.write(block)
    except Exception:
        cinder.attachment_delete(attachment_id=new_attachment_id)
        # the row as it was (attach_bdm may have saved the new attachment on it)
        bdm.volume_id, bdm.attachment_id, bdm.connection_info = old_volume_id, old_attachment_id, old_info
        bdm.save(update_fields=["volume_id", "attachment_id", "connection_info"])
        raise
    bdm.save(update_fields=["volume_id", "attachment_id", "connection_info", "updated_at"])
    detach = getattr(driver, "detach_volume", None)
    if old_info and detach is not None:
        detach(instance=instance, connection_info=old_info, mountpoint=str(bdm.device_name))
    attach = getattr(driver, "attach_volume", None)
    if attach is not None:
        attach(instance=instance, connection_info=info["connection_info"], mountpoint=str(bdm.device_name))
    if old_attachment_id:
        cinder.attachment_delete(attachment_id=old_attachment_id)


def _device_path(connection_info: dict[str, Any] | None) -> str:
    """The host path of a volume from the ``connection_info`` Cinder gave for this host."""
    path = ((connection_info or {}).get("data") or {}).get("device_path")
    if not path:
        raise ValueError("the volume's connection_info names no device path")
    return str(path)
