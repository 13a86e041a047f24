"""Paging of a list already sorted in memory (lists gathered from every cell): by marker, or by
offset for the old APIs that page that way."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from cloudcore.core.exceptions import Invalid

from .validation import query_int

T = TypeVar("T")


def page_of(items: Sequence[T], *, marker: str | None, limit: int | None) -> list[T]:
    """The items after the one whose ``uuid`` is ``marker`` (400 when none is), at most ``limit``."""
    page = list(items)
    if marker:
        uuids = [getattr(item, "uuid", None) for item in page]
        if marker not in uuids:
            raise Invalid(f"Marker {marker} could not be found.")
        page = page[uuids.index(marker) + 1:]
    return page if limit is None else page[:limit]




def offset_page(items: Sequence[T], params: Mapping[str, Any]) -> list[T]:
    """The items from query parameter ``offset`` on, at most ``limit`` (400 for a bad value)."""
    bad = "Invalid input for query parameters %(name)s. Value: %(value)s."
    offset = query_int(params, "offset", invalid=bad, default=0) or 0
    limit = query_int(params, "limit", invalid=bad)
    return list(items[offset:offset + limit if limit is not None else None])
