"""Block storage services (Cinder's slice): volumes, attachments, reimage, extend.

States follow Cinder: a volume is ``creating`` → ``available``; an attachment without connector
makes it ``reserved``; updating the attachment with a connector makes it ``attaching`` and returns
``connection_info``; ``attachment_complete`` makes it ``in-use``; deleting its last attachment makes
it ``available`` again. Byte work (create from image, reimage, extend, delete) runs as tasks on the
``volume`` queue against the storage backend (``volumes.backends``). A reimage finishes by posting
``volume-reimaged`` (completed or failed) to every server the volume is attached to.
"""
from __future__ import annotations

import logging
import math
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from django.db import models
from django.utils import timezone

from cells.transactions import api_atomic, api_on_commit
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Invalid, NotFound
from cloudcore.core.policy import authorize
from images import services as images
from images.formats import convert
from images.services import ImageNotFound, image_data_path, image_get_internal
from servers.services.external_events import server_external_events_create

from . import messages, rpc
from .backends import VolumeBackendError, get_backend
from .messages import user_message_record
from .models import (
    AttachStatus,
    Snapshot,
    SnapshotStatus,
    Volume,
    VolumeAttachment,
    VolumeGroup,
    VolumeStatus,
    VolumeType,
)
from .owned import sorted_page
from .quotas import quota_check
from .servicegroup import volume_backend_for
from .snapshots import snapshot_for_new_volume
from .types import default_volume_type, volume_type_find

log = logging.getLogger(__name__)
GiB = 1024 ** 3
#: Image formats an upload-to-image converts the (raw) volume into, with qemu-img's name for each.
CONVERTIBLE = {"qcow2": "qcow2", "vmdk": "vmdk", "vdi": "vdi", "vhdx": "vhdx", "vhd": "vpc"}
#: From this microversion an ``in-use`` volume may be extended (Cinder's ``VOLUME_EXTEND_INUSE``).
EXTEND_IN_USE = (3, 42)


class VolumeNotFound(NotFound):
    message = "Volume %(volume_id)s could not be found."


class VolumeAttachmentNotFound(NotFound):
    message = "VolumeAttachment %(attachment_id)s could not be found."


class InvalidVolume(Invalid):
    message = "Invalid volume: %(reason)s"


def _authorize(ctx: RequestContext | None, rule: str, project_id: str | None = None) -> None:
    """Policy, checked once at the service entry of every write. ``ctx`` None is the cloud's own
    code (the conductor moving a server's attachments), which no policy governs."""
    if ctx is not None:
        authorize(ctx, rule, {"project_id": project_id or ctx.project_id, "user_id": ctx.user_id})


def volume_get(ctx: RequestContext | None, volume_id: str) -> Volume:
    vol = Volume.objects.filter(pk=volume_id).first()
    if vol is None or (ctx is not None and not ctx.is_admin and not ctx.is_service
                       and vol.project_id != ctx.project_id):
        raise VolumeNotFound(volume_id=volume_id)
    return vol


#: the keys a volume list may be sorted by (Cinder's)
SORT_KEYS = ("id", "name", "status", "size", "created_at", "updated_at", "availability_zone", "bootable")


def volume_list(ctx: RequestContext, *, all_tenants: bool = False, filters: dict[str, Any] | None = None,
                limit: int | None = None, marker: str | None = None,
                sort: list[tuple[str, str]] | None = None) -> list[Volume]:
    """The caller's volumes (every project's for an admin with ``all_tenants``), newest first unless
    ``sort`` says otherwise (``[(key, "asc"|"desc")]``); ``filters``: ``name``, ``status``,
    ``bootable``, ``availability_zone`` (exact match), ``project_id`` (an admin's ``all_tenants``
    list narrowed to one project) and ``metadata`` (a dict the volume's metadata contains);
    ``limit`` and ``marker`` (the id after which to start) page the result.

    Raises Invalid for an unknown sort key or direction, NotFound for an unknown marker."""
    qs = Volume.objects.all()
    if not (ctx.is_admin and all_tenants):
        qs = qs.filter(project_id=ctx.project_id)
    metadata: dict[str, Any] = {}
    for key, value in (filters or {}).items():
        if key in ("name", "status", "availability_zone", "project_id"):
            qs = qs.filter(**{key: value})
        elif key == "bootable":
            qs = qs.filter(bootable=str(value).lower() in ("true", "1"))
        elif key == "metadata" and isinstance(value, dict):
            metadata = value
    return sorted_page(qs, sort=sort, sort_keys=SORT_KEYS, limit=limit, marker=marker,
                       keep=(lambda v: all(str((v.metadata or {}).get(k)) == str(val) for k, val in metadata.items()))
                       if metadata else None)


