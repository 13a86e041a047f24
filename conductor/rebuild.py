"""The conductor's half of a rebuild (``rebuild_instance``, cast by ``servers.services.rebuild``
through ``conductor.rpc`` once the API has claimed task_state ``rebuilding``).

When the image changes, the scheduler's filters re-validate the server's current host with the
new image (``spec_for_rebuild_check``: nothing is claimed, the server stays where it is); the
request spec then records the new image. The rebuild itself is cast to the server's host
(``compute.rpc.rebuild``). A host that does not accept the image is Nova's asynchronous
NoValidHost: the server goes to ERROR with the fault, the ``rebuild`` action fails at its
``rebuild_server`` event, and the host is never asked.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from cells.context import target_cell
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import InstanceInvalidState, NoValidHost
from compute import rpc as compute_rpc
from scheduling.request_spec import spec_for_rebuild_check
from scheduling.scheduler import select_destinations
from scheduling.services.request_specs import request_spec_get, request_spec_update
from servers.choices import TaskState, VmState
from servers.selectors import instance_get
from servers.services import actions
from servers.services.create import with_image_items
from servers.services.guards import claim_task_state
from servers.services.notify import conductor_publisher, notify_compute_task_error, notify_instance

if TYPE_CHECKING:
    from servers.models import Instance

log = logging.getLogger(__name__)

EVENT_REBUILD_CHECK = "rebuild_server"


def rebuild_instance(
    ctx: RequestContext, *, instance_uuid: str, cell_uuid: str, image: dict[str, Any], image_changed: bool,
    admin_pass: str | None, preserve_ephemeral: bool, reimage_boot_volume: bool,
    original_image: dict[str, Any] | None = None,
) -> None:
    """Re-validate the host for a new image, then cast the rebuild to it (see module doc). A
    server no longer ``rebuilding`` (deleted meanwhile) is left alone. A host that refuses the new
    image puts the server in ERROR with its ``original_image`` back (``image_ref`` and the ``image_*``
    system metadata the API replaced; Nova's conductor puts the image_ref back)."""
    with target_cell(cell_uuid):
        instance = instance_get(instance_uuid)
        if instance is None or instance.task_state != TaskState.REBUILDING:
            return
        if image_changed and instance.host:
            try:
                with actions.wrap_event(ctx, instance_uuid=instance_uuid, event=EVENT_REBUILD_CHECK,
                                        action_name="rebuild"):
                    _check_host_accepts(ctx, instance, request_spec_get(instance_uuid) or {}, image)
            except NoValidHost as exc:
                log.info("rebuild of %s refused: its host does not accept image %s", instance_uuid, image.get("id"))
                _error_out(ctx, instance, exc, original_image=original_image)
                return
        if image_changed:
            request_spec_update(instance_uuid, image=image)
            # the scheduler accepted the host for the new image (Nova's conductor says so)
            notify_instance(ctx, "instance.rebuild_scheduled", instance, publisher=conductor_publisher())
        compute_rpc.rebuild(ctx=ctx, host=str(instance.host), instance_uuid=instance_uuid, cell_uuid=cell_uuid,
                            image_id=image["id"], admin_pass=admin_pass, preserve_ephemeral=preserve_ephemeral,
                            reimage_boot_volume=reimage_boot_volume)


def _check_host_accepts(ctx: RequestContext, instance: Instance, base: dict[str, Any], image: dict[str, Any]) -> None:
    spec = spec_for_rebuild_check(base, host=str(instance.host), node=instance.node, image=image)
    spec.setdefault("project_id", instance.project_id)
    spec.setdefault("user_id", instance.user_id)
    spec.setdefault("flavor", instance.flavor)
    select_destinations(ctx, spec, [instance.uuid], return_alternates=False)


def _error_out(ctx: RequestContext, instance: Instance, exc: BaseException, *,
               original_image: dict[str, Any] | None = None) -> None:
    old_vm_state = instance.vm_state
    restored: dict[str, Any] = {}
    if original_image is not None:
        restored = {"image_ref": original_image.get("image_ref") or "", "system_metadata": with_image_items(
            instance.system_metadata, dict(original_image.get("image_meta") or {}))}
    try:
        claim_task_state(instance, "rebuild", new_task_state=None, expected_task_states=(TaskState.REBUILDING,),
                         vm_state=VmState.ERROR, **restored)
    except InstanceInvalidState:  # deleted meanwhile
        return
    actions.fault_add(instance_uuid=instance.uuid, exc=exc, host=instance.host)
    actions.action_finish(ctx, instance_uuid=instance.uuid, failed=True)
    notify_instance(ctx, "instance.update", instance, old_vm_state=old_vm_state, old_task_state=TaskState.REBUILDING)
    notify_compute_task_error("rebuild_server", instance_uuid=instance.uuid, vm_state=VmState.ERROR, exc=exc,
                              request_spec=request_spec_get(instance.uuid) or {})
