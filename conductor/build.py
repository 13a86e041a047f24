"""The conductor's half of a build: schedule, place the instance in its cell, or bury it in cell0.

``schedule_and_build_instances`` runs on the conductor queue. For each accepted server it asks
the scheduler for a host (which claims placement allocations), creates the Instance in that
host's cell, points the InstanceMapping at the cell, deletes the BuildRequest and casts
``build_and_run_instance`` to the host (``compute.rpc``) with what the host needs of the request
spec (the requested networks: a compute host never reads the API database). When scheduling
fails the servers are buried in cell0 (vm_state ``error``, or ``pending`` for NoValidHost with
USE_PENDING_STATE).

``reschedule_build`` runs when a host's build failed and the host cast the build back here
(``conductor.rpc.reschedule_build``): the failed host's allocations go, the next same-cell
alternate that still fits is claimed and the build cast there; with none left the server goes
to ERROR with MaxRetriesExceeded.
"""
from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from cells.context import target_cell
from cells.models import CELL0_UUID, CellMapping, HostMapping, InstanceMapping
from cells.transactions import atomic
from cloudcore.core import notifications
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import NoValidHost
from compute import rpc as compute_rpc
from compute.exceptions import MaxRetriesExceeded
from hosts.models import ComputeNode
from networks.secgroups import requested_groups_for_instance
from scheduling.models import RequestSpec
from scheduling.placement.services import allocations_delete, claim_allocation_request
from scheduling.scheduler import select_destinations
from scheduling.services.aggregates import host_availability_zone
from servers.choices import TaskState, VmState
from servers.models import BlockDeviceMapping, BuildRequest, Instance, Tag
from servers.services import actions
from servers.services.build_failure import build_error_out
from servers.services.history import history_restore, open_action
from servers.services.notify import notify_instance
from servers.services.volume_attachments import bdm_volumes_create

log = logging.getLogger(__name__)

EVENT_SCHEDULE_AND_BUILD = "conductor_schedule_and_build_instances"

_INSTANCE_FIELDS = {f.name for f in Instance._meta.get_fields() if getattr(f, "concrete", False)}


def instance_from_build_request(br: BuildRequest, **overrides: Any) -> Instance:
    """An unsaved Instance built from the BuildRequest's serialised instance."""
    data = {k: v for k, v in br.instance.items() if k in _INSTANCE_FIELDS and k not in ("id",)}
    if isinstance(data.get("created_at"), str):
        data["created_at"] = parse_datetime(data["created_at"]) or timezone.now()
    data.update(overrides)
    return Instance(**data)


def _store_bdms_and_tags(br: BuildRequest, instance_uuid: str) -> None:
    for bdm in br.block_device_mappings or []:
        BlockDeviceMapping.objects.create(
            instance_uuid=instance_uuid,
            source_type=bdm.get("source_type", "image"),
            destination_type=bdm.get("destination_type", "local"),
            boot_index=bdm.get("boot_index"),
            device_name=bdm.get("device_name"),
            delete_on_termination=bool(bdm.get("delete_on_termination", False)),
            image_id=bdm.get("uuid") if bdm.get("source_type") == "image" else None,
            volume_id=bdm.get("uuid") if bdm.get("source_type") == "volume" else None,
            snapshot_id=bdm.get("uuid") if bdm.get("source_type") == "snapshot" else None,
            volume_size=bdm.get("volume_size"),
            volume_type=bdm.get("volume_type"),
            disk_bus=bdm.get("disk_bus"),
            device_type=bdm.get("device_type"),
            guest_format=bdm.get("guest_format"),
            tag=bdm.get("tag"),
        )
    for tag in br.tags or []:
        Tag.objects.get_or_create(instance_uuid=instance_uuid, tag=tag)


