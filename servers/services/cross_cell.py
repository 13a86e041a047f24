"""Cross-cell resize and cold migration (seed 5), with confirm and revert.

Gating (``cross_cell_allowed``): the policy ``compute:servers:resize:cross_cell`` (nobody by
default) and every nova-compute new enough; otherwise moves stay in their cell.

The conductor (``cross_cell_resize``, called by ``resize.resize_instance`` when the scheduler
picked a host in another cell) runs ``Step``s with rollback: the source migration is marked
``cross_cell_move`` first; the target cell gets a hidden copy of the server (same uuid) with its
block devices, VIFs, tags, actions and events and migrations; inactive port bindings are made on
the destination; then the source host powers the guest off, snapshots it to
``<name>-resize-temp``, destroys it keeping its disks and activates the destination bindings,
and the destination host spawns the copy from the snapshot (new flavor, destination node), drops
the snapshot and leaves it in VERIFY_RESIZE. Only then: target visible → InstanceMapping →
target cell → source hidden. A failure rolls the completed steps back, puts the allocations back
on the server, marks the migration ``error`` and records a fault (ERROR once the source guest was
destroyed; a hard reboot then recovers it).

Confirm (``cross_cell_confirm``) needs the source compute up (409), cleans the source guest and
hard-deletes the source cell's rows. Revert (``cross_cell_revert``) switches the mapping back to
the source first, then cleans the destination (target rows hard-deleted) and brings the source
guest back, powered on only if it was ACTIVE.
"""
from __future__ import annotations

import logging
from typing import Any

from django.db import transaction
from django.utils import timezone

from cells.context import target_cell
from cells.models import CellMapping, HostMapping, InstanceMapping
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Conflict
from cloudcore.core.orchestration import Step, run_steps
from cloudcore.core.policy import can
from compute import rpc as compute_rpc

from ..choices import MigrationStatus, TaskState, VmState
from ..models import BlockDeviceMapping, Instance, InstanceAction, InstanceActionEvent, Migration, Tag, VirtualInterface
from . import actions
from .move_recovery import allocations_back_to_server, move_failed

log = logging.getLogger(__name__)

RULE = "compute:servers:resize:cross_cell"
MIN_COMPUTE_CROSS_CELL_RESIZE = 47


class SourceComputeDown(Conflict):
    message = "Compute service of host %(host)s is down; the resize cannot be confirmed now."


def min_compute_version() -> int:
    from cells.models import CELL0_UUID
    from cells.scatter import failed, scatter_gather
    from hosts.models import Service

    def per_cell(_cell: CellMapping) -> int | None:
        versions = list(Service.objects.filter(binary="nova-compute").values_list("version", flat=True))
        return min(versions) if versions else None

    found = [v for v in scatter_gather(per_cell, CellMapping.objects.exclude(uuid=CELL0_UUID)).values()
             if not failed(v) and v is not None]
    return min(found) if found else 0  # type: ignore[type-var]


def cross_cell_allowed(actor: RequestContext, instance: Instance) -> bool:
    target = {"project_id": instance.project_id, "user_id": instance.user_id}
    return can(actor, RULE, target) and min_compute_version() >= MIN_COMPUTE_CROSS_CELL_RESIZE


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
    from cells.registry import alias_for

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


def hard_delete_rows(instance_uuid: str, cell: CellMapping) -> None:
    """Remove every row of the server from ``cell`` (a hard delete: moving back later must not
    hit the unique uuids)."""
    from ..models import InstanceFault

    with target_cell(cell):
        InstanceActionEvent.all_objects.filter(action__instance_uuid=instance_uuid).delete()
        for model in (InstanceAction, BlockDeviceMapping, VirtualInterface, Migration, InstanceFault):
            model._base_manager.filter(instance_uuid=instance_uuid).delete()
        Tag.objects.filter(instance_uuid=instance_uuid).delete()
        Instance.all_objects.filter(uuid=instance_uuid).delete()


class TargetDBSetup(Step):
    name = "target DB setup"

    def __init__(self, move: dict[str, Any]) -> None:
        self.move = move

    def execute(self) -> None:
        _copy_rows(self.move["instance_uuid"], self.move["source"], self.move["target"])

    def rollback(self) -> None:
        hard_delete_rows(self.move["instance_uuid"], self.move["target"])


def volume_bdms(instance_uuid: str) -> list[BlockDeviceMapping]:
    """The server's volume BDMs in the targeted cell."""
    return list(BlockDeviceMapping.objects.filter(instance_uuid=instance_uuid, destination_type="volume",
                                                  volume_id__isnull=False).order_by("id"))