def volume_metadata_set(ctx: RequestContext, vol: Volume, *, metadata: dict[str, Any], replace: bool,
                        one_item: bool = False) -> Volume:
    """Merge ``metadata`` into the volume's (or, with ``replace``, make it the volume's metadata).
    Values are strings of at most 255 characters, keys 1 to 255 (Cinder's rule), else Invalid."""
    _authorize(ctx, "volume:update_volume_metadata" if replace or one_item else "volume:create_volume_metadata",
               vol.project_id)
    for key, value in metadata.items():
        if not isinstance(key, str) or not 0 < len(key) <= 255 or not isinstance(value, str) or len(value) > 255:
            raise Invalid("Invalid input received: metadata keys must be 1 to 255 characters and values "
                          "strings of at most 255 characters.")
    vol.metadata = dict(metadata) if replace else {**(vol.metadata or {}), **metadata}
    vol.save(update_fields=["metadata", "updated_at"])
    return vol


def volume_metadata_delete(ctx: RequestContext, vol: Volume, *, key: str) -> None:
    _authorize(ctx, "volume:delete_volume_metadata", vol.project_id)
    if key not in (vol.metadata or {}):
        raise NotFound(f"Metadata item was not found with key {key}.")
    vol.metadata = {k: v for k, v in vol.metadata.items() if k != key}
    vol.save(update_fields=["metadata", "updated_at"])


def volume_set_readonly(ctx: RequestContext, vol: Volume, *, readonly: bool) -> Volume:
    """Cinder keeps the flag in the volume's admin metadata and shows it in ``metadata`` as
    ``readonly`` = ``"True"``/``"False"``; cloudcore keeps it there directly."""
    _authorize(ctx, "volume:update_readonly_flag", vol.project_id)
    vol.metadata = {**(vol.metadata or {}), "readonly": str(bool(readonly))}
    vol.save(update_fields=["metadata", "updated_at"])
    return vol


def volume_reserve(ctx: RequestContext, vol: Volume, *, reserve: bool) -> Volume:
    """Cinder's legacy ``os-reserve`` (an ``available`` volume becomes ``attaching``) and
    ``os-unreserve`` (an ``attaching`` volume with no attachment goes back to ``available``)."""
    verb = "reserve" if reserve else "unreserve"
    _authorize(ctx, f"volume_extension:volume_actions:{verb}", vol.project_id)
    source, target = (VolumeStatus.AVAILABLE, VolumeStatus.ATTACHING) if reserve else \
        (VolumeStatus.ATTACHING, VolumeStatus.AVAILABLE)
    if not reserve and _live_attachments(vol):
        return vol  # attachments decide its status; nothing to undo
    if not Volume.objects.filter(pk=vol.pk, status=source).update(status=target, updated_at=timezone.now()):
        raise InvalidVolume(reason=f"Volume status must be {source} to {verb}.")
    vol.status = target
    return vol


def volume_summary(ctx: RequestContext, *, all_tenants: bool) -> dict[str, Any]:
    """``GET /volumes/summary`` (3.12): how many volumes the caller sees, their total size, and
    (3.36) every metadata key with the values it has among them."""
    _authorize(ctx, "volume:get_all")
    qs = Volume.objects.filter(deleted=False)
    if not (ctx.is_admin and all_tenants):
        qs = qs.filter(project_id=ctx.project_id)
    total = qs.aggregate(count=models.Count("id"), size=models.Sum("size"))
    metadata: dict[str, list[str]] = {}
    for meta in qs.exclude(metadata={}).values_list("metadata", flat=True):
        for key, value in (meta or {}).items():
            if value not in metadata.setdefault(key, []):
                metadata[key].append(value)
    # values in a stable order whatever order the database returned the volumes in (PostgreSQL: none)
    return {"total_count": total["count"], "total_size": total["size"] or 0,
            "metadata": {key: sorted(values) for key, values in metadata.items()}}


