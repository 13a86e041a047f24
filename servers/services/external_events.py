"""``os-server-external-events``: events from Neutron/Cinder delivered to waiting compute operations.

Waiting does not hold a worker slot the event needs: a waiter records the event it expects
(``expect_event``) in its instance's cell database before it starts the operation that causes it
(a compute agent reaches only its own cell); delivery, in the API, marks that row received in the
instance's cell (or creates it received when the event comes first, as in eager tests);
``wait_for_event`` polls the row with a timeout.
"""
from __future__ import annotations

import logging
import time
from dataclasses import replace
from typing import Any

from django.utils import timezone

from cells.context import target_cell
from cells.selectors import instance_mapping_get
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import CloudcoreError, NotFound
from cloudcore.core.policy import authorize
from compute import rpc as compute_rpc

from ..models import Instance, InstanceEventRecord, Migration
from . import actions
from .power import cast

log = logging.getLogger(__name__)

TAG_REQUIRED = ("volume-extended", "power-update", "accelerator-request-bound")
EVENT_NAMES = ("network-changed", "network-vif-plugged", "network-vif-unplugged", "network-vif-deleted",
               "volume-extended", "power-update", "accelerator-request-bound", "volume-reimaged")
# the microversion from which an event name is accepted
EVENT_MIN_VERSION = {"volume-extended": (2, 51), "power-update": (2, 76), "accelerator-request-bound": (2, 82),
                     "volume-reimaged": (2, 93)}


class InstanceEventTimeout(CloudcoreError):
    message = "Timeout waiting for %(name)s event (tag %(tag)s) of instance %(instance_uuid)s"


class InstanceEventFailed(CloudcoreError):
    message = "Event %(name)s (tag %(tag)s) of instance %(instance_uuid)s reported status %(status)s"


def expect_event(*, instance_uuid: str, name: str, tag: str) -> InstanceEventRecord:
    """Register interest in an event before the operation that causes it starts (in the targeted
    cell: the instance's)."""
    InstanceEventRecord.objects.filter(instance_uuid=instance_uuid, name=name, tag=tag).delete()
    return InstanceEventRecord.objects.create(instance_uuid=instance_uuid, name=name, tag=tag, received=False)


def wait_for_event(record: InstanceEventRecord, *, timeout: float, poll: float = 0.1) -> str:
    """Wait until ``record`` is received; returns its status. Raises InstanceEventTimeout."""
    deadline = time.monotonic() + timeout
    try:
        while True:
            row = InstanceEventRecord.objects.filter(pk=record.pk).values("received", "status").first()
            if row is None or row["received"]:
                return row["status"] if row else "completed"
            if time.monotonic() >= deadline:
                raise InstanceEventTimeout(instance_uuid=record.instance_uuid, name=record.name, tag=record.tag)
            time.sleep(poll)
    finally:
        InstanceEventRecord.objects.filter(pk=record.pk).delete()


def _deliver(instance_uuid: str, name: str, tag: str, status: str) -> None:
    """Mark the waiter's row received, in the targeted cell (the instance's)."""
    updated = InstanceEventRecord.objects.filter(instance_uuid=instance_uuid, name=name, tag=tag,
                                                 received=False).update(received=True, status=status)
    if not updated:  # nobody waits yet (or never will): keep it for a waiter that registers late
        InstanceEventRecord.objects.create(instance_uuid=instance_uuid, name=name, tag=tag, status=status,
                                           received=True, created_at=timezone.now())


def event_hosts(instance: Any) -> set[str]:
    """The hosts an event for ``instance`` is for: its host plus, while it moves, the source and
    destination of the migration its migration context names (during a cross-cell move the
    source cell's copy names the source cell's migration, so both cells' hosts are reached)."""
    hosts = {instance.host} if instance.host else set()
    context = instance.migration_context or {}
    if context.get("migration_id") is not None:
        migration = Migration.all_objects.filter(pk=context["migration_id"]).first()
        if migration is not None:
            hosts |= {h for h in (migration.source_compute, migration.dest_compute) if h}
    return hosts


def _extend_volume(actor: RequestContext, instance: Instance, cell: Any, *, volume_id: str) -> None:
    """Nova's answer to ``volume-extended``: an ``extend_volume`` action on the server, and its
    host lets the guest see the volume's new size (its ``compute_extend_volume`` event)."""
    # the action names who asked; Cinder's internal calls carry no user, so the server's owner stands in
    owner = actor if actor.user_id else replace(actor, user_id=instance.user_id, project_id=instance.project_id)
    actions.action_start(owner, instance_uuid=instance.uuid, action="extend_volume")
    cast(compute_rpc.extend_volume, actor=actor, instance=instance, cell=cell, volume_id=volume_id)


def server_external_events_create(actor: RequestContext, *, events: list[dict[str, Any]],
                                  version: tuple[int, int]) -> tuple[int, list[dict[str, Any]]]:
    """Accept each event for its server; returns (200 or 207, events with ``code``/``status``).

    Per event: 404 unknown server, 422 a server with no host, 400 a required tag missing.
    """

    authorize(actor, "os_compute_api:os-server-external-events:create", {"project_id": actor.project_id})
    result: list[dict[str, Any]] = []
    accepted = 0
    for ev in events:
        out = {"name": ev["name"], "server_uuid": ev["server_uuid"], "status": ev.get("status", "completed")}
        if "tag" in ev:
            out["tag"] = ev["tag"]
        mapping = instance_mapping_get(ev["server_uuid"])
        if mapping is None or mapping.cell is None:
            out.update(code=404, status="failed")
            result.append(out)
            continue
        with target_cell(mapping.cell):  # the event is recorded in the instance's cell
            instance = Instance.objects.filter(uuid=ev["server_uuid"]).first()
            if instance is None:
                out.update(code=404, status="failed")
            elif ev["name"] in TAG_REQUIRED and not ev.get("tag"):
                out.update(code=400, status="failed")
            elif not instance.host:
                out.update(code=422, status="failed")
            else:
                out["code"] = 200
                accepted += 1
                log.info("event %s for %s delivered to hosts %s", ev["name"], instance.uuid,
                         ", ".join(sorted(event_hosts(instance))))
                _deliver(instance.uuid, ev["name"], ev.get("tag") or "", out["status"])
                if ev["name"] == "volume-extended":
                    _extend_volume(actor, instance, mapping.cell, volume_id=str(ev["tag"]))
        result.append(out)
    if accepted == 0:
        if all(e["code"] == 404 for e in result):
            raise NotFound("No instances found for any event")
    return (200 if accepted == len(result) else 207), result
