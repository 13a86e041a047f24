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
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db.models import OuterRef
from django.utils import timezone

from cells.context import target_cell
from cells.selectors import cell0_get, host_mapping_get, instance_mapping_get
from cells.services import CellNotFound, instance_mapping_set_cell
from cells.transactions import api_atomic, atomic, written_together
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import InstanceNotFound, NoValidHost
from cloudcore.core.scope import request_scope
from compute import rpc as compute_rpc
from compute.exceptions import MaxRetriesExceeded
from hosts.selectors import compute_node_get
from networks.secgroups import requested_groups_for_instance, requested_groups_from, requested_groups_of
from scheduling.placement.services import allocations_delete, claim_allocation_request
from scheduling.scheduler import select_destinations
from scheduling.services.aggregates import host_availability_zone
from scheduling.services.request_specs import request_spec_get, request_spec_of
from servers.choices import TaskState, VmState
from servers.selectors import build_request_get, build_requests_get, instance_get
from servers.services import actions
from servers.services.build_failure import build_error_out
from servers.services.build_requests import (
    build_request_bdms_and_tags_create,
    build_request_creates_volumes,
    build_request_delete,
    build_request_has_volumes,
    instance_from_build_request,
    instance_from_build_request_create,
)
from servers.services.guards import instance_task_state_set
from servers.services.history import history_restore, open_action, rows_hard_delete
from servers.services.notify import notify_compute_task_error, notify_instance
from servers.services.volume_attachments import bdm_volumes_create

from .hosts import compute_host_started as host_started

if TYPE_CHECKING:
    from servers.models import BuildRequest

log = logging.getLogger(__name__)

EVENT_SCHEDULE_AND_BUILD = "conductor_schedule_and_build_instances"


def bury_in_cell0(ctx: RequestContext, *, instance_uuid: str, exc: BaseException) -> None:
    """Create the server in cell0 with a failed ``create`` action and a fault.

    vm_state is ``pending`` when USE_PENDING_STATE is on and ``exc`` is NoValidHost, else
    ``error``. Skipped when the mapping already points at a cell. If the BuildRequest is gone
    (the user deleted the server meanwhile) the cell0 copy is removed again.

    Two transactions, cell0's first: the server's rows in cell0, then, in the API database, its
    mapping pointed at cell0, its BuildRequest deleted, the failure's notifications
    (``instance.update``, ``compute_task.build_instances.error``; published once that commits)
    and the rows deferred in the current request scope (a failed scheduling's trace and start
    notification: ``cells.transactions.api_atomic(with_deferred=True)``), one commit for all. A
    crash between the two leaves the server BUILDING in the API, without its trace: never ERROR
    or PENDING without it. (Only a failing write of those rows separates them: the transaction is
    then done again without them, and they are written, or logged, when the scope ends.)
    """
    cell0 = cell0_get()
    if cell0 is None:
        raise CellNotFound(uuid="cell0")
    mapping = instance_mapping_get(instance_uuid)
    if mapping is None or mapping.cell_id is not None:
        return
    br = build_request_get(instance_uuid)
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
            build_request_bdms_and_tags_create(br, instance_uuid)
            actions.fault_add(instance_uuid=instance_uuid, exc=exc, code=500)
    mapping.cell = cell0
    # The API database's side in one transaction: the mapping pointed at cell0 (from then on the
    # server reads ERROR/PENDING), the build request deleted, the failure's notifications and the
    # rows the request scope deferred (``schedule_and_build_instances``: the scheduling's trace and
    # start notification): the trace is committed with the fault, never after it, by one commit
    # where there were up to five (the scope's transaction, then four statements in autocommit).
    with api_atomic(with_deferred=True):
        mapping.save(update_fields=["cell", "updated_at"])
        deleted = build_request_delete(instance_uuid)
        if deleted:
            with target_cell(cell0):
                notify_instance(ctx, "instance.update", instance, old_vm_state=VmState.BUILDING,
                                old_task_state=TaskState.SCHEDULING)
            notify_compute_task_error("build_instances", instance_uuid=instance_uuid, vm_state=vm_state, exc=exc,
                                      request_spec=_spec(instance_uuid))
    if not deleted:
        with target_cell(cell0):
            rows_hard_delete(instance_uuid)