def attachment_delete_quietly(attachment_id: str) -> None:
    """Delete a volume attachment in a cleanup: a failure (mostly: already gone) is logged, never
    raised, so the cleanup goes on to the rows."""
    from volumes import services as volumes

    try:
        volumes.attachment_delete(None, attachment_id=attachment_id)
    except Exception as exc:
        log.info("attachment %s not deleted: %s", attachment_id, exc)


def release_attachments(instance_uuid: str, cell: CellMapping) -> None:
    """Delete the volume attachments held by the server's BDMs in ``cell``."""
    with target_cell(cell):
        bdms = volume_bdms(instance_uuid)
    for bdm in bdms:
        if bdm.attachment_id:
            attachment_delete_quietly(bdm.attachment_id)


def reconnect_source_volumes(ctx: RequestContext, instance: Instance) -> None:
    """Complete the source BDMs' attachments on the source host again (after their placeholders
    replaced them at prep time), so a recovered or reverted server has its volumes ``in-use``."""
    from compute.block_devices import attach_bdm
    from volumes.models import AttachStatus, VolumeAttachment

    for bdm in volume_bdms(instance.uuid):
        att = VolumeAttachment.objects.filter(pk=bdm.attachment_id, deleted=False).first() \
            if bdm.attachment_id else None
        if att is not None and att.attach_status == AttachStatus.ATTACHED and att.attached_host == instance.host:
            continue
        if att is None:
            bdm.attachment_id = None
        attach_bdm(ctx, instance, bdm)


class PrepAtDest(Step):
    """Claim the destination node (migration context), move the hidden copy into the
    destination's zone, create an empty volume attachment per volume BDM and an inactive port
    binding per port on the destination host; mirror the migration context into the source
    instance with the *source* migration's id, so external events reach both hosts."""

    name = "prep resize at destination"

    def __init__(self, move: dict[str, Any]) -> None:
        self.move = move
        self.ports: list[str] = []
        self.attachments: list[str] = []

    def execute(self) -> None:
        from hosts.models import ComputeNode
        from networks.models import Port
        from networks.services import port_binding_create
        from scheduling.services.aggregates import host_availability_zone
        from volumes import services as volumes

        m, sel = self.move, self.move["selection"]
        with target_cell(m["target"]):
            node = ComputeNode.objects.filter(uuid=sel["compute_node_uuid"]).first()
            if node is None:
                raise Conflict(f"Compute node {sel['compute_node_uuid']} could not be found.")
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
        for port in Port.objects.filter(device_id=m["instance_uuid"]):
            port_binding_create(port.id, node.host)
            self.ports.append(port.id)
        m["dest_host"] = node.host

    def rollback(self) -> None:
        from networks.services import port_binding_delete

        for port_id in self.ports:
            port_binding_delete(port_id, self.move["dest_host"])
        for attachment_id in self.attachments:
            attachment_delete_quietly(attachment_id)
        with target_cell(self.move["source"]):
            Instance.all_objects.filter(uuid=self.move["instance_uuid"]).update(migration_context=None)


def cross_cell_resize(ctx: RequestContext, *, instance: Instance, migration: Migration,
                      selection: dict[str, Any]) -> None:
    """Conductor: the database steps here, then the source host's half (which casts the rest)."""
    from cells.context import current_cell

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


def notify(ctx: RequestContext, event: str, instance: Instance, **kw: Any) -> None:
    from .notify import notify_instance

    notify_instance(ctx, event, instance, **kw)


