"""The servers' part of ``manage.py cell_v2``: does a cell hold servers, map a cell's servers,
verify one server's mapping (Nova's codes)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from cells import selectors as cell_selectors
from cells import services as cell_services
from cells.context import target_cell

from ..models import Instance

if TYPE_CHECKING:
    from cells.models import CellMapping


def cell_has_instances(cell: CellMapping) -> bool:
    """Does ``cell`` hold a live server? A cell whose database cannot be read answers from its
    instance mappings."""
    try:
        with target_cell(cell):
            return Instance.objects.exists()
    except Exception:  # an unreachable cell DB: fall back to its mappings
        return cell_selectors.cell_has_mappings(cell)


def map_instances(*, cell_uuid: str, max_count: int = 50, reset: bool = False) -> bool:
    """Create InstanceMappings for the cell's instances that lack one, oldest first, at most
    ``max_count`` per call. Returns True when every instance is mapped. CellNotFound for an
    unknown cell."""
    cell = cell_services.get_cell(cell_uuid)
    with target_cell(cell):
        rows = list(Instance.objects.order_by("created_at", "id").values_list("uuid", "project_id", "user_id"))
    mapped = cell_selectors.mapped_instance_uuids(r[0] for r in rows)
    todo = [r for r in rows if r[0] not in mapped]
    for instance_uuid, project_id, user_id in todo[:max_count]:
        cell_services.instance_mapping_create(instance_uuid=instance_uuid, cell=cell, project_id=project_id,
                                              user_id=user_id)
    return len(todo) <= max_count


VERIFY_OK, VERIFY_NO_MAPPING, VERIFY_NO_CELL, VERIFY_DELETED, VERIFY_ARCHIVED = 0, 1, 2, 3, 4


def verify_instance(*, instance_uuid: str) -> tuple[int, str]:
    """Nova's verify_instance codes with a sentence for each."""
    mapping = cell_selectors.instance_mapping_get(instance_uuid)
    if mapping is None:
        return VERIFY_NO_MAPPING, f"Instance {instance_uuid} is not mapped to a cell."
    if mapping.cell is None:
        return VERIFY_NO_CELL, f"Instance {instance_uuid} is not mapped to a cell (build in progress?)."
    with target_cell(mapping.cell):
        row = Instance.all_objects.filter(uuid=instance_uuid).values_list("deleted", flat=True).first()
    if row is None:
        return VERIFY_ARCHIVED, (f"The instance {instance_uuid} has been archived but is still mapped to cell "
                                 f"{mapping.cell.name}.")
    if row:
        return VERIFY_DELETED, (f"The instance {instance_uuid} has been deleted but is still mapped to cell "
                                f"{mapping.cell.name}.")
    return VERIFY_OK, f"Instance {instance_uuid} is in cell: {mapping.cell.name} ({mapping.cell.uuid})"