def volume_upload_to_image(ctx: RequestContext, vol: Volume, *, image_name: str, disk_format: str = "raw",
                           container_format: str = "bare", force: bool = False) -> Any:
    """A new image (owned by the caller's project) holding the volume's data, written now from the
    storage pool. The volume must be ``available``, or ``in-use`` with ``force``; else Invalid."""
    _authorize(ctx, "volume:upload_image", vol.project_id)
    allowed = (VolumeStatus.AVAILABLE, VolumeStatus.IN_USE) if force else (VolumeStatus.AVAILABLE,)
    if vol.status not in allowed:
        raise Invalid(f"Invalid volume: Volume {vol.id} status must be available{' or in-use' if force else ''}, "
                      f"but current status is: {vol.status}.")
    image = images.image_create(ctx, name=image_name, disk_format=disk_format, container_format=container_format)
    source = get_backend().path(vol.id)
    if disk_format not in CONVERTIBLE:
        return images.image_activate_from_file(image, source)
    with tempfile.TemporaryDirectory() as tmp:  # the volume is raw: write the format asked for, as Cinder does
        converted = Path(tmp) / "image"
        convert(source, converted, source_format="raw", target_format=CONVERTIBLE[disk_format])
        return images.image_activate_from_file(image, converted)


def volume_set_bootable(ctx: RequestContext, vol: Volume, *, bootable: bool) -> Volume:
    _authorize(ctx, "volume:update", vol.project_id)
    vol.bootable = bootable
    vol.save(update_fields=["bootable", "updated_at"])
    return vol


def _image_source(image_id: str, size: int | None) -> tuple[dict[str, Any], int]:
    """The image a new volume starts from: its metadata as the volume shows it, and the volume's
    size (the image's ``min_disk`` or its bytes rounded up to GiB when none is asked; never smaller)."""
    try:
        image = image_get_internal(image_id)
    except ImageNotFound as exc:
        raise Invalid(f"Invalid image identifier or unable to access requested image. ({image_id})") from exc
    if getattr(image, "status", "active") != "active":
        raise Invalid(f"Image {image_id} is not active.")
    image_size = int(getattr(image, "size", 0) or 0)
    min_gb = max(int(getattr(image, "min_disk", 0) or 0), math.ceil(image_size / GiB) if image_size else 1)
    if size is None:
        size = min_gb
    if size < min_gb:
        raise Invalid(f"Volume size {size}GB cannot be smaller than the image minDisk size {min_gb}GB.")
    meta = {"image_id": image_id, "image_name": getattr(image, "name", "") or "",
            "container_format": getattr(image, "container_format", "bare") or "bare",
            "disk_format": getattr(image, "disk_format", "raw") or "raw",
            "size": str(image_size), "min_disk": str(getattr(image, "min_disk", 0) or 0),
            "min_ram": str(getattr(image, "min_ram", 0) or 0), "checksum": getattr(image, "checksum", "")}
    return meta, size


def _source_volume(ctx: RequestContext | None, source_volid: str, size: int | None) -> tuple[Volume, int]:
    """The volume a new one is cloned from (404 when the actor cannot see it), and the new size
    (the source's when none is asked; never smaller, Cinder's 400)."""
    source = volume_get(ctx, source_volid)
    if source.status not in (VolumeStatus.AVAILABLE, VolumeStatus.IN_USE):
        raise InvalidVolume(reason=f"Source volume {source.id} status must be available or in-use, but current "
                                   f"status is: {source.status}.")
    wanted = source.size if size is None else int(size)
    if wanted < source.size:
        raise Invalid(f"Invalid input received: Volume size '{wanted}'GB cannot be smaller than original volume "
                      f"size {source.size}GB. They must be >= original volume size.")
    return source, wanted


