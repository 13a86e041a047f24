"""``rebuild``: a server gets a fresh disk from an image (the same or a new one), keeping its uuid,
ports and host.

- ACTIVE, STOPPED or ERROR image-backed servers are rebuilt on their host: when the image
  changes, the scheduler's filters re-validate the current host first (nothing is claimed);
  then the compute destroys the guest, spawns it from the image and ends ACTIVE, or SHUTOFF if
  it was stopped.
- A PENDING server (seed 3) is scheduled again from cell0 (``rebuild_pending``).
- A volume-backed server cannot change image before 2.93 (Nova's 400); reimaging its root volume
  (seed 1) needs the volumes service.
"""
from __future__ import annotations

from typing import Any

from cells.models import CellMapping
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import InstanceInvalidState, Invalid, NoValidHost
from cloudcore.core.policy import authorize
from compute import rpc as compute_rpc
from scheduling.models import RequestSpec
from scheduling.request_spec import spec_for_rebuild_check
from scheduling.scheduler import select_destinations

from ..choices import TaskState, VmState
from ..models import Instance
from . import actions
from .guards import check_not_locked, claim_task_state
from .power import cast, target
from .rebuild_bfv import validate_volume_backed_rebuild
from .rebuild_pending import server_rebuild_pending

REBUILD_STATES = [VmState.ACTIVE, VmState.STOPPED, VmState.ERROR]


class VolumeBackedRebuildNotSupported(Invalid):
    message = ("Rebuilding a volume-backed server with a different image is not supported. Use microversion 2.93 "
               "with reimage_boot_volume to reimage the root volume.")


class ImageNotAcceptableForHost(Invalid):
    message = "Image %(image_id)s is unacceptable: the server's host does not accept it (%(reason)s)."


def server_rebuild(*, actor: RequestContext, instance: Instance, cell: CellMapping, image: dict[str, Any],
                   changes: dict[str, Any], admin_pass: str, preserve_ephemeral: bool = False,
                   version: tuple[int, ...] = (2, 1), reimage_boot_volume: bool | None = None) -> None:
    """``changes``: Instance fields set by the rebuild (display_name, metadata, key_name, ...).
    ``version``/``reimage_boot_volume``: seed 1's rules (``services.rebuild_bfv``)."""
    authorize(actor, "os_compute_api:servers:rebuild", target(instance))
    check_not_locked(actor, instance)
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
    if instance.is_volume_backed:
        image_changed = False  # the host is not re-validated: the volume carries the image (Nova)
    if image_changed and instance.host:
        _check_host_accepts(actor, instance, image)
    claim_task_state(instance, "rebuild", new_task_state=TaskState.REBUILDING, vm_states=REBUILD_STATES)
    if changes:
        for key, value in changes.items():
            setattr(instance, key, value)
        instance.save(update_fields=[*changes, "updated_at"])
    actions.action_start(actor, instance_uuid=instance.uuid, action="rebuild")
    if image_changed:
        spec = RequestSpec.objects.filter(instance_uuid=instance.uuid).first()
        if spec is not None:
            spec.spec = {**spec.spec, "image": image}
            spec.save(update_fields=["spec", "updated_at"])
    cast(compute_rpc.rebuild, actor=actor, instance=instance, cell=cell, image_id=image["id"], admin_pass=admin_pass,
         preserve_ephemeral=preserve_ephemeral, reimage_boot_volume=bool(reimage))


def _check_host_accepts(actor: RequestContext, instance: Instance, image: dict[str, Any]) -> None:
    row = RequestSpec.objects.filter(instance_uuid=instance.uuid).first()
    spec = spec_for_rebuild_check(row.spec if row else {}, host=str(instance.host), node=instance.node, image=image)
    spec.setdefault("project_id", instance.project_id)
    spec.setdefault("user_id", instance.user_id)
    spec.setdefault("flavor", instance.flavor)
    try:
        select_destinations(actor, spec, [instance.uuid], return_alternates=False)
    except NoValidHost as exc:
        raise ImageNotAcceptableForHost(image_id=image["id"], reason=str(exc)) from exc
