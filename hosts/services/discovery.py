"""Nova's ``cell_v2 discover_hosts``: map the compute hosts a cell reports (its compute nodes, or
its nova-compute services) to that cell."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from cells import services as cell_services
from cells.context import target_cell
from cells.selectors import cell_list

from ..models import ComputeNode, Service

if TYPE_CHECKING:
    from cells.models import CellMapping


@dataclass
class Discovery:
    mapped: list[tuple[str, str]] = field(default_factory=list)  # (host, cell name)
    duplicates: list[str] = field(default_factory=list)


def discover_hosts(*, cell_uuid: str | None = None, by_service: bool = False) -> Discovery:
    """Map every compute host of every non-cell0 cell that has no HostMapping yet: unmapped
    ComputeNodes (``mapped=0``), or with ``by_service`` every ``nova-compute`` service. Marks
    nodes ``mapped=1``. A host mapped to another cell is a duplicate. CellNotFound for an unknown
    ``cell_uuid``."""
    cells = [cell_services.get_cell(cell_uuid)] if cell_uuid else cell_list(cell0=False)
    result = Discovery()
    for cell in cells:
        if cell.is_cell0:
            continue
        with target_cell(cell):
            if by_service:
                hosts: set[str] = set(Service.objects.filter(binary="nova-compute").values_list("host", flat=True))
            else:
                hosts = {host for host in ComputeNode.objects.filter(mapped=0).exclude(host=None)
                         .values_list("host", flat=True) if host}
        for host in sorted(hosts):
            outcome = cell_services.host_map(host=host, cell=cell)
            if outcome is cell_services.HostMapOutcome.DUPLICATE:
                result.duplicates.append(host)
            elif outcome is cell_services.HostMapOutcome.MAPPED:
                result.mapped.append((host, cell.name or cell.uuid))
        with target_cell(cell):
            ComputeNode.objects.filter(host__in=hosts, mapped=0).update(mapped=1)
    return result


def map_host(*, host: str, cell: CellMapping) -> cell_services.HostMapOutcome:
    """``discover_hosts`` for one compute host that reported for duty in ``cell``: its HostMapping
    (unless it has one) and its nodes marked ``mapped=1``."""
    outcome = cell_services.host_map(host=host, cell=cell)
    with target_cell(cell):
        ComputeNode.objects.filter(host=host, mapped=0).update(mapped=1)
    return outcome