def cross_cell_failed(ctx: RequestContext, *, instance_uuid: str, migration_uuid: str, source: CellMapping,
                      target: CellMapping, dest_host: str | None, exc: BaseException, guest_destroyed: bool,
                      image_id: str | None = None) -> None:
    """Undo a cross-cell move that failed on a host (reference failure table 1.7): the target
    cell's copy and its volume attachments and port bindings go, the temporary snapshot goes, the
    mapping stays on (or comes back to) the source, the allocations go back to the server, the
    migration ends ``error`` with a fault; the server is ERROR once its source guest was destroyed
    (a hard reboot then recovers it), otherwise only its task_state is cleared."""
    from images.services import image_data_path
    from networks.models import Port
    from networks.services import port_binding_delete, ports_rebind_host

    release_attachments(instance_uuid, target)
    hard_delete_rows(instance_uuid, target)
    InstanceMapping.objects.filter(instance_uuid=instance_uuid).update(cell=source)
    if dest_host:
        for port in Port.objects.filter(device_id=instance_uuid):
            port_binding_delete(port.id, dest_host)
    if image_id:
        from images.models import Image

        Image.objects.filter(id=image_id).update(status="deleted", deleted=True, deleted_at=timezone.now())
        image_data_path(image_id).unlink(missing_ok=True)
    with target_cell(source):
        instance = Instance.all_objects.get(uuid=instance_uuid)
        ports_rebind_host(instance_uuid, instance.host)
        try:
            reconnect_source_volumes(ctx, instance)
        except Exception:
            log.exception("could not reconnect the volumes of %s on %s", instance_uuid, instance.host)
        allocations_back_to_server(instance, migration_uuid)
        Migration.objects.filter(uuid=migration_uuid).update(status=MigrationStatus.ERROR, updated_at=timezone.now())
        fields: dict[str, Any] = {"task_state": None, "hidden": False, "migration_context": None,
                                  "updated_at": timezone.now()}
        if guest_destroyed:
            fields["vm_state"] = VmState.ERROR
        Instance.all_objects.filter(uuid=instance_uuid).update(**fields)
        actions.fault_add(instance_uuid=instance_uuid, exc=exc, host=instance.host)
        actions.action_finish(ctx, instance_uuid=instance_uuid, failed=True)
        notify(ctx, "instance.resize.error", instance, fault=exc)


def finish_failed(ctx: RequestContext, *, instance_uuid: str, migration_uuid: str, exc: BaseException,
                  action: str) -> None:
    """A confirm or revert that failed: in the targeted (mapped) cell the migration ends ``error``
    and the server ERROR with a fault; the operator hard-deletes the unmapped cell's copy."""
    Migration.objects.filter(uuid=migration_uuid).update(status=MigrationStatus.ERROR, updated_at=timezone.now())
    Instance.all_objects.filter(uuid=instance_uuid).update(vm_state=VmState.ERROR, task_state=None,
                                                           updated_at=timezone.now())
    instance = Instance.all_objects.get(uuid=instance_uuid)
    actions.fault_add(instance_uuid=instance_uuid, exc=exc, host=instance.host)
    actions.action_finish(ctx, instance_uuid=instance_uuid, failed=True)
    notify(ctx, f"instance.{action}.error", instance, fault=exc)


def flip_to(instance_uuid: str, *, visible: CellMapping, hidden: CellMapping) -> None:
    """Show the server from ``visible``: that copy unhidden → mapping → the other copy hidden."""
    with target_cell(visible):
        Instance.all_objects.filter(uuid=instance_uuid).update(hidden=False)
    InstanceMapping.objects.filter(instance_uuid=instance_uuid).update(cell=visible)
    with target_cell(hidden):
        Instance.all_objects.filter(uuid=instance_uuid).update(hidden=True)


def source_cell_of(migration: Migration) -> CellMapping:
    return HostMapping.objects.select_related("cell").get(host=migration.source_compute).cell


def cross_cell_confirm(*, actor: RequestContext, instance: Instance, cell: CellMapping, migration: Migration,
                       synchronous: bool = False) -> None:
    """Confirm: the source compute must be up; the op on the source host cleans it."""
    from hosts.models import Service
    from hosts.services.servicegroup import service_is_up

    source = source_cell_of(migration)
    with target_cell(source):
        service = Service.objects.filter(host=migration.source_compute, binary="nova-compute").first()
        up = service is not None and service_is_up(service)
    if not up and not synchronous:
        raise SourceComputeDown(host=migration.source_compute)
    migration.status = MigrationStatus.CONFIRMING
    migration.save(update_fields=["status", "updated_at"])
    actions.action_start(actor, instance_uuid=instance.uuid, action="confirmResize")
    if synchronous:
        # a delete or beat confirms in this process (the source guest is destroyed on its host's queue)
        from compute.ops import run_op  # compute.cross_cell imports this module

        run_op(actor, op_name="cross_cell_confirm", instance_uuid=instance.uuid, cell_uuid=cell.uuid,
               migration_uuid=migration.uuid, source_cell_uuid=str(source.uuid))
        return
    compute_rpc.cross_cell_confirm(ctx=actor, host=str(migration.source_compute), instance_uuid=instance.uuid,
                                   cell_uuid=str(cell.uuid), migration_uuid=migration.uuid,
                                   source_cell_uuid=str(source.uuid))


def cross_cell_revert(*, actor: RequestContext, instance: Instance, cell: CellMapping, migration: Migration) -> None:
    source = source_cell_of(migration)
    compute_rpc.cross_cell_revert_at_dest(ctx=actor, host=str(instance.host), instance_uuid=instance.uuid,
                                          cell_uuid=str(cell.uuid), migration_uuid=migration.uuid,
                                          source_cell_uuid=str(source.uuid))
