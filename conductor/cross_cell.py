"""The conductor's cross-cell resize or cold migration (seed 5), with its confirm and revert. It
drives the move the way Nova's superconductor does: it alone uses the API database and both
cells' databases, and it calls each compute host's step synchronously (``compute.rpc``, at most
``settings.LONG_RPC_TIMEOUT`` seconds each); a host touches only its own cell and hypervisor
(``compute.cross_cell``).

The move (``cross_cell_resize``, called by ``conductor.resize`` when the scheduler picked a host
in another cell) is a list of ``Step``s with rollback:

1. the source migration is marked ``cross_cell_move`` first (audit);
2. ``TargetDBSetup``: a hidden copy of the server (same uuid) in the target cell, with its block
   devices, VIFs, tags, actions, events and migrations;
3. ``PrepAtDest``: inactive port bindings and empty volume attachments for the destination, then
   the destination host is called: it checks each volume can be connected there and claims the
   node (migration context); the migration context is mirrored into the source copy;
4. ``PrepAtSource``: task_state ``resize_migrating``; a ``<name>-resize-temp`` image (not for a
   volume-backed server); the source host is called: power off, snapshot into a file (uploaded
   here), destroy the guest keeping its disks; then the source attachments become placeholders
   and the destination bindings active;
5. ``FinishAtDest``: the destination host is called: spawn; then the temporary image goes and the
   conductor flips the instance mapping to the target cell (target shown, source hidden); a
   failure of the call or of the flip has the destination destroy its guest.

A failure in 2-3 rolls the steps back and gives the move back to the server (vm_state kept); in
4-5 ``cross_cell_failed`` undoes the move, the server ERROR once its source guest was destroyed.
Confirm (``confirm_cross_cell_resize``) and revert (``revert_cross_cell_resize``) are cast here by
the API side (``servers.services.cross_cell``).
"""
from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.utils import timezone

from cells.context import current_cell, target_cell
from cells.services import get_cell, instance_mapping_set_cell
from cells.transactions import atomic
from cloudcore.core.context import RequestContext
from cloudcore.core.orchestration import Step, run_steps
from compute import rpc as compute_rpc
from compute.block_devices import attach_bdm  # Cinder calls with the host's connector, and the BDM row
from compute.ops import finish_confirm
from images import services as images
from networks.selectors import ports_of_instance
from networks.services import (
    port_binding_activate,
    port_binding_create,
    port_binding_delete,
    port_binding_ensure,
    ports_rebind_host,
)
from scheduling.placement.services import allocations_delete
from scheduling.services.aggregates import host_availability_zone
from servers.choices import MigrationStatus, TaskState, VmState
from servers.selectors import bdms_of, instance_get, instance_get_in_cell, migration_get, migration_get_in_cell
from servers.services import actions
from servers.services.history import (
    bdm_hard_delete,
    bdm_restore,
    bdm_rows,
    instance_update,
    migration_update,
    migrations_hard_delete,
    rows_hard_delete,
    rows_restore,
    rows_take,
)
from servers.services.move_recovery import allocations_back_to_server, migrate_server_failed, move_failed
from servers.services.notify import notify_instance, notify_resize_prep
from volumes import services as volumes
from volumes.choices import AttachStatus
from volumes.selectors import attachment_find

if TYPE_CHECKING:
    from cells.models import CellMapping
    from servers.models import BlockDeviceMapping, Instance, Migration

log = logging.getLogger(__name__)


# --- rows of both cells, attachments, the mapping --------------------------------------------------


def hard_delete_rows(instance_uuid: str, cell: CellMapping) -> None:
    """Remove every row of the server from ``cell`` (a hard delete: moving back later must not
    hit the unique uuids)."""

    with target_cell(cell):
        migrations_hard_delete(instance_uuid)
        rows_hard_delete(instance_uuid)


