"""Reads of a project's own block storage records (snapshots, backups): a project sees its rows, a
cloud admin every project's (and, with ``all_tenants``, lists them all); Cinder's list filters, sorting
and paging (marker or offset)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from django.db.models import Model, QuerySet

from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Invalid, NotFound

M = TypeVar("M", bound=Model)
#: The list filters snapshots and backups share (Cinder's).
LIST_FILTERS = ("name", "status", "volume_id")
#: The keys snapshots and backups may be sorted by (Cinder's).
SORT_KEYS = ("id", "name", "status", "size", "created_at", "updated_at")


def owned_get(ctx: RequestContext, qs: QuerySet[M], pk: str) -> M | None:
    """The row ``pk`` of ``qs`` if ``ctx`` may see it (its project's, or any for an admin)."""
    row = qs.filter(pk=pk).first()
    if row is None or not (ctx.is_admin or getattr(row, "project_id", None) == ctx.project_id):
        return None
    return row


def owned_list(ctx: RequestContext, qs: QuerySet[M], *, all_tenants: bool = False,
               filters: dict[str, Any] | None = None, limit: int | None = None, offset: int = 0,
               marker: str | None = None, sort: list[tuple[str, str]] | None = None) -> list[M]:
    if not (all_tenants and ctx.is_admin):
        qs = qs.filter(project_id=ctx.project_id)
    for key in LIST_FILTERS:
        if (filters or {}).get(key):
            qs = qs.filter(**{key: (filters or {})[key]})
    return sorted_page(qs, sort=sort, sort_keys=SORT_KEYS, limit=limit, marker=marker, offset=offset)


def sorted_page(qs: QuerySet[M], *, sort: list[tuple[str, str]] | None, sort_keys: tuple[str, ...],
                limit: int | None = None, marker: str | None = None, offset: int = 0,
                keep: Callable[[M], bool] | None = None) -> list[M]:
    """``qs`` newest first unless ``sort`` (``[(key, "asc"|"desc")]``) says otherwise, ties broken by
    id in the last key's direction; only the rows ``keep`` accepts; then the page after ``marker``
    (an id) or from ``offset``, of at most ``limit`` rows. Raises Invalid for a key not in
    ``sort_keys`` or an unknown direction, NotFound for a marker not in the list."""
    order: list[str] = []
    for key, direction in sort or [("created_at", "desc")]:
        if key not in sort_keys:
            raise Invalid(f"Invalid input received: Invalid sort key {key}.")
        if direction not in ("asc", "desc"):
            raise Invalid(f"Invalid input received: Invalid sort direction {direction}.")
        order.append(key if direction == "asc" else f"-{key}")
    qs = qs.order_by(*order, "-id" if order[-1].startswith("-") else "id")
    if marker is None and keep is None:
        return list(qs[offset:offset + limit] if limit is not None else qs[offset:])
    items = [row for row in qs if keep is None or keep(row)]
    if marker:
        ids = [str(row.pk) for row in items]
        if marker not in ids:
            raise NotFound(f"Marker {marker} could not be found.")
        items = items[ids.index(marker) + 1:]
    else:
        items = items[offset:]
    return items[:limit] if limit is not None else items
