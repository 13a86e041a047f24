"""Volume backups (Cinder's ``/backups`` with its posix driver): a volume's bytes copied to a file
under ``BACKUP_DIR`` (the cloud's var dir by default), outside the storage pool, so a backup
outlives its volume.

States as Cinder's: a backup is ``creating`` until the volume worker copied the bytes (the volume
is ``backing-up`` meanwhile and returns to its status after), then ``available``; ``restoring``
while its bytes are written into a volume (a new one, made for the restore, or an ``available``
one at least as large, which is ``restoring-backup`` meanwhile); ``deleting`` until its file is
gone. An ``in-use`` volume needs ``force``. A backup of a snapshot copies the snapshot's bytes
(the snapshot is ``backing-up`` meanwhile). An incremental backup keeps only the blocks changed
since the volume's newest backup, its parent; a backup that others build on cannot be deleted.
How the bytes are kept is ``volumes.backup_store``'s; copies skip the zeroed blocks, so the sparse
volumes of the demo stay sparse in their backups. A record exported (``export_record``) can be
imported (``import_record``) as another backup naming the same data.
"""
from __future__ import annotations

import base64
import binascii
import json
import logging
import os
from typing import Any

from django.db.models import Q
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from cells.transactions import api_atomic, api_on_commit
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Invalid, NotFound
from cloudcore.core.policy import authorize

from . import backup_store, rpc
from .backends import VolumeBackendError, get_backend
from .choices import BackupStatus
from .models import Backup, Snapshot, SnapshotStatus, Volume, VolumeStatus, new_uuid
from .owned import owned_get, owned_list
from .quotas import quota_check
from .services import volume_get
from .snapshots import InvalidSnapshot, SnapshotNotFound

log = logging.getLogger(__name__)
GiB = 1024 ** 3
#: Cinder's default ``backup_swift_container``/posix container name, shown as the backup's ``container``.
DEFAULT_CONTAINER = "backups"


class BackupNotFound(NotFound):
    message = "Backup %(backup_id)s could not be found."


class InvalidBackup(Invalid):
    message = "Invalid backup: %(reason)s"


class InvalidVolume(Invalid):
    message = "Invalid volume: %(reason)s"


def _target(obj: Backup | Volume) -> dict[str, Any]:
    return {"project_id": obj.project_id, "user_id": obj.user_id}


def _visible(ctx: RequestContext, backup_id: str) -> Backup:
    backup = owned_get(ctx, Backup.objects.all(), backup_id)
    if backup is None:
        raise BackupNotFound(backup_id=backup_id)
    return backup


def backup_get(ctx: RequestContext, backup_id: str) -> Backup:
    backup = _visible(ctx, backup_id)
    authorize(ctx, "backup:get", _target(backup))
    return backup


def backup_list(ctx: RequestContext, *, all_tenants: bool = False, filters: dict[str, str] | None = None,
                limit: int | None = None, offset: int = 0, marker: str | None = None,
                sort: list[tuple[str, str]] | None = None) -> list[Backup]:
    authorize(ctx, "backup:get_all", {"project_id": ctx.project_id, "user_id": ctx.user_id})
    return owned_list(ctx, Backup.objects.all(), all_tenants=all_tenants, filters=filters, limit=limit,
                      offset=offset, marker=marker, sort=sort)


def _latest_parent(volume: Volume, snapshot: Snapshot | None) -> Backup:
    """The backup an incremental one builds on (Cinder's rule): the volume's backup with the newest
    data, older than the snapshot for a backup of a snapshot; it must be ``available``."""
    candidates = Backup.objects.filter(volume_id=volume.id)
    if snapshot is not None:
        candidates = candidates.filter(data_timestamp__lt=snapshot.created_at)
    parent = candidates.order_by("-data_timestamp", "-created_at").first()
    if parent is None:
        raise InvalidBackup(reason="No backups available to do an incremental backup.")
    if parent.status != BackupStatus.AVAILABLE:
        raise InvalidBackup(reason="The parent backup must be available for incremental backup.")
    return parent