def _check_joins_group(ctx: RequestContext, group_id: str, vt: VolumeType) -> None:
    """A new volume may be created into generic group ``group_id`` (``volumes.groups``): the
    group is the actor's (NotFound), ``available`` and allows the volume's type (Invalid)."""
    group = VolumeGroup.objects.filter(pk=group_id).first()
    if group is None or not (ctx.is_admin or group.project_id == ctx.project_id):
        raise NotFound(f"Group {group_id} could not be found.")
    if group.status != "available":
        raise Invalid(f"Invalid Group: Group {group.id} status must be available, but current status is: "
                      f"{group.status}.")
    if vt.id not in (group.volume_type_ids or []):
        raise Invalid(f"Invalid input received: Invalid volume_type provided: {vt.id} for group {group.id}.")


def volume_create(ctx: RequestContext, *, size: int | None = None, name: str | None = None,
                  description: str | None = None, image_id: str | None = None, multiattach: bool = False,
                  availability_zone: str | None = None, metadata: dict[str, Any] | None = None,
                  volume_type: str | None = None, run_now: bool = False, snapshot_id: str | None = None,
                  source_volid: str | None = None, group_id: str | None = None) -> Volume:
    """Create a volume record (``creating``) and enqueue the backend work; ``run_now`` does the
    backend work in this process (the compute's boot-from-volume path).

    The volume is ``multiattach`` when its type says so (extra spec ``multiattach="<is> True"``,
    Cinder's way since Queens) or, as older Cinder accepted, when ``multiattach`` is asked for.

    At most one source: an image (``image_id``), an ``available`` snapshot (``snapshot_id``) or
    another ``available``/``in-use`` volume (``source_volid``); the size defaults to the source's
    and may not be smaller (Invalid). A snapshot or volume the actor cannot see is NotFound. Without
    ``volume_type`` a clone keeps its source's type, anything else gets the default type; a private
    type the actor's project has no access to is NotFound."""
    _authorize(ctx, "volume:create")
    if sum(bool(x) for x in (image_id, snapshot_id, source_volid)) > 1:
        raise Invalid("Invalid input received: only one of snapshot_id, source_volid and imageRef may be given.")
    image_meta: dict[str, Any] = {}
    origin: Volume | None = None
    if image_id:
        image_meta, size = _image_source(image_id, size)
    elif snapshot_id:
        snap, size = snapshot_for_new_volume(ctx, snapshot_id, size)
        origin = snap.volume
    elif source_volid:
        origin, size = _source_volume(ctx, source_volid, size)
    if size is None or int(size) < 1:
        raise Invalid("Invalid input received: 'size' must be an integer greater than 0.")
    quota_check(ctx.project_id or "", volumes=1, gigabytes=int(size), volume_size=int(size))
    if volume_type:
        vt = volume_type_find(ctx, volume_type)
    elif origin is not None and origin.volume_type is not None:
        vt = origin.volume_type
    else:
        vt = default_volume_type()
    if group_id:
        _check_joins_group(ctx, group_id, vt)
    vol = Volume.objects.create(
        name=name, description=description, size=int(size), status=VolumeStatus.CREATING,
        availability_zone=availability_zone or "nova",
        multiattach=bool(multiattach) or vt.is_multiattach, encrypted=vt.is_encrypted, project_id=ctx.project_id or "",
        user_id=ctx.user_id or "", volume_type=vt, image_id=image_id, snapshot_id=snapshot_id,
        source_volid=source_volid, bootable=bool(origin and origin.bootable),
        volume_image_metadata=image_meta or (dict(origin.volume_image_metadata or {}) if origin else {}),
        metadata=metadata or {}, backend_name=get_backend().name, group_id=group_id or None,
    )
    if run_now:
        volume_create_backend(vol.id, ctx.request_id)
        vol.refresh_from_db()
    else:
        api_on_commit(lambda: rpc.volume_create(volume_id=vol.id, request_id=ctx.request_id))
    return vol


def _copy_image(vol: Volume, image_id: str) -> None:
    """Write an image's bytes into the volume; a qcow2 image is converted to raw first (a volume
    holds a raw disk), as Cinder does."""
    source = image_data_path(image_id)
    if image_get_internal(image_id).disk_format != "qcow2":
        get_backend().copy_image(vol.id, source, vol.size)
        return
    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "raw"
        try:
            convert(source, raw, source_format="qcow2", target_format="raw")
        except subprocess.CalledProcessError as exc:
            raise VolumeBackendError(f"image {image_id} could not be converted: {exc.stderr!r}") from exc
        get_backend().copy_image(vol.id, raw, vol.size)