def volume_bdms(instance_uuid: str) -> list[BlockDeviceMapping]:
    """The server's volume BDMs that name a volume, in the targeted cell."""
    return [bdm for bdm in bdms_of(instance_uuid, volumes_only=True) if bdm.volume_id is not None]


def attachment_delete_quietly(attachment_id: str) -> None:
    """Delete a volume attachment in a cleanup: a failure (mostly: already gone) is logged, never
    raised, so the cleanup goes on to the rows."""

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


def notify(ctx: RequestContext, event: str, instance: Instance, **kw: Any) -> None:
    notify_instance(ctx, event, instance, **kw)


def finish_failed(ctx: RequestContext, *, instance_uuid: str, migration_uuid: str, exc: BaseException) -> None:
    """A confirm or revert that failed: in the targeted (mapped) cell the migration ends ``error``
    and the server ERROR with a fault; the operator hard-deletes the unmapped cell's copy. As in
    Nova no ``instance.resize_confirm/revert.error`` exists: a host that failed its step emitted
    ``compute.exception``; the fault and the failed action tell the rest."""
    migration_update(migration_uuid, status=MigrationStatus.ERROR, updated_at=timezone.now())
    instance_update(instance_uuid, vm_state=VmState.ERROR, task_state=None, updated_at=timezone.now())
    instance = instance_get_in_cell(instance_uuid, read_deleted=True)
    actions.fault_add(instance_uuid=instance_uuid, exc=exc, host=instance.host)
    actions.action_finish(ctx, instance_uuid=instance_uuid, failed=True)


def flip_to(instance_uuid: str, *, visible: CellMapping, hidden: CellMapping) -> None:
    """Show the server from ``visible``: that copy unhidden → mapping → the other copy hidden."""
    with target_cell(visible):
        instance_update(instance_uuid, hidden=False)
    instance_mapping_set_cell(instance_uuid, visible)
    with target_cell(hidden):
        instance_update(instance_uuid, hidden=True)


def _swap_for_placeholders(instance_uuid: str) -> None:
    """In the targeted (source) cell: replace each volume attachment of the BDMs by an empty one;
    the volumes stay reserved for the server while no host is connected to them."""
    for bdm in volume_bdms(instance_uuid):
        placeholder = volumes.attachment_create(None, volume_id=str(bdm.volume_id), instance_uuid=instance_uuid)
        if bdm.attachment_id:
            attachment_delete_quietly(bdm.attachment_id)
        bdm.attachment_id, bdm.connection_info = placeholder.id, None
        bdm.save(update_fields=["attachment_id", "connection_info"])


def reconnect_source_volumes(ctx: RequestContext, instance: Instance) -> None:
    """In the targeted (source) cell: complete the BDMs' attachments on the source host again
    (after placeholders replaced them), so a recovered server has its volumes ``in-use``."""
    for bdm in volume_bdms(instance.uuid):
        att = attachment_find(bdm.attachment_id)
        if att is not None and att.attach_status == AttachStatus.ATTACHED and att.attached_host == instance.host:
            continue
        if att is None:
            bdm.attachment_id = None
        attach_bdm(ctx, instance, bdm)


