"""Reads of a project's own block storage records (snapshots, backups): a project sees its rows, a
cloud admin every project's (and, with ``all_tenants``, lists them all); Cinder's list filters and
offset paging."""
from __future__ import annotations

from typing import Any, TypeVar

from django.db.models import Model, QuerySet

from cloudcore.core.context import RequestContext

M = TypeVar("M", bound=Model)
#: The list filters snapshots and backups share (Cinder's).
LIST_FILTERS = ("name", "status", "volume_id")


def owned_get(ctx: RequestContext, qs: QuerySet[M], pk: str) -> M | None:
    """The row ``pk`` of ``qs`` if ``ctx`` may see it (its project's, or any for an admin)."""
    row = qs.filter(pk=pk).first()
    if row is None or not (ctx.is_admin or getattr(row, "project_id", None) == ctx.project_id):
        return None
    return row


def owned_list(ctx: RequestContext, qs: QuerySet[M], *, all_tenants: bool = False,
               filters: dict[str, Any] | None = None, limit: int | None = None, offset: int = 0) -> list[M]:
    if not (all_tenants and ctx.is_admin):
        qs = qs.filter(project_id=ctx.project_id)
    for key in LIST_FILTERS:
        if (filters or {}).get(key):
            qs = qs.filter(**{key: (filters or {})[key]})
    return list(qs[offset:offset + limit] if limit is not None else qs[offset:])