def _spec(instance_uuid: str) -> dict[str, Any]:
    return request_spec_get(instance_uuid) or {}


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

    # the build requests, their specs and the security groups they asked for in one statement; a
    # server deleted meanwhile has none of them
    found = build_requests_get(instance_uuids, prepared="conductor.build",
                               request_spec=request_spec_of(OuterRef("instance_uuid")),
                               requested_groups=requested_groups_of(OuterRef("instance_uuid")))
    requests = {u: br for u in instance_uuids if (br := found.get(u)) is not None and br.request_spec is not None}
    specs: dict[str, dict[str, Any]] = {u: br.request_spec for u, br in requests.items()}
    live = list(requests)
    if not live:
        return
    spec = dict(specs[live[0]])
    spec["num_instances"] = len(live)
    # the scheduler's scope is this one (it joins it): the rows it defers (its trace, its start
    # notification) are written, when it fails, in the burial's API-database transaction, else
    # when it returns, as before
    with request_scope():
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
                        admin_pass=admin_pass, spec=specs[instance_uuid], br=requests[instance_uuid])


def _place_instance(
    ctx: RequestContext, *, instance_uuid: str, selection: dict[str, Any],
    alternates: list[dict[str, Any]], admin_pass: str | None, spec: dict[str, Any], br: BuildRequest,
) -> None:
    """``br`` is the build request read before scheduling (with its spec and the security groups it
    asked for, written with it by the API and not changed since), not read again: a server deleted
    meanwhile is found by ``build_request_delete`` below, and its rows are removed then."""
    host = selection["service_host"]
    host_mapping = host_mapping_get(host)
    if host_mapping is None and selection.get("cell_uuid"):
        # a host the scheduler read from its cell's nodes whose start-up cast (``compute_host_started``)
        # is not handled yet: mapped now, as that cast would map it, rather than the server buried
        host_started(host=host, cell_uuid=str(selection["cell_uuid"]))
        host_mapping = host_mapping_get(host)
    if host_mapping is None:
        allocations_delete(consumer_uuid=instance_uuid)
        bury_in_cell0(ctx, instance_uuid=instance_uuid,
                      exc=NoValidHost(reason=f"Host {host} is not mapped to any cell"))
        return
    cell = host_mapping.cell
    with target_cell(cell):
        # the scheduler's selection names the node's id and zone (both read with its host state)
        node = None if "compute_id" in selection else compute_node_get(selection["compute_node_uuid"])
        instance = instance_from_build_request(
            br,
            vm_state=VmState.BUILDING,
            task_state=TaskState.SCHEDULING,
            host=host,
            node=selection.get("nodename") or (node.hypervisor_hostname if node else None),
            compute_id=node.id if node else selection.get("compute_id"),
            launched_on=host,
            scheduled_at=timezone.now(),
            availability_zone=selection.get("availability_zone") or _host_az(host, br),
        )
        create_action = None
        # on PostgreSQL the instance and its action are one query, where they were BEGIN, two
        # INSERTs and COMMIT (written_together; a history or block devices open the transaction)
        with written_together(cell):
            instance_from_build_request_create(instance)
            history_restore(br.history)
            if not open_action(br.history, ctx.request_id):  # a PENDING rebuild has its own action
                create_action = actions.action_start(ctx, instance_uuid=instance_uuid, action="create")
            build_request_bdms_and_tags_create(br, instance_uuid)
    if not instance_mapping_set_cell(instance_uuid, cell):
        raise InstanceNotFound(instance_id=instance_uuid)  # its mapping is gone (archived)
    if not build_request_delete(instance_uuid):
        # The user deleted the server while it was being scheduled.
        with target_cell(cell):
            rows_hard_delete(instance_uuid)
        allocations_delete(consumer_uuid=instance_uuid)
        return
    if build_request_creates_volumes(br):  # else there is nothing to look for
        with target_cell(cell):
            bdm_volumes_create(instance)
    # the spec read before scheduling: nothing in between changes it
    compute_rpc.build_and_run_instance(ctx=ctx, host=host, instance_uuid=instance_uuid, cell_uuid=str(cell.uuid),
                                       admin_pass=admin_pass, alternates=alternates,
                                       requested_networks=spec.get("requested_networks", "auto"),
                                       security_groups=requested_groups_from(br.requested_groups),
                                       create_action_id=create_action.id if create_action is not None else None,
                                       has_volumes=build_request_has_volumes(br), image=spec.get("image") or None)


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
        instance = instance_get(instance_uuid)
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
            node = compute_node_get(alt["compute_node_uuid"])
            moved = instance_task_state_set(
                instance, TaskState.SCHEDULING, host=alt["service_host"],
                node=alt.get("nodename") or (node.hypervisor_hostname if node else None),
                compute_id=node.id if node else None)
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
