"""Cinder's admin and legacy volume and snapshot actions: ``os-reset_status`` and
``os-force_delete`` (admins), ``os-update_snapshot_status``, the legacy ``os-attach`` /
``os-detach`` / ``os-force_detach`` (an attachment record made or removed directly, as Cinder does
when something other than Nova attaches), and the volume's image metadata
(``os-set_image_metadata`` / ``os-unset_image_metadata`` / ``os-show_image_metadata``).

Resetting a status only writes the database (no backend work, as Cinder's)."""
from __future__ import annotations

from typing import Any

from django.utils import timezone

from cells.transactions import api_on_commit
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Invalid, NotFound
from cloudcore.core.policy import authorize

from . import rpc
from .models import AttachStatus, Snapshot, SnapshotStatus, Volume, VolumeAttachment, VolumeStatus
from .services import InvalidVolume, _authorize, _refresh_volume_status, volume_delete
from .snapshots import InvalidSnapshot, _target, _visible

#: the statuses an admin may reset a volume to (Cinder's)
VOLUME_RESET_STATUSES = (
    VolumeStatus.AVAILABLE, VolumeStatus.CREATING, VolumeStatus.DELETING, VolumeStatus.ERROR,
    VolumeStatus.ERROR_DELETING, VolumeStatus.ERROR_EXTENDING, VolumeStatus.ATTACHING, VolumeStatus.IN_USE,
    VolumeStatus.DETACHING, VolumeStatus.MAINTENANCE, VolumeStatus.RESERVED, VolumeStatus.EXTENDING,
    VolumeStatus.DOWNLOADING, VolumeStatus.UPLOADING, VolumeStatus.BACKING_UP, VolumeStatus.RESTORING_BACKUP,
    VolumeStatus.ERROR_RESTORING, "error_managing", "managing", "retyping")
ATTACH_RESET_STATUSES = (AttachStatus.ATTACHED, AttachStatus.DETACHED)
MIGRATION_RESET_STATUSES = ("migrating", "error", "success", "completing", "none", "starting")
SNAPSHOT_RESET_STATUSES = (SnapshotStatus.CREATING, SnapshotStatus.AVAILABLE, SnapshotStatus.DELETING,
                           SnapshotStatus.ERROR, SnapshotStatus.ERROR_DELETING, "unmanaging", "backing-up",
                           "restoring")
#: os-update_snapshot_status: the statuses a snapshot may move to from its current one (Cinder's)
SNAPSHOT_UPDATES = {SnapshotStatus.CREATING: (SnapshotStatus.CREATING, SnapshotStatus.AVAILABLE, SnapshotStatus.ERROR),
                    SnapshotStatus.DELETING: (SnapshotStatus.DELETING, SnapshotStatus.ERROR_DELETING)}


def _one_of(value: Any, allowed: tuple[str, ...], what: str) -> str:
    text = str(value).lower() if value is not None else None
    if text not in allowed:
        raise Invalid(f"Invalid input received: {what} '{value}' is not allowed.")
    return text


def volume_reset_status(ctx: RequestContext, vol: Volume, *, status: str | None = None,
                        attach_status: str | None = None, migration_status: str | None = None) -> Volume:
    """Set the volume's status, attach status and/or migration status as given (admins)."""
    _authorize(ctx, "volume_extension:volume_admin_actions:reset_status", vol.project_id)
    if status is None and attach_status is None and migration_status is None:
        raise Invalid("Must specify 'status', 'attach_status' or 'migration_status' for update.")
    changes: dict[str, Any] = {}
    if status is not None:
        changes["status"] = _one_of(status, VOLUME_RESET_STATUSES, "status")
    if attach_status is not None:
        changes["attach_status"] = _one_of(attach_status, ATTACH_RESET_STATUSES, "attach_status")
    if migration_status is not None:
        found = _one_of(migration_status, MIGRATION_RESET_STATUSES, "migration_status")
        changes["migration_status"] = None if found == "none" else found
    Volume.objects.filter(pk=vol.pk).update(**changes, updated_at=timezone.now())
    for key, value in changes.items():
        setattr(vol, key, value)
    return vol


def volume_force_delete(ctx: RequestContext, vol: Volume) -> None:
    """Delete the volume whatever its status (admins); attached ones and ones with snapshots are
    still refused, as Cinder's."""
    _authorize(ctx, "volume_extension:volume_admin_actions:force_delete", vol.project_id)
    volume_delete(ctx, vol, force=True)


def snapshot_reset_status(ctx: RequestContext, snapshot_id: str, *, status: Any) -> Snapshot:
    snap = _visible(ctx, snapshot_id)
    authorize(ctx, "volume_extension:snapshot_admin_actions:reset_status", _target(snap))
    snap.status = _one_of(status, SNAPSHOT_RESET_STATUSES, "status")
    Snapshot.objects.filter(pk=snap.pk).update(status=snap.status, updated_at=timezone.now())
    return snap


def snapshot_force_delete(ctx: RequestContext, snapshot_id: str) -> None:
    """Delete the snapshot whatever its status (admins): ``deleting``, then the worker removes it."""
    snap = _visible(ctx, snapshot_id)
    authorize(ctx, "volume_extension:snapshot_admin_actions:force_delete", _target(snap))
    Snapshot.objects.filter(pk=snap.pk).update(status=SnapshotStatus.DELETING, updated_at=timezone.now())
    api_on_commit(lambda: rpc.snapshot_delete(snapshot_id=snap.id))


