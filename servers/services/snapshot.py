"""``createImage``: a snapshot of an image-backed server's disk, uploaded to the image service.

The image record (queued, owned by the server's project, ``image_type`` snapshot, the server's
uuid and base image in its properties plus the request's metadata) is created at once so its id
can be answered; the compute host writes the bytes (task_state ``image_snapshot`` →
``image_uploading``) and the image becomes active.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Invalid
from cloudcore.core.policy import authorize
from compute import rpc as compute_rpc
from images.services import image_get_internal, image_snapshot_create

from ..choices import TaskState, VmState
from ..models import Instance
from . import actions
from .guards import check_not_locked, claim_task_state
from .power import cast, target

if TYPE_CHECKING:
    from cells.models import CellMapping

SNAPSHOT_STATES = [VmState.ACTIVE, VmState.STOPPED, VmState.PAUSED, VmState.SUSPENDED]


class VolumeBackedSnapshotNotSupported(Invalid):
    message = "Creating an image of a volume-backed server is not supported by this cloud."


def server_create_image(*, actor: RequestContext, instance: Instance, cell: CellMapping, name: str,
                        metadata: dict[str, Any]) -> str:
    """Returns the new image's id."""
    authorize(actor, "os_compute_api:servers:create_image", target(instance))
    check_not_locked(actor, instance)
    if instance.is_volume_backed:
        raise VolumeBackedSnapshotNotSupported()
    claim_task_state(instance, "createImage", new_task_state=TaskState.IMAGE_SNAPSHOT, vm_states=SNAPSHOT_STATES)
    try:
        base = image_get_internal(instance.image_ref)
    except Exception:  # the base image may have been deleted since the boot
        base = None
    owner_ctx = RequestContext(user_id=actor.user_id, project_id=instance.project_id, roles=actor.roles,
                               is_admin=actor.is_admin, request_id=actor.request_id)
    image = image_snapshot_create(owner_ctx, name=name, instance_uuid=instance.uuid, base=base,
                                  properties={"base_image_ref": instance.image_ref, "user_id": instance.user_id,
                                              **metadata})
    actions.action_start(actor, instance_uuid=instance.uuid, action="createImage")
    cast(compute_rpc.snapshot, actor=actor, instance=instance, cell=cell, image_id=image.id)
    return image.id