def backup_create(ctx: RequestContext, *, volume: Volume, name: str | None = None, description: str | None = None,
                  force: bool = False, incremental: bool = False, container: str | None = None,
                  snapshot_id: str | None = None, metadata: dict[str, Any] | None = None) -> Backup:
    """Record a ``creating`` backup of ``volume`` (which becomes ``backing-up``, claimed with a
    compare-and-swap) or of its snapshot ``snapshot_id`` (the snapshot becomes ``backing-up``, the
    volume keeps its status) and cast the copy to the volume worker. ``incremental`` keeps only
    the changes since the volume's newest backup (its ``parent_id``). Raises InvalidVolume for a
    volume in another state (or ``in-use`` without ``force``), InvalidSnapshot for a snapshot not
    ``available`` or of another volume, InvalidBackup where no available parent exists, and
    OverQuota past ``backups``/``backup_gigabytes``."""
    authorize(ctx, "backup:create", _target(volume))
    snapshot = None
    if snapshot_id:
        snapshot = Snapshot.objects.filter(pk=snapshot_id, project_id=volume.project_id).first()
        if snapshot is None:
            raise SnapshotNotFound(snapshot_id=snapshot_id)
        if snapshot.volume_id != volume.id:
            raise Invalid(f"Invalid input received: Volume {volume.id} does not match with snapshot.volume_id "
                          f"{snapshot.volume_id}.")
        if snapshot.status != SnapshotStatus.AVAILABLE:
            raise InvalidSnapshot(reason=f'Snapshot to be backed up must be available, but the current status is '
                                         f'"{snapshot.status}".')
    elif volume.status not in (VolumeStatus.AVAILABLE, VolumeStatus.IN_USE):
        raise InvalidVolume(reason=f'Volume to be backed up must be available or in-use, but the current status '
                                   f'is "{volume.status}".')
    elif volume.status == VolumeStatus.IN_USE and not force:
        raise InvalidVolume(reason="Backing up an in-use volume must use the force flag.")
    parent = _latest_parent(volume, snapshot) if incremental else None
    project = ctx.project_id or volume.project_id
    quota_check(project, backups=1, backup_gigabytes=volume.size)
    backup_id = new_uuid()
    with api_atomic():
        prior = volume.status
        if snapshot is not None:
            if not Snapshot.objects.filter(pk=snapshot.pk, status=SnapshotStatus.AVAILABLE).update(
                    status=SnapshotStatus.BACKING_UP, updated_at=timezone.now()):
                raise InvalidSnapshot(reason="snapshot status changed concurrently")
        elif not Volume.objects.filter(pk=volume.pk, status=prior).update(status=VolumeStatus.BACKING_UP,
                                                                            updated_at=timezone.now()):
            raise InvalidVolume(reason="volume status changed concurrently")
        backup = Backup.objects.create(
            id=backup_id, volume_id=volume.id, snapshot_id=snapshot.id if snapshot else None, name=name,
            description=description, size=volume.size, project_id=project,
            user_id=ctx.user_id or volume.user_id, container=container or DEFAULT_CONTAINER,
            availability_zone=volume.availability_zone, metadata=metadata or {}, volume_prior_status=prior,
            data_timestamp=snapshot.created_at if snapshot else timezone.now(),
            parent_id=parent.id if parent else None, service_metadata=f"backup-{backup_id}")
        api_on_commit(lambda: rpc.backup_create(backup_id=backup.id))
    return backup


def chain(backup: Backup) -> list[Backup]:
    """The backups whose data make ``backup``'s image: its full backup first, ``backup`` last."""
    found = [backup]
    while found[0].parent_id:
        parent = Backup.objects.filter(pk=found[0].parent_id).first()
        if parent is None or len(found) > 10000:
            raise InvalidBackup(reason=f"the parent {found[0].parent_id} of backup {found[0].id} is missing")
        found.insert(0, parent)
    return found


def has_dependents(backup: Backup) -> bool:
    return Backup.objects.filter(parent_id=backup.id).exists()


