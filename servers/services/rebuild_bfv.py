"""API-side rules for rebuilding a volume-backed server (seed 1, DESIGN.md 7.1).

- ``reimage_boot_volume`` is accepted in the body only from 2.93 (below: 400, by the schema and here).
- Absent at >= 2.93 on a volume-backed server: the root volume is reimaged (Nova's shipped behaviour).
- ``false``: the pre-2.93 behaviour (400 for a different image, the data kept for the same image).
- ``true`` on an image-backed server: 400.
- A multiattach root volume: 400. A host without trait ``COMPUTE_REBUILD_BFV``: 409.
- Any attached volume not ``in-use``: 400 (as Nova, for every rebuild of a server with volumes).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cloudcore.core.exceptions import Conflict, Invalid
from scheduling.placement import services as placement
from volumes.choices import VolumeStatus
from volumes.services import VolumeNotFound, volume_get

from ..models import BlockDeviceMapping, Instance

if TYPE_CHECKING:
    from volumes.models import Volume

REIMAGE_MIN_VERSION = (2, 93)
TRAIT = "COMPUTE_REBUILD_BFV"


class ReimageFieldNotAllowed(Invalid):
    message = ("Invalid input for field/attribute rebuild. Value: reimage_boot_volume. Additional properties are "
               "not allowed ('reimage_boot_volume' was unexpected)")


class VolumeBackedDifferentImage(Invalid):
    message = "Unable to rebuild with a different image for a volume-backed server."


class ReimageNotVolumeBacked(Invalid):
    message = "reimage_boot_volume is only supported for volume-backed servers (server %(instance_uuid)s boots " \
              "from an image)."


class MultiattachRootVolume(Invalid):
    message = "Rebuilding a volume-backed server whose root volume %(volume_id)s is multiattach is not supported."


class RebuildVolumeBackedServerNotSupported(Conflict):
    message = "The compute host %(host)s does not support rebuilding volume-backed servers (trait " + TRAIT + \
              " missing)."


class VolumeNotInUse(Invalid):
    message = "volume '%(volume_id)s' status must be 'in-use'. Currently in '%(status)s' status"


def root_bdm(instance: Instance) -> BlockDeviceMapping | None:
    return (BlockDeviceMapping.objects.filter(instance_uuid=instance.uuid, boot_index=0, destination_type="volume")
            .first())


def host_supports_rebuild_bfv(instance: Instance) -> bool:
    node = getattr(instance, "compute", None)
    if node is None:
        return False
    try:
        return TRAIT in placement.traits_get(rp=node.uuid)
    except Exception:
        return False


def _volume(volume_id: str | None) -> Volume | None:
    """The volume of a BDM, or None (no volume id, or the volume is gone)."""
    if volume_id is None:
        return None
    try:
        return volume_get(None, volume_id)
    except VolumeNotFound:
        return None


def _check_volume_status(instance: Instance) -> None:
    for bdm in BlockDeviceMapping.objects.filter(instance_uuid=instance.uuid, destination_type="volume"):
        vol = _volume(bdm.volume_id)
        allowed = [VolumeStatus.IN_USE]
        if bdm.boot_index == 0 and instance.vm_state == "error":
            allowed.append(VolumeStatus.RESERVED)  # a failed reimage reset by an admin: the retry path
        if vol is not None and vol.status not in allowed:
            raise VolumeNotInUse(volume_id=vol.id, status=vol.status)


def validate_volume_backed_rebuild(*, instance: Instance, image: dict[str, Any], version: tuple[int, int],
                                   reimage_boot_volume: bool | None) -> bool:
    """Check the rebuild against seed 1's rules; returns True when the root volume must be reimaged.

    Raises ReimageFieldNotAllowed, VolumeBackedDifferentImage, ReimageNotVolumeBacked,
    MultiattachRootVolume, VolumeNotInUse (400) or RebuildVolumeBackedServerNotSupported (409).
    """
    if reimage_boot_volume is not None and tuple(version) < REIMAGE_MIN_VERSION:
        raise ReimageFieldNotAllowed()
    if not instance.is_volume_backed:
        if reimage_boot_volume:
            raise ReimageNotVolumeBacked(instance_uuid=instance.uuid)
        return False
    _check_volume_status(instance)
    reimage = (tuple(version) >= REIMAGE_MIN_VERSION) if reimage_boot_volume is None else bool(reimage_boot_volume)
    bdm = root_bdm(instance)
    vol = _volume(bdm.volume_id) if bdm is not None else None
    if not reimage:
        current = (vol.volume_image_metadata or {}).get("image_id") if vol is not None else None
        if image["id"] != current:
            raise VolumeBackedDifferentImage()
        return False
    if vol is not None and vol.multiattach:
        raise MultiattachRootVolume(volume_id=vol.id)
    if not host_supports_rebuild_bfv(instance):
        raise RebuildVolumeBackedServerNotSupported(host=instance.host)
    return True
