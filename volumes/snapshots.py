"""Volume snapshots (Cinder's ``/snapshots``): a copy of a volume's bytes at one moment.

A snapshot is ``creating`` until the volume worker has copied the bytes, then ``available``;
``deleting`` until the worker removed them. A volume that has snapshots cannot be deleted; a
new volume can start from an ``available`` snapshot (``snapshot_id`` on volume create). Before
3.66 an ``in-use`` volume needs ``force``; from 3.66 it is always allowed (Cinder).
"""
from __future__ import annotations

import logging
import time
from typing import Any

from django.utils import timezone

from cells.transactions import api_on_commit
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Invalid, NotFound
from cloudcore.core.policy import authorize

from . import rpc
from .backends import VolumeBackendError, get_backend
from .models import Snapshot, SnapshotStatus, Volume, VolumeStatus
from .owned import owned_get, owned_list
from .quotas import quota_check

log = logging.getLogger(__name__)
#: From this microversion a snapshot of an in-use volume needs no ``force``.
FORCE_NOT_NEEDED = (3, 66)


class SnapshotNotFound(NotFound):
    message = "Snapshot %(snapshot_id)s could not be found."


class InvalidSnapshot(Invalid):
    message = "Invalid snapshot: %(reason)s"


def _target(snap: Snapshot | Volume) -> dict[str, Any]:
    return {"project_id": snap.project_id, "user_id": snap.user_id}


def _visible(ctx: RequestContext, snapshot_id: str) -> Snapshot:
    snap = owned_get(ctx, Snapshot.objects.select_related("volume"), snapshot_id)
    if snap is None:
        raise SnapshotNotFound(snapshot_id=snapshot_id)
    return snap


def snapshot_get(ctx: RequestContext, snapshot_id: str) -> Snapshot:
    snap = _visible(ctx, snapshot_id)
    authorize(ctx, "volume:get_snapshot", _target(snap))
    return snap


def snapshot_list(ctx: RequestContext, *, all_tenants: bool = False, filters: dict[str, str] | None = None,
                  limit: int | None = None, offset: int = 0, marker: str | None = None,
                  sort: list[tuple[str, str]] | None = None) -> list[Snapshot]:
    authorize(ctx, "volume:get_all_snapshots", {"project_id": ctx.project_id, "user_id": ctx.user_id})
    return owned_list(ctx, Snapshot.objects.all(), all_tenants=all_tenants, filters=filters, limit=limit,
                      offset=offset, marker=marker, sort=sort)


def snapshot_create(ctx: RequestContext, *, volume: Volume, name: str | None = None, description: str | None = None,
                    force: bool = False, metadata: dict[str, Any] | None = None,
                    version: tuple[int, int] = (3, 0)) -> Snapshot:
    """Record a ``creating`` snapshot of ``volume`` and cast the copy to the volume worker."""
    authorize(ctx, "volume:create_snapshot", _target(volume))
    allowed = [VolumeStatus.AVAILABLE]
    if force or version >= FORCE_NOT_NEEDED:
        allowed.append(VolumeStatus.IN_USE)
    if volume.status not in allowed:
        raise Invalid(f"Invalid volume: Volume {volume.id} status must be available, but current status is: "
                      f"{volume.status}.")
    quota_check(ctx.project_id or volume.project_id, snapshots=1, gigabytes=volume.size)
    snap = Snapshot.objects.create(volume=volume, name=name, description=description, size=volume.size,
                                   project_id=ctx.project_id or volume.project_id,
                                   user_id=ctx.user_id or volume.user_id, metadata=metadata or {})
    api_on_commit(lambda: rpc.snapshot_create(snapshot_id=snap.id))
    return snap


def snapshot_create_backend(snapshot_id: str) -> None:
    """The volume worker's half: copy the volume's bytes."""
    snap = Snapshot.objects.get(pk=snapshot_id)
    try:
        get_backend().snapshot_create(snap.volume_id, snap.id)
        snap.status, snap.progress = SnapshotStatus.AVAILABLE, "100%"
    except (VolumeBackendError, OSError) as exc:
        log.warning("snapshot %s of volume %s failed: %s", snap.id, snap.volume_id, exc)
        snap.status = SnapshotStatus.ERROR
    snap.save(update_fields=["status", "progress", "updated_at"])


