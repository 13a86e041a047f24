"""``rebuild``: a server gets a fresh disk from an image (the same or a new one), keeping its uuid,
ports and host.

- ACTIVE, STOPPED or ERROR image-backed servers are rebuilt on their host. The API side checks,
  claims task_state ``rebuilding``, applies the changes and records the action, then casts to the
  conductor on commit (``conductor.rebuild``): when the image changes the scheduler's filters
  re-validate the current host there (nothing is claimed; a host that refuses the image puts the
  server in ERROR with a NoValidHost fault, as Nova's conductor does); then the compute destroys
  the guest, spawns it from the image and ends ACTIVE, or SHUTOFF if it was stopped.
- A PENDING server (seed 3) is scheduled again from cell0 (``rebuild_pending``).
- A volume-backed server cannot change image before 2.93 (Nova's 400); reimaging its root volume
  (seed 1) needs the volumes service.
"""
from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from cells.transactions import api_on_commit
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import InstanceInvalidState, Invalid
from cloudcore.core.policy import authorize
from conductor import rpc as conductor_rpc

from ..choices import TaskState, VmState
from ..models import Instance
from . import actions
from .create import image_items, image_system_metadata, with_image_items
from .disk_config import auto_disk_config_for_image
from .guards import check_not_locked, claim_task_state
from .power import target
from .rebuild_bfv import validate_volume_backed_rebuild
from .rebuild_pending import server_rebuild_pending

if TYPE_CHECKING:
    from cells.models import CellMapping

REBUILD_STATES = [VmState.ACTIVE, VmState.STOPPED, VmState.ERROR]


class VolumeBackedRebuildNotSupported(Invalid):
    message = ("Rebuilding a volume-backed server with a different image is not supported. Use microversion 2.93 "
               "with reimage_boot_volume to reimage the root volume.")


def server_rebuild(*, actor: RequestContext, instance: Instance, cell: CellMapping, image: dict[str, Any],
                   changes: dict[str, Any], admin_pass: str, preserve_ephemeral: bool = False,
                   version: tuple[int, ...] = (2, 1), reimage_boot_volume: bool | None = None,
                   auto_disk_config: bool | None = None) -> None:
    """``changes``: Instance fields set by the rebuild (display_name, metadata, key_name, ...).
    ``auto_disk_config``: the body's ``OS-DCF:diskConfig`` (None: the server keeps its own); AUTO of an
    image that disables it is a 400 (``AutoDiskConfigDisabledByImage``), checked before the claim.
    ``version``/``reimage_boot_volume``: seed 1's rules (``services.rebuild_bfv``)."""
    authorize(actor, "os_compute_api:servers:rebuild", target(instance))
    check_not_locked(actor, instance)
    if auto_disk_config is not None:
        changes = {**changes, "auto_disk_config": auto_disk_config_for_image(image, auto_disk_config)}
    if instance.vm_state == VmState.PENDING:
        server_rebuild_pending(actor=actor, instance=instance, cell=cell, image=image, changes=changes,
                               admin_pass=admin_pass)
        return
    if instance.launched_at is None and instance.vm_state in REBUILD_STATES and instance.task_state is None:
        # Never launched (ERROR in cell0, a PENDING server reset to ERROR): Nova's must_have_launched.
        raise InstanceInvalidState(method="rebuild", instance_uuid=instance.uuid, attr="launched_at", state=None)
    image_changed = image["id"] != instance.image_ref
    reimage = validate_volume_backed_rebuild(instance=instance, image=image, version=(version[0], version[1]),
                                             reimage_boot_volume=reimage_boot_volume)
    original_image: dict[str, Any] | None = None
    # the image properties the server keeps are the new image's from now on, as Nova's API resets
    # them before the cast, a volume-backed server's too (its ``image_base_image_ref`` then names
    # the image, as Nova's does after a rebuild)
    changes = {**changes, "system_metadata": with_image_items(
        instance.system_metadata, image_system_metadata(image, volume_backed=False))}
    if instance.is_volume_backed:
        image_changed = False  # the host is not re-validated: the volume carries the image (Nova)
    else:
        # the server's image is the new one too (the answer and every read show it). The conductor
        # puts both back if the host refuses the new image.
        original_image = {"image_ref": instance.image_ref, "image_meta": image_items(instance.system_metadata)}
        changes = {**changes, "image_ref": image["id"]}
    claim_task_state(instance, "rebuild", new_task_state=TaskState.REBUILDING, vm_states=REBUILD_STATES)
    if changes:
        for key, value in changes.items():
            setattr(instance, key, value)
        instance.save(update_fields=[*changes, "updated_at"])
    actions.action_start(actor, instance_uuid=instance.uuid, action="rebuild")
    api_on_commit(partial(conductor_rpc.rebuild_instance, ctx=actor, instance_uuid=instance.uuid,
                          cell_uuid=str(cell.uuid), image=image, image_changed=image_changed, admin_pass=admin_pass,
                          preserve_ephemeral=preserve_ephemeral, reimage_boot_volume=bool(reimage),
                          original_image=original_image))

