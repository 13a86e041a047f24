"""The compute hosts' half of a cross-cell move (``conductor.cross_cell`` starts it): prep at the
source, finish at the destination, confirm at the source, revert at the destination then finish
at the source. Each runs on its host's ``compute.<host>`` queue with the right cell targeted."""
from __future__ import annotations

import logging
import tempfile
from pathlib import Path
from typing import Any

from django.utils import timezone

from cells.context import current_cell, target_cell
from cells.models import CellMapping, InstanceMapping
from cloudcore.core.context import RequestContext
from images import services as images
from images.models import Image
from images.services import image_data_path
from networks.models import Port, PortBinding
from networks.services import port_binding_activate, port_binding_delete, ports_rebind_host
from scheduling.placement.services import allocations_delete
from servers.choices import MigrationStatus, PowerState, TaskState, VmState
from servers.models import BlockDeviceMapping, Instance, Migration
from servers.services import actions
from servers.services import cross_cell as xc
from servers.services.move_recovery import allocations_back_to_server
from volumes import services as volumes
from volumes.models import AttachStatus, VolumeAttachment

from . import rpc
from .block_devices import attach_bdm
from .drivers import NoDriverForHost, driver_for
from .ops import _apply_flavor, _set, _spawn_here, finish_confirm
from .registry import move_step

log = logging.getLogger(__name__)


def _cells(**uuids: str) -> dict[str, CellMapping]:
    return {k: CellMapping.objects.get(uuid=v) for k, v in uuids.items()}


def _swap_for_placeholders(instance: Instance) -> None:
    """Replace each volume attachment of the source BDMs by an empty one: the volumes stay reserved
    for the server while no host is connected to them."""

    for bdm in xc.volume_bdms(instance.uuid):
        placeholder = volumes.attachment_create(None, volume_id=str(bdm.volume_id), instance_uuid=instance.uuid)
        if bdm.attachment_id:
            xc.attachment_delete_quietly(bdm.attachment_id)
        BlockDeviceMapping.objects.filter(pk=bdm.pk).update(attachment_id=placeholder.id, connection_info=None)


def reconnect_source_volumes(ctx: RequestContext, instance: Instance) -> None:
    """Complete the source BDMs' attachments on the source host again (after their placeholders
    replaced them at prep time), so a recovered or reverted server has its volumes ``in-use``."""
    for bdm in xc.volume_bdms(instance.uuid):
        att = VolumeAttachment.objects.filter(pk=bdm.attachment_id, deleted=False).first() \
            if bdm.attachment_id else None
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
    xc.release_attachments(instance_uuid, target)
    xc.hard_delete_rows(instance_uuid, target)
    InstanceMapping.objects.filter(instance_uuid=instance_uuid).update(cell=source)
    if dest_host:
        for port in Port.objects.filter(device_id=instance_uuid):
            port_binding_delete(port.id, dest_host)
    if image_id:
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
        xc.notify(ctx, "instance.resize.error", instance, fault=exc)


@move_step("cross_cell_prep_at_source", event="compute_prep_snapshot_based_resize_at_source", action="resize")
def prep_at_source(ctx: RequestContext, instance: Instance, migration_uuid: str, target_cell_uuid: str,
                   dest_host: str) -> None:
    """Source cell targeted, on the source host: power off, snapshot ``<name>-resize-temp`` (not for
    a volume-backed server), destroy the guest keeping its disks, swap the volume attachments for
    placeholders, activate the destination port bindings; then cast the finish to the destination.

    A failure before the destroy gives the guest back (powered on if it was ACTIVE) and only clears
    the task_state; from the destroy on, the server goes to ERROR (a hard reboot recovers it)."""

    cells = _cells(target=target_cell_uuid)
    source = CellMapping.objects.get(uuid=xc.source_cell_of(Migration.objects.get(uuid=migration_uuid)).uuid)
    xc.notify(ctx, "instance.resize.start", instance)
    driver = driver_for(str(instance.host))
    old_vm_state = (instance.system_metadata or {}).get("old_vm_state", VmState.ACTIVE)
    image_id, destroying = None, False
    try:
        Migration.objects.filter(uuid=migration_uuid).update(status=MigrationStatus.MIGRATING)
        driver.power_off(instance=instance)
        if not instance.is_volume_backed:
            image = images.image_snapshot_create(ctx, name=f"{instance.display_name}-resize-temp",
                                                 instance_uuid=instance.uuid)
            image_id = image.id
            with tempfile.TemporaryDirectory() as tmp:
                target = Path(tmp) / "snapshot"
                driver.snapshot(instance=instance, target_path=target)
                images.image_activate_from_file(image, target)
        destroying = True
        driver.destroy(instance=instance, destroy_disks=False)
        _swap_for_placeholders(instance)
        for port in Port.objects.filter(device_id=instance.uuid):
            port_binding_activate(port.id, dest_host)
    except Exception as exc:
        if not destroying and old_vm_state == VmState.ACTIVE:
            try:
                driver.power_on(instance=instance)
            except Exception:
                destroying = True  # the guest is in an unknown state: ERROR, a hard reboot recovers it
        cross_cell_failed(ctx, instance_uuid=instance.uuid, migration_uuid=migration_uuid, source=source,
                             target=cells["target"], dest_host=dest_host, exc=exc, guest_destroyed=destroying,
                             image_id=image_id)
        raise
    Migration.objects.filter(uuid=migration_uuid).update(status=MigrationStatus.POST_MIGRATING)
    _set(instance, task_state=TaskState.RESIZE_MIGRATED, power_state=PowerState.SHUTDOWN)
    xc.notify(ctx, "instance.resize.end", instance)
    rpc.cross_cell_finish_at_dest(ctx=ctx, host=dest_host, instance_uuid=instance.uuid, cell_uuid=target_cell_uuid,
                                  migration_uuid=migration_uuid, source_cell_uuid=str(source.uuid),
                                  image_id=image_id)


