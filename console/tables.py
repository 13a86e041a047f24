"""The console's tables, one way everywhere: ``?sort=<column>&dir=asc|desc`` orders the rows on
the server, ``?page=N`` pages them. Lists the compute API owns (servers) are sorted and paged by
the API itself (``server_views.server_list``); these helpers serve the rest."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from django.core.paginator import Page, Paginator
from django.http import HttpRequest

T = TypeVar("T")


def sort_rows(request: HttpRequest, rows: Sequence[T], keys: dict[str, Callable[[T], Any]]) -> list[T]:
    """``rows`` ordered by the requested column (unknown columns leave the order as it is)."""
    key = keys.get(request.GET.get("sort", ""))
    if key is None:
        return list(rows)
    return sorted(rows, key=lambda r: (key(r) is None, key(r) or ""), reverse=request.GET.get("dir") == "desc")


def paginate(request: HttpRequest, items: Any, per_page: int = 50) -> Page[Any]:
    """One page of ``items`` (a queryset is sliced in the database: a count and one page)."""
    return Paginator(items, per_page).get_page(request.GET.get("page"))