def volume_create_backend(volume_id: str, request_id: str | None = None) -> None:
    """The volume worker's half of a create: schedule it (the back end's service must be enabled
    and its capabilities satisfy the type's extra specs), allocate the file, copy the source's
    bytes. A failure leaves the volume in ``error`` with a user message for its project (Cinder's
    action and detail: no back end, the back end's create, or the image copy)."""
    vol = Volume.objects.get(pk=volume_id)
    backend = get_backend()

    def failed(action: tuple[str, str], detail: tuple[str, str]) -> None:
        vol.status = VolumeStatus.ERROR
        user_message_record(project_id=vol.project_id, action=action, detail=detail, resource_uuid=vol.id,
                            request_id=request_id)

    step = messages.CREATE_VOLUME_FROM_BACKEND, messages.DRIVER_FAILED_CREATE
    if volume_backend_for(vol.volume_type.extra_specs if vol.volume_type else {}) is None:
        log.warning("creating volume %s failed: no valid back end", volume_id)
        failed(messages.SCHEDULE_ALLOCATE_VOLUME, messages.NO_BACKEND_AVAILABLE)
        vol.save(update_fields=["status", "updated_at"])
        return
    try:
        vol.provider_location = backend.create(vol.id, vol.size)
        if vol.snapshot_id:
            backend.copy_snapshot(vol.snapshot_id, vol.id, vol.size)
        elif vol.source_volid:
            backend.copy_volume(vol.source_volid, vol.id, vol.size)
        if vol.image_id:
            step = messages.COPY_IMAGE_TO_VOLUME, messages.UNKNOWN_ERROR
            _copy_image(vol, vol.image_id)
            vol.bootable = True
        vol.status = VolumeStatus.AVAILABLE
    except (VolumeBackendError, OSError) as exc:
        log.warning("creating volume %s failed: %s", volume_id, exc)
        failed(*step)
    vol.save(update_fields=["provider_location", "bootable", "status", "updated_at"])


def volume_update(ctx: RequestContext, vol: Volume, *, changes: dict[str, Any]) -> Volume:
    _authorize(ctx, "volume:update", vol.project_id)
    for key in ("name", "description", "metadata"):
        # null metadata (what the CLI sends when no property is given) changes nothing
        if key in changes and not (key == "metadata" and changes[key] is None):
            setattr(vol, key, changes[key])
    vol.save()
    return vol


#: the statuses a volume may be deleted from (without ``force``)
DELETABLE = (VolumeStatus.AVAILABLE, VolumeStatus.ERROR, "error_restoring", VolumeStatus.ERROR_EXTENDING,
             "error_managing")
#: the statuses a snapshot may be in for its volume's cascade delete
CASCADE_DELETABLE_SNAPSHOTS = (SnapshotStatus.AVAILABLE, SnapshotStatus.ERROR)


def volume_delete(ctx: RequestContext, vol: Volume, *, cascade: bool = False, run_now: bool = False,
                  force: bool = False) -> None:
    """Delete a volume: it goes ``deleting`` and the volume worker removes its bytes and its row.

    Refused (InvalidVolume, 400, Cinder's one message for every reason) unless the volume is in a
    deletable status, not attached, and has no snapshots; with ``cascade`` its snapshots (all
    ``available`` or ``error``, and all of the actor's project unless an admin) go with it. With
    ``force`` (an admin's ``os-force_delete``, authorized by the caller) any status will do."""
    if not force:
        _authorize(ctx, "volume:delete", vol.project_id)
    with api_atomic():
        locked = Volume.objects.select_for_update().filter(pk=vol.pk).first()
        snaps = Snapshot.objects.filter(volume=vol)
        refused = (locked is None or (locked.status not in DELETABLE and not force) or locked.migration_status
                   or locked.attach_status == AttachStatus.ATTACHED or vol.attachments.filter(deleted=False).exists())
        if not cascade:
            refused = refused or snaps.exists()
        else:
            refused = refused or snaps.exclude(status__in=CASCADE_DELETABLE_SNAPSHOTS).exists() or (
                not ctx.is_admin and snaps.exclude(project_id=vol.project_id).exists())
        if refused:
            raise InvalidVolume(reason="Volume status must be available or error or error_restoring or "
                                       "error_extending or error_managing and must not be migrating, attached, "
                                       "belong to a group, have snapshots, awaiting a transfer, or be disassociated "
                                       "from snapshots after volume transfer.")
        now = timezone.now()
        snaps.update(status=SnapshotStatus.DELETING, updated_at=now)
        Volume.objects.filter(pk=vol.pk).update(status=VolumeStatus.DELETING, updated_at=now)
    if run_now:
        volume_delete_backend(vol.id)
    else:
        api_on_commit(lambda: rpc.volume_delete(volume_id=vol.id))