@move_step("cross_cell_finish_at_dest", event="compute_finish_snapshot_based_resize_at_dest", action="resize")
def finish_at_dest(ctx: RequestContext, instance: Instance, migration_uuid: str, source_cell_uuid: str,
                   image_id: str | None) -> None:
    """Runs with the target cell targeted, on the destination host, on the hidden copy."""

    cells = _cells(source=source_cell_uuid)
    target = current_cell()
    assert target is not None
    migration = Migration.objects.get(uuid=migration_uuid)
    instance = Instance.all_objects.get(uuid=instance.uuid)
    xc.notify(ctx, "instance.resize_finish.start", instance)
    old_vm_state = (instance.system_metadata or {}).get("old_vm_state", VmState.ACTIVE)
    try:
        instance.host, instance.node = migration.dest_compute, migration.dest_node
        instance.compute_id = migration.dest_compute_id
        for key, value in _apply_flavor(instance, migration.new_flavor or instance.flavor).items():
            setattr(instance, key, value)
        instance.old_flavor, instance.new_flavor = migration.old_flavor, migration.new_flavor
        instance.task_state = TaskState.RESIZE_FINISH
        if image_id:
            instance.image_ref, original = image_id, instance.image_ref
        instance.save()

        for bdm in xc.volume_bdms(instance.uuid):
            attach_bdm(ctx, instance, bdm)
        power = _spawn_here(instance, powered_off=old_vm_state == VmState.STOPPED)
        if image_id:
            instance.image_ref = original
    except Exception as exc:
        with target_cell(cells["source"]):
            cross_cell_failed(ctx, instance_uuid=instance.uuid, migration_uuid=migration_uuid,
                                 source=cells["source"], target=target, dest_host=migration.dest_compute, exc=exc,
                                 guest_destroyed=True, image_id=image_id)
        raise
    if image_id:
        Image.objects.filter(id=image_id).update(status="deleted", deleted=True, deleted_at=timezone.now())
        image_data_path(image_id).unlink(missing_ok=True)
    migration.status = MigrationStatus.FINISHED
    migration.save(update_fields=["status", "updated_at"])
    _set(instance, vm_state=VmState.RESIZED, task_state=None, power_state=power, image_ref=instance.image_ref)
    xc.flip_to(instance.uuid, visible=target, hidden=cells["source"])
    xc.notify(ctx, "instance.resize_finish.end", instance)


def destroy_source_guest(host: str, instance: Any) -> None:
    """Destroy the source guest and its disks: here when this process runs ``host``'s driver,
    otherwise on ``host``'s own queue (a confirm run synchronously by the API or beat)."""
    try:
        driver = driver_for(host)
    except NoDriverForHost:
        rpc.destroy_guest(host=host, instance_uuid=instance.uuid)
        return
    driver.destroy(instance=instance, destroy_disks=True)


@move_step("cross_cell_confirm", event="compute_confirm_snapshot_based_resize_at_source", action="confirmResize")
def confirm(ctx: RequestContext, instance: Instance, migration_uuid: str, source_cell_uuid: str) -> None:
    """Target cell targeted: clean the source host (guest, disks, volume placeholders, port
    bindings) and hard-delete the source cell's rows, then finish the server in the target.
    A failure leaves the migration ``error`` and the server ERROR with a fault."""

    cells = _cells(source=source_cell_uuid)
    migration = Migration.objects.get(uuid=migration_uuid)
    xc.notify(ctx, "instance.resize_confirm.start", instance)
    try:
        with target_cell(cells["source"]):
            source_copy = Instance.all_objects.filter(uuid=instance.uuid).first()
        if source_copy is not None:
            destroy_source_guest(str(migration.source_compute), source_copy)
        xc.release_attachments(instance.uuid, cells["source"])
        if migration.source_compute != instance.host:
            for port in Port.objects.filter(device_id=instance.uuid):
                port_binding_delete(port.id, str(migration.source_compute))
        xc.hard_delete_rows(instance.uuid, cells["source"])
    except Exception as exc:
        log.warning("confirm of the cross-cell resize of %s failed: %s", instance.uuid, exc)
        xc.finish_failed(ctx, instance_uuid=instance.uuid, migration_uuid=migration_uuid, exc=exc,
                         action="resize_confirm")
        raise
    finally:
        allocations_delete(consumer_uuid=migration.uuid)  # always: the source host's claim is gone
    finish_confirm(instance, migration)
    actions.action_finish(ctx, instance_uuid=instance.uuid)
    xc.notify(ctx, "instance.resize_confirm.end", instance)


