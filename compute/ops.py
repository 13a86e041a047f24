"""The compute host's half of the server actions (``run_operation_task`` on ``compute.<host>``).

Each operation loads the server in its cell, drives the virt driver, records a
``compute_<op>`` event on the action, finishes the state change and emits
``instance.<action>.start/end`` (``.error`` on failure). A failure never leaves the server in a
task_state: it is set back (or to ERROR where the guest may be gone) with a fault.
"""
from __future__ import annotations

import logging
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.utils import timezone

from cells.context import current_cell, target_cell
from cloudcore.core.context import RequestContext
from hosts.selectors import compute_node_for_host
from servers.choices import MigrationStatus, PowerState, TaskState, VmState
from servers.selectors import MigrationNotFound, evacuations_from, instance_get, migration_get

from . import rpc
from .block_devices import block_device_info, connect_unconnected_volumes
from .build import image_meta
from .clients import images as glance
from .clients import networks as neutron
from .clients import placement
from .drivers import driver_for
from .rebuild_bfv import rebuild_volume_backed, rebuild_volume_backed_keep_volume
from .registry import allocations_back_to_server, host_call, runner_for, server_action

if TYPE_CHECKING:
    from servers.models import Instance, Migration

log = logging.getLogger(__name__)


def _set(instance: Instance, **fields: Any) -> None:
    for key, value in fields.items():
        setattr(instance, key, value)
    instance.save(update_fields=[*fields, "updated_at"])


def _power_state(driver: Any, instance: Instance, default: int) -> int:
    try:
        info = driver.get_info(instance)
    except Exception:
        return default
    state = info.get("state") if isinstance(info, dict) else getattr(info, "state", None)
    return {1: PowerState.RUNNING, 5: PowerState.SHUTDOWN, 3: PowerState.PAUSED}.get(state, default)


def run_op(ctx: RequestContext, *, op_name: str, instance_uuid: str, cell_uuid: str, **kwargs: Any) -> Any:
    """Run operation ``op_name`` on the server; returns the operation's answer (a call's), or None
    when the server is gone or being deleted."""
    with target_cell(cell_uuid):
        instance = instance_get(instance_uuid)
        if instance is None or instance.task_state == TaskState.DELETING:
            return None
        return runner_for(op_name)(ctx, instance, **kwargs)


@server_action("power_on", action="start", notification="power_on", event="compute_start_instance")
def power_on(ctx: RequestContext, instance: Instance) -> None:
    driver_for(str(instance.host)).power_on(instance=instance)
    _set(instance, vm_state=VmState.ACTIVE, task_state=None, power_state=PowerState.RUNNING)


@server_action("power_off", action="stop", notification="power_off", event="compute_stop_instance")
def power_off(ctx: RequestContext, instance: Instance) -> None:
    driver_for(str(instance.host)).power_off(instance=instance)
    _set(instance, vm_state=VmState.STOPPED, task_state=None, power_state=PowerState.SHUTDOWN)


@server_action("soft_delete", action="delete", notification="soft_delete", event="compute_soft_delete_instance")
def soft_delete(ctx: RequestContext, instance: Instance) -> None:
    """Power the guest off and keep everything else (disks, ports, allocations): SOFT_DELETED."""
    driver = driver_for(str(instance.host))
    driver.power_off(instance=instance)
    _set(instance, vm_state=VmState.SOFT_DELETED, task_state=None,
         power_state=_power_state(driver, instance, PowerState.SHUTDOWN))


@server_action("restore", action="restore", notification="restore", event="compute_restore_instance")
def restore(ctx: RequestContext, instance: Instance) -> None:
    """A soft-deleted server's guest is powered on again: ACTIVE."""
    driver = driver_for(str(instance.host))
    driver.power_on(instance=instance)
    _set(instance, vm_state=VmState.ACTIVE, task_state=None,
         power_state=_power_state(driver, instance, PowerState.RUNNING))