def backup_create_backend(backup_id: str) -> None:
    """The volume worker's half: copy the volume's (or the snapshot's) bytes to the backup store,
    only the changed blocks for an incremental backup; the volume (or snapshot) goes back to the
    status it had, the backup to ``available`` (``error`` with a ``fail_reason``)."""
    backup = Backup.objects.get(pk=backup_id)
    backend = get_backend()
    try:
        source = backend.snapshot_path(backup.snapshot_id) if backup.snapshot_id else backend.path(backup.volume_id)
        if backup.parent_id:
            backup_store.write_incremental(source, [b.data_name for b in chain(backup)[:-1]], backup.data_name)
        else:
            backup_store.write_full(source, backup.data_name)
        volume = Volume.objects.filter(pk=backup.volume_id).first()
        if volume is not None:
            backup_store.write_volume_meta(backup.data_name, {
                "metadata": volume.metadata or {}, "bootable": volume.bootable,
                "volume_image_metadata": volume.volume_image_metadata or {}})
        backup.status, backup.fail_reason = BackupStatus.AVAILABLE, None
    except (VolumeBackendError, OSError, Invalid) as exc:
        log.warning("backup %s of volume %s failed: %s", backup.id, backup.volume_id, exc)
        backup.status, backup.fail_reason = BackupStatus.ERROR, str(exc)
    backup.save(update_fields=["status", "fail_reason", "updated_at"])
    if backup.snapshot_id:
        Snapshot.objects.filter(pk=backup.snapshot_id, status=SnapshotStatus.BACKING_UP).update(
            status=SnapshotStatus.AVAILABLE, updated_at=timezone.now())
    else:
        Volume.objects.filter(pk=backup.volume_id, status=VolumeStatus.BACKING_UP).update(
            status=backup.volume_prior_status or VolumeStatus.AVAILABLE, updated_at=timezone.now())


def backup_delete(ctx: RequestContext, backup_id: str, *, force: bool = False) -> None:
    """An ``available`` or ``error`` backup (any but a busy one with ``force``, admins) goes
    ``deleting`` and the worker removes its data. A backup that incremental backups build on is
    refused (InvalidBackup), forced or not."""
    backup = _visible(ctx, backup_id)
    authorize(ctx, "backup:delete", _target(backup))
    allowed: tuple[str, ...] = (BackupStatus.AVAILABLE, BackupStatus.ERROR)
    if force:
        authorize(ctx, "backup:force_delete", _target(backup))
        allowed = (*allowed, BackupStatus.CREATING, BackupStatus.ERROR_DELETING, BackupStatus.RESTORING)
    if backup.status not in allowed:
        raise InvalidBackup(reason="Backup status must be available or error")
    if has_dependents(backup):
        raise InvalidBackup(reason="Incremental backups exist for this backup.")
    Backup.objects.filter(pk=backup.pk).update(status=BackupStatus.DELETING, updated_at=timezone.now())
    api_on_commit(lambda: rpc.backup_delete(backup_id=backup.id))


def backup_delete_backend(backup_id: str) -> None:
    """Remove the backup's data, unless another backup record (an import of this one, or the one
    it was imported from) still names it."""
    backup = Backup.objects.get(pk=backup_id)
    name = backup.data_name
    shared = Backup.objects.exclude(pk=backup.pk).filter(
        Q(service_metadata=name) | Q(service_metadata__isnull=True, id=name.removeprefix("backup-"))).exists()
    try:
        if not shared:
            backup_store.remove(name)
    except OSError:
        Backup.objects.filter(pk=backup_id).update(status=BackupStatus.ERROR_DELETING)
        return
    backup.status = "deleted"
    backup.save(update_fields=["status", "updated_at"])
    backup.soft_delete()


def backup_update(ctx: RequestContext, backup_id: str, *, changes: dict[str, Any]) -> Backup:
    """Change a backup's ``name``, ``description`` and ``metadata`` (3.9; metadata 3.43)."""
    backup = _visible(ctx, backup_id)
    authorize(ctx, "backup:update", _target(backup))
    for field in ("name", "description", "metadata"):
        if field in changes:
            setattr(backup, field, changes[field] if field != "metadata" else (changes[field] or {}))
    backup.save(update_fields=[*(f for f in ("name", "description", "metadata") if f in changes), "updated_at"])
    return backup


#: The statuses an admin may set with ``os-reset_status`` (Cinder's).
RESET_STATUSES = (BackupStatus.AVAILABLE, BackupStatus.ERROR)


def backup_reset_status(ctx: RequestContext, backup_id: str, *, status: str) -> Backup:
    """An admin sets the backup's status to ``available`` or ``error`` (nothing else changes)."""
    backup = _visible(ctx, backup_id)
    authorize(ctx, "volume_extension:backup_admin_actions:reset_status", _target(backup))
    if status not in RESET_STATUSES:
        raise Invalid(f"Invalid input received: Invalid backup status {status}: must be one of "
                      f"{', '.join(RESET_STATUSES)}.")
    backup.status = status
    backup.save(update_fields=["status", "updated_at"])
    return backup


