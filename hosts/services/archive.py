"""The hosts' part of ``manage.py db archive_deleted_rows``: soft-deleted services and compute
nodes of the targeted cell are removed for good."""
from __future__ import annotations

from datetime import datetime

from ..models import ComputeNode, Service


def deleted_rows_purge(*, before: datetime | None = None) -> dict[str, int]:
    """Delete the soft-deleted services and compute nodes (deleted before ``before`` if given);
    returns ``{table: rows}`` of the tables that lost rows."""
    counts: dict[str, int] = {}
    for model in (Service, ComputeNode):
        rows = model._base_manager.filter(deleted=True)
        if before is not None:
            rows = rows.filter(deleted_at__lt=before)
        deleted, _ = rows.delete()
        if deleted:
            counts[model._meta.db_table] = deleted
    return counts