@server_action("reboot", action="reboot", notification="reboot", event="compute_reboot_instance")
def reboot(ctx: RequestContext, instance: Instance, hard: bool = False) -> None:
    driver = driver_for(str(instance.host))
    if hard and not _guest_exists(driver, instance):
        # A hard reboot recovers a server whose guest is gone: define and start it again.

        driver.spawn(instance=instance, image_meta=image_meta(instance.image_ref or None),
                     network_info=neutron.network_info(instance_uuid=instance.uuid),
                     block_device_info=block_device_info(instance), admin_password=None)
    else:
        driver.reboot(instance=instance, reboot_type="HARD" if hard else "SOFT")
    _set(instance, vm_state=VmState.ACTIVE, task_state=None, power_state=PowerState.RUNNING)


def _guest_exists(driver: Any, instance: Instance) -> bool:
    try:
        driver.get_info(instance)
    except Exception:
        return False
    return True


@server_action("shelve", action="shelve", notification="shelve", event="compute_shelve_instance")
def shelve(ctx: RequestContext, instance: Instance) -> None:
    driver = driver_for(str(instance.host))
    driver.power_off(instance=instance)
    sysmeta = dict(instance.system_metadata or {})
    if instance.image_ref:
        image = glance.snapshot_image_create(name=f"{instance.display_name}-shelved", owner=instance.project_id,
                                             instance_uuid=instance.uuid)
        _snapshot_to(driver, instance, image_id=image.id)
        sysmeta["shelved_image_id"] = image.id
    sysmeta.update(shelved_at=timezone.now().isoformat(), shelved_host=str(instance.host))
    _set(instance, vm_state=VmState.SHELVED, task_state=None, power_state=PowerState.SHUTDOWN,
         system_metadata=sysmeta)
    if settings.SHELVED_OFFLOAD_TIME == 0:
        _set(instance, task_state=TaskState.SHELVING_OFFLOADING)
        _offload(ctx, instance)


def _offload(ctx: RequestContext, instance: Instance) -> None:
    driver_for(str(instance.host)).destroy(instance=instance, destroy_disks=True)

    neutron.ports_rebind_host(instance_uuid=instance.uuid, host=None)
    placement.allocations_delete(consumer_uuid=instance.uuid)  # its ports stay with it, unbound
    _set(instance, vm_state=VmState.SHELVED_OFFLOADED, task_state=None, power_state=PowerState.SHUTDOWN,
         host=None, node=None, compute=None)


@server_action("shelve_offload", action="shelveOffload", notification="shelve_offload",
    event="compute_shelve_offload_instance")
def shelve_offload(ctx: RequestContext, instance: Instance) -> None:
    _offload(ctx, instance)


def _drop_shelved_image(ctx: RequestContext, instance: Instance) -> None:
    sysmeta = dict(instance.system_metadata or {})
    image_id = sysmeta.pop("shelved_image_id", None)
    for key in ("shelved_at", "shelved_host"):
        sysmeta.pop(key, None)
    if image_id:
        glance.image_delete(image_id=image_id)
    _set(instance, system_metadata=sysmeta)


@server_action("unshelve_power_on", action="unshelve", notification="unshelve", event="compute_unshelve_instance")
def unshelve_power_on(ctx: RequestContext, instance: Instance) -> None:
    driver_for(str(instance.host)).power_on(instance=instance)
    _set(instance, vm_state=VmState.ACTIVE, task_state=None, power_state=PowerState.RUNNING)
    _drop_shelved_image(ctx, instance)


