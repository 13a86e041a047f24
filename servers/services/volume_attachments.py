"""``os-volume_attachments``: attach, detach, update (2.85 delete_on_termination) and list the
volumes of a server. The API reserves the volume (an attachment without connector) and records the
BDM; the compute host completes the attachment and attaches the disk (ops ``attach_volume`` /
``detach_volume``)."""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from django.conf import settings

from cells.context import current_cell
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import CloudcoreError, Conflict, Invalid, NotFound
from cloudcore.core.policy import authorize
from compute import rpc as compute_rpc
from volumes import services as volumes
from volumes import snapshots

from ..choices import VmState
from ..models import BlockDeviceMapping, Instance
from . import actions
from .build_requests import VOLUME_CREATING_SOURCES
from .guards import check_not_locked
from .power import cast, target

if TYPE_CHECKING:
    from cells.models import CellMapping
    from volumes.models import Volume

log = logging.getLogger(__name__)


class VolumeAttachmentNotFound(NotFound):
    message = "volume_id not found: %(volume_id)s"


class VolumeAlreadyAttached(Invalid):
    message = "Invalid volume: volume %(volume_id)s already attached"


class MultiattachNotSupportedOldMicroversion(Invalid):
    message = "Multiattach volumes are only supported starting with compute API version 2.60."


class MultiattachToShelvedNotSupported(Invalid):
    message = "Attaching multiattach volumes is not supported for shelved-offloaded instances."


class MultiattachSwapVolumeNotSupported(Invalid):
    message = "Swapping multi-attach volumes with more than one read/write attachment is not supported."


def check_multiattach_allowed(volume: Volume, *, multiattach_supported: bool) -> None:
    """Nova's gate before any use of a multiattach volume by a server (attach, boot from it): the
    request's compute API microversion must be 2.60 or later (MultiattachNotSupportedOldMicroversion,
    400), whether or not the volume is attached elsewhere yet."""
    if volume.multiattach and not multiattach_supported:
        raise MultiattachNotSupportedOldMicroversion()


class EncryptedVolumeNotSupported(Invalid):
    message = ("Volume %(volume_id)s is encrypted: this cloud's compute has no key manager to unlock encrypted "
               "volumes, and does not attach them as plaintext.")


def check_encryption_supported(volume: Volume) -> None:
    """An encrypted volume (of a type with an encryption spec) is never given to a guest: Nova
    would fetch its key from a key manager and have libvirt open it as LUKS; this cloud's compute
    has neither and would hand the guest the raw bytes (400, before anything is reserved)."""
    if volume.encrypted:
        raise EncryptedVolumeNotSupported(volume_id=volume.id)


class AttachInvalidState(Conflict):
    message = "Cannot '%(method)s' instance %(instance_uuid)s while it is in vm_state %(state)s"


def bdm_volumes_create(instance: Instance) -> None:
    """Create the volumes a boot-from-volume server asks the cloud to create (``source_type``
    image, snapshot or blank, ``destination_type`` volume) in the server's project, and record their ids on
    its BDMs (its cell targeted). The conductor calls it before casting the build to the host.

    A compute agent reaches Cinder only as the service user (a cloud admin of the admin project),
    and Cinder's API offers an admin no way to create a volume in another project; so the conductor
    does this step for the server's owner, as nova's superconductor does the steps a host cannot.
    The host then waits for the volume and attaches it over the API (``compute.block_devices``).
    A volume that cannot be created is logged and left out: the host fails the build on the BDM
    without a volume (BuildAbortException, no reschedule), as it does on a volume in error."""
    owner = RequestContext(user_id=instance.user_id, project_id=instance.project_id, roles=["member"])
    bdms = BlockDeviceMapping.objects.filter(instance_uuid=instance.uuid, destination_type="volume",
                                             source_type__in=VOLUME_CREATING_SOURCES, volume_id__isnull=True)
    for bdm in bdms:
        if bdm.source_type == "snapshot" and bdm.snapshot_id:
            # a volume-backed server's snapshot may still be being copied by the volume worker: wait
            # as long as a host waits for a volume (block_device_allocate_retries × interval)
            snapshots.snapshot_await(bdm.snapshot_id, timeout=settings.BLOCK_DEVICE_ALLOCATE_RETRIES
                                     * settings.BLOCK_DEVICE_ALLOCATE_RETRIES_INTERVAL)
        try:
            vol = volumes.volume_create(owner, size=bdm.volume_size,
                                        image_id=bdm.image_id if bdm.source_type == "image" else None,
                                        snapshot_id=bdm.snapshot_id if bdm.source_type == "snapshot" else None,
                                        name=None if bdm.source_type == "blank" else "",
                                        volume_type=bdm.volume_type, run_now=True)
        except CloudcoreError as exc:
            log.warning("could not create the volume of block device %s of %s: %s", bdm.uuid, instance.uuid, exc)
            continue
        if vol.encrypted:  # its type is encrypted: no guest gets it (check_encryption_supported)
            log.warning("block device %s of %s would be an encrypted volume, which this cloud's compute cannot "
                        "attach; the volume is deleted", bdm.uuid, instance.uuid)
            volumes.volume_delete(owner, vol, run_now=True)
            continue
        bdm.volume_id = vol.id
        bdm.save(update_fields=["volume_id", "updated_at"])