def volume_delete_backend(volume_id: str) -> None:
    """The volume worker's half: remove the snapshots a cascade delete marked, then the volume."""
    vol = Volume.objects.get(pk=volume_id)
    backend = get_backend()
    try:
        for snap in Snapshot.objects.filter(volume=vol):
            backend.snapshot_delete(snap.id)
            snap.delete()
        backend.delete(vol.id)
    except (VolumeBackendError, OSError):
        Volume.objects.filter(pk=volume_id).update(status=VolumeStatus.ERROR_DELETING)
        Snapshot.objects.filter(volume_id=volume_id).update(status=SnapshotStatus.ERROR_DELETING)
        return
    vol.delete()


def volume_extend(ctx: RequestContext, vol: Volume, *, new_size: int, version: tuple[int, int] = (3, 0)) -> None:
    """Cinder's ``os-extend``: an ``available`` volume grows offline; from 3.42 an ``in-use`` one
    grows too and, once the backend grew it, each server it is attached to gets Nova's
    ``volume-extended`` external event. The volume is ``extending`` meanwhile (claimed with a
    compare-and-swap on its status). Raises InvalidVolume for another status, Invalid for a
    ``new_size`` not above the current size."""
    _authorize(ctx, "volume:extend", vol.project_id)
    expected = VolumeStatus.IN_USE if version >= EXTEND_IN_USE and vol.status == VolumeStatus.IN_USE \
        else VolumeStatus.AVAILABLE
    if vol.status != expected:
        raise InvalidVolume(reason=f"Volume {vol.id} status must be {expected} to extend, currently {vol.status}.")
    if int(new_size) <= vol.size:
        raise Invalid(f"Invalid input received: New size for extend must be greater than current size. "
                      f"(current: {vol.size}, extended: {new_size}).")
    quota_check(vol.project_id, gigabytes=int(new_size) - vol.size, volume_size=int(new_size))
    claimed = Volume.objects.filter(pk=vol.pk, status=expected).update(status=VolumeStatus.EXTENDING,
                                                                       updated_at=timezone.now())
    if not claimed:
        raise InvalidVolume(reason=f"Volume {vol.id} status must be {expected} to extend.")
    api_on_commit(lambda: rpc.volume_extend(volume_id=vol.id, new_size=int(new_size), prior_status=expected))


def volume_extend_backend(volume_id: str, new_size: int, prior_status: str) -> None:
    vol = Volume.objects.get(pk=volume_id)
    try:
        get_backend().extend(vol.id, new_size)
    except (VolumeBackendError, OSError):
        Volume.objects.filter(pk=volume_id).update(status=VolumeStatus.ERROR_EXTENDING)
        user_message_record(project_id=vol.project_id, action=messages.EXTEND_VOLUME,
                            detail=messages.DRIVER_FAILED_EXTEND, resource_uuid=vol.id)
        return
    Volume.objects.filter(pk=volume_id).update(status=prior_status, size=new_size, updated_at=timezone.now())
    if prior_status == VolumeStatus.IN_USE:
        _post_events(vol, "volume-extended", "completed")


# --- attachments -------------------------------------------------------------------------------


def _live_attachments(vol: Volume) -> list[VolumeAttachment]:
    return list(vol.attachments.filter(deleted=False))


def attachment_count(vol: Volume) -> int:
    """How many attachments (reserved or attached, any server) the volume has."""
    return len(_live_attachments(vol))