def cross_cell_failed(ctx: RequestContext, *, instance_uuid: str, migration_uuid: str, source: CellMapping,
                      target: CellMapping, dest_host: str | None, exc: BaseException, guest_destroyed: bool,
                      image_id: str | None = None) -> None:
    """Undo a cross-cell move that failed on a host (reference failure table 1.7): the target
    cell's copy and its volume attachments and port bindings go, the temporary snapshot goes, the
    mapping stays on (or comes back to) the source, the allocations go back to the server, the
    migration ends ``error`` with a fault; the server is ERROR once its source guest was destroyed
    (a hard reboot then recovers it), otherwise only its task_state is cleared."""
    release_attachments(instance_uuid, target)
    hard_delete_rows(instance_uuid, target)
    instance_mapping_set_cell(instance_uuid, source)
    if dest_host:
        for port in ports_of_instance(instance_uuid):
            port_binding_delete(port.id, dest_host)
    if image_id:
        images.image_delete_internal(image_id)
    with target_cell(source):
        instance = instance_get_in_cell(instance_uuid, read_deleted=True)
        ports_rebind_host(instance_uuid, instance.host)
        try:
            reconnect_source_volumes(ctx, instance)
        except Exception:
            log.exception("could not reconnect the volumes of %s on %s", instance_uuid, instance.host)
        allocations_back_to_server(instance, migration_uuid)
        migration_update(migration_uuid, status=MigrationStatus.ERROR, updated_at=timezone.now())
        fields: dict[str, Any] = {"task_state": None, "hidden": False, "migration_context": None,
                                  "updated_at": timezone.now()}
        if guest_destroyed:
            fields["vm_state"] = VmState.ERROR
        instance_update(instance_uuid, **fields)
        actions.fault_add(instance_uuid=instance_uuid, exc=exc, host=instance.host)
        actions.action_finish(ctx, instance_uuid=instance_uuid, failed=True)
        instance.refresh_from_db()
        notify(ctx, "instance.resize.error", instance, fault=exc)
    migrate_server_failed(instance, exc)


# --- the move -----------------------------------------------------------------------------------


def _copy_rows(instance_uuid: str, source: CellMapping, target: CellMapping) -> None:
    """The target cell gets a hidden copy of the server and everything that hangs off it."""
    with target_cell(source):
        rows = rows_take(instance_uuid)
    rows["instance"].update(hidden=True, compute_id=None, host=None, node=None)
    with target_cell(target), atomic(target):
        rows_restore(rows)


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
    """Inactive port bindings and an empty volume attachment per volume BDM for the destination
    host; then the destination is called (volumes connectable, node claimed, migration context in
    the target cell); the copy moves into the destination's zone and the source copy gets the
    migration context with the *source* migration's id, so external events reach both hosts."""

    name = "prep resize at destination"

    def __init__(self, move: dict[str, Any]) -> None:
        self.move = move
        self.ports: list[str] = []
        self.attachments: list[str] = []
        self.source_context = False

    def execute(self) -> None:
        m, sel = self.move, self.move["selection"]
        dest_host = str(sel["service_host"])
        for port in ports_of_instance(m["instance_uuid"]):
            port_binding_create(port.id, dest_host)
            self.ports.append(port.id)
        with target_cell(m["target"]):
            for bdm in volume_bdms(m["instance_uuid"]):
                att = volumes.attachment_create(None, volume_id=str(bdm.volume_id), instance_uuid=bdm.instance_uuid)
                self.attachments.append(att.id)
                bdm.attachment_id = att.id
                bdm.save(update_fields=["attachment_id"])
        claimed = compute_rpc.cross_cell_prep_at_dest(
            ctx=m["ctx"], host=dest_host, instance_uuid=m["instance_uuid"], cell_uuid=str(m["target"].uuid),
            migration_uuid=m["migration_uuid"], compute_node_uuid=str(sel["compute_node_uuid"]))
        with target_cell(m["target"]):
            instance_update(m["instance_uuid"], availability_zone=host_availability_zone(dest_host))
        with target_cell(m["source"]):
            source_migration = migration_get_in_cell(m["migration_uuid"])
            migration_update(source_migration.uuid, dest_compute=dest_host, dest_host=dest_host,
                             dest_node=claimed.get("node"))
            self.source_context = True
            instance_update(m["instance_uuid"], migration_context={
                "migration_id": source_migration.id, "migration_uuid": source_migration.uuid,
                "old_host": source_migration.source_compute, "new_host": dest_host, "cross_cell": True})
        m["dest_host"] = dest_host

    def rollback(self) -> None:
        """Undo what ``execute`` recorded, also when it failed half-way. The target cell's rows
        (what the destination host claimed included) go with ``TargetDBSetup``'s."""
        dest_host = str(self.move["selection"]["service_host"])
        for port_id in self.ports:
            port_binding_delete(port_id, dest_host)
        for attachment_id in self.attachments:
            attachment_delete_quietly(attachment_id)
        if self.source_context:
            with target_cell(self.move["source"]):
                instance_update(self.move["instance_uuid"], migration_context=None)


