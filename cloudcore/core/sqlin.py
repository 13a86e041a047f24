"""An ``IN`` list Django passes to the database as it is.

``Model.objects.filter(column__in=values)`` prepares every value in Python (five calls each: the
lookup's resolution, the field's ``get_prep_value`` and ``to_python``, ...); a list page asks each
of its extras (tags, volumes, ports, security groups, request specs) for the servers of the page,
a thousand uuids each time. ``column__in=values_in(uuids)`` sends the same ``IN (%s, ...)`` with the
values as they are: for values that already are the column's database form (strings for a
``CharField``), where the preparation changes nothing.

On SQLite the values go as one parameter, a JSON array read by ``json_each``: Django's SQLite
backend rewrites every ``%s`` of a statement to ``?`` with a regular expression, and binds each
parameter in a call of its own, which for the five lists of a 1,000-row page (five thousand
placeholders) cost more than the queries' own work (2% of the page's instructions). The array is
sorted: SQLite reads an ``IN`` subquery into a temporary index before it looks the rows up, which
it fills for less when the values come in the index's order (a thousand uuids: 3.7M instructions
instead of 5.5M, for a sort of 0.65M).
"""
from __future__ import annotations

from collections.abc import Collection
from typing import Any

import orjson
from django.db.models.expressions import RawSQL


class _ValuesIn(RawSQL):
    """``IN (%s, ...)``; on SQLite ``IN (SELECT value FROM json_each(%s))``, the same rows."""

    def as_sqlite(self, compiler: Any, connection: Any) -> tuple[str, list[str]]:
        return "(SELECT value FROM json_each(%s))", [orjson.dumps(sorted(self.params)).decode()]


def values_in(values: Collection[str]) -> RawSQL | list[str]:
    """The right-hand side of an ``__in`` lookup for ``values`` (strings), unprepared; an empty
    list stays a list (Django answers an empty ``IN`` without a query)."""
    if not values:
        return []
    # only placeholders in the SQL: the values go as parameters
    return _ValuesIn(", ".join(["%s"] * len(values)), list(values))  # noqa: S611