@server_action("unshelve_spawn", action="unshelve", notification="unshelve", event="compute_unshelve_instance")
def unshelve_spawn(ctx: RequestContext, instance: Instance) -> None:
    """Spawn an offloaded server on the host the conductor chose. A spawn failure frees the
    allocations and leaves it SHELVED_OFFLOADED (Nova), with a fault."""

    driver = driver_for(str(instance.host))
    image_id = (instance.system_metadata or {}).get("shelved_image_id") or instance.image_ref or None
    neutron.ports_rebind_host(instance_uuid=instance.uuid, host=instance.host)
    try:
        connect_unconnected_volumes(ctx, instance)  # attached while it was offloaded
        driver.spawn(instance=instance, image_meta=image_meta(image_id),
                     network_info=neutron.network_info(instance_uuid=instance.uuid),
                     block_device_info=block_device_info(instance), admin_password=None)
    except Exception:
        placement.allocations_delete(consumer_uuid=instance.uuid)
        neutron.ports_rebind_host(instance_uuid=instance.uuid, host=None)
        _set(instance, host=None, node=None, compute=None, task_state=None, vm_state=VmState.SHELVED_OFFLOADED)
        raise
    _set(instance, vm_state=VmState.ACTIVE, task_state=None, power_state=PowerState.RUNNING,
         launched_at=timezone.now())
    _drop_shelved_image(ctx, instance)


@server_action("rebuild", action="rebuild", notification="rebuild", event="compute_rebuild_instance")
def rebuild(ctx: RequestContext, instance: Instance, image_id: str, admin_pass: str | None = None,
            preserve_ephemeral: bool = False, reimage_boot_volume: bool = False) -> None:
    """Destroy the guest (ports kept), spawn it from ``image_id``; a stopped server ends SHUTOFF.
    ``reimage_boot_volume``: a volume-backed server's root volume is reimaged (``rebuild_bfv``)."""

    was_stopped = instance.vm_state == VmState.STOPPED
    driver = driver_for(str(instance.host))
    if reimage_boot_volume:
        rebuild_volume_backed(ctx, instance, image_id=image_id, admin_pass=admin_pass, driver=driver)
        return
    if instance.is_volume_backed:  # before 2.93 (or reimage_boot_volume false): the volume's data is kept

        rebuild_volume_backed_keep_volume(ctx, instance, admin_pass=admin_pass, driver=driver)
        return
    driver.destroy(instance=instance, destroy_disks=not preserve_ephemeral)
    _set(instance, task_state=TaskState.REBUILD_SPAWNING, image_ref=image_id)
    driver.spawn(instance=instance, image_meta=image_meta(image_id),
                 network_info=neutron.network_info(instance_uuid=instance.uuid),
                 block_device_info=block_device_info(instance), admin_password=admin_pass)
    if was_stopped:
        driver.power_off(instance=instance)
        _set(instance, vm_state=VmState.STOPPED, task_state=None, power_state=PowerState.SHUTDOWN,
             launched_at=timezone.now())
    else:
        _set(instance, vm_state=VmState.ACTIVE, task_state=None, power_state=PowerState.RUNNING,
             launched_at=timezone.now())


# --- resize / cold migration within a cell ------------------------------------------------------


def _migration(uuid: str) -> Migration:
    migration = migration_get(uuid)
    if migration is None:
        raise MigrationNotFound(migration_id=uuid)
    return migration


def _cell_uuid() -> str:
    cell = current_cell()
    assert cell is not None
    return str(cell.uuid)


def _spawn_here(instance: Instance, *, powered_off: bool, admin_password: str | None = None) -> int:
    """Spawn the server on its (new) host with its ports bound there; powered off when it was
    stopped before the move. Returns the resulting power state."""

    neutron.ports_rebind_host(instance_uuid=instance.uuid, host=instance.host)
    driver = driver_for(str(instance.host))
    driver.spawn(instance=instance, image_meta=image_meta(instance.image_ref or None),
                 network_info=neutron.network_info(instance_uuid=instance.uuid),
                 block_device_info=block_device_info(instance), admin_password=admin_password)
    if powered_off:
        driver.power_off(instance=instance)
        return PowerState.SHUTDOWN
    return PowerState.RUNNING


def finish_confirm(instance: Instance, migration: Migration) -> None:
    """A confirmed move: the migration ends ``confirmed``; the server leaves VERIFY_RESIZE (STOPPED
    when its guest is off, else ACTIVE) and forgets its old flavor and migration context."""
    migration.status = MigrationStatus.CONFIRMED
    migration.save(update_fields=["status", "updated_at"])
    sysmeta = dict(instance.system_metadata or {})
    sysmeta.pop("old_vm_state", None)
    vm_state = VmState.STOPPED if instance.power_state == PowerState.SHUTDOWN else VmState.ACTIVE
    _set(instance, vm_state=vm_state, task_state=None, old_flavor=None, new_flavor=None, migration_context=None,
         system_metadata=sysmeta)