#: Cinder's name of the driver that wrote a record (``backup_service`` in an exported record).
BACKUP_SERVICE = "cinder.backup.drivers.posix.PosixBackupDriver"
#: The fields of an exported record (``backup_url``, base64 JSON) that an import restores.
RECORD_FIELDS = ("id", "volume_id", "snapshot_id", "name", "description", "size", "container",
                 "availability_zone", "metadata", "parent_id", "service_metadata", "data_timestamp")


def backup_export(ctx: RequestContext, backup_id: str) -> dict[str, str]:
    """Cinder's ``export_record``: the backup's record, enough to import it into another cloud
    that reaches the same backup store (``backup_service`` and a base64 JSON ``backup_url``)."""
    backup = _visible(ctx, backup_id)
    authorize(ctx, "backup:export-import", _target(backup))
    if backup.status != BackupStatus.AVAILABLE:
        raise InvalidBackup(reason=f"Backup status must be available and not {backup.status}.")
    record = {field: getattr(backup, field) for field in RECORD_FIELDS}
    record["service_metadata"] = backup.data_name
    record["data_timestamp"] = (backup.data_timestamp or backup.created_at).isoformat()
    record["service"] = BACKUP_SERVICE
    url = base64.b64encode(json.dumps(record).encode()).decode()
    return {"backup_service": BACKUP_SERVICE, "backup_url": url}


def _decode_record(backup_url: str) -> dict[str, Any]:
    try:
        record = json.loads(base64.b64decode(backup_url.encode(), validate=True))
    except (ValueError, binascii.Error):
        record = None
    if not isinstance(record, dict) or not isinstance(record.get("size"), int) or not record.get("volume_id") or any(
            not isinstance(record.get(k), str | None) for k in RECORD_FIELDS if k not in ("size", "metadata")) or \
            not isinstance(record.get("metadata"), dict | None):
        raise Invalid("Invalid input received: Can't parse backup record.")
    return record


def backup_import(ctx: RequestContext, *, backup_service: str, backup_url: str) -> Backup:
    """Cinder's ``import_record``: a ``creating`` backup in the caller's project from an exported
    record (its id kept, or a new one where it has none), naming the same data; the worker makes it
    ``available`` once it found the data (``error`` if not). Raises Invalid for another service or
    an unreadable record, InvalidBackup where a backup of that id exists."""
    authorize(ctx, "backup:backup-import", {"project_id": ctx.project_id, "user_id": ctx.user_id})
    if backup_service != BACKUP_SERVICE:
        raise Invalid(f"Invalid input received: Backup service {backup_service} is not supported by this "
                      f"cloud (it has {BACKUP_SERVICE}).")
    record = _decode_record(backup_url)
    fields = {k: record.get(k) for k in RECORD_FIELDS if k in record}
    backup_id = str(fields.pop("id", None) or new_uuid())
    with api_atomic():
        if Backup.objects.filter(pk=backup_id).exists():
            raise InvalidBackup(reason="Backup already exists in database.")
        Backup.all_objects.filter(pk=backup_id).delete()  # a deleted record of that id is replaced
        timestamp = fields.pop("data_timestamp", None)
        fields["metadata"] = fields.get("metadata") or {}
        backup = Backup.objects.create(
            id=backup_id, **fields, status=BackupStatus.CREATING,
            project_id=ctx.project_id or "", user_id=ctx.user_id or "",
            data_timestamp=parse_datetime(timestamp) if isinstance(timestamp, str) else timezone.now())
        api_on_commit(lambda: rpc.backup_import(backup_id=backup.id))
    return backup


def backup_import_backend(backup_id: str) -> None:
    """The worker checks that an imported backup's data (and its parents') is in the store."""
    backup = Backup.objects.get(pk=backup_id)
    try:
        missing = [b.data_name for b in chain(backup) if not backup_store.exists(b.data_name)]
        reason = f"backup data not found in the backup store: {', '.join(missing)}" if missing else None
    except Invalid as exc:
        reason = str(exc)
    backup.status = BackupStatus.ERROR if reason else BackupStatus.AVAILABLE
    backup.fail_reason = reason
    backup.save(update_fields=["status", "fail_reason", "updated_at"])