def bury_in_cell0(ctx: RequestContext, *, instance_uuid: str, exc: BaseException) -> None:
    """Create the server in cell0 with a failed ``create`` action and a fault.

    vm_state is ``pending`` when USE_PENDING_STATE is on and ``exc`` is NoValidHost, else
    ``error``. Skipped when the mapping already points at a cell. If the BuildRequest is gone
    (the user deleted the server meanwhile) the cell0 copy is removed again.
    """
    cell0 = CellMapping.objects.get(uuid=CELL0_UUID)
    mapping = InstanceMapping.objects.filter(instance_uuid=instance_uuid).first()
    if mapping is None or mapping.cell_id is not None:
        return
    br = BuildRequest.objects.filter(instance_uuid=instance_uuid).first()
    if br is None:
        return
    pending = settings.USE_PENDING_STATE and isinstance(exc, NoValidHost)
    vm_state = VmState.PENDING if pending else VmState.ERROR
    with target_cell(cell0):
        with atomic(cell0):
            instance = instance_from_build_request(br, vm_state=vm_state, task_state=None)
            instance.save()
            history_restore(br.history)
            if not open_action(br.history, ctx.request_id):  # a PENDING rebuild has its own action
                actions.action_start(ctx, instance_uuid=instance_uuid, action="create")
            ev = actions.event_start(ctx, instance_uuid=instance_uuid, event=EVENT_SCHEDULE_AND_BUILD)
            actions.event_finish(ev, exc=exc)
            actions.action_finish(ctx, instance_uuid=instance_uuid, failed=True)
            _store_bdms_and_tags(br, instance_uuid)
            actions.fault_add(instance_uuid=instance_uuid, exc=exc, code=500)
    mapping.cell = cell0
    mapping.save(update_fields=["cell", "updated_at"])
    deleted = BuildRequest.objects.filter(instance_uuid=instance_uuid).delete()[0]
    with target_cell(cell0):
        if not deleted:
            Instance.all_objects.filter(uuid=instance_uuid).delete()
            return
        notify_instance(ctx, "instance.update", instance, old_vm_state=VmState.BUILDING,
                        old_task_state=TaskState.SCHEDULING)

    notifications.notify(
        "compute_task.build_instances.error",
        {"instance_uuid": instance_uuid, "state": vm_state, "reason": {"exception": type(exc).__name__,
         "exception_message": str(exc)}, "request_spec": _spec(instance_uuid)},
        priority="ERROR", publisher_id="nova-conductor", payload_name="ComputeTaskPayload",
    )


def _spec(instance_uuid: str) -> dict[str, Any]:
    rs = RequestSpec.objects.filter(instance_uuid=instance_uuid).first()
    return rs.spec if rs else {}


def _requested_networks(instance_uuid: str) -> Any:
    """What the build asked of the network service (``"auto"``, ``"none"`` or a list of requests)."""
    return _spec(instance_uuid).get("requested_networks", "auto")


def _selection_fields(selection: Any) -> dict[str, Any]:
    """Selections may be objects or dicts; return a plain dict (also what tasks carry)."""
    if isinstance(selection, dict):
        return dict(selection)
    if hasattr(selection, "to_dict"):
        return selection.to_dict()
    return dict(vars(selection))


def schedule_and_build_instances(
    ctx: RequestContext, *, instance_uuids: list[str], admin_pass: str | None = None
) -> None:
    """Schedule the accepted servers and hand each to its compute host (see module doc)."""

    specs = {rs.instance_uuid: rs for rs in RequestSpec.objects.filter(instance_uuid__in=instance_uuids)}
    live = [u for u in instance_uuids if u in specs and BuildRequest.objects.filter(instance_uuid=u).exists()]
    if not live:
        return
    spec = dict(specs[live[0]].spec)
    spec["num_instances"] = len(live)
    try:
        selections = select_destinations(ctx, spec, live, return_alternates=True)
    except Exception as exc:
        if not isinstance(exc, NoValidHost):
            log.exception("scheduling failed for %s", live)
        for instance_uuid in live:
            bury_in_cell0(ctx, instance_uuid=instance_uuid, exc=exc)
        return
    for instance_uuid, selection_list in zip(live, selections, strict=True):
        chosen = _selection_fields(selection_list[0])
        alternates = [_selection_fields(s) for s in selection_list[1:]]
        _place_instance(ctx, instance_uuid=instance_uuid, selection=chosen, alternates=alternates,
                        admin_pass=admin_pass)