def snapshot_update_status(ctx: RequestContext, snapshot_id: str, *, status: Any,
                           progress: str | None = None) -> Snapshot:
    """Cinder's ``os-update_snapshot_status`` (the hook a volume driver reports progress by): only
    from ``creating`` (to creating, available, error) or ``deleting`` (to error_deleting)."""
    snap = _visible(ctx, snapshot_id)
    authorize(ctx, "snapshot_extension:snapshot_actions:update_snapshot_status", _target(snap))
    allowed = SNAPSHOT_UPDATES.get(snap.status)
    if allowed is None or status not in allowed:
        raise InvalidSnapshot(reason=f"Snapshot status {snap.status} not allowed for update_snapshot_status")
    snap.status = status
    changes: dict[str, Any] = {"status": status}
    if progress is not None:
        snap.progress = changes["progress"] = progress
    Snapshot.objects.filter(pk=snap.pk).update(**changes, updated_at=timezone.now())
    return snap


def volume_attach_legacy(ctx: RequestContext, vol: Volume, *, instance_uuid: str | None, host_name: str | None,
                         mountpoint: str, mode: str = "rw") -> VolumeAttachment:
    """The legacy ``os-attach``: record an attachment (to a server or a host) and make the volume
    ``in-use``; it must be ``available`` or ``attaching`` (reserved by ``os-reserve``), or in use
    if it is multiattach."""
    _authorize(ctx, "volume_extension:volume_actions:attach", vol.project_id)
    if bool(instance_uuid) == bool(host_name):
        raise Invalid("Invalid request to attach volume to an invalid target")
    if mode not in ("rw", "ro"):
        raise Invalid("Invalid request to attach volume with an invalid mode. Attaching mode should be 'rw' or 'ro'")
    allowed = (VolumeStatus.AVAILABLE, VolumeStatus.ATTACHING, VolumeStatus.RESERVED) + (
        (VolumeStatus.IN_USE,) if vol.multiattach else ())
    if vol.status not in allowed:
        raise InvalidVolume(reason=f"Volume status must be available or attaching (status {vol.status}).")
    att = VolumeAttachment.objects.create(volume=vol, instance_uuid=instance_uuid, attached_host=host_name,
                                          mountpoint=mountpoint, attach_mode=mode, attach_time=timezone.now(),
                                          attach_status=AttachStatus.ATTACHED)
    _refresh_volume_status(vol)
    return att


def volume_detach_legacy(ctx: RequestContext, vol: Volume, *, attachment_id: str | None = None,
                         force: bool = False) -> None:
    """The legacy ``os-detach`` (or an admin's ``os-force_detach``): remove the named attachment,
    or the volume's only one; the volume is ``available`` again once none is left (also when it
    had none: Cinder's detach is then a no-op that succeeds)."""
    rule = "volume_extension:volume_admin_actions:force_detach" if force else "volume_extension:volume_actions:detach"
    _authorize(ctx, rule, vol.project_id)
    live = list(vol.attachments.filter(deleted=False))
    if attachment_id:
        live = [a for a in live if a.id == attachment_id]
        if not live:
            raise NotFound(f"VolumeAttachment {attachment_id} could not be found.")
    elif len(live) > 1:
        raise InvalidVolume(reason="Volume is attached to more than one server: attachment_id is required.")
    if not live:  # nothing attached: the volume is made available and the call succeeds (Cinder's)
        Volume.objects.filter(pk=vol.pk).update(status=VolumeStatus.AVAILABLE, attach_status=AttachStatus.DETACHED,
                                                updated_at=timezone.now())
        return
    att = live[0]
    att.attach_status, att.detach_time = AttachStatus.DETACHED, timezone.now()
    att.save(update_fields=["attach_status", "detach_time", "updated_at"])
    att.delete()
    _refresh_volume_status(vol)


def volume_image_metadata(ctx: RequestContext, vol: Volume) -> dict[str, str]:
    _authorize(ctx, "volume_extension:volume_image_metadata:show", vol.project_id)
    return dict(vol.volume_image_metadata or {})


def volume_image_metadata_set(ctx: RequestContext, vol: Volume, *, metadata: dict[str, Any]) -> dict[str, str]:
    """Add or replace keys of the volume's image metadata; returns all of it."""
    _authorize(ctx, "volume_extension:volume_image_metadata:set", vol.project_id)
    vol.volume_image_metadata = {**(vol.volume_image_metadata or {}), **{k: str(v) for k, v in metadata.items()}}
    vol.save(update_fields=["volume_image_metadata", "updated_at"])
    return dict(vol.volume_image_metadata)


def volume_image_metadata_unset(ctx: RequestContext, vol: Volume, *, key: str) -> None:
    _authorize(ctx, "volume_extension:volume_image_metadata:remove", vol.project_id)
    if key not in (vol.volume_image_metadata or {}):
        raise NotFound(f"Glance metadata for volume {vol.id} with key {key} could not be found.")
    vol.volume_image_metadata = {k: v for k, v in vol.volume_image_metadata.items() if k != key}
    vol.save(update_fields=["volume_image_metadata", "updated_at"])
