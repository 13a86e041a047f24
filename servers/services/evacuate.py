"""``evacuate``: rebuild a server on another host after its own host failed (Nova's os-evacuate).

API side (this module): policy ``os_compute_api:os-evacuate`` (admin), the target host's checks
(404 unknown, 400 the server's own host), the vm_state guard (ACTIVE, STOPPED or ERROR, no
task_state; 409), the source compute service must be down (forced down or not heard from;
else 400 "Compute service of <host> is still in use.", as Nova answers). Then task_state
``rebuilding`` (compare-and-swap), a Migration ``evacuation`` (``accepted``) that takes over the
server's source allocations (as a resize's does), the ``evacuate`` action and the versioned
``instance.evacuate``; on commit a cast to the conductor (``conductor.evacuate``), which
schedules a destination in the server's cell (the source ignored, server groups honoured, the
trace kept) and casts the rebuild to it (``compute.ops.evacuate``).

Allocations: the destination's are claimed for the server by the scheduler; the source's stay
with the migration until the source compute starts again and destroys the guest it still has
(``compute.ops.destroy_evacuated_instances``), which drops them and ends the migration
``completed``. A failed scheduling or rebuild gives them back to the server on its source host.
"""
from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from cells.transactions import api_on_commit
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Invalid, NotFound
from cloudcore.core.policy import authorize
from conductor import rpc as conductor_rpc
from hosts.selectors import service_for_host
from hosts.services.servicegroup import service_is_up
from scheduling.placement.services import allocations_move

from ..choices import MigrationStatus, MigrationType, TaskState, VmState
from ..models import Instance, Migration
from . import actions
from .guards import check_compute_host, check_state, claim_task_state
from .notify import notify_instance
from .power import target

if TYPE_CHECKING:
    from cells.models import CellMapping

RULE = "os_compute_api:os-evacuate"
EVACUATE_STATES = [VmState.ACTIVE, VmState.STOPPED, VmState.ERROR]


class EvacuateHostNotFound(NotFound):
    message = "Compute host %(host)s not found."


class EvacuateToSameHost(Invalid):
    message = "The target host can't be the same one."


class ForceWithoutHost(Invalid):
    message = "Can't force to a non-provided destination"


class ComputeServiceInUse(Invalid):
    message = "Compute service of %(host)s is still in use."


def _check_target(host: str, instance: Instance) -> None:
    check_compute_host(host, cell=None, error=EvacuateHostNotFound)
    if host == instance.host:
        raise EvacuateToSameHost()


def _check_source_down(instance: Instance) -> None:
    """The server's cell is targeted: its host's compute service must not be up."""
    service = service_for_host(str(instance.host))
    if service is not None and service_is_up(service):
        raise ComputeServiceInUse(host=instance.host)


def same_flavor_migration(actor: RequestContext, instance: Instance, *, host: str | None,
                          migration_type: str) -> Migration:
    """The ``accepted`` Migration of a move that keeps the flavor (an evacuation, a live
    migration) from the server's host to ``host`` (None: the scheduler's choice, recorded later)."""
    flavor = dict(instance.flavor or {})
    return Migration.objects.create(
        instance_uuid=instance.uuid, source_compute=instance.host, source_node=instance.node, dest_compute=host,
        status=MigrationStatus.ACCEPTED, migration_type=migration_type, old_instance_type_id=flavor.get("id"),
        new_instance_type_id=flavor.get("id"), old_flavor=flavor, new_flavor=flavor, user_id=actor.user_id,
        project_id=instance.project_id,
    )


def server_evacuate(*, actor: RequestContext, instance: Instance, cell: CellMapping, host: str | None,
                    admin_pass: str | None, force: bool = False, stop: bool = False) -> Migration:
    """Evacuate ``instance`` (its cell targeted) to ``host`` (None: the scheduler picks); ``force``
    (2.29–2.67) skips the scheduler's filters for ``host``; ``stop`` (2.95) leaves it STOPPED on
    the destination (below, an ACTIVE or ERROR server ends ACTIVE, a STOPPED one STOPPED). Raises
    PolicyNotAuthorized, ForceWithoutHost, EvacuateHostNotFound, EvacuateToSameHost,
    InstanceInvalidState or ComputeServiceInUse; see the module doc for what it writes."""
    authorize(actor, RULE, target(instance))
    if force and not host:
        raise ForceWithoutHost()
    if host is not None:
        _check_target(host, instance)
    check_state(instance, "evacuate", vm_states=EVACUATE_STATES)
    _check_source_down(instance)
    claim_task_state(instance, "evacuate", new_task_state=TaskState.REBUILDING, vm_states=EVACUATE_STATES)
    migration = same_flavor_migration(actor, instance, host=host, migration_type=MigrationType.EVACUATION)
    actions.action_start(actor, instance_uuid=instance.uuid, action="evacuate")
    notify_instance(actor, "instance.evacuate", instance)
    allocations_move(from_consumer_uuid=instance.uuid, to_consumer_uuid=migration.uuid,
                     project_id=instance.project_id, user_id=instance.user_id)
    api_on_commit(partial(conductor_rpc.evacuate_instance, ctx=actor, instance_uuid=instance.uuid,
                          cell_uuid=str(cell.uuid), migration_uuid=migration.uuid, host=host, force=force,
                          admin_pass=admin_pass, stop=stop))
    return migration
