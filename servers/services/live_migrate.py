"""``os-migrateLive``: move a running server to another host of its cell without stopping it
(Nova's live migration).

API side (this module): policy ``os_compute_api:os-migrate-server:migrate_live`` (a project manager
or admin), or with a ``host`` ``...:migrate_live:host`` instead (admin), ``force`` needs a ``host``
(400), a named ``host`` must be a compute host (400 "Compute host X could not be found."), the
vm_state guard (ACTIVE or PAUSED, no task_state; 409). Below 2.34 the conductor's pre-checks on the
named host are answered here, as Nova's synchronous call answers them (400: the server's own host,
a host whose compute service is down); from 2.34 they run in the background and a failed one ends
the migration ``error`` with the server left as it was. Then task_state ``migrating`` (compare-and-swap),
a Migration ``live-migration`` (``accepted``) that takes over the server's source
allocations, the ``live-migration`` action and on commit a cast to the conductor
(``conductor.live_migrate``), which checks and schedules a destination in the server's cell (server
groups honoured, the trace kept, the destination claimed for the server) and casts the move to the
source host (``compute.live_migration``).

Allocations: the destination's are claimed for the server by the scheduler; the source's stay
with the migration until the move completes (then they are dropped); a failed check, scheduling
or move gives them back to the server on its source host.
"""
from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from django.utils import timezone

from cells.context import target_cell
from cells.selectors import host_mapping_get
from cells.transactions import api_on_commit
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Conflict, Invalid, NotFound
from cloudcore.core.policy import authorize
from conductor import rpc as conductor_rpc
from hosts.selectors import service_for_host
from hosts.services.servicegroup import service_is_up
from scheduling.placement.services import allocations_move

from ..choices import MigrationStatus, MigrationType, TaskState, VmState
from ..models import Instance, Migration
from ..selectors import migration_of_instance
from . import actions
from .evacuate import ForceWithoutHost, same_flavor_migration
from .guards import check_compute_host, check_state, claim_task_state
from .notify import notify_instance
from .power import target

if TYPE_CHECKING:
    from cells.models import CellMapping

RULE = "os_compute_api:os-migrate-server:migrate_live"
RULE_HOST = "os_compute_api:os-migrate-server:migrate_live:host"
RULE_FORCE_COMPLETE = "os_compute_api:servers:migrations:force_complete"
RULE_ABORT = "os_compute_api:servers:migrations:delete"
LIVE_MIGRATE_STATES = [VmState.ACTIVE, VmState.PAUSED]
ACTION = "live-migration"


class UnableToMigrateToSelf(Invalid):
    message = "Unable to migrate instance (%(instance_id)s) to current host (%(host)s)."


class ComputeServiceUnavailable(Invalid):
    message = "Compute service of %(host)s is unavailable at this time."


class MigrationNotFoundForInstance(NotFound):
    message = "Migration %(migration_id)s not found for instance %(instance_id)s"


class ForceCompleteMigrationNotFound(Invalid):
    """force_complete answers an unknown migration with 400 (Nova)."""

    message = MigrationNotFoundForInstance.message


class InvalidMigrationState(Invalid):
    message = ("Migration %(migration_id)s state of instance %(instance_uuid)s is %(state)s. Cannot %(method)s "
               "while the migration is in this state.")


class AbortQueuedLiveMigrationNotYetSupported(Conflict):
    message = ("Aborting live migration %(migration_id)s with status %(status)s is not supported for this version "
               "of OpenStack Compute API.")


def check_destination(instance: Instance, host: str) -> None:
    """Nova's conductor pre-checks of a named destination: not the server's own host
    (UnableToMigrateToSelf), its compute service up (ComputeServiceUnavailable); a host of another
    cell is left to the scheduler (which keeps the server in its cell)."""
    if host == instance.host:
        raise UnableToMigrateToSelf(instance_id=instance.uuid, host=host)
    mapping = host_mapping_get(host)
    if mapping is None:
        return
    with target_cell(mapping.cell):
        service = service_for_host(host)
    if service is None or not service_is_up(service):
        raise ComputeServiceUnavailable(host=host)