def _apply_flavor(instance: Instance, flavor: dict[str, Any]) -> dict[str, Any]:
    return {"flavor": flavor, "vcpus": int(flavor.get("vcpus", 0)), "memory_mb": int(flavor.get("memory_mb", 0)),
            "root_gb": int(flavor.get("root_gb", 0)), "ephemeral_gb": int(flavor.get("ephemeral_gb", 0))}


@server_action("resize_at_source", action="resize", notification="resize", event="compute_resize_instance")
def resize_at_source(ctx: RequestContext, instance: Instance, migration_uuid: str) -> None:
    """Source host: power the guest off and take it down; its disks go with the move (a driver
    that moves disks keeps them for the destination and names where in the RPC message)."""

    migration = _migration(migration_uuid)
    driver = driver_for(str(instance.host))
    driver.power_off(instance=instance)
    migrate = getattr(driver, "migrate_disk_and_power_off", None)
    disk_source = migrate(instance=instance) if migrate is not None else None
    if migrate is None:
        driver.destroy(instance=instance, destroy_disks=False)
    migration.status = MigrationStatus.POST_MIGRATING
    migration.save(update_fields=["status", "updated_at"])
    _set(instance, task_state=TaskState.RESIZE_MIGRATED, power_state=PowerState.SHUTDOWN)
    rpc.finish_resize(ctx=ctx, host=str(migration.dest_compute), instance_uuid=instance.uuid, cell_uuid=_cell_uuid(),
                      migration_uuid=migration_uuid, disk_source=disk_source)


@server_action("finish_resize", action="resize", notification="resize_finish", event="compute_finish_resize")
def finish_resize(ctx: RequestContext, instance: Instance, migration_uuid: str, disk_source: str | None = None) -> None:
    """Destination host: the server takes the new flavor here, on the disks copied from
    ``disk_source`` (when the source named one), and waits in VERIFY_RESIZE."""

    migration = _migration(migration_uuid)
    old_vm_state = (instance.system_metadata or {}).get("old_vm_state", VmState.ACTIVE)
    instance.host, instance.node, instance.compute_id = migration.dest_compute, migration.dest_node, \
        migration.dest_compute_id
    for key, value in _apply_flavor(instance, migration.new_flavor or instance.flavor).items():
        setattr(instance, key, value)
    instance.old_flavor, instance.new_flavor = migration.old_flavor, migration.new_flavor
    instance.task_state = TaskState.RESIZE_FINISH
    instance.migration_context = {"migration_id": migration.id, "migration_uuid": migration.uuid,
                                  "old_host": migration.source_compute, "new_host": migration.dest_compute}
    instance.save()
    finish_migration = getattr(driver_for(str(instance.host)), "finish_migration", None)
    if disk_source and finish_migration is not None:
        finish_migration(instance=instance, disk_source=disk_source)
    power = _spawn_here(instance, powered_off=old_vm_state == VmState.STOPPED)
    migration.status = MigrationStatus.FINISHED
    migration.save(update_fields=["status", "updated_at"])
    _set(instance, vm_state=VmState.RESIZED, task_state=None, power_state=power)


@server_action("confirm_resize", action="confirmResize", notification="resize_confirm", event="compute_confirm_resize")
def confirm_resize(ctx: RequestContext, instance: Instance, migration_uuid: str) -> None:
    """Source host: clean the old guest's disks, drop the migration's allocations."""

    migration = _migration(migration_uuid)
    try:
        source = driver_for(str(migration.source_compute))
        confirm = getattr(source, "confirm_migration", None)
        if confirm is not None:  # the guest is down there already; its kept disks go
            confirm(instance=instance)
        else:
            source.destroy(instance=instance, destroy_disks=True)
    except Exception:  # the source may already be gone; the confirm must still finish
        log.warning("could not clean %s on %s", instance.uuid, migration.source_compute)
    placement.allocations_delete(consumer_uuid=migration.uuid)
    finish_confirm(instance, migration)


