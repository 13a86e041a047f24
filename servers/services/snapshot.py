"""``createImage`` and ``createBackup``: a snapshot of an image-backed server's disk, uploaded to
the image service (``createImage`` of a volume-backed server: ``snapshot_bfv``).

The image record (queued, owned by the server's project, ``image_type`` snapshot, the server's
uuid and base image in its properties plus the request's metadata) is created at once so its id
can be answered; the compute host writes the bytes (task_state ``image_snapshot`` →
``image_uploading``) and the image becomes active. A backup is the same with ``image_type``
backup and its ``backup_type`` (task_state ``image_backup``); the host then rotates the server's
backups of that type (``compute.ops.backup``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Invalid
from cloudcore.core.policy import authorize
from compute import rpc as compute_rpc

from ..choices import TaskState
from ..models import Instance
from . import actions
from .external import image_get_internal, image_snapshot_create
from .guards import check_not_locked, claim_task_state
from .power import cast, target
from .snapshot_bfv import SNAPSHOT_STATES, owner_context, server_snapshot_volume_backed

if TYPE_CHECKING:
    from cells.models import CellMapping


class VolumeBackedBackupNotSupported(Invalid):
    message = "Backup is not supported for volume-backed instances."


def server_create_image(*, actor: RequestContext, instance: Instance, cell: CellMapping, name: str,
                        metadata: dict[str, Any]) -> str:
    """Returns the new image's id. A volume-backed server is snapshotted through the volume
    service at once (``snapshot_bfv``); any other's disk is uploaded by its host."""
    authorize(actor, "os_compute_api:servers:create_image", target(instance))
    if instance.is_volume_backed:
        return server_snapshot_volume_backed(actor=actor, instance=instance, name=name, metadata=metadata)
    image_id = _queue_image(actor, instance, method="createImage", task_state=TaskState.IMAGE_SNAPSHOT,
                            name=name, properties=metadata)
    cast(compute_rpc.snapshot, actor=actor, instance=instance, cell=cell, image_id=image_id)
    return image_id


def server_create_backup(*, actor: RequestContext, instance: Instance, cell: CellMapping, name: str,
                         backup_type: str, rotation: int, metadata: dict[str, Any]) -> str:
    """``createBackup``: a snapshot image (``image_type`` backup, ``backup_type``) of the server in
    task_state ``image_backup``; the host then deletes the oldest backups of that type beyond
    ``rotation`` (0: all of them, the new one too). Returns the new image's id."""
    authorize(actor, "os_compute_api:os-create-backup", target(instance))
    if instance.is_volume_backed:
        raise VolumeBackedBackupNotSupported()
    image_id = _queue_image(actor, instance, method="createBackup", task_state=TaskState.IMAGE_BACKUP, name=name,
                            properties={**metadata, "image_type": "backup", "backup_type": backup_type})
    cast(compute_rpc.backup, actor=actor, instance=instance, cell=cell, image_id=image_id, backup_type=backup_type,
         rotation=rotation)
    return image_id


def _queue_image(actor: RequestContext, instance: Instance, *, method: str, task_state: str, name: str,
                 properties: dict[str, Any]) -> str:
    """Refuse a locked server, claim ``task_state``, create the queued image owned by the server's
    project and record the action ``method``; returns the image's id."""
    check_not_locked(actor, instance)
    claim_task_state(instance, method, new_task_state=task_state, vm_states=SNAPSHOT_STATES)
    try:
        base = image_get_internal(instance.image_ref)
    except Exception:  # the base image may have been deleted since the boot
        base = None
    image = image_snapshot_create(owner_context(actor, instance), name=name, instance_uuid=instance.uuid, base=base,
                                  properties={"base_image_ref": instance.image_ref, "user_id": instance.user_id,
                                              **properties})
    actions.action_start(actor, instance_uuid=instance.uuid, action=method)
    return str(image.id)
