"""Volume worker tasks (queue ``volume``): ids in, one service call."""
from __future__ import annotations

from celery import shared_task

from cells.isolation import on_service_side

from . import backups, groups, services, snapshots


@shared_task(name="volumes.volume_create_task", queue="volume", time_limit=3600)
@on_service_side
def volume_create_task(*, volume_id: str, request_id: str | None = None) -> None:
    services.volume_create_backend(volume_id, request_id)


@shared_task(name="volumes.volume_delete_task", queue="volume", time_limit=600)
@on_service_side
def volume_delete_task(*, volume_id: str) -> None:
    services.volume_delete_backend(volume_id)


@shared_task(name="volumes.volume_extend_task", queue="volume", time_limit=600)
@on_service_side
def volume_extend_task(*, volume_id: str, new_size: int, prior_status: str) -> None:
    services.volume_extend_backend(volume_id, new_size, prior_status)


@shared_task(name="volumes.volume_reimage_task", queue="volume", time_limit=3600)
@on_service_side
def volume_reimage_task(*, volume_id: str, image_id: str, prior_status: str) -> None:
    services.volume_reimage_backend(volume_id, image_id, prior_status)


@shared_task(name="volumes.snapshot_create_task", queue="volume", time_limit=3600)
@on_service_side
def snapshot_create_task(*, snapshot_id: str) -> None:
    snapshots.snapshot_create_backend(snapshot_id)


@shared_task(name="volumes.snapshot_delete_task", queue="volume", time_limit=600)
@on_service_side
def snapshot_delete_task(*, snapshot_id: str) -> None:
    snapshots.snapshot_delete_backend(snapshot_id)


@shared_task(name="volumes.backup_create_task", queue="volume", time_limit=3600)
@on_service_side
def backup_create_task(*, backup_id: str) -> None:
    backups.backup_create_backend(backup_id)


@shared_task(name="volumes.backup_delete_task", queue="volume", time_limit=600)
@on_service_side
def backup_delete_task(*, backup_id: str) -> None:
    backups.backup_delete_backend(backup_id)


@shared_task(name="volumes.backup_restore_task", queue="volume", time_limit=3600)
@on_service_side
def backup_restore_task(*, backup_id: str, volume_id: str) -> None:
    backups.backup_restore_backend(backup_id, volume_id)


@shared_task(name="volumes.backup_import_task", queue="volume", time_limit=600)
@on_service_side
def backup_import_task(*, backup_id: str) -> None:
    backups.backup_import_backend(backup_id)


@shared_task(name="volumes.group_snapshot_create_task", queue="volume", time_limit=3600)
@on_service_side
def group_snapshot_create_task(*, group_snapshot_id: str) -> None:
    groups.group_snapshot_create_backend(group_snapshot_id)


@shared_task(name="volumes.group_snapshot_delete_task", queue="volume", time_limit=600)
@on_service_side
def group_snapshot_delete_task(*, group_snapshot_id: str) -> None:
    groups.group_snapshot_delete_backend(group_snapshot_id)
