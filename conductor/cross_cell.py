"""The conductor's half of a cross-cell resize or cold migration (seed 5): ``cross_cell_resize``,
called by ``conductor.resize`` when the scheduler picked a host in another cell.

It runs ``Step``s with rollback: the source migration is marked ``cross_cell_move`` first; the
target cell gets a hidden copy of the server (same uuid) with its block devices, VIFs, tags,
actions, events and migrations (``TargetDBSetup``); the destination node is claimed, with empty
volume attachments and inactive port bindings on the destination host (``PrepAtDest``); then the
source host is cast ``cross_cell_prep_at_source`` (``compute.rpc``), which casts the finish to the
destination host. A failure rolls the completed steps back and gives the move back to the server
(``servers.services.move_recovery``). Confirm and revert are the API side's
(``servers.services.cross_cell``).
"""
from __future__ import annotations

from typing import Any

from django.db import transaction

from cells.context import current_cell, target_cell
from cells.models import CellMapping
from cells.registry import alias_for
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Conflict
from cloudcore.core.orchestration import Step, run_steps
from compute import rpc as compute_rpc
from hosts.models import ComputeNode
from networks.models import Port
from networks.services import port_binding_create, port_binding_delete
from scheduling.services.aggregates import host_availability_zone
from servers.choices import TaskState
from servers.models import (
    BlockDeviceMapping,
    Instance,
    InstanceAction,
    InstanceActionEvent,
    Migration,
    Tag,
    VirtualInterface,
)
from servers.services.cross_cell import attachment_delete_quietly, hard_delete_rows, notify, volume_bdms
from servers.services.move_recovery import move_failed
from volumes import services as volumes


def _copy_rows(instance_uuid: str, source: CellMapping, target: CellMapping) -> None:
    """The target cell gets a hidden copy of the server and everything that hangs off it."""
    def rows(model: Any, **filters: Any) -> list[dict[str, Any]]:
        fields = [f.attname for f in model._meta.concrete_fields if f.attname != "id"]
        return list(model._base_manager.filter(**filters).values(*fields))

    with target_cell(source):
        inst = rows(Instance, uuid=instance_uuid)[0]
        bdms = rows(BlockDeviceMapping, instance_uuid=instance_uuid, deleted=False)
        vifs = rows(VirtualInterface, instance_uuid=instance_uuid, deleted=False)
        tags = rows(Tag, instance_uuid=instance_uuid)
        migrations = rows(Migration, instance_uuid=instance_uuid)
        acts = []
        for action in InstanceAction.objects.filter(instance_uuid=instance_uuid):
            fields = [f.attname for f in InstanceAction._meta.concrete_fields if f.attname != "id"]
            events = [{f.attname: getattr(e, f.attname) for f in InstanceActionEvent._meta.concrete_fields
                       if f.attname not in ("id", "action_id")} for e in action.events.all()]
            acts.append(({k: getattr(action, k) for k in fields}, events))
    inst.update(hidden=True, compute_id=None, host=None, node=None)

    with target_cell(target), transaction.atomic(using=alias_for(target)):
        Instance(**inst).save()
        copies = ((BlockDeviceMapping, bdms), (VirtualInterface, vifs), (Tag, tags), (Migration, migrations))
        for model, items in copies:
            for item in items:
                model._base_manager.create(**item)
        for action, events in acts:
            new = InstanceAction.objects.create(**action)
            for event in events:
                InstanceActionEvent.objects.create(action=new, **event)


class TargetDBSetup(Step):
    name = "target DB setup"

    def __init__(self, move: dict[str, Any]) -> None:
        self.move = move
        self.copied = False

    def execute(self) -> None:
        _copy_rows(self.move["instance_uuid"], self.move["source"], self.move["target"])
        self.copied = True  # the copy is one transaction: a failed one left nothing to undo

    def rollback(self) -> None:
        if self.copied:
            hard_delete_rows(self.move["instance_uuid"], self.move["target"])


