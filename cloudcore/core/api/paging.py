"""Marker paging of a list already sorted in memory (lists gathered from every cell)."""
from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from cloudcore.core.exceptions import Invalid

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