def snapshot_await(snapshot_id: str, *, timeout: float, interval: float = 0.5) -> str:
    """Wait (at most ``timeout`` seconds) while the snapshot is ``creating``; its status then.

    A volume-backed server's image names snapshots the volume worker may still be copying when a
    server boots from it; the conductor waits for them before it creates the volumes."""
    deadline = time.monotonic() + timeout
    while True:
        snap = Snapshot.objects.filter(pk=snapshot_id).first()
        status = snap.status if snap is not None else "deleted"
        if status != SnapshotStatus.CREATING or time.monotonic() >= deadline:
            return str(status)
        time.sleep(interval)


def snapshot_update(ctx: RequestContext, snapshot_id: str, *, changes: dict[str, Any]) -> Snapshot:
    snap = _visible(ctx, snapshot_id)
    authorize(ctx, "volume:update_snapshot", _target(snap))
    for key in ("name", "description"):
        if key in changes:
            setattr(snap, key, changes[key])
    snap.save()
    return snap


def snapshot_metadata_set(ctx: RequestContext, snapshot_id: str, *, metadata: dict[str, Any],
                          replace: bool) -> Snapshot:
    snap = _visible(ctx, snapshot_id)
    authorize(ctx, "volume:update_snapshot_metadata", _target(snap))
    snap.metadata = {str(k): str(v) for k, v in metadata.items()} if replace else {
        **snap.metadata, **{str(k): str(v) for k, v in metadata.items()}}
    snap.save(update_fields=["metadata", "updated_at"])
    return snap


def snapshot_metadata_delete(ctx: RequestContext, snapshot_id: str, *, key: str) -> None:
    snap = _visible(ctx, snapshot_id)
    authorize(ctx, "volume:delete_snapshot_metadata", _target(snap))
    if key not in (snap.metadata or {}):
        raise NotFound(f"Metadata item was not found with key {key}.")
    snap.metadata = {k: v for k, v in snap.metadata.items() if k != key}
    snap.save(update_fields=["metadata", "updated_at"])


def snapshot_delete(ctx: RequestContext, snapshot_id: str) -> None:
    snap = _visible(ctx, snapshot_id)
    authorize(ctx, "volume:delete_snapshot", _target(snap))
    if snap.status not in (SnapshotStatus.AVAILABLE, SnapshotStatus.ERROR):
        raise InvalidSnapshot(reason=f"Snapshot status must be available or error, but current status is: "
                                     f"{snap.status}.")
    Snapshot.objects.filter(pk=snap.pk).update(status=SnapshotStatus.DELETING, updated_at=timezone.now())
    api_on_commit(lambda: rpc.snapshot_delete(snapshot_id=snap.id))


def snapshot_delete_backend(snapshot_id: str) -> None:
    snap = Snapshot.objects.get(pk=snapshot_id)
    try:
        get_backend().snapshot_delete(snap.id)
    except (VolumeBackendError, OSError):
        Snapshot.objects.filter(pk=snapshot_id).update(status=SnapshotStatus.ERROR_DELETING)
        return
    snap.delete()  # soft delete


def snapshot_for_new_volume(ctx: RequestContext, snapshot_id: str, size: int | None) -> tuple[Snapshot, int]:
    """The ``available`` snapshot a new volume starts from, and the volume's size (the snapshot's
    when none is asked; never smaller)."""
    snap = snapshot_get(ctx, snapshot_id)
    if snap.status != SnapshotStatus.AVAILABLE:
        raise InvalidSnapshot(reason="Originating snapshot status must be one of 'available' values")
    wanted = snap.size if size is None else int(size)
    if wanted < snap.size:
        raise Invalid(f"Invalid input received: Volume size '{wanted}'GB cannot be smaller than the snapshot "
                      f"size {snap.size}GB. They must be >= original snapshot size.")
    return snap, wanted
