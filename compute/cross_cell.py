"""The compute hosts' steps of a cross-cell move. The conductor (``conductor.cross_cell``) drives
the move and calls each step synchronously (``compute.rpc``); a step runs as the compute agent of
its host's own cell, touches only that cell's database and its own hypervisor, and answers a dict.
Everything that spans cells or lives in the API database (the other cell's copy, the instance
mapping, port bindings, volume attachments, images, allocations) is the conductor's.

- ``prep_at_dest`` (target cell, destination host): every volume can be connected here
  (``can_connect_volume``), then the node is claimed: the migration's destination and the
  migration context, in one transaction (a refused check leaves nothing behind);
- ``prep_at_source`` (source cell, source host): power off, snapshot to a file (not for a
  volume-backed server), destroy the guest keeping its disks; a failure before the destroy gives
  the guest back (powered on if it was ACTIVE) and answers ``guest_destroyed: False``;
- ``finish_at_dest`` (target cell): the new flavor and host, volumes connected, spawn, migration
  ``finished``, vm_state ``resized``; a failed spawn leaves no guest behind;
- ``confirm_at_source`` (source cell): destroy the source guest and its disks;
- ``revert_at_dest`` (target cell): destroy the destination guest and its disks;
- ``finish_revert`` (source cell): connect the volumes, spawn the source guest again (powered on
  only if it was ACTIVE), migration ``reverted``.
"""
from __future__ import annotations

import logging
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cells.context import current_cell
from cells.transactions import atomic
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import CloudcoreError
from hosts.selectors import compute_node_values
from servers.choices import MigrationStatus, PowerState, TaskState, VmState
from servers.selectors import ServerNotFound, bdms_of, instance_get, migration_get

from .block_devices import attach_bdm
from .drivers import driver_for
from .ops import _apply_flavor, _migration, _set, _spawn_here
from .registry import move_step

if TYPE_CHECKING:
    from servers.models import BlockDeviceMapping, Instance

log = logging.getLogger(__name__)


class VolumeCannotConnect(CloudcoreError):
    code = 409
    message = "Volume %(volume_id)s cannot be connected to host %(host)s."


class SourcePrepFailed(CloudcoreError):
    """A failed prep at the source; ``details["guest_destroyed"]`` says whether the guest is gone."""

    def __init__(self, exc: BaseException, *, guest_destroyed: bool) -> None:
        super().__init__(str(exc) or type(exc).__name__)
        self.details = {"guest_destroyed": guest_destroyed}


def _volume_bdms(instance_uuid: str) -> list[BlockDeviceMapping]:
    return [bdm for bdm in bdms_of(instance_uuid, volumes_only=True) if bdm.volume_id is not None]


def _migration_status_set(migration_uuid: str, status: str) -> None:
    migration = migration_get(migration_uuid)
    if migration is not None:
        migration.status = status
        migration.save(update_fields=["status", "updated_at"])


@move_step("cross_cell_prep_at_dest", event="compute_prep_snapshot_based_resize_at_dest", action="resize")
def prep_at_dest(ctx: RequestContext, instance: Instance, migration_uuid: str,
                 compute_node_uuid: str) -> dict[str, Any]:
    """Target cell, destination host, on the hidden copy: refuse when a volume cannot be
    connected here, else claim the node (migration destination, migration context)."""
    cell = current_cell()
    assert cell is not None
    found = compute_node_values("id", "host", "hypervisor_hostname", uuids=[compute_node_uuid])
    if not found:
        raise CloudcoreError(f"Compute node {compute_node_uuid} could not be found.")
    node = found[0]
    driver = driver_for(node["host"])
    for bdm in _volume_bdms(instance.uuid):
        if bdm.connection_info and not driver.can_connect_volume(connection_info=bdm.connection_info):
            raise VolumeCannotConnect(volume_id=bdm.volume_id, host=node["host"])
    with atomic(cell):
        migration = _migration(migration_uuid)
        migration.dest_compute = migration.dest_host = node["host"]
        migration.dest_node, migration.dest_compute_id = node["hypervisor_hostname"], node["id"]
        migration.save()
        instance.migration_context = {"migration_id": migration.id, "migration_uuid": migration.uuid,
                                      "old_host": migration.source_compute, "new_host": node["host"],
                                      "cross_cell": True}
        instance.save(update_fields=["migration_context", "updated_at"])
    return {"host": node["host"], "node": node["hypervisor_hostname"], "compute_id": node["id"]}