def _place_instance(
    ctx: RequestContext, *, instance_uuid: str, selection: dict[str, Any],
    alternates: list[dict[str, Any]], admin_pass: str | None,
) -> None:
    host = selection["service_host"]
    host_mapping = HostMapping.objects.select_related("cell").filter(host=host).first()
    br = BuildRequest.objects.filter(instance_uuid=instance_uuid).first()
    if host_mapping is None or br is None:
        allocations_delete(consumer_uuid=instance_uuid)
        if host_mapping is None and br is not None:
            bury_in_cell0(ctx, instance_uuid=instance_uuid,
                          exc=NoValidHost(reason=f"Host {host} is not mapped to any cell"))
        return
    cell = host_mapping.cell
    with target_cell(cell):
        node = ComputeNode.objects.filter(uuid=selection["compute_node_uuid"]).first()
        instance = instance_from_build_request(
            br,
            vm_state=VmState.BUILDING,
            task_state=TaskState.SCHEDULING,
            host=host,
            node=selection.get("nodename") or (node.hypervisor_hostname if node else None),
            compute_id=node.id if node else None,
            launched_on=host,
            scheduled_at=timezone.now(),
            availability_zone=_host_az(host, br),
        )
        with atomic(cell):
            instance.save()
            history_restore(br.history)
            if not open_action(br.history, ctx.request_id):  # a PENDING rebuild has its own action
                actions.action_start(ctx, instance_uuid=instance_uuid, action="create")
            _store_bdms_and_tags(br, instance_uuid)
    mapping = InstanceMapping.objects.get(instance_uuid=instance_uuid)
    mapping.cell = cell
    mapping.save(update_fields=["cell", "updated_at"])
    if not BuildRequest.objects.filter(instance_uuid=instance_uuid).delete()[0]:
        # The user deleted the server while it was being scheduled.
        with target_cell(cell):
            Instance.all_objects.filter(uuid=instance_uuid).delete()
        allocations_delete(consumer_uuid=instance_uuid)
        return
    with target_cell(cell):
        bdm_volumes_create(instance)
    compute_rpc.build_and_run_instance(ctx=ctx, host=host, instance_uuid=instance_uuid, cell_uuid=str(cell.uuid),
                                       admin_pass=admin_pass, alternates=alternates,
                                       requested_networks=_requested_networks(instance_uuid),
                                       security_groups=requested_groups_for_instance(instance_uuid))


def reschedule_build(
    ctx: RequestContext, *, instance_uuid: str, cell_uuid: str, admin_pass: str | None,
    alternates: list[dict[str, Any]], attempt: int, reason: str,
) -> None:
    """Retry a build that failed on its host (see module doc). The host has already destroyed
    its guest and freed the ports; the allocations it held are dropped here. A server deleted
    meanwhile is left to its delete."""

    log.info("rescheduling the build of %s after attempt %s: %s", instance_uuid, attempt, reason)
    allocations_delete(consumer_uuid=instance_uuid)
    with target_cell(cell_uuid):
        instance = Instance.objects.filter(uuid=instance_uuid).first()
        if instance is None or instance.task_state == TaskState.DELETING:
            return
        remaining = list(alternates)
        while remaining:
            alt = remaining.pop(0)
            if not claim_allocation_request(
                consumer_uuid=instance_uuid, allocation_request=alt.get("allocation_request"),
                project_id=instance.project_id, user_id=instance.user_id,
            ):
                continue
            node = ComputeNode.objects.filter(uuid=alt["compute_node_uuid"]).first()
            moved = (Instance.objects.filter(pk=instance.pk).exclude(task_state=TaskState.DELETING)
                     .update(host=alt["service_host"],
                             node=alt.get("nodename") or (node.hypervisor_hostname if node else None),
                             compute_id=node.id if node else None, task_state=TaskState.SCHEDULING,
                             updated_at=timezone.now()))
            if not moved:  # deleted while the claim was made
                allocations_delete(consumer_uuid=instance_uuid)
                return
            compute_rpc.build_and_run_instance(
                ctx=ctx, host=alt["service_host"], instance_uuid=instance_uuid, cell_uuid=cell_uuid,
                admin_pass=admin_pass, alternates=remaining, attempt=attempt + 1,
                requested_networks=_requested_networks(instance_uuid),
                security_groups=requested_groups_for_instance(instance_uuid))
            return
        build_error_out(ctx, instance=instance, exc=MaxRetriesExceeded(instance_uuid=instance_uuid))


def _host_az(host: str, br: BuildRequest) -> str:
    return host_availability_zone(host)
