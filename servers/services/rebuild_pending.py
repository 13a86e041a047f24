"""Rebuilding a PENDING server (seed 3, DESIGN.md section 7.3): schedule its build again.

The server was buried in cell0 because no host fitted. A rebuild turns it back into a
BuildRequest (same uuid, with the rebuild's new image/name/metadata), points its mapping at no
cell, hard-deletes the cell0 copy, and asks the conductor to schedule it again: BUILD, then
ACTIVE in a real cell, or back to PENDING (or ERROR) in cell0 on NoValidHost.
"""
from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from cells.context import target_cell
from cells.services import instance_mapping_set_cell
from cells.transactions import api_atomic, api_on_commit
from cloudcore.core.context import RequestContext
from conductor import rpc as conductor_rpc
from scheduling.services.request_specs import request_spec_update

from ..choices import TaskState, VmState
from ..models import BlockDeviceMapping, BuildRequest, Instance, Tag
from . import actions
from .guards import claim_task_state
from .history import history_take, rows_hard_delete

if TYPE_CHECKING:
    from cells.models import CellMapping

_SKIP = {"id", "compute_id", "deleted", "deleted_at", "updated_at"}


def server_rebuild_pending(
    *, actor: RequestContext, instance: Instance, cell: CellMapping, image: dict[str, Any] | None,
    changes: dict[str, Any], admin_pass: str,
) -> None:
    """Precondition: vm_state ``pending`` (checked with a compare-and-swap). ``changes`` holds
    Instance fields the rebuild sets (display_name, metadata, key_name, user_data, ...)."""
    with target_cell(cell):
        claim_task_state(instance, "rebuild", new_task_state=TaskState.REBUILDING,
                         vm_states=[VmState.PENDING])
        actions.action_start(actor, instance_uuid=instance.uuid, action="rebuild")
        data: dict[str, Any] = {}
        for f in Instance._meta.concrete_fields:
            if f.attname in _SKIP:
                continue
            value = getattr(instance, f.attname)
            data[f.attname] = value.isoformat() if hasattr(value, "isoformat") else value
        data.update(changes)
        if image is not None:
            data["image_ref"] = image["id"]
            props = image.get("properties", {})
            data["kernel_id"] = str(props.get("kernel_id", ""))
            data["ramdisk_id"] = str(props.get("ramdisk_id", ""))
            data["system_metadata"] = {f"image_{k}": str(v) for k, v in props.items()}
        data.update(vm_state=VmState.BUILDING, task_state=TaskState.SCHEDULING, host=None, node=None)
        bdms = [
            {"source_type": b.source_type, "destination_type": b.destination_type, "boot_index": b.boot_index,
             "uuid": b.volume_id or b.image_id or b.snapshot_id, "volume_size": b.volume_size,
             "delete_on_termination": b.delete_on_termination, "device_name": b.device_name, "tag": b.tag}
            for b in BlockDeviceMapping.objects.filter(instance_uuid=instance.uuid)
        ]
        tags = list(Tag.objects.filter(instance_uuid=instance.uuid).values_list("tag", flat=True))
        history = history_take(instance.uuid)  # the rebuild action, started above, included
    with api_atomic():
        BuildRequest.objects.create(instance_uuid=instance.uuid, project_id=instance.project_id,
                                    instance=data, block_device_mappings=bdms, tags=tags, history=history)
        instance_mapping_set_cell(instance.uuid, None)
        if image is not None:
            request_spec_update(instance.uuid, image=image)
    # Everything of the server leaves cell0 for good: the next scheduling attempt creates it afresh
    # where it lands, its history restored there (no duplicate BDMs if it is buried again).
    with target_cell(cell):
        rows_hard_delete(instance.uuid)
    api_on_commit(partial(conductor_rpc.schedule_and_build_instances, ctx=actor,
                                  instance_uuids=[instance.uuid], admin_pass=admin_pass))
