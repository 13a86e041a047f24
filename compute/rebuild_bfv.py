"""The compute's half of rebuilding a volume-backed server with a new image (seed 1).

Order of volume operations (as the seed and Nova): an empty attachment WITHOUT connector (the
volume stays ``reserved``), the guest destroyed, the old attachment deleted, the new attachment id
saved on the root BDM, ``os-reimage`` with ``reimage_reserved``, a wait for ``volume-reimaged``
(timeout ``REIMAGE_TIMEOUT_PER_GB`` × image GiB), then the attachment updated with the host
connector and completed (``in-use``) and the guest spawned from the volume.

Failure rules (DESIGN.md 7.1):
- the reimage fails (event ``failed``, volume ``error``, or no event in time): the server goes to
  ERROR with the fault "Failed to rebuild volume backed instance." (raised as BuildAbortException);
- a volume API error before the volume changed (attachment create/delete, the reimage request
  refused): the steps done are undone, the guest is spawned again on its unchanged volume, and
  ``VolumeRebuildRolledBack`` tells the operation wrapper to fail the action and put the server
  back in its previous vm_state.
"""
from __future__ import annotations

import logging
import math
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.utils import timezone

from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import CloudcoreError
from servers.choices import PowerState, TaskState, VmState
from servers.services.external_events import expect_event, wait_for_event
from servers.services.rebuild_bfv import root_bdm

from .block_devices import attach_bdm, block_device_info, prep_block_devices
from .clients import images as glance
from .clients import networks as neutron
from .clients import volumes as cinder
from .exceptions import BuildAbortException

if TYPE_CHECKING:
    from servers.models import Instance

log = logging.getLogger(__name__)
GiB = 1024 ** 3
FAILED = "Failed to rebuild volume backed instance."


class VolumeRebuildRolledBack(CloudcoreError):
    """A volume API error before the volume changed; the server returns to ``restore_vm_state``."""

    message = "Rebuild of volume-backed instance %(instance_uuid)s failed and was rolled back: %(reason)s"

    def __init__(self, *, restore_vm_state: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.restore_vm_state = restore_vm_state


def reimage_timeout(image_size: int) -> int:
    return int(settings.REIMAGE_TIMEOUT_PER_GB) * max(1, math.ceil(image_size / GiB))


def _respawn(ctx: RequestContext, instance: Instance, driver: Any, was_stopped: bool) -> None:
    """Bring the guest back on its unchanged volume (the rollback of a refused volume call)."""

    driver.spawn(instance=instance, image_meta=None, network_info=neutron.network_info(instance_uuid=instance.uuid),
                 block_device_info=block_device_info(instance), admin_password=None)
    if was_stopped:
        driver.power_off(instance=instance)


def rebuild_volume_backed(ctx: RequestContext, instance: Instance, *, image_id: str, admin_pass: str | None,
                          driver: Any) -> None:
    """Reimage the root volume with ``image_id`` and spawn the guest from it (see module doc)."""

    was_stopped = instance.vm_state == VmState.STOPPED
    prior_vm_state = instance.vm_state
    bdm = root_bdm(instance)
    if bdm is None or not bdm.volume_id:
        raise BuildAbortException(instance_uuid=instance.uuid, reason=FAILED)
    volume_id = str(bdm.volume_id)
    old_attachment = bdm.attachment_id

    def rolled_back(exc: BaseException) -> VolumeRebuildRolledBack:
        return VolumeRebuildRolledBack(instance_uuid=instance.uuid, reason=str(exc), restore_vm_state=prior_vm_state)

    # 1. empty attachment, no connector: the volume stays reserved through the swap
    try:
        new_attachment = cinder.attachment_create(volume_id=volume_id, instance_uuid=instance.uuid).id
    except CloudcoreError as exc:
        raise rolled_back(exc) from exc  # nothing changed, the guest still runs
    # 2. the guest goes; 3. the old attachment goes; 4. the new one is saved on the BDM
    driver.destroy(instance=instance, destroy_disks=True)
    try:
        if old_attachment:
            cinder.attachment_delete(attachment_id=old_attachment)
    except CloudcoreError as exc:
        cinder.attachment_delete(attachment_id=new_attachment)
        _respawn(ctx, instance, driver, was_stopped)
        raise rolled_back(exc) from exc
    bdm.attachment_id = new_attachment
    bdm.connection_info = None
    bdm.save(update_fields=["attachment_id", "connection_info", "updated_at"])
    # 5. reimage and wait for volume-reimaged
    try:
        image_size = glance.image_show(image_id=image_id).size
    except CloudcoreError as exc:
        raise BuildAbortException(instance_uuid=instance.uuid, reason=FAILED) from exc
    record = expect_event(instance_uuid=instance.uuid, name="volume-reimaged", tag=volume_id)
    try:
        cinder.volume_reimage(volume_id=volume_id, image_id=image_id, reimage_reserved=True)
    except CloudcoreError as exc:
        # refused before any byte changed: the volume is attached again and the guest comes back
        attach_bdm(ctx, instance, bdm)
        _respawn(ctx, instance, driver, was_stopped)
        raise rolled_back(exc) from exc
    try:
        status = wait_for_event(record, timeout=reimage_timeout(image_size))
    except CloudcoreError as exc:
        raise BuildAbortException(instance_uuid=instance.uuid, reason=FAILED) from exc
    if status != "completed" or cinder.volume_get(volume_id=volume_id).status == "error":
        # no attachment update on a volume in error (the seed); a rebuild from ERROR retries
        raise BuildAbortException(instance_uuid=instance.uuid, reason=FAILED)
    # 6. connector → connection_info, complete → in-use; 7. spawn
    instance.task_state = TaskState.REBUILD_BLOCK_DEVICE_MAPPING
    instance.save(update_fields=["task_state", "updated_at"])
    block_device_info = prep_block_devices(ctx, instance)
    instance.task_state = TaskState.REBUILD_SPAWNING
    instance.save(update_fields=["task_state", "updated_at"])
    driver.spawn(instance=instance, image_meta=None, network_info=neutron.network_info(instance_uuid=instance.uuid),
                 block_device_info=block_device_info, admin_password=admin_pass)
    if was_stopped:
        driver.power_off(instance=instance)
        instance.vm_state, instance.power_state = VmState.STOPPED, PowerState.SHUTDOWN
    else:
        instance.vm_state, instance.power_state = VmState.ACTIVE, PowerState.RUNNING
    instance.task_state = None
    instance.launched_at = timezone.now()
    instance.save(update_fields=["vm_state", "power_state", "task_state", "launched_at", "updated_at"])


def rebuild_volume_backed_keep_volume(ctx: RequestContext, instance: Instance, *, admin_pass: str | None,
                                      driver: Any) -> None:
    """A volume-backed rebuild without reimage (before 2.93, or ``reimage_boot_volume: false``):
    the guest is recreated on its volumes, whose data is kept; ``image_ref`` stays ''."""
    was_stopped = instance.vm_state == VmState.STOPPED
    driver.destroy(instance=instance, destroy_disks=True)
    instance.task_state = TaskState.REBUILD_SPAWNING
    instance.save(update_fields=["task_state", "updated_at"])
    _respawn(ctx, instance, driver, was_stopped)
    instance.vm_state = VmState.STOPPED if was_stopped else VmState.ACTIVE
    instance.power_state = PowerState.SHUTDOWN if was_stopped else PowerState.RUNNING
    instance.task_state = None
    instance.launched_at = timezone.now()
    instance.save(update_fields=["vm_state", "power_state", "task_state", "launched_at", "updated_at"])