class PrepAtSource(Step):
    """task_state ``resize_migrating``; the ``<name>-resize-temp`` image (image-backed servers);
    the source host powers off,
    snapshots into a file and destroys the guest; the file becomes the image's data, the source
    attachments placeholders, the destination's port bindings the active ones."""

    name = "prep resize at source"

    def __init__(self, move: dict[str, Any]) -> None:
        self.move = move

    def execute(self) -> None:
        m, ctx = self.move, self.move["ctx"]
        m["guest_destroyed"] = False
        with target_cell(m["source"]):
            instance_update(m["instance_uuid"], task_state=TaskState.RESIZE_MIGRATING)
            instance = instance_get_in_cell(m["instance_uuid"])
        notify(ctx, "instance.resize.start", instance)
        image = None
        if not instance.is_volume_backed:
            image = images.image_snapshot_create(ctx, name=f"{instance.display_name}-resize-temp",
                                                 instance_uuid=instance.uuid)
            m["image_id"] = image.id
        try:
            answer = compute_rpc.cross_cell_prep_at_source(
                ctx=ctx, host=str(instance.host), instance_uuid=instance.uuid, cell_uuid=str(m["source"].uuid),
                migration_uuid=m["migration_uuid"], snapshot=image is not None)
        except compute_rpc.CallNotDelivered:
            raise  # the host never got it: the guest is as it was
        except compute_rpc.CallFailed as exc:
            m["guest_destroyed"] = bool(exc.details.get("guest_destroyed", True))
            raise
        except Exception:
            m["guest_destroyed"] = True  # no answer: the guest's state is unknown (a hard reboot recovers it)
            raise
        m["guest_destroyed"] = True
        if image is not None:
            snapshot = Path(answer["snapshot_path"])
            try:
                images.image_activate_from_file(image, snapshot)
            finally:
                shutil.rmtree(snapshot.parent, ignore_errors=True)
        with target_cell(m["source"]):
            _swap_for_placeholders(instance.uuid)
            instance.refresh_from_db()
        for port in ports_of_instance(instance.uuid):
            port_binding_activate(port.id, m["dest_host"])
        notify(ctx, "instance.resize.end", instance)

    def rollback(self) -> None:
        if self.move.get("image_id"):
            images.image_delete_internal(self.move["image_id"])


class FinishAtDest(Step):
    """The destination host spawns the server from the hidden copy (VERIFY_RESIZE there); the
    temporary image goes; the conductor flips the mapping to the target cell (``flip_to``).

    Rollback (also of a half-done execute: the host failed after its spawn, the call timed out,
    the flip failed): the destination host destroys whatever guest it has of the server, with its
    disks. ``cross_cell_failed`` then removes the target cell's rows, the destination's
    attachments, bindings and allocations, and points the mapping back at the source."""

    name = "finish resize at destination"

    def __init__(self, move: dict[str, Any]) -> None:
        self.move = move
        self.called = False

    def execute(self) -> None:
        m, ctx = self.move, self.move["ctx"]
        with target_cell(m["target"]):
            instance = instance_get_in_cell(m["instance_uuid"], read_deleted=True)
        notify(ctx, "instance.resize_finish.start", instance)
        self.called = True
        compute_rpc.cross_cell_finish_at_dest(ctx=ctx, host=m["dest_host"], instance_uuid=m["instance_uuid"],
                                              cell_uuid=str(m["target"].uuid), migration_uuid=m["migration_uuid"],
                                              image_id=m.get("image_id"))
        if m.get("image_id"):
            images.image_delete_internal(m.pop("image_id"))
        flip_to(m["instance_uuid"], visible=m["target"], hidden=m["source"])

    def rollback(self) -> None:
        if not self.called:
            return
        try:
            compute_rpc.destroy_guest(host=self.move["dest_host"], instance_uuid=self.move["instance_uuid"])
        except Exception:
            log.exception("could not have %s destroy its guest of %s", self.move["dest_host"],
                          self.move["instance_uuid"])


