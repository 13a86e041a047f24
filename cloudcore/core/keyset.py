"""Keyset paging of rows sorted on several keys, in SQL: the rows of a page are those after the last
row of the page before (the marker) in the order of the keys.

A list merged from several databases (the servers of every cell) is sorted in memory with NULL
before every value, whatever the databases do: SQLite and MySQL put NULLs first ascending (last
descending), PostgreSQL last ascending (first descending). So each database's rows are ordered
with the NULLs placed as the merge places them (``sort_order``), and the rows after a marker
(``after_row``) are chosen with NULL the least value: a NULL compares as unknown in SQL, so
``column > NULL`` or ``column < value`` alone would drop the rows around a NULL. Its text keys are
compared by code point, as Python compares strings: a model's text sort keys are
``CodePointCharField``s, which have the ``"C"`` collation on PostgreSQL whatever the database's.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import models
from django.db.models import F, Q
from django.db.models.expressions import OrderBy

#: (column, descending) of each sort key, the last one unique (a uuid) so that the order is total
SortKeys = Sequence[tuple[str, bool]]


def _nullable(model: type[models.Model], column: str) -> bool:
    return bool(getattr(model._meta.get_field(column), "null", False))


def sort_order(model: type[models.Model], keys: SortKeys) -> list[OrderBy]:
    """``order_by`` expressions of ``keys`` with the NULLs of a nullable column first ascending and
    last descending, on every backend (a column that cannot be NULL is ordered as it is)."""
    order = []
    for column, desc in keys:
        if not _nullable(model, column):
            order.append(F(column).desc() if desc else F(column).asc())
        else:
            order.append(F(column).desc(nulls_last=True) if desc else F(column).asc(nulls_first=True))
    return order


def after_row(model: type[models.Model], keys: SortKeys, values: Sequence[Any]) -> Q:
    """The rows after a row whose keys' values are ``values`` in the order of ``sort_order``: those
    equal to it on the first keys and beyond it on the next one, for each key in turn. NULL is less
    than every value: ascending, the rows beyond a NULL are those not NULL; descending, nothing is
    beyond a NULL and NULL is beyond every value."""
    after: Q | None = None
    equal = Q()
    for (column, desc), value in zip(keys, values, strict=True):
        if value is None:
            beyond = None if desc else Q(**{f"{column}__isnull": False})
            same = Q(**{f"{column}__isnull": True})
        else:
            beyond = Q(**{f"{column}__lt" if desc else f"{column}__gt": value})
            if desc and _nullable(model, column):
                beyond |= Q(**{f"{column}__isnull": True})
            same = Q(**{column: value})
        if beyond is not None:
            after = equal & beyond if after is None else after | (equal & beyond)
        equal &= same
    # no row is after the last row of every key (descending, each NULL): an IN list of nothing
    return after if after is not None else Q(pk__in=[])