class PrepAtDest(Step):
    """Claim the destination node (migration context), move the hidden copy into the
    destination's zone, create an empty volume attachment per volume BDM and an inactive port
    binding per port on the destination host; mirror the migration context into the source
    instance with the *source* migration's id, so external events reach both hosts."""

    name = "prep resize at destination"

    def __init__(self, move: dict[str, Any]) -> None:
        self.move = move
        self.dest_host: str | None = None
        self.ports: list[str] = []
        self.attachments: list[str] = []
        self.source_context = False

    def execute(self) -> None:
        m, sel = self.move, self.move["selection"]
        with target_cell(m["target"]):
            node = ComputeNode.objects.filter(uuid=sel["compute_node_uuid"]).first()
            if node is None:
                raise Conflict(f"Compute node {sel['compute_node_uuid']} could not be found.")
            self.dest_host = node.host
            migration = Migration.objects.get(uuid=m["migration_uuid"])
            migration.dest_compute = migration.dest_host = node.host
            migration.dest_node, migration.dest_compute_id = node.hypervisor_hostname, node.id
            migration.save()
            Instance.all_objects.filter(uuid=m["instance_uuid"]).update(
                availability_zone=host_availability_zone(node.host),
                migration_context={"migration_id": migration.id, "migration_uuid": migration.uuid,
                                   "old_host": migration.source_compute, "new_host": node.host,
                                   "cross_cell": True})
            for bdm in volume_bdms(m["instance_uuid"]):
                att = volumes.attachment_create(None, volume_id=str(bdm.volume_id), instance_uuid=bdm.instance_uuid)
                self.attachments.append(att.id)
                BlockDeviceMapping.objects.filter(pk=bdm.pk).update(attachment_id=att.id, connection_info=None)
        with target_cell(m["source"]):
            source_migration = Migration.objects.get(uuid=m["migration_uuid"])
            Migration.objects.filter(pk=source_migration.pk).update(dest_compute=node.host, dest_host=node.host)
            Instance.all_objects.filter(uuid=m["instance_uuid"]).update(
                migration_context={"migration_id": source_migration.id, "migration_uuid": source_migration.uuid,
                                   "old_host": source_migration.source_compute, "new_host": node.host,
                                   "cross_cell": True})
            self.source_context = True
        for port in Port.objects.filter(device_id=m["instance_uuid"]):
            port_binding_create(port.id, node.host)
            self.ports.append(port.id)
        m["dest_host"] = node.host

    def rollback(self) -> None:
        """Undo what ``execute`` recorded, also when it failed half-way. The target cell's rows
        (destination fields, migration context, attachment ids) go with ``TargetDBSetup``'s."""
        for port_id in self.ports:
            port_binding_delete(port_id, str(self.dest_host))
        for attachment_id in self.attachments:
            attachment_delete_quietly(attachment_id)
        if self.source_context:
            with target_cell(self.move["source"]):
                Instance.all_objects.filter(uuid=self.move["instance_uuid"]).update(migration_context=None)


def cross_cell_resize(ctx: RequestContext, *, instance: Instance, migration: Migration,
                      selection: dict[str, Any]) -> None:
    """Conductor: the database steps here, then the source host's half (which casts the rest)."""
    source = current_cell()
    assert source is not None
    target = CellMapping.objects.get(uuid=selection["cell_uuid"])
    migration.cross_cell_move = True  # saved first, for audit
    migration.save(update_fields=["cross_cell_move", "updated_at"])
    move = {"instance_uuid": instance.uuid, "migration_uuid": migration.uuid, "source": source, "target": target,
            "selection": selection}
    notify(ctx, "instance.resize_prep.start", instance)
    try:
        run_steps([TargetDBSetup(move), PrepAtDest(move)])
    except Exception as exc:
        move_failed(ctx, instance, migration, exc)
        return
    notify(ctx, "instance.resize_prep.end", instance)
    Instance.objects.filter(pk=instance.pk).update(task_state=TaskState.RESIZE_MIGRATING)
    compute_rpc.cross_cell_prep_at_source(ctx=ctx, host=str(instance.host), instance_uuid=instance.uuid,
                                          cell_uuid=str(source.uuid), migration_uuid=migration.uuid,
                                          target_cell_uuid=str(target.uuid), dest_host=move["dest_host"])