def cross_cell_resize(ctx: RequestContext, *, instance: Instance, migration: Migration,
                      selection: dict[str, Any]) -> None:
    """Conductor: the whole move, each host's part a synchronous call."""
    source = current_cell()
    assert source is not None
    target = get_cell(selection["cell_uuid"])
    migration.cross_cell_move = True  # saved first, for audit
    migration.save(update_fields=["cross_cell_move", "updated_at"])
    move: dict[str, Any] = {"ctx": ctx, "instance_uuid": instance.uuid, "migration_uuid": migration.uuid,
                            "source": source, "target": target, "selection": selection}
    dest_host = str(selection["service_host"])
    notify_resize_prep(ctx, "start", instance, migration, host=dest_host)
    try:
        run_steps([TargetDBSetup(move), PrepAtDest(move)])
    except Exception as exc:
        move_failed(ctx, instance, migration, exc)
        return
    notify_resize_prep(ctx, "end", instance, migration, host=dest_host)
    try:
        run_steps([PrepAtSource(move), FinishAtDest(move)])
    except Exception as exc:
        with target_cell(source):
            migration.refresh_from_db(fields=["status"])
        if migration.status == MigrationStatus.ERROR:
            # beat's reaper undid the move meanwhile (e.g. a host killed while this waited for it)
            log.warning("cross-cell move of %s failed after it was rolled back: %s", instance.uuid, exc)
            return
        cross_cell_failed(ctx, instance_uuid=instance.uuid, migration_uuid=migration.uuid, source=source,
                          target=target, dest_host=move["dest_host"], exc=exc,
                          guest_destroyed=move.get("guest_destroyed", True))
        return
    with target_cell(target):
        notify(ctx, "instance.resize_finish.end", instance_get_in_cell(instance.uuid))


# --- confirm and revert (cast by the API side) ------------------------------------------------------


def confirm_cross_cell_resize(ctx: RequestContext, *, instance_uuid: str, cell_uuid: str, migration_uuid: str,
                              source_cell_uuid: str, cast_to_source: bool = False) -> None:
    """Clean the source host (its guest and disks, called there; cast when ``cast_to_source``: a
    confirm run in-process by a delete or beat) and the source cell (volume placeholders, port
    bindings, the rows, hard-deleted), then finish the server in the target. A failure leaves the
    migration ``error`` and the server ERROR with a fault."""
    source = get_cell(source_cell_uuid)
    with target_cell(cell_uuid):
        instance = instance_get(instance_uuid)
        migration = migration_get(migration_uuid)
        if instance is None or migration is None:
            return
        source_host = str(migration.source_compute)
        notify(ctx, "instance.resize_confirm.start", instance)
        try:
            with target_cell(source):
                source_copy = instance_get(instance_uuid) is not None
            if source_copy and cast_to_source:
                compute_rpc.destroy_guest(host=source_host, instance_uuid=instance_uuid)
            elif source_copy:
                compute_rpc.cross_cell_confirm_at_source(ctx=ctx, host=source_host, instance_uuid=instance_uuid,
                                                         cell_uuid=str(source.uuid), migration_uuid=migration_uuid)
            release_attachments(instance_uuid, source)
            if source_host != instance.host:
                for port in ports_of_instance(instance_uuid):
                    port_binding_delete(port.id, source_host)
            hard_delete_rows(instance_uuid, source)
        except Exception as exc:
            log.warning("confirm of the cross-cell resize of %s failed: %s", instance_uuid, exc)
            finish_failed(ctx, instance_uuid=instance_uuid, migration_uuid=migration_uuid, exc=exc)
            return
        finally:
            allocations_delete(consumer_uuid=migration_uuid)  # always: the source host's claim is gone
        finish_confirm(instance, migration)
        actions.action_finish(ctx, instance_uuid=instance_uuid)
        notify(ctx, "instance.resize_confirm.end", instance)


