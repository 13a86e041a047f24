"""Volume backups (Cinder's ``/backups`` with its posix driver): a volume's bytes copied to a file
under ``BACKUP_DIR`` (the cloud's var dir by default), outside the storage pool, so a backup
outlives its volume.

States as Cinder's: a backup is ``creating`` until the volume worker copied the bytes (the volume
is ``backing-up`` meanwhile and returns to its status after), then ``available``; ``restoring``
while its bytes are written into a volume (a new one, made for the restore, or an ``available``
one at least as large, which is ``restoring-backup`` meanwhile); ``deleting`` until its file is
gone. An ``in-use`` volume needs ``force``. Only full backups: an incremental one is refused.
Copies skip the zeroed blocks, so the sparse volumes of the demo stay sparse in their backups.
"""
from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from django.conf import settings
from django.utils import timezone

from cells.transactions import api_atomic, api_on_commit
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Invalid, NotFound
from cloudcore.core.policy import authorize

from . import rpc
from .backends import VolumeBackendError, get_backend
from .backends.pool import sparse_copy
from .models import Backup, BackupStatus, Volume, VolumeStatus
from .owned import owned_get, owned_list
from .quotas import quota_check
from .services import volume_get

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


def backup_path(backup_id: str) -> Path:
    return Path(settings.BACKUP_DIR) / f"backup-{backup_id}"


def _copy_sparse(source: Path, target: Path, *, size: int | None = None) -> None:
    """``sparse_copy`` into ``target`` (made whole under a temporary name, then moved in place);
    ``target`` ends ``size`` bytes long (the source's length by default)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    sparse_copy(source, tmp, size=size)
    os.replace(tmp, target)


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


def backup_create(ctx: RequestContext, *, volume: Volume, name: str | None = None, description: str | None = None,
                  force: bool = False, incremental: bool = False, container: str | None = None,
                  snapshot_id: str | None = None, metadata: dict[str, Any] | None = None) -> Backup:
    """Record a ``creating`` backup of ``volume`` (which becomes ``backing-up``, claimed with a
    compare-and-swap) and cast the copy to the volume worker. Raises InvalidVolume for a volume in
    another state (or ``in-use`` without ``force``), Invalid for what this driver cannot do
    (incremental backups, backups of snapshots) and OverQuota past ``backups``/``backup_gigabytes``."""
    authorize(ctx, "backup:create", _target(volume))
    if incremental:
        raise Invalid("Incremental backups are not supported by this cloud's backup driver.")
    if snapshot_id:
        raise Invalid("Backups of snapshots are not supported by this cloud's backup driver.")
    if volume.status not in (VolumeStatus.AVAILABLE, VolumeStatus.IN_USE):
        raise InvalidVolume(reason=f'Volume to be backed up must be available or in-use, but the current status '
                                   f'is "{volume.status}".')
    if volume.status == VolumeStatus.IN_USE and not force:
        raise InvalidVolume(reason="Backing up an in-use volume must use the force flag.")
    project = ctx.project_id or volume.project_id
    quota_check(project, backups=1, backup_gigabytes=volume.size)
    with api_atomic():
        prior = volume.status
        if not Volume.objects.filter(pk=volume.pk, status=prior).update(status=VolumeStatus.BACKING_UP,
                                                                          updated_at=timezone.now()):
            raise InvalidVolume(reason="volume status changed concurrently")
        backup = Backup.objects.create(
            volume_id=volume.id, name=name, description=description, size=volume.size, project_id=project,
            user_id=ctx.user_id or volume.user_id, container=container or DEFAULT_CONTAINER,
            availability_zone=volume.availability_zone, metadata=metadata or {}, volume_prior_status=prior,
            data_timestamp=timezone.now())
        api_on_commit(lambda: rpc.backup_create(backup_id=backup.id))
    return backup


def backup_create_backend(backup_id: str) -> None:
    """The volume worker's half: copy the volume's bytes to the backup file; the volume goes back
    to the status it had, the backup to ``available`` (``error`` with a ``fail_reason``)."""
    backup = Backup.objects.get(pk=backup_id)
    try:
        _copy_sparse(get_backend().path(backup.volume_id), backup_path(backup.id))
        backup.status, backup.fail_reason = BackupStatus.AVAILABLE, None
    except (VolumeBackendError, OSError) as exc:
        log.warning("backup %s of volume %s failed: %s", backup.id, backup.volume_id, exc)
        backup.status, backup.fail_reason = BackupStatus.ERROR, str(exc)
    backup.save(update_fields=["status", "fail_reason", "updated_at"])
    Volume.objects.filter(pk=backup.volume_id, status=VolumeStatus.BACKING_UP).update(
        status=backup.volume_prior_status or VolumeStatus.AVAILABLE, updated_at=timezone.now())


def backup_delete(ctx: RequestContext, backup_id: str, *, force: bool = False) -> None:
    """An ``available`` or ``error`` backup (any but a busy one with ``force``, admins) goes
    ``deleting`` and the worker removes its file."""
    backup = _visible(ctx, backup_id)
    authorize(ctx, "backup:delete", _target(backup))
    allowed = (BackupStatus.AVAILABLE, BackupStatus.ERROR)
    if force:
        authorize(ctx, "backup:force_delete", _target(backup))
        allowed = (*allowed, BackupStatus.CREATING, BackupStatus.ERROR_DELETING)
    if backup.status not in allowed:
        raise InvalidBackup(reason="Backup status must be available or error")
    Backup.objects.filter(pk=backup.pk).update(status=BackupStatus.DELETING, updated_at=timezone.now())
    api_on_commit(lambda: rpc.backup_delete(backup_id=backup.id))


def backup_delete_backend(backup_id: str) -> None:
    backup = Backup.objects.get(pk=backup_id)
    try:
        backup_path(backup.id).unlink(missing_ok=True)
    except OSError:
        Backup.objects.filter(pk=backup_id).update(status=BackupStatus.ERROR_DELETING)
        return
    backup.status = "deleted"
    backup.save(update_fields=["status", "updated_at"])
    backup.soft_delete()


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
    backup's bytes, grown to its own size; it ends ``available`` (``error_restoring`` on failure,
    as Cinder) and the backup ``available`` again either way."""
    vol = Volume.objects.get(pk=volume_id)
    backend = get_backend()
    try:
        if not backend.path(vol.id).exists():
            vol.provider_location = backend.create(vol.id, vol.size)
        _copy_sparse(backup_path(backup_id), backend.path(vol.id), size=vol.size * GiB)
        vol.status = VolumeStatus.AVAILABLE
    except (VolumeBackendError, OSError) as exc:
        log.warning("restoring backup %s into volume %s failed: %s", backup_id, volume_id, exc)
        vol.status = VolumeStatus.ERROR_RESTORING
    vol.save(update_fields=["provider_location", "status", "updated_at"])
    Backup.objects.filter(pk=backup_id, status=BackupStatus.RESTORING).update(
        status=BackupStatus.AVAILABLE, updated_at=timezone.now())
