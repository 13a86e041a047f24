"""Cross-cell resize and cold migration (seed 5), with confirm and revert.

Gating (``cross_cell_allowed``): the policy ``compute:servers:resize:cross_cell`` (nobody by
default) and every nova-compute new enough; otherwise moves stay in their cell.

The move itself, its confirm and its revert are the conductor's (``conductor.cross_cell``), which
calls each compute host's step (``compute.cross_cell``). Here: confirm (``cross_cell_confirm``)
needs the source compute up (409) and casts the conductor; a delete or beat confirms in-process
(``synchronous``). Revert (``cross_cell_revert``) casts the conductor.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from cells import selectors as cell_selectors
from cells.context import target_cell
from cells.scatter import scatter_gather
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Conflict
from cloudcore.core.policy import can
from conductor import rpc as conductor_rpc
from hosts import selectors as host_selectors
from hosts.services.servicegroup import service_is_up

from ..choices import MigrationStatus
from ..models import Instance, Migration
from . import actions

if TYPE_CHECKING:
    from cells.models import CellMapping

RULE = "compute:servers:resize:cross_cell"
MIN_COMPUTE_CROSS_CELL_RESIZE = 47


class SourceComputeDown(Conflict):
    message = "Compute service of host %(host)s is down; the resize cannot be confirmed now."


class SourceHostNotMapped(Conflict):
    message = "The source host %(host)s of the migration is not mapped to a cell."


def min_compute_version() -> int:
    def per_cell(_cell: CellMapping) -> int | None:
        return host_selectors.compute_service_min_version()

    found = [v for v in scatter_gather(per_cell, cell_selectors.cell_list(cell0=False)).values()
             if isinstance(v, int)]  # a cell that failed or has no compute service has no say
    return min(found) if found else 0


def cross_cell_allowed(actor: RequestContext, instance: Instance) -> bool:
    target = {"project_id": instance.project_id, "user_id": instance.user_id}
    return can(actor, RULE, target) and min_compute_version() >= MIN_COMPUTE_CROSS_CELL_RESIZE


def source_cell_of(migration: Migration) -> CellMapping:
    """The cell of the migration's source host (SourceHostNotMapped if that host has no mapping)."""
    mapping = cell_selectors.host_mapping_get(str(migration.source_compute))
    if mapping is None:
        raise SourceHostNotMapped(host=migration.source_compute)
    return mapping.cell


def cross_cell_confirm(*, actor: RequestContext, instance: Instance, cell: CellMapping, migration: Migration,
                       synchronous: bool = False) -> None:
    """Confirm: the source compute must be up (unless ``synchronous``: a delete or beat confirms
    in this process, the source guest then destroyed by a cast); the conductor cleans the source."""

    source = source_cell_of(migration)
    source_host = str(migration.source_compute)
    with target_cell(source):
        service = host_selectors.service_for_host(source_host)
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