def _refresh_volume_status(vol: Volume) -> None:
    """Derive the volume status from its attachments (Cinder's rules)."""
    atts = _live_attachments(vol)
    if not atts:
        status, attach_status = VolumeStatus.AVAILABLE, AttachStatus.DETACHED
    elif any(a.attach_status == AttachStatus.ATTACHED for a in atts):
        status, attach_status = VolumeStatus.IN_USE, AttachStatus.ATTACHED
    elif any(a.attach_status == AttachStatus.ATTACHING for a in atts):
        status, attach_status = VolumeStatus.ATTACHING, AttachStatus.ATTACHING
    else:
        status, attach_status = VolumeStatus.RESERVED, AttachStatus.RESERVED
    Volume.objects.filter(pk=vol.pk).update(status=status, attach_status=attach_status, updated_at=timezone.now())
    vol.status, vol.attach_status = status, attach_status


def attachment_get(ctx: RequestContext | None, attachment_id: str) -> VolumeAttachment:
    att = VolumeAttachment.objects.filter(pk=attachment_id, deleted=False).select_related("volume").first()
    if att is None or (ctx is not None and not ctx.is_admin and not ctx.is_service
                       and att.volume.project_id != ctx.project_id):
        raise VolumeAttachmentNotFound(attachment_id=attachment_id)
    return att


def attachment_create(ctx: RequestContext | None, *, volume_id: str, instance_uuid: str | None,
                      connector: dict[str, Any] | None = None, mode: str = "rw") -> VolumeAttachment:
    """Reserve the volume for ``instance_uuid``; with a connector the attachment is also updated.

    Allowed on an ``available`` volume, on a multiattach volume in use, and on a volume already
    attached to the same instance (the root-volume rebuild creates its empty attachment this way).
    """
    _authorize(ctx, "volume:attachment_create")
    with api_atomic():
        vol = Volume.objects.select_for_update().filter(pk=volume_id).first()
        if vol is None or (ctx is not None and not ctx.is_admin and not ctx.is_service
                           and vol.project_id != ctx.project_id):
            raise VolumeNotFound(volume_id=volume_id)
        live = _live_attachments(vol)
        same_instance = bool(instance_uuid) and any(a.instance_uuid == instance_uuid for a in live)
        ok = (vol.status in (VolumeStatus.AVAILABLE, VolumeStatus.DOWNLOADING)
              or (vol.multiattach and vol.status in (VolumeStatus.IN_USE, VolumeStatus.RESERVED,
                                                     VolumeStatus.ATTACHING))
              or (same_instance and vol.status in (VolumeStatus.IN_USE, VolumeStatus.RESERVED)))
        if not ok:
            raise InvalidVolume(reason=f"Volume {volume_id} status must be available or downloading "
                                       f"(status {vol.status}).")
        att = VolumeAttachment.objects.create(volume=vol, instance_uuid=instance_uuid, attach_mode=mode,
                                              attach_status=AttachStatus.RESERVED)
        if not (same_instance and vol.status == VolumeStatus.IN_USE):
            _refresh_volume_status(vol)
    if connector:
        att = attachment_update(ctx, attachment_id=att.id, connector=connector)
    return att


def _connection_info(vol: Volume, att: VolumeAttachment) -> dict[str, Any]:
    path = get_backend().path(vol.id)
    return {"driver_volume_type": "file", "attachment_id": att.id, "serial": vol.id,
            "multiattach": vol.multiattach,
            "data": {"device_path": str(path), "name": f"volume-{vol.id}", "volume_id": vol.id,
                     "access_mode": att.attach_mode, "encrypted": vol.encrypted}}


def attachment_update(ctx: RequestContext | None, *, attachment_id: str, connector: dict[str, Any],
                      mountpoint: str | None = None) -> VolumeAttachment:
    _authorize(ctx, "volume:attachment_update")
    att = attachment_get(ctx, attachment_id)
    vol = att.volume
    if vol.status == VolumeStatus.ERROR:
        raise InvalidVolume(reason=f"Volume {vol.id} is in error status.")
    att.connector = connector
    att.attached_host = connector.get("host")
    att.mountpoint = mountpoint or connector.get("mountpoint")
    att.connection_info = _connection_info(vol, att)
    att.attach_status = AttachStatus.ATTACHING
    att.save()
    _refresh_volume_status(vol)
    return att


