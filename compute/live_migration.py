"""The compute hosts' halves of a live migration, after the conductor scheduled it
(``conductor.live_migrate``: migration ``queued``, the destination claimed for the server).

The hosts only cast to each other (no host waits on another), so the move is four steps, each an
event on the ``live-migration`` action:

1. source, ``compute_check_can_live_migrate_source``: the migration goes ``preparing``; the
   source names the directory of the guest's disks and casts the destination;
2. destination, ``compute_pre_live_migration`` (``instance.live_migration_pre.start/end``): the
   disks are copied into its instance directory as a cold migration's ``finish_migration`` copies
   them on this one machine; the migration goes ``running`` and the destination's libvirt
   connection defines and starts the guest (the server's ports described to it); it casts the
   source;
3. source, ``compute_live_migration`` (``instance.live_migration_post.start/end``): the source's
   guest is destroyed with its disks; it casts the destination;
4. destination, ``compute_post_live_migration_at_destination``
   (``instance.live_migration_post_dest.start/end``): the server's host and node become the
   destination's, its ports are bound there, the migration ends ``completed``, the source's
   allocations (held by the migration) are dropped, task_state cleared, the action finished.

A failure in steps 1 and 2 rolls back (``instance.live_migration_rollback.start/end``): the
destination's copy goes, the server stays on its source in its vm_state (ACTIVE or PAUSED) with
task_state cleared and the fault, the migration ends ``failed`` and the allocations return to the
server. A failure in steps 3 and 4 (the guest already runs on the destination) puts the server in
ERROR with the fault and the migration ``error``. A migration aborted while ``queued`` or
``preparing`` (``cancelled`` by the API) is rolled back at the next step it reaches.
"""
from __future__ import annotations

import logging
import shutil
from typing import TYPE_CHECKING, Any

from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import CloudcoreError
from hosts.selectors import compute_node_for_host
from servers.choices import MigrationStatus, PowerState, VmState
from servers.services import actions
from servers.services.live_migrate import migration_advance
from servers.services.notify import notify_instance

from . import rpc
from .block_devices import block_device_info
from .build import image_meta
from .clients import networks as neutron
from .clients import placement
from .drivers import driver_for
from .ops import _cell_uuid, _migration
from .registry import allocations_back_to_server, host_event

if TYPE_CHECKING:
    from servers.models import Instance, Migration

log = logging.getLogger(__name__)

ACTION = "live-migration"


class LiveMigrationCancelled(Exception):
    """The migration was aborted (``cancelled``) before its guest moved."""


class LiveMigrationStepOutOfOrder(CloudcoreError):
    message = "The live migration is %(status)s, not %(expected)s as this step expects."


def _set_status(migration: Migration, status: str) -> None:
    migration.status = status
    migration.save(update_fields=["status", "updated_at"])


def _advance(migration: Migration, *, from_status: str, to_status: str) -> None:
    """``from_status`` -> ``to_status`` by compare-and-swap: an abort (the API's ``cancelled``)
    that came in between raises LiveMigrationCancelled instead of being overwritten."""
    if not migration_advance(migration, from_status=from_status, to_status=to_status):
        if migration.status == MigrationStatus.CANCELLED:
            raise LiveMigrationCancelled()
        raise LiveMigrationStepOutOfOrder(status=migration.status, expected=from_status)


@host_event("live_migration_prepare", event="compute_check_can_live_migrate_source", action=ACTION)
def live_migration_prepare(ctx: RequestContext, instance: Instance, migration_uuid: str) -> None:
    """Source: the migration goes ``preparing`` and the destination is cast with the directory of
    the guest's disks (None when the driver keeps none)."""
    migration = _migration(migration_uuid)
    try:
        _advance(migration, from_status=MigrationStatus.QUEUED, to_status=MigrationStatus.PREPARING)
        driver = driver_for(str(instance.host))
        instance_dir = getattr(driver, "instance_dir", None)
        disk_source = str(instance_dir(instance)) if instance_dir is not None else None
    except Exception as exc:
        rolled_back(ctx, instance, migration, exc)
        raise
    rpc.pre_live_migration(ctx=ctx, host=str(migration.dest_compute), instance_uuid=instance.uuid,
                           cell_uuid=_cell_uuid(), migration_uuid=migration_uuid, disk_source=disk_source)


@host_event("pre_live_migration", event="compute_pre_live_migration", action=ACTION)
def pre_live_migration(ctx: RequestContext, instance: Instance, migration_uuid: str,
                       disk_source: str | None = None) -> None:
    """Destination: copy the disks, then define and start the guest here (``running``)."""
    migration = _migration(migration_uuid)
    dest = str(migration.dest_compute)
    driver = driver_for(dest)
    try:
        notify_instance(ctx, "instance.live_migration_pre.start", instance, host=dest)
        finish_migration = getattr(driver, "finish_migration", None)
        if disk_source and finish_migration is not None:
            finish_migration(instance=instance, disk_source=disk_source)
        notify_instance(ctx, "instance.live_migration_pre.end", instance, host=dest)
        _advance(migration, from_status=MigrationStatus.PREPARING, to_status=MigrationStatus.RUNNING)
        driver.spawn(instance=instance, image_meta=image_meta(instance.image_ref or None),
                     network_info=neutron.network_info(instance_uuid=instance.uuid),
                     block_device_info=block_device_info(instance), admin_password=None)
        if instance.vm_state == VmState.PAUSED:
            driver.pause(instance=instance)
    except Exception as exc:
        _clean_destination(ctx, driver, instance, dest)
        rolled_back(ctx, instance, migration, exc)
        raise
    rpc.live_migration(ctx=ctx, host=str(instance.host), instance_uuid=instance.uuid, cell_uuid=_cell_uuid(),
                       migration_uuid=migration_uuid)