@move_step("cross_cell_prep_at_source", event="compute_prep_snapshot_based_resize_at_source", action="resize")
def prep_at_source(ctx: RequestContext, instance: Instance, migration_uuid: str, snapshot: bool) -> dict[str, Any]:
    """Source cell, source host: power off, snapshot into a file (``snapshot_path``, which the
    conductor uploads), destroy the guest keeping its disks; migration ``post-migrating``."""
    driver = driver_for(str(instance.host))
    old_vm_state = (instance.system_metadata or {}).get("old_vm_state", VmState.ACTIVE)
    destroying, snapshot_path = False, None
    try:
        _migration_status_set(migration_uuid, MigrationStatus.MIGRATING)
        driver.power_off(instance=instance)
        if snapshot:
            snapshot_path = str(Path(tempfile.mkdtemp(prefix="cloudcore-resize-")) / "snapshot")
            driver.snapshot(instance=instance, target_path=snapshot_path)
        destroying = True
        driver.destroy(instance=instance, destroy_disks=False)
    except Exception as exc:
        if snapshot_path:
            shutil.rmtree(Path(snapshot_path).parent, ignore_errors=True)
        if not destroying and old_vm_state == VmState.ACTIVE:
            try:
                driver.power_on(instance=instance)
            except Exception:
                destroying = True  # the guest is in an unknown state: ERROR, a hard reboot recovers it
        raise SourcePrepFailed(exc, guest_destroyed=destroying) from exc
    _migration_status_set(migration_uuid, MigrationStatus.POST_MIGRATING)
    _set(instance, task_state=TaskState.RESIZE_MIGRATED, power_state=PowerState.SHUTDOWN)
    return {"snapshot_path": snapshot_path}


@move_step("cross_cell_finish_at_dest", event="compute_finish_snapshot_based_resize_at_dest", action="resize")
def finish_at_dest(ctx: RequestContext, instance: Instance, migration_uuid: str,
                   image_id: str | None) -> dict[str, Any]:
    """Target cell, destination host, on the hidden copy: the new flavor and host, the volumes
    connected, the guest spawned (from the snapshot ``image_id`` if any); VERIFY_RESIZE."""
    migration = _migration(migration_uuid)
    fresh = instance_get(instance.uuid, read_deleted=True)
    if fresh is None:
        raise ServerNotFound(instance_id=instance.uuid)
    instance = fresh
    old_vm_state = (instance.system_metadata or {}).get("old_vm_state", VmState.ACTIVE)
    instance.host, instance.node = migration.dest_compute, migration.dest_node
    instance.compute_id = migration.dest_compute_id
    for key, value in _apply_flavor(instance, migration.new_flavor or instance.flavor).items():
        setattr(instance, key, value)
    instance.old_flavor, instance.new_flavor = migration.old_flavor, migration.new_flavor
    instance.task_state = TaskState.RESIZE_FINISH
    original = instance.image_ref
    if image_id:
        instance.image_ref = image_id
    instance.save()
    for bdm in _volume_bdms(instance.uuid):
        attach_bdm(ctx, instance, bdm)
    power = _spawn_here(instance, powered_off=old_vm_state == VmState.STOPPED)
    migration.status = MigrationStatus.FINISHED
    migration.save(update_fields=["status", "updated_at"])
    _set(instance, vm_state=VmState.RESIZED, task_state=None, power_state=power, image_ref=original)
    return {}


@move_step("cross_cell_confirm_at_source", event="compute_confirm_snapshot_based_resize_at_source",
           action="confirmResize")
def confirm_at_source(ctx: RequestContext, instance: Instance, migration_uuid: str) -> dict[str, Any]:
    """Source cell, source host, on the hidden copy: destroy the guest and its disks."""
    driver_for(str(instance.host)).destroy(instance=instance, destroy_disks=True)
    return {}


@move_step("cross_cell_revert_at_dest", event="compute_revert_snapshot_based_resize_at_dest",
           action="revertResize")
def revert_at_dest(ctx: RequestContext, instance: Instance, migration_uuid: str) -> dict[str, Any]:
    """Target cell, destination host, on the (now hidden) copy: destroy the guest and its disks."""
    driver_for(str(instance.host)).destroy(instance=instance, destroy_disks=True)
    return {}


@move_step("cross_cell_finish_revert", event="compute_finish_revert_snapshot_based_resize_at_source",
           action="revertResize")
def finish_revert(ctx: RequestContext, instance: Instance, migration_uuid: str) -> dict[str, Any]:
    """Source cell, source host: the volumes are connected to this host again and the guest
    comes back, powered on only if it was ACTIVE; the migration ends ``reverted``."""
    sysmeta = dict(instance.system_metadata or {})
    old_vm_state = sysmeta.pop("old_vm_state", VmState.ACTIVE)
    for bdm in _volume_bdms(instance.uuid):
        attach_bdm(ctx, instance, bdm)
    power = _spawn_here(instance, powered_off=old_vm_state == VmState.STOPPED)
    _migration_status_set(migration_uuid, MigrationStatus.REVERTED)
    _set(instance, vm_state=old_vm_state, task_state=None, power_state=power, hidden=False, old_flavor=None,
         new_flavor=None, migration_context=None, system_metadata=sysmeta)
    return {}
