"""Reads of the cell registry (API database) for the other apps, which never query ``cells.models``
themselves (STYLE rule 3): the cells, which cell holds a host, and which cell holds a server.

Types are for annotations (``if TYPE_CHECKING: from cells.models import CellMapping``).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from django.db.models import QuerySet

from cloudcore.core import scope
from cloudcore.core.prepared import prepared_first, prepared_objects

from .models import CELL0_UUID, CellMapping, HostMapping, InstanceMapping

CELLS_KEY = "cells.all"


def all_cells() -> list[CellMapping]:
    """Every cell in id order, read once per outermost request (``cloudcore.core.scope``; a
    cell saved or deleted meanwhile is read again: ``CellsConfig.ready``)."""
    return list(scope.memoized(CELLS_KEY, lambda: prepared_objects(CELLS_KEY, _all_cells, ())))


def _all_cells() -> QuerySet[CellMapping]:
    # read by the scheduler for every request (and the API's cell-wide reads): its SQL built once
    # per process (prepared_objects)
    return CellMapping.objects.order_by("id")


def cell_list(*, cell0: bool = True, enabled_only: bool = False, by_name: bool = False) -> list[CellMapping]:
    """Every cell in id order (name order ``by_name``); without ``cell0`` the cells that hold
    hosts only; with ``enabled_only`` the cells not disabled (the scheduler's)."""
    if by_name:  # the database's order of names (NULLs included), off the request paths
        qs = CellMapping.objects.order_by("name")
        if not cell0:
            qs = qs.exclude(uuid=CELL0_UUID)
        if enabled_only:
            qs = qs.filter(disabled=False)
        return list(qs)
    return [c for c in all_cells() if (cell0 or c.uuid != CELL0_UUID) and not (enabled_only and c.disabled)]


def cell_find(cell: str) -> CellMapping | None:
    """The cell of uuid ``cell``, else the first of name ``cell``, else None."""
    cells = all_cells()
    return next((c for c in cells if c.uuid == cell), None) or next((c for c in cells if c.name == cell), None)


def host_mapping_get(host: str) -> HostMapping | None:
    """The mapping of ``host`` with its cell, or None for an unmapped host."""
    found = prepared_objects("cells.host_mapping", _host_mapping, (host,))
    return found[0] if found else None


def _host_mapping(host: str) -> QuerySet[HostMapping]:
    # read by the conductor for every build: its SQL built once per process (prepared_objects);
    # the statement of QuerySet.first()
    return HostMapping.objects.select_related("cell").filter(host=host).order_by("pk")[:1]


def host_mappings(hosts: Iterable[str]) -> dict[str, HostMapping]:
    """``{host: mapping}`` (with the cell) of the mapped ones among ``hosts``."""
    return {m.host: m for m in HostMapping.objects.select_related("cell").filter(host__in=list(hosts))}


def host_is_mapped(host: str) -> bool:
    return HostMapping.objects.filter(host=host).exists()


def mapped_hosts() -> list[str]:
    """Every mapped host name, sorted."""
    return list(HostMapping.objects.order_by("host").values_list("host", flat=True))


def host_cell_names() -> dict[str, str]:
    """``{host: cell name}`` of every mapped host."""
    return {host: name or "" for host, name in HostMapping.objects.values_list("host", "cell__name")}


def instance_mapping_get(instance_uuid: str, *, named: str = "",
                         annotations: Callable[[], dict[str, Any]] | None = None) -> InstanceMapping | None:
    """The mapping of a server with its cell (None when unmapped; its cell is None while the
    server waits for a host). ``annotations``: what makes the expressions the mapping carries as
    attributes, read in the same statement (what another app keeps of the server, e.g. its request
    spec as a subquery: a status poll's one round trip for both), always the same ones under
    ``named``, the caller's name for them (called only when the statement is built)."""
    # read by every request about one server (a client's status poll above all): its SQL built once
    # per process (prepared_first) for each set of annotations
    if annotations is None:
        return prepared_first("cells.instance_mapping", _instance_mapping, (instance_uuid,))
    assert named, "annotations are prepared under the caller's name for them"
    return prepared_first(f"cells.instance_mapping.{named}",
                          lambda value: _instance_mapping(value).annotate(**annotations()), (instance_uuid,))


def _instance_mapping(instance_uuid: str) -> QuerySet[InstanceMapping]:
    return InstanceMapping.objects.select_related("cell").filter(instance_uuid=instance_uuid)


def instance_mappings_in(cells: Iterable[CellMapping], *, project_id: str | None = None) -> list[InstanceMapping]:
    """Mappings (with their cell) of the servers in ``cells`` not queued for delete; of one project
    with ``project_id``."""
    qs = InstanceMapping.objects.filter(cell__in=list(cells), queued_for_delete=False)
    if project_id is not None:
        qs = qs.filter(project_id=project_id)
    return list(qs.select_related("cell"))


def cell_has_mappings(cell: CellMapping) -> bool:
    """Is any server (queued for delete or not) mapped to ``cell``?"""
    return InstanceMapping.objects.filter(cell=cell).exists()


def mapped_instance_uuids(instance_uuids: Iterable[str], *, live_only: bool = False) -> set[str]:
    """The mapped ones among ``instance_uuids`` (with ``live_only``, not queued for delete)."""
    qs = InstanceMapping.objects.filter(instance_uuid__in=list(instance_uuids))
    if live_only:
        qs = qs.filter(queued_for_delete=False)
    return set(qs.values_list("instance_uuid", flat=True))


# --- used by conductor/ ---------------------------------------------------------------------------
def cell0_get() -> CellMapping | None:
    """cell0, where the servers that got no host are kept (None before it is mapped)."""
    return CellMapping.objects.filter(uuid=CELL0_UUID).first()