def _clean_destination(ctx: RequestContext, driver: Any, instance: Instance, dest: str) -> None:
    notify_instance(ctx, "instance.live_migration_rollback_dest.start", instance, host=dest)
    try:
        if _guest_of(driver, instance, dest):
            driver.destroy(instance=instance, destroy_disks=True)
        else:  # the disks copied here, if any (the driver's instance directory)
            instance_dir = getattr(driver, "instance_dir", None)
            if instance_dir is not None:
                shutil.rmtree(instance_dir(instance), ignore_errors=True)
    except Exception:
        log.exception("could not clean the failed live migration of %s on %s", instance.uuid, dest)
    notify_instance(ctx, "instance.live_migration_rollback_dest.end", instance, host=dest)


def _guest_of(driver: Any, instance: Instance, host: str) -> bool:
    """Whether ``driver``'s connection has a guest of ``instance`` that ``host`` defined."""
    owner = getattr(driver, "guest_host", None)
    if owner is not None:
        return bool(owner(instance) == host)
    try:
        driver.get_info(instance)
    except Exception:
        return False
    return True


@host_event("live_migration", event="compute_live_migration", action=ACTION)
def live_migration(ctx: RequestContext, instance: Instance, migration_uuid: str) -> None:
    """Source: the guest runs on the destination now; the source's copy goes with its disks."""
    migration = _migration(migration_uuid)
    source = str(instance.host)
    try:
        notify_instance(ctx, "instance.live_migration_post.start", instance, host=source)
        driver = driver_for(source)
        cleanup = getattr(driver, "cleanup_live_migration_source", None)
        if cleanup is not None:
            cleanup(instance=instance)
        else:
            driver.destroy(instance=instance, destroy_disks=True)
        _set_status(migration, MigrationStatus.POST_MIGRATING)
        notify_instance(ctx, "instance.live_migration_post.end", instance, host=source)
    except Exception as exc:
        errored(ctx, instance, migration, exc)
        raise
    rpc.post_live_migration_at_destination(ctx=ctx, host=str(migration.dest_compute), instance_uuid=instance.uuid,
                                           cell_uuid=_cell_uuid(), migration_uuid=migration_uuid)


@host_event("post_live_migration_at_destination", event="compute_post_live_migration_at_destination",
            action=ACTION)
def post_live_migration_at_destination(ctx: RequestContext, instance: Instance, migration_uuid: str) -> None:
    """Destination: the server is here now (host, node, ports); the move is completed."""
    migration = _migration(migration_uuid)
    dest = str(migration.dest_compute)
    try:
        notify_instance(ctx, "instance.live_migration_post_dest.start", instance, host=dest)
        neutron.ports_rebind_host(instance_uuid=instance.uuid, host=dest)
        node = compute_node_for_host(dest, migration.dest_node)
        power = PowerState.PAUSED if instance.vm_state == VmState.PAUSED else PowerState.RUNNING
        instance.host, instance.node, instance.compute = dest, migration.dest_node, node
        instance.task_state, instance.power_state = None, power
        instance.save(update_fields=["host", "node", "compute", "task_state", "power_state", "updated_at"])
        placement.allocations_delete(consumer_uuid=migration.uuid)
        _set_status(migration, MigrationStatus.COMPLETED)
        notify_instance(ctx, "instance.live_migration_post_dest.end", instance, host=dest)
    except Exception as exc:
        errored(ctx, instance, migration, exc)
        raise
    actions.action_finish(ctx, instance_uuid=instance.uuid)


def rolled_back(ctx: RequestContext, instance: Instance, migration: Migration, exc: BaseException) -> None:
    """The guest did not move: the server stays on its source in its vm_state (task_state
    cleared, fault recorded unless the migration was aborted), the migration ends ``failed``
    (``cancelled`` when aborted) and the allocations go back to the server."""
    notify_instance(ctx, "instance.live_migration_rollback.start", instance)
    allocations_back_to_server(instance, migration.uuid)
    cancelled = isinstance(exc, LiveMigrationCancelled)
    _set_status(migration, MigrationStatus.CANCELLED if cancelled else MigrationStatus.FAILED)
    instance.refresh_from_db()
    instance.task_state = None
    instance.save(update_fields=["task_state", "updated_at"])
    if not cancelled:
        actions.fault_add(instance_uuid=instance.uuid, exc=exc, host=instance.host)
    actions.action_finish(ctx, instance_uuid=instance.uuid, failed=not cancelled)
    notify_instance(ctx, "instance.live_migration_rollback.end", instance)


def errored(ctx: RequestContext, instance: Instance, migration: Migration, exc: BaseException) -> None:
    """The guest moved but the steps after it failed: the server goes to ERROR with the fault, the
    migration ends ``error``; the allocations stay (the destination's with the server, the
    source's with the migration) for the operator to sort out."""
    _set_status(migration, MigrationStatus.ERROR)
    instance.refresh_from_db()
    old = instance.vm_state
    instance.vm_state, instance.task_state = VmState.ERROR, None
    instance.save(update_fields=["vm_state", "task_state", "updated_at"])
    actions.fault_add(instance_uuid=instance.uuid, exc=exc, host=instance.host)
    actions.action_finish(ctx, instance_uuid=instance.uuid, failed=True)
    notify_instance(ctx, "instance.update", instance, old_vm_state=old)