@server_action("revert_resize", action="revertResize", notification="resize_revert", event="compute_revert_resize")
def revert_resize(ctx: RequestContext, instance: Instance, migration_uuid: str) -> None:
    """Destination host: destroy the new guest, give the allocations back; the source finishes."""
    migration = _migration(migration_uuid)
    driver_for(str(instance.host)).destroy(instance=instance, destroy_disks=True)
    allocations_back_to_server(instance, migration.uuid)

    source_node = compute_node_for_host(migration.source_compute, migration.source_node)
    instance.host, instance.node = migration.source_compute, migration.source_node
    instance.compute_id = source_node.id if source_node else None
    for key, value in _apply_flavor(instance, migration.old_flavor or instance.flavor).items():
        setattr(instance, key, value)
    instance.save()
    rpc.finish_revert_resize(ctx=ctx, host=str(migration.source_compute), instance_uuid=instance.uuid,
                             cell_uuid=_cell_uuid(), migration_uuid=migration_uuid)


@server_action("finish_revert_resize", action="revertResize", notification="resize_revert",
    event="compute_finish_revert_resize")
def finish_revert_resize(ctx: RequestContext, instance: Instance, migration_uuid: str) -> None:
    """Source host: the old guest comes back, powered on only if it was ACTIVE before the move."""

    migration = _migration(migration_uuid)
    sysmeta = dict(instance.system_metadata or {})
    old_vm_state = sysmeta.pop("old_vm_state", VmState.ACTIVE)
    finish_revert = getattr(driver_for(str(instance.host)), "finish_revert_migration", None)
    if finish_revert is not None:  # the disks kept at the move are the guest's again
        finish_revert(instance=instance)
    power = _spawn_here(instance, powered_off=old_vm_state == VmState.STOPPED)
    migration.status = MigrationStatus.REVERTED
    migration.save(update_fields=["status", "updated_at"])
    _set(instance, vm_state=old_vm_state, task_state=None, power_state=power, old_flavor=None, new_flavor=None,
         migration_context=None, system_metadata=sysmeta)


# --- evacuation ----------------------------------------------------------------------------------


@server_action("evacuate", action="evacuate", notification="rebuild", event="compute_rebuild_instance")
def evacuate(ctx: RequestContext, instance: Instance, migration_uuid: str, admin_pass: str | None = None,
             stop: bool = False) -> None:
    """Destination host: the server of a failed host is rebuilt here as a cold migration's
    destination spawns it (ports bound here; an image-backed root from its image, a volume-backed
    one on its volumes); it ends STOPPED when ``stop`` (2.95) or when it was stopped, else ACTIVE;
    the migration ends ``done``. A failed spawn puts it back on its source host (in ERROR: the
    registry's failure path gives the allocations back and ends the migration ``failed``)."""
    migration = _migration(migration_uuid)
    stopped = stop or instance.vm_state == VmState.STOPPED
    instance.host, instance.node, instance.compute_id = migration.dest_compute, migration.dest_node, \
        migration.dest_compute_id
    instance.task_state = TaskState.REBUILD_SPAWNING
    instance.save(update_fields=["host", "node", "compute", "task_state", "updated_at"])
    try:
        power = _spawn_here(instance, powered_off=stopped, admin_password=admin_pass)
    except Exception:
        _evacuation_undone(instance, migration)
        raise
    migration.status = MigrationStatus.DONE
    migration.save(update_fields=["status", "updated_at"])
    _set(instance, vm_state=VmState.STOPPED if stopped else VmState.ACTIVE, task_state=None, power_state=power,
         launched_at=timezone.now())


