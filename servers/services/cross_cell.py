"""Cross-cell resize and cold migration (seed 5), with confirm and revert.

Gating (``cross_cell_allowed``): the policy ``compute:servers:resize:cross_cell`` (nobody by
default) and every nova-compute new enough; otherwise moves stay in their cell.

The move itself, its confirm and its revert are the conductor's (``conductor.cross_cell``), which
calls each compute host's step (``compute.cross_cell``). Here: confirm (``cross_cell_confirm``)
needs the source compute up (409) and casts the conductor; a delete or beat confirms in-process
(``synchronous``). Revert (``cross_cell_revert``) casts the conductor.
"""
from __future__ import annotations

from cells.context import target_cell
from cells.models import CELL0_UUID, CellMapping, HostMapping
from cells.scatter import scatter_gather
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Conflict
from cloudcore.core.policy import can
from conductor import rpc as conductor_rpc
from hosts.models import Service
from hosts.services.servicegroup import service_is_up

from ..choices import MigrationStatus
from ..models import Instance, Migration
from . import actions

RULE = "compute:servers:resize:cross_cell"
MIN_COMPUTE_CROSS_CELL_RESIZE = 47


class SourceComputeDown(Conflict):
    message = "Compute service of host %(host)s is down; the resize cannot be confirmed now."


def min_compute_version() -> int:
    def per_cell(_cell: CellMapping) -> int | None:
        versions = list(Service.objects.filter(binary="nova-compute").values_list("version", flat=True))
        return min(versions) if versions else None

    found = [v for v in scatter_gather(per_cell, CellMapping.objects.exclude(uuid=CELL0_UUID)).values()
             if isinstance(v, int)]  # a cell that failed or has no compute service has no say
    return min(found) if found else 0


def cross_cell_allowed(actor: RequestContext, instance: Instance) -> bool:
    target = {"project_id": instance.project_id, "user_id": instance.user_id}
    return can(actor, RULE, target) and min_compute_version() >= MIN_COMPUTE_CROSS_CELL_RESIZE


def source_cell_of(migration: Migration) -> CellMapping:
    return HostMapping.objects.select_related("cell").get(host=migration.source_compute).cell


def cross_cell_confirm(*, actor: RequestContext, instance: Instance, cell: CellMapping, migration: Migration,
                       synchronous: bool = False) -> None:
    """Confirm: the source compute must be up (unless ``synchronous``: a delete or beat confirms
    in this process, the source guest then destroyed by a cast); the conductor cleans the source."""

    source = source_cell_of(migration)
    with target_cell(source):
        service = Service.objects.filter(host=migration.source_compute, binary="nova-compute").first()
        up = service is not None and service_is_up(service)
    if not up and not synchronous:
        raise SourceComputeDown(host=migration.source_compute)
    migration.status = MigrationStatus.CONFIRMING
    migration.save(update_fields=["status", "updated_at"])
    actions.action_start(actor, instance_uuid=instance.uuid, action="confirmResize")
    conductor_rpc.confirm_cross_cell_resize(ctx=actor, instance_uuid=instance.uuid, cell_uuid=str(cell.uuid),
                                            migration_uuid=migration.uuid, source_cell_uuid=str(source.uuid),
                                            run_here=synchronous)


def cross_cell_revert(*, actor: RequestContext, instance: Instance, cell: CellMapping, migration: Migration) -> None:
    source = source_cell_of(migration)
    conductor_rpc.revert_cross_cell_resize(ctx=actor, instance_uuid=instance.uuid, cell_uuid=str(cell.uuid),
                                           migration_uuid=migration.uuid, source_cell_uuid=str(source.uuid))