def server_live_migrate(*, actor: RequestContext, instance: Instance, cell: CellMapping, host: str | None,
                        block_migration: bool | str, force: bool = False, sync_checks: bool = False) -> Migration:
    """Live-migrate ``instance`` (its cell targeted) to ``host`` (None: the scheduler picks);
    ``block_migration`` (True, False or "auto") is recorded, the disks are always copied on this
    machine; ``force`` (2.30–2.67) skips the scheduler's filters for ``host``; ``sync_checks``
    (below 2.34) answers the destination pre-checks here. Raises PolicyNotAuthorized,
    ForceWithoutHost, ComputeHostNotFound, UnableToMigrateToSelf, ComputeServiceUnavailable or
    InstanceInvalidState; see the module doc for what it writes."""
    authorize(actor, RULE if host is None else RULE_HOST, target(instance))
    if force and not host:
        raise ForceWithoutHost()
    check_state(instance, "live_migrate", vm_states=LIVE_MIGRATE_STATES)
    if host is not None:  # after the state, as Nova's compute API checks them
        check_compute_host(host, cell=None)
    if host is not None and sync_checks:
        check_destination(instance, host)
    claim_task_state(instance, "live_migrate", new_task_state=TaskState.MIGRATING, vm_states=LIVE_MIGRATE_STATES)
    migration = same_flavor_migration(actor, instance, host=host, migration_type=MigrationType.LIVE_MIGRATION)
    actions.action_start(actor, instance_uuid=instance.uuid, action=ACTION)
    allocations_move(from_consumer_uuid=instance.uuid, to_consumer_uuid=migration.uuid,
                     project_id=instance.project_id, user_id=instance.user_id)
    api_on_commit(partial(conductor_rpc.live_migrate_instance, ctx=actor, instance_uuid=instance.uuid,
                          cell_uuid=str(cell.uuid), migration_uuid=migration.uuid, host=host, force=force,
                          block_migration=block_migration))
    return migration


def migration_advance(migration: Migration, *, from_status: str, to_status: str) -> bool:
    """A host's step moves the migration ``from_status`` -> ``to_status`` by compare-and-swap (an
    abort may have ``cancelled`` it meanwhile); ``migration.status`` is the stored one after.
    Returns whether it moved."""
    moved = Migration.objects.filter(pk=migration.pk, status=from_status).update(
        status=to_status, updated_at=timezone.now())
    migration.refresh_from_db(fields=["status", "updated_at"])
    return bool(moved)


def _in_progress(instance: Instance, migration_id: str, method: str,
                 not_found: type[NotFound] | type[Invalid] = MigrationNotFoundForInstance) -> Migration:
    check_state(instance, method, task_states=[TaskState.MIGRATING])
    migration = migration_of_instance(instance.uuid, migration_id)
    if migration is None or migration.migration_type != MigrationType.LIVE_MIGRATION:
        raise not_found(migration_id=migration_id, instance_id=instance.uuid)
    return migration


def live_migration_force_complete(*, actor: RequestContext, instance: Instance, migration_id: str) -> None:
    """Nova's force_complete of a ``running`` live migration (its cell targeted): the move here has
    no memory pre-copy to cut short (the destination starts the guest in one step), so a running
    one is left to complete; ``instance.live_migration_force_complete.start`` and ``.end`` are sent
    for it as its source host sends them in Nova. Raises PolicyNotAuthorized, InstanceInvalidState
    (no migration under way, 409), ForceCompleteMigrationNotFound or InvalidMigrationState (not
    running, 400)."""
    authorize(actor, RULE_FORCE_COMPLETE, target(instance))
    migration = _in_progress(instance, migration_id, "force_complete", not_found=ForceCompleteMigrationNotFound)
    if migration.status != MigrationStatus.RUNNING:
        raise InvalidMigrationState(migration_id=migration_id, instance_uuid=instance.uuid, state=migration.status,
                                    method="force complete")
    for phase in ("start", "end"):
        notify_instance(actor, f"instance.live_migration_force_complete.{phase}", instance,
                        host=migration.source_compute)


def live_migration_abort(*, actor: RequestContext, instance: Instance, migration_id: str,
                         abort_queued: bool) -> None:
    """Abort a live migration (its cell targeted). ``queued`` or ``preparing`` (from 2.65,
    ``abort_queued``; below, 409) it is ``cancelled`` at once (compare-and-swap against the hosts'
    steps, which then roll it back: the server stays on its source, its allocations back). A
    ``running`` one cannot be called back here (the destination starts the guest in one step):
    400 as for any other state. Raises PolicyNotAuthorized, InstanceInvalidState (409),
    MigrationNotFoundForInstance (404), AbortQueuedLiveMigrationNotYetSupported (409) or
    InvalidMigrationState (400)."""
    authorize(actor, RULE_ABORT, target(instance))
    migration = _in_progress(instance, migration_id, "abort live migration")
    queued = (MigrationStatus.QUEUED, MigrationStatus.PREPARING)
    if migration.status in queued and not abort_queued:
        raise AbortQueuedLiveMigrationNotYetSupported(migration_id=migration_id, status=migration.status)
    cancelled = 0
    if migration.status in queued:
        cancelled = Migration.objects.filter(pk=migration.pk, status__in=queued).update(
            status=MigrationStatus.CANCELLED)
    if not cancelled:
        migration.refresh_from_db(fields=["status"])
        raise InvalidMigrationState(migration_id=migration_id, instance_uuid=instance.uuid, state=migration.status,
                                    method="abort live migration")