def _evacuation_undone(instance: Instance, migration: Migration) -> None:
    try:
        driver_for(str(instance.host)).destroy(instance=instance, destroy_disks=True)
    except Exception:
        log.exception("could not clean the failed evacuation of %s on %s", instance.uuid, instance.host)
    source = compute_node_for_host(migration.source_compute, migration.source_node)
    neutron.ports_rebind_host(instance_uuid=instance.uuid, host=migration.source_compute)
    _set(instance, host=migration.source_compute, node=migration.source_node,
         compute=source if source is not None else None)


def destroy_evacuated_instances(*, host: str, driver: Any) -> list[str]:
    """A compute service starting on ``host`` (its cell targeted) destroys the guests of the
    servers evacuated from it while it was down (Nova's ``_destroy_evacuated_instances``): for
    each ``done`` evacuation whose source is ``host``, the guest here is destroyed with its local
    disks (a server that came back here since keeps its guest), the migration's allocations (the
    source's) are dropped in placement and the migration ends ``completed``. Returns the uuids."""
    cleaned = []
    for migration in evacuations_from(host, status=MigrationStatus.DONE):
        instance = instance_get(migration.instance_uuid, read_deleted=True)
        try:  # one that cannot be cleaned now is tried again at the next start, and the host starts
            if instance is not None and instance.host != host:  # not back here since
                driver.destroy(instance=instance, destroy_disks=True)
            placement.allocations_delete(consumer_uuid=migration.uuid)
        except Exception:
            log.exception("could not clean the evacuated guest of %s on %s", migration.instance_uuid, host)
            continue
        migration.status = MigrationStatus.COMPLETED
        migration.save(update_fields=["status", "updated_at"])
        cleaned.append(migration.instance_uuid)
        log.info("destroyed the evacuated guest of %s on %s", migration.instance_uuid, host)
    return cleaned


@server_action("snapshot", action="createImage", notification="snapshot", event="compute_snapshot_instance")
def snapshot(ctx: RequestContext, instance: Instance, image_id: str) -> None:
    """Upload the guest's disk to the queued snapshot image the API created (Glance activates
    it); on failure the image is deleted, as Nova does, and the server keeps running."""
    _upload_snapshot(instance, image_id=image_id)
    _set(instance, task_state=None)


@server_action("backup", action="createBackup", notification="snapshot", event="compute_backup_instance")
def backup(ctx: RequestContext, instance: Instance, image_id: str, backup_type: str, rotation: int) -> None:
    """A snapshot as ``snapshot`` does, then the server's backups of ``backup_type`` beyond the
    newest ``rotation`` are deleted (the new one counts; a rotation of 0 keeps none)."""
    _upload_snapshot(instance, image_id=image_id)
    _set(instance, task_state=None)
    backups = glance.images_with_properties(image_type="backup", backup_type=backup_type,
                                            instance_uuid=instance.uuid)  # newest first
    for old in backups[rotation:]:
        glance.image_delete(image_id=old.id)


def _upload_snapshot(instance: Instance, *, image_id: str) -> None:
    glance.image_show(image_id=image_id)  # gone already (deleted by its owner): fail before the work
    _set(instance, task_state=TaskState.IMAGE_UPLOADING)
    try:
        _snapshot_to(driver_for(str(instance.host)), instance, image_id=image_id)
    except Exception:
        try:
            glance.image_delete(image_id=image_id)
        except Exception:
            log.exception("could not delete the image %s of a failed snapshot", image_id)
        _set(instance, task_state=None)
        raise


def _snapshot_to(driver: Any, instance: Instance, *, image_id: str) -> None:
    """Write the guest's disk to a scratch file and upload it to Glance as ``image_id``'s data."""
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "snapshot"
        driver.snapshot(instance=instance, target_path=target)
        glance.image_upload(image_id=image_id, source=target)


@host_call("get_diagnostics")
def get_diagnostics(ctx: RequestContext, instance: Instance, standardized: bool = True) -> dict[str, Any]:
    """The guest's diagnostics from the virt driver: Nova's standardized shape (2.48+) or the
    driver's own (below)."""
    driver = driver_for(str(instance.host))
    if standardized:
        return dict(driver.get_instance_diagnostics(instance))
    return dict(driver.get_diagnostics(instance))