def backup_restore(ctx: RequestContext, backup_id: str, *, volume_id: str | None = None,
                   name: str | None = None) -> dict[str, Any]:
    """Restore an ``available`` backup into volume ``volume_id`` (``available``, at least the
    backup's size) or, without one, into a new volume of the backup's size named ``name`` (quota
    checked). Both become busy (``restoring`` / ``restoring-backup``) until the worker has written
    the bytes. Returns Cinder's restore body (backup id, volume id and name)."""
    backup = _visible(ctx, backup_id)
    authorize(ctx, "backup:restore", _target(backup))
    if backup.status != BackupStatus.AVAILABLE:
        raise InvalidBackup(reason="Backup status must be available")
    with api_atomic():
        if volume_id:
            volume = volume_get(ctx, volume_id)
            if volume.status != VolumeStatus.AVAILABLE:
                raise InvalidVolume(reason=f"Volume to be restored to must be available, but the current status "
                                           f"is {volume.status}.")
            if volume.size < backup.size:
                raise InvalidVolume(reason=f"volume size {volume.size} is too small to restore backup of size "
                                           f"{backup.size}.")
            if not Volume.objects.filter(pk=volume.pk, status=VolumeStatus.AVAILABLE).update(
                    status=VolumeStatus.RESTORING_BACKUP, updated_at=timezone.now()):
                raise InvalidVolume(reason="volume status changed concurrently")
        else:
            project = ctx.project_id or backup.project_id
            quota_check(project, volumes=1, gigabytes=backup.size, volume_size=backup.size)
            volume = Volume.objects.create(
                name=name or f"restore_backup_{backup.id}", size=backup.size, status=VolumeStatus.RESTORING_BACKUP,
                availability_zone=backup.availability_zone, project_id=project, user_id=ctx.user_id or "",
                backend_name=get_backend().name)
        if not Backup.objects.filter(pk=backup.pk, status=BackupStatus.AVAILABLE).update(
                status=BackupStatus.RESTORING, updated_at=timezone.now()):
            raise InvalidBackup(reason="Backup status must be available")
        api_on_commit(lambda: rpc.backup_restore(backup_id=backup.id, volume_id=volume.id))
    return {"backup_id": backup.id, "volume_id": volume.id, "volume_name": volume.name}


def backup_restore_backend(backup_id: str, volume_id: str) -> None:
    """The worker's half of a restore: the volume (its file made first for a new one) gets the
    backup's image (its chain replayed), grown to its own size, and the backed-up volume's metadata
    and bootable flag; it ends ``available``
    (``error_restoring`` on failure, as Cinder) and the backup ``available`` again either way."""
    vol = Volume.objects.get(pk=volume_id)
    backend = get_backend()
    fields = ["provider_location", "status", "updated_at"]
    try:
        if not backend.path(vol.id).exists():
            vol.provider_location = backend.create(vol.id, vol.size)
        target = backend.path(vol.id)
        tmp = target.with_name(target.name + ".restore.tmp")
        names = [b.data_name for b in chain(Backup.objects.get(pk=backup_id))]
        try:
            backup_store.replay(names, tmp, size=vol.size * GiB)
            os.replace(tmp, target)
        finally:
            tmp.unlink(missing_ok=True)
        meta = backup_store.read_volume_meta(names[-1])
        if isinstance(meta.get("metadata"), dict):
            vol.metadata = {**(vol.metadata or {}), **meta["metadata"]}
        vol.bootable = bool(meta.get("bootable", vol.bootable))
        if meta.get("volume_image_metadata"):
            vol.volume_image_metadata = meta["volume_image_metadata"]
        fields += ["metadata", "bootable", "volume_image_metadata"]
        vol.status = VolumeStatus.AVAILABLE
    except (VolumeBackendError, OSError, Invalid) as exc:
        log.warning("restoring backup %s into volume %s failed: %s", backup_id, volume_id, exc)
        vol.status = VolumeStatus.ERROR_RESTORING
    vol.save(update_fields=fields)
    Backup.objects.filter(pk=backup_id, status=BackupStatus.RESTORING).update(
        status=BackupStatus.AVAILABLE, updated_at=timezone.now())
