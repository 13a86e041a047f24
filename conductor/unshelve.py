"""The conductor's half of unshelving a shelved-offloaded server (``unshelve_instance``, cast by
``servers.services.shelve`` through ``conductor.rpc``): schedule it within its cell, then cast its
spawn to the chosen host (``compute.rpc``)."""
from __future__ import annotations

import logging

from cells.context import target_cell
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import NoValidHost
from compute import rpc as compute_rpc
from hosts.models import ComputeNode
from scheduling.models import RequestSpec
from scheduling.request_spec import spec_for_unshelve
from scheduling.scheduler import select_destinations
from scheduling.services.aggregates import host_availability_zone
from servers.choices import TaskState
from servers.models import Instance
from servers.services import actions

log = logging.getLogger(__name__)

EVENT_SCHEDULE = "schedule_instances"


def unshelve_instance(ctx: RequestContext, *, instance_uuid: str, cell_uuid: str, host: str | None) -> None:
    """Conductor: schedule a shelved-offloaded server and cast its spawn to the chosen host.

    NoValidHost (or any scheduling error) leaves it SHELVED_OFFLOADED, task_state None, with an
    Error ``schedule_instances`` event.
    """
    with target_cell(cell_uuid) as cell:
        instance = Instance.objects.filter(uuid=instance_uuid).first()
        if instance is None or instance.task_state != TaskState.UNSHELVING:
            return
        spec_row = RequestSpec.objects.filter(instance_uuid=instance_uuid).first()
        base = dict(spec_row.spec) if spec_row else {}
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
            Instance.objects.filter(pk=instance.pk).update(task_state=None)
            actions.action_finish(ctx, instance_uuid=instance_uuid, failed=True)
            return
        chosen = selection.to_dict() if hasattr(selection, "to_dict") else dict(selection)
        node = ComputeNode.objects.filter(uuid=chosen["compute_node_uuid"]).first()
        instance.host = chosen["service_host"]
        instance.node = chosen.get("nodename") or (node.hypervisor_hostname if node else None)
        instance.compute_id = node.id if node else None
        instance.availability_zone = host_availability_zone(instance.host)
        instance.task_state = TaskState.SPAWNING
        instance.save(update_fields=["host", "node", "compute", "availability_zone", "task_state", "updated_at"])
        compute_rpc.unshelve_spawn(ctx=ctx, host=instance.host, instance_uuid=instance_uuid, cell_uuid=str(cell.uuid))
