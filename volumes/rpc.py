"""Casts to the volume worker (queue ``volume``): one keyword-only function per task.

Tasks are sent by name, so ``volumes.services`` never imports ``volumes.tasks`` (the tasks call
the services; the import goes one way). The caller decides when to cast: on commit of the API
database (``cells.transactions``), or at once.
"""
from __future__ import annotations

from typing import Any

from celery import current_app

QUEUE = "volume"


def _cast(task_name: str, **kwargs: Any) -> None:
    current_app.tasks[task_name].apply_async(kwargs=kwargs, queue=QUEUE)


def volume_create(*, volume_id: str, request_id: str | None = None) -> None:
    _cast("volumes.volume_create_task", volume_id=volume_id, request_id=request_id)


def volume_delete(*, volume_id: str) -> None:
    _cast("volumes.volume_delete_task", volume_id=volume_id)


def volume_extend(*, volume_id: str, new_size: int, prior_status: str) -> None:
    _cast("volumes.volume_extend_task", volume_id=volume_id, new_size=new_size, prior_status=prior_status)


def volume_reimage(*, volume_id: str, image_id: str, prior_status: str) -> None:
    _cast("volumes.volume_reimage_task", volume_id=volume_id, image_id=image_id, prior_status=prior_status)


def snapshot_create(*, snapshot_id: str) -> None:
    _cast("volumes.snapshot_create_task", snapshot_id=snapshot_id)


def snapshot_delete(*, snapshot_id: str) -> None:
    _cast("volumes.snapshot_delete_task", snapshot_id=snapshot_id)


def backup_create(*, backup_id: str) -> None:
    _cast("volumes.backup_create_task", backup_id=backup_id)


def backup_delete(*, backup_id: str) -> None:
    _cast("volumes.backup_delete_task", backup_id=backup_id)


def backup_restore(*, backup_id: str, volume_id: str) -> None:
    _cast("volumes.backup_restore_task", backup_id=backup_id, volume_id=volume_id)


def backup_import(*, backup_id: str) -> None:
    _cast("volumes.backup_import_task", backup_id=backup_id)


def group_snapshot_create(*, group_snapshot_id: str) -> None:
    _cast("volumes.group_snapshot_create_task", group_snapshot_id=group_snapshot_id)


def group_snapshot_delete(*, group_snapshot_id: str) -> None:
    _cast("volumes.group_snapshot_delete_task", group_snapshot_id=group_snapshot_id)