def volume_bdms(instance: Instance) -> list[BlockDeviceMapping]:
    return list(BlockDeviceMapping.objects.filter(instance_uuid=instance.uuid, destination_type="volume")
                .order_by("id"))


def bdm_for_volume(instance: Instance, volume_id: str) -> BlockDeviceMapping:
    bdm = BlockDeviceMapping.objects.filter(instance_uuid=instance.uuid, volume_id=volume_id,
                                            destination_type="volume").first()
    if bdm is None:
        raise VolumeAttachmentNotFound(volume_id=volume_id)
    return bdm


#: Nova allows volume swap on a server in VERIFY_RESIZE (vm_state ``resized``); a cross-cell revert
#: reconciles the volumes by BDM uuid.
SWAP_VM_STATES = (VmState.ACTIVE, VmState.PAUSED, VmState.RESIZED)
#: Attach and detach also on a stopped or shelved server (2.20): a shelved guest still on its host
#: changes its definition; an offloaded one only its BDMs and attachments, which its unshelve
#: connects on the new host.
ATTACH_VM_STATES = (*SWAP_VM_STATES, VmState.STOPPED, VmState.SHELVED, VmState.SHELVED_OFFLOADED)


def _check_state(instance: Instance, method: str, states: tuple[str, ...] = ATTACH_VM_STATES) -> None:
    if instance.vm_state not in states or instance.task_state is not None:
        raise AttachInvalidState(method=method, instance_uuid=instance.uuid,
                                 state=instance.task_state or instance.vm_state)


def volume_attach(*, actor: RequestContext, instance: Instance, cell: CellMapping, volume_id: str,
                  device: str | None = None, tag: str | None = None,
                  delete_on_termination: bool = False, multiattach_supported: bool = False) -> BlockDeviceMapping:
    """Reserve ``volume_id`` for the server and cast the attach to its host. 400 when the volume is
    not available (or already attached here), 409 for a server state that cannot attach. A shelved
    offloaded server has no host: its attachment is completed here, without a connector (the
    volume is in-use), and its unshelve connects it.

    A multiattach volume (``in-use`` by other servers or not) needs ``multiattach_supported`` (the
    request is at 2.60 or later) and a server that is not shelved offloaded (400 each); each
    server gets its own attachment and BDM. A volume that is not multiattach and in use elsewhere
    is Cinder's 400."""
    authorize(actor, "os_compute_api:os-volumes-attachments:create", target(instance))
    check_not_locked(actor, instance)
    _check_state(instance, "attach_volume")
    if BlockDeviceMapping.objects.filter(instance_uuid=instance.uuid, volume_id=volume_id).exists():
        raise VolumeAlreadyAttached(volume_id=volume_id)
    try:
        vol = volumes.volume_get(actor, volume_id)
    except NotFound as exc:
        raise NotFound(f"Volume {volume_id} could not be found.") from exc
    check_multiattach_allowed(vol, multiattach_supported=multiattach_supported)
    check_encryption_supported(vol)
    if vol.multiattach and instance.vm_state == VmState.SHELVED_OFFLOADED:
        raise MultiattachToShelvedNotSupported()
    att = volumes.attachment_create(actor, volume_id=vol.id, instance_uuid=instance.uuid)
    used = {b.device_name for b in volume_bdms(instance)} | {"/dev/vda"}
    if not device:
        device = next(f"/dev/vd{c}" for c in "bcdefghijklmnopqrstuvwxyz" if f"/dev/vd{c}" not in used)
    bdm = BlockDeviceMapping.objects.create(instance_uuid=instance.uuid, source_type="volume",
                                            destination_type="volume", volume_id=vol.id, attachment_id=att.id,
                                            device_name=device, tag=tag, delete_on_termination=delete_on_termination,
                                            volume_size=vol.size)

    actions.action_start(actor, instance_uuid=instance.uuid, action="attach_volume")
    if instance.vm_state == VmState.SHELVED_OFFLOADED:
        volumes.attachment_complete(actor, attachment_id=att.id)
        actions.action_finish(actor, instance_uuid=instance.uuid)
        return bdm
    cast(compute_rpc.attach_volume, actor=actor, instance=instance, cell=cell, bdm_uuid=bdm.uuid)
    return bdm