def reconcile_bdms(instance_uuid: str, *, source: CellMapping, target: CellMapping) -> None:
    """Copy the target's block devices back to the source by uuid: a BDM only in the target (a
    volume attached while resized) is recreated in the source with a fresh empty attachment; a
    BDM only in the source (a volume detached while resized) is deleted with its attachment."""

    with target_cell(target):
        in_target = {row["uuid"]: row for row in bdm_rows(instance_uuid)}
    with target_cell(source):
        in_source = {row["uuid"]: row for row in bdm_rows(instance_uuid)}
        for uuid, row in in_target.items():
            if uuid in in_source or row["destination_type"] != "volume" or not row["volume_id"]:
                continue
            att = volumes.attachment_create(None, volume_id=row["volume_id"], instance_uuid=instance_uuid)
            bdm_restore({**row, "attachment_id": att.id, "connection_info": None})
        for uuid, row in in_source.items():
            if uuid in in_target:
                continue
            if row["attachment_id"]:
                attachment_delete_quietly(row["attachment_id"])
            bdm_hard_delete(uuid)


def revert_cross_cell_resize(ctx: RequestContext, *, instance_uuid: str, cell_uuid: str, migration_uuid: str,
                             source_cell_uuid: str) -> None:
    """Reconcile the block devices into the source, switch the mapping back *first* (recovery then
    happens in the source cell), have the destination host destroy its guest, clean the
    destination (attachments, bindings, claim) and hard-delete the target rows; then the source
    host spawns the server again."""
    source = get_cell(source_cell_uuid)
    with target_cell(cell_uuid) as target:
        instance = instance_get(instance_uuid)
        migration = migration_get(migration_uuid)
    if instance is None or migration is None:
        return
    source_host, dest_host = str(migration.source_compute), str(instance.host)
    notify(ctx, "instance.resize_revert.start", instance)
    flipped = False
    try:
        reconcile_bdms(instance_uuid, source=source, target=target)
        with target_cell(source):
            migration_update(migration_uuid, status=MigrationStatus.REVERTING)
            actions.action_start(ctx, instance_uuid=instance_uuid, action="revertResize")
        flip_to(instance_uuid, visible=source, hidden=target)
        flipped = True
        compute_rpc.cross_cell_revert_at_dest(ctx=ctx, host=dest_host, instance_uuid=instance_uuid,
                                              cell_uuid=str(target.uuid), migration_uuid=migration_uuid)
        release_attachments(instance_uuid, target)
        for port in ports_of_instance(instance_uuid):
            port_binding_ensure(port.id, source_host)
            port_binding_activate(port.id, source_host)
            port_binding_delete(port.id, dest_host)
        with target_cell(target):
            allocations_back_to_server(instance, migration_uuid)
        hard_delete_rows(instance_uuid, target)
        compute_rpc.cross_cell_finish_revert(ctx=ctx, host=source_host, instance_uuid=instance_uuid,
                                             cell_uuid=str(source.uuid), migration_uuid=migration_uuid)
    except Exception as exc:
        log.warning("revert of the cross-cell resize of %s failed: %s", instance_uuid, exc)
        with target_cell(source if flipped else target):
            finish_failed(ctx, instance_uuid=instance_uuid, migration_uuid=migration_uuid, exc=exc)
        return
    with target_cell(source):
        instance = instance_get_in_cell(instance_uuid)
        actions.action_finish(ctx, instance_uuid=instance_uuid)
        notify(ctx, "instance.resize_revert.end", instance)
