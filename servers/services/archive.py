"""``manage.py db archive_deleted_rows``: soft-deleted servers, and every row hanging off them, are
removed for good from the cell databases, then their mappings, request specs and build requests
from the API database.

cloudcore keeps no shadow tables: archiving removes the rows (Nova's archive followed by
``--purge``). Other soft-deleted cell rows (migrations, services, nodes) go too.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from cells import services as cell_services
from cells.context import target_cell
from cells.selectors import cell_list
from cells.transactions import atomic
from hosts.services.archive import deleted_rows_purge
from scheduling.services.request_specs import request_specs_delete
from scheduling.services.traces import trace_bodies_purge, trace_records_delete

from ..models import (
    BlockDeviceMapping,
    BuildRequest,
    Instance,
    InstanceAction,
    InstanceActionEvent,
    InstanceFault,
    Migration,
    Tag,
    VirtualInterface,
)

if TYPE_CHECKING:
    from cells.models import CellMapping

#: Cell models whose rows belong to an instance (by ``instance_uuid``), purged with it.
_CHILDREN = (BlockDeviceMapping, InstanceFault, Tag, VirtualInterface, Migration, InstanceAction)


@dataclass
class ArchiveResult:
    rows: dict[str, int] = field(default_factory=dict)
    instance_uuids: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(self.rows.values())

    def count(self, table: str, rows: int) -> None:
        if rows:
            self.rows[table] = self.rows.get(table, 0) + rows


def archive_deleted_rows(*, max_rows: int = 1000, cells: list[CellMapping] | None = None,
                         before: datetime | None = None) -> ArchiveResult:
    """Archive at most ``max_rows`` deleted servers (deleted before ``before`` if given) of
    ``cells`` (every cell by default). Each cell's rows go in one transaction of that cell's
    database; the API rows after every cell."""
    result = ArchiveResult()
    targets = cells if cells is not None else cell_list()
    budget = max_rows
    for cell in targets:
        if budget <= 0:
            break
        with target_cell(cell):
            qs = Instance.all_objects.filter(deleted=True)
            if before is not None:
                qs = qs.filter(deleted_at__lt=before)
            uuids = list(qs.order_by("id").values_list("uuid", flat=True)[:budget])
            with atomic(cell):
                if uuids:
                    events = InstanceActionEvent.all_objects.filter(action__instance_uuid__in=uuids)
                    result.count("instance_actions_events", events.delete()[0])
                    for model in _CHILDREN:
                        rows = model._base_manager.filter(instance_uuid__in=uuids)
                        result.count(model._meta.db_table, rows.delete()[0])
                    result.count("instances", Instance.all_objects.filter(uuid__in=uuids).delete()[0])
                migrations = Migration._base_manager.filter(deleted=True)
                if before is not None:
                    migrations = migrations.filter(deleted_at__lt=before)
                result.count(Migration._meta.db_table, migrations.delete()[0])
                for table, deleted in deleted_rows_purge(before=before).items():
                    result.count(table, deleted)
        budget -= len(uuids)
        result.instance_uuids.extend(uuids)
    if result.instance_uuids:
        result.count("instance_mappings", cell_services.instance_mappings_delete(result.instance_uuids)[0])
        result.count("request_specs", request_specs_delete(result.instance_uuids)[0])
        result.count("scheduling_traces", trace_records_delete(result.instance_uuids))
        result.count("build_requests",
                     BuildRequest.objects.filter(instance_uuid__in=result.instance_uuids).delete()[0])
    # trace bodies left unnamed by an earlier archive, once their grace has passed
    result.count("scheduling_trace_bodies", trace_bodies_purge())
    return result
