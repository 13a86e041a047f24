"""The conductor's half of unshelving a shelved-offloaded server (``unshelve_instance``, cast by
``servers.services.shelve`` through ``conductor.rpc``): schedule it within its cell, then cast its
spawn to the chosen host (``compute.rpc``)."""
from __future__ import annotations

import logging

from cells.context import target_cell
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import NoValidHost
from compute import rpc as compute_rpc
from hosts.selectors import compute_node_get
from scheduling.request_spec import spec_for_unshelve
from scheduling.scheduler import select_destinations
from scheduling.services.aggregates import host_availability_zone
from scheduling.services.request_specs import request_spec_get
from servers.choices import TaskState
from servers.selectors import instance_get
from servers.services import actions

log = logging.getLogger(__name__)

EVENT_SCHEDULE = "schedule_instances"


def unshelve_instance(ctx: RequestContext, *, instance_uuid: str, cell_uuid: str, host: str | None) -> None:
    """Conductor: schedule a shelved-offloaded server and cast its spawn to the chosen host.

    NoValidHost (or any scheduling error) leaves it SHELVED_OFFLOADED, task_state None, with an
    Error ``schedule_instances`` event.
    """
    with target_cell(cell_uuid) as cell:
        instance = instance_get(instance_uuid)
        if instance is None or instance.task_state != TaskState.UNSHELVING:
            return
        base = request_spec_get(instance_uuid) or {}
        spec = spec_for_unshelve(base, availability_zone=base.get("availability_zone"), host=host)
        # The server's rows live in this cell: it is unshelved onto a host of the same cell (Nova).
        spec["requested_destination"] = {**(spec.get("requested_destination") or {"host": None, "node": None}),
                                         "cell": cell.uuid}
        spec.setdefault("project_id", instance.project_id)
        spec.setdefault("user_id", instance.user_id)
        try:
            with actions.wrap_event(ctx, instance_uuid=instance_uuid, event=EVENT_SCHEDULE, action_name="unshelve"):
                selection = select_destinations(ctx, spec, [instance_uuid], return_alternates=False)[0][0]
        except Exception as exc:
            if not isinstance(exc, NoValidHost):
                log.exception("unshelve scheduling of %s failed", instance_uuid)
            instance.task_state = None
            instance.save(update_fields=["task_state"])
            actions.action_finish(ctx, instance_uuid=instance_uuid, failed=True)
            return
        chosen = selection.to_dict() if hasattr(selection, "to_dict") else dict(selection)
        node = compute_node_get(chosen["compute_node_uuid"])
        instance.host = chosen["service_host"]
        instance.node = chosen.get("nodename") or (node.hypervisor_hostname if node else None)
        instance.compute_id = node.id if node else None
        instance.availability_zone = host_availability_zone(instance.host)
        instance.task_state = TaskState.SPAWNING
        instance.save(update_fields=["host", "node", "compute", "availability_zone", "task_state", "updated_at"])
        compute_rpc.unshelve_spawn(ctx=ctx, host=instance.host, instance_uuid=instance_uuid, cell_uuid=str(cell.uuid))