def attachment_complete(ctx: RequestContext | None, *, attachment_id: str) -> VolumeAttachment:
    _authorize(ctx, "volume:attachment_complete")
    att = attachment_get(ctx, attachment_id)
    # as Cinder's, also without a connector: Nova completes a shelved offloaded server's attachment
    # so, and connects it when the server is unshelved
    att.attach_status = AttachStatus.ATTACHED
    att.attach_time = timezone.now()
    att.save(update_fields=["attach_status", "attach_time", "updated_at"])
    _refresh_volume_status(att.volume)
    return att


def attachment_delete(ctx: RequestContext | None, *, attachment_id: str) -> None:
    _authorize(ctx, "volume:attachment_delete")
    att = attachment_get(ctx, attachment_id)
    att.attach_status = AttachStatus.DETACHED
    att.detach_time = timezone.now()
    att.save(update_fields=["attach_status", "detach_time", "updated_at"])
    att.delete()
    _refresh_volume_status(att.volume)


# --- reimage ----------------------------------------------------------------------------------


def volume_reimage(ctx: RequestContext | None, *, volume_id: str, image_id: str,
                   reimage_reserved: bool = False) -> None:
    """Cinder 3.68 ``os-reimage``: write ``image_id`` over the whole volume (its data is destroyed).

    The volume must be ``available`` or ``error`` (or ``reserved`` with ``reimage_reserved``); it
    becomes ``downloading`` and the volume worker does the copy, then posts ``volume-reimaged``.
    """
    vol = volume_get(ctx, volume_id)
    _authorize(ctx, "volume:reimage", vol.project_id)
    allowed = [VolumeStatus.AVAILABLE, VolumeStatus.ERROR] + ([VolumeStatus.RESERVED] if reimage_reserved else [])
    if vol.status not in allowed:
        raise InvalidVolume(reason=f"Volume status must be {', '.join(allowed)} (status {vol.status}).")
    try:
        image = image_get_internal(image_id)
    except ImageNotFound as exc:
        raise Invalid(f"Image {image_id} could not be found.") from exc
    image_size = int(getattr(image, "size", 0) or 0)
    if image_size > vol.size * GiB:
        raise Invalid(f"Image {image_id} is larger than the volume ({vol.size} GB).")
    prior = vol.status if vol.status != VolumeStatus.ERROR else VolumeStatus.AVAILABLE
    updated = Volume.objects.filter(pk=vol.pk, status=vol.status).update(status=VolumeStatus.DOWNLOADING,
                                                                         updated_at=timezone.now())
    if not updated:
        raise InvalidVolume(reason="volume status changed concurrently")
    # sent at once (not on commit): the status update above is already autocommitted, and a compute
    # operation waits for the resulting event right after this call
    rpc.volume_reimage(volume_id=vol.id, image_id=image_id, prior_status=prior)


def volume_reimage_backend(volume_id: str, image_id: str, prior_status: str) -> None:
    vol = Volume.objects.get(pk=volume_id)
    try:
        image = image_get_internal(image_id)
        _copy_image(vol, image_id)
    except Exception as exc:
        log.warning("reimage of volume %s failed: %s", volume_id, exc)
        Volume.objects.filter(pk=volume_id).update(status=VolumeStatus.ERROR, updated_at=timezone.now())
        _post_events(vol, "volume-reimaged", "failed")
        return
    meta = {**(vol.volume_image_metadata or {}), "image_id": image_id, "image_name": image.name or "",
            "size": str(int(getattr(image, "size", 0) or 0))}
    Volume.objects.filter(pk=volume_id).update(status=prior_status, image_id=image_id, bootable=True,
                                               volume_image_metadata=meta, updated_at=timezone.now())
    _post_events(vol, "volume-reimaged", "completed")


def _post_events(vol: Volume, name: str, status: str) -> None:
    """Tell the compute API about the volume (Cinder posts to os-server-external-events)."""
    instances = sorted({a.instance_uuid for a in _live_attachments(vol) if a.instance_uuid})
    if not instances:
        return
    if (get_backend().pool_dir / "LOSE_EVENTS").exists():  # fault injection: the event never arrives
        return
    events = [{"name": name, "server_uuid": uuid, "tag": vol.id, "status": status} for uuid in instances]
    server_external_events_create(RequestContext.system(), events=events, version=(2, 93))