def volume_detach(*, actor: RequestContext, instance: Instance, cell: CellMapping, volume_id: str) -> None:
    """Detach a non-root volume (the root volume cannot be detached: 400)."""
    authorize(actor, "os_compute_api:os-volumes-attachments:delete", target(instance))
    check_not_locked(actor, instance)
    _check_state(instance, "detach_volume")
    bdm = bdm_for_volume(instance, volume_id)
    if bdm.boot_index == 0:
        raise Invalid("Cannot detach a root device volume")

    actions.action_start(actor, instance_uuid=instance.uuid, action="detach_volume")
    if instance.vm_state == VmState.SHELVED_OFFLOADED:  # no host holds it: release it here
        if bdm.attachment_id:
            volumes.attachment_delete(actor, attachment_id=bdm.attachment_id)
        bdm.delete()
        actions.action_finish(actor, instance_uuid=instance.uuid)
        return
    cast(compute_rpc.detach_volume, actor=actor, instance=instance, cell=cell, bdm_uuid=bdm.uuid)


def _volume_swap(*, actor: RequestContext, instance: Instance, bdm: BlockDeviceMapping,
                 new_volume_id: str) -> BlockDeviceMapping:
    authorize(actor, "os_compute_api:os-volumes-attachments:swap", target(instance))
    check_not_locked(actor, instance)
    _check_state(instance, "swap_volume", SWAP_VM_STATES)
    if BlockDeviceMapping.objects.filter(instance_uuid=instance.uuid, volume_id=new_volume_id).exists():
        raise VolumeAlreadyAttached(volume_id=new_volume_id)
    try:
        new = volumes.volume_get(actor, new_volume_id)
    except NotFound as exc:
        raise NotFound(f"Volume {new_volume_id} could not be found.") from exc
    if new.status != "available":
        raise Invalid(f"Invalid volume: volume {new_volume_id} status must be available")
    old = volumes.volume_get(actor, str(bdm.volume_id))
    # another server still writes to the old volume: it cannot be swapped away under that server
    if old.multiattach and volumes.attachment_count(old) > 1:
        raise MultiattachSwapVolumeNotSupported()
    att = volumes.attachment_create(actor, volume_id=new.id, instance_uuid=instance.uuid)

    actions.action_start(actor, instance_uuid=instance.uuid, action="swap_volume")
    cell = current_cell()
    assert cell is not None
    cast(compute_rpc.swap_volume, actor=actor, instance=instance, cell=cell, bdm_uuid=bdm.uuid, new_volume_id=new.id,
         new_attachment_id=att.id)
    return bdm


def volume_attachment_update(*, actor: RequestContext, instance: Instance, volume_id: str,
                             changes: dict[str, Any]) -> BlockDeviceMapping:
    """2.85: update ``delete_on_termination``; a different ``volumeId`` swaps the volume (admin,
    Nova's swap_volume): the new volume is reserved here, the host copies the data over, attaches
    the new volume in the old one's place and releases the old one (back to ``available``)."""
    bdm = bdm_for_volume(instance, volume_id)
    new_volume_id = changes.get("volumeId", volume_id)
    if new_volume_id != volume_id:
        return _volume_swap(actor=actor, instance=instance, bdm=bdm, new_volume_id=new_volume_id)
    authorize(actor, "os_compute_api:os-volumes-attachments:update", target(instance))
    if "delete_on_termination" in changes:
        bdm.delete_on_termination = bool(changes["delete_on_termination"])
        bdm.save(update_fields=["delete_on_termination", "updated_at"])
    return bdm