def reconcile_bdms(instance_uuid: str, *, source: CellMapping, target: CellMapping) -> None:
    """Copy the target's block devices back to the source by uuid: a BDM only in the target (a
    volume attached while resized) is recreated in the source with a fresh empty attachment; a
    BDM only in the source (a volume detached while resized) is deleted with its attachment."""

    fields = [f.attname for f in BlockDeviceMapping._meta.concrete_fields if f.attname != "id"]
    with target_cell(target):
        in_target = {b["uuid"]: b for b in BlockDeviceMapping.objects.filter(instance_uuid=instance_uuid)
                     .values(*fields)}
    with target_cell(source):
        in_source = {b.uuid: b for b in BlockDeviceMapping.objects.filter(instance_uuid=instance_uuid)}
        for uuid, row in in_target.items():
            if uuid in in_source or row["destination_type"] != "volume" or not row["volume_id"]:
                continue
            att = volumes.attachment_create(None, volume_id=row["volume_id"], instance_uuid=instance_uuid)
            BlockDeviceMapping.objects.create(**{**row, "attachment_id": att.id, "connection_info": None})
        for uuid, bdm in in_source.items():
            if uuid in in_target:
                continue
            if bdm.attachment_id:
                xc.attachment_delete_quietly(bdm.attachment_id)
            BlockDeviceMapping.all_objects.filter(pk=bdm.pk).delete()


@move_step("cross_cell_revert_at_dest", event="compute_revert_snapshot_based_resize_at_dest", action="revertResize")
def revert_at_dest(ctx: RequestContext, instance: Instance, migration_uuid: str, source_cell_uuid: str) -> None:
    """Target cell targeted, on the destination host: reconcile the block devices into the source,
    switch the mapping back *first* (recovery then happens in the source cell), then clean the
    destination (guest, disks, attachments, bindings, claim) and hard-delete the target rows;
    cast the finish to the source host."""

    cells = _cells(source=source_cell_uuid)
    target = current_cell()
    assert target is not None
    migration = Migration.objects.get(uuid=migration_uuid)
    xc.notify(ctx, "instance.resize_revert.start", instance)
    flipped = False
    try:
        reconcile_bdms(instance.uuid, source=cells["source"], target=target)
        with target_cell(cells["source"]):
            Migration.objects.filter(uuid=migration_uuid).update(status=MigrationStatus.REVERTING)
            actions.action_start(ctx, instance_uuid=instance.uuid, action="revertResize")
        xc.flip_to(instance.uuid, visible=cells["source"], hidden=target)
        flipped = True
        driver_for(str(instance.host)).destroy(instance=instance, destroy_disks=True)
        xc.release_attachments(instance.uuid, target)
        for port in Port.objects.filter(device_id=instance.uuid):
            PortBinding.objects.get_or_create(port=port, host=str(migration.source_compute))
            port_binding_activate(port.id, str(migration.source_compute))
            port_binding_delete(port.id, str(migration.dest_compute))
        allocations_back_to_server(instance, migration.uuid)
        xc.hard_delete_rows(instance.uuid, target)
    except Exception as exc:
        log.warning("revert of the cross-cell resize of %s failed: %s", instance.uuid, exc)
        with target_cell(cells["source"] if flipped else target):
            xc.finish_failed(ctx, instance_uuid=instance.uuid, migration_uuid=migration_uuid, exc=exc,
                             action="resize_revert")
        raise
    rpc.cross_cell_finish_revert(ctx=ctx, host=str(migration.source_compute), instance_uuid=instance.uuid,
                                 cell_uuid=str(cells["source"].uuid), migration_uuid=migration_uuid)


@move_step("cross_cell_finish_revert", event="compute_finish_revert_snapshot_based_resize_at_source",
           action="revertResize")
def finish_revert(ctx: RequestContext, instance: Instance, migration_uuid: str) -> None:
    """Source cell targeted: the volumes are connected to the source host again and the source
    guest comes back, powered on only if it was ACTIVE; the migration ends ``reverted``."""
    sysmeta = dict(instance.system_metadata or {})
    old_vm_state = sysmeta.pop("old_vm_state", VmState.ACTIVE)
    try:
        reconnect_source_volumes(ctx, instance)
        power = _spawn_here(instance, powered_off=old_vm_state == VmState.STOPPED)
    except Exception as exc:
        xc.finish_failed(ctx, instance_uuid=instance.uuid, migration_uuid=migration_uuid, exc=exc,
                         action="resize_revert")
        raise
    Migration.objects.filter(uuid=migration_uuid).update(status=MigrationStatus.REVERTED, updated_at=timezone.now())
    _set(instance, vm_state=old_vm_state, task_state=None, power_state=power, hidden=False, old_flavor=None,
         new_flavor=None, migration_context=None, system_metadata=sysmeta)
    actions.action_finish(ctx, instance_uuid=instance.uuid)
    xc.notify(ctx, "instance.resize_revert.end", instance)
