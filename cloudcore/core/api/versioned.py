"""Declarative microversion tables (STYLE rule 15): each response field, query parameter, body key
or behaviour states the microversion range it exists in, once, in a table next to its resource;
views ask the table instead of comparing versions.

- ``Field(name, get, since, until)`` and ``present(FIELDS, obj, version)``: a response body.
- ``Since({...})``: names (query parameters, body keys, behaviours) and the version they appear
  in; ``.has(name, version)``, ``.names_at(version)`` and ``.only(mapping, version)`` (the
  entries that exist at ``version``; the others are ignored, as Nova ignores them below their
  microversion).
- ``ByVersion({(2, 1): 200, (2, 2): 201})``: a value that changed with the microversion (a
  status code, a default), ``.at(version)``.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

Version = tuple[int, int]
#: No upper bound: the field still exists at the newest microversion.
LATEST: Version = (99, 999)
FIRST: Version = (0, 0)

T = TypeVar("T")


@dataclass(frozen=True)
class Field(Generic[T]):
    """One response field: its name, how to read it from the presented object, and the
    microversions it exists in (``since`` to ``until``, both included)."""

    name: str
    get: Callable[[T], Any]
    since: Version = FIRST
    until: Version = LATEST
    #: Shown only when this holds for the object (a policy-guarded field, Nova's extensions).
    when: Callable[[T], bool] | None = None

    def at(self, version: Version) -> bool:
        return self.since <= tuple(version) <= self.until


#: ``"00"`` to ``"99"``: the two-digit fields of a timestamp, looked up instead of formatted.
_TWO_DIGITS = tuple(f"{n:02d}" for n in range(100))


def timestamp(value: Any) -> str | None:
    """OpenStack's ``created_at``-style timestamp (microseconds, no zone), None for no value."""
    if not value:
        return None
    if value.year < 1000:  # strftime does not pad the year
        return str(value.strftime("%Y-%m-%dT%H:%M:%S.%f"))
    # what strftime("%Y-%m-%dT%H:%M:%S.%f") writes, in a sixth of its time and a third of isoformat's
    # (a list writes thousands; isoformat of an aware datetime also formats the offset it then cuts)
    d = _TWO_DIGITS
    return (f"{value.year}-{d[value.month]}-{d[value.day]}T{d[value.hour]}:{d[value.minute]}:"
            f"{d[value.second]}.{value.microsecond:06d}")


def seconds_z(value: Any) -> str:
    """``value.strftime("%Y-%m-%dT%H:%M:%SZ")`` (the zone's fields as they are, a literal Z), faster."""
    if value.year < 1000:
        return str(value.strftime("%Y-%m-%dT%H:%M:%SZ"))
    d = _TWO_DIGITS
    return f"{value.year}-{d[value.month]}-{d[value.day]}T{d[value.hour]}:{d[value.minute]}:{d[value.second]}Z"


def present(fields: Iterable[Field[T]], obj: T, version: Version) -> dict[str, Any]:
    """The body of ``obj`` at ``version``: every field of the table that exists then (and whose
    ``when`` holds), in table order."""
    return {f.name: f.get(obj) for f in fields if f.at(version) and (f.when is None or f.when(obj))}


def field_at(fields: Iterable[Field[Any]], name: str, version: Version) -> bool:
    """Whether the table's field ``name`` exists at ``version``."""
    return any(f.name == name and f.at(version) for f in fields)


@dataclass(frozen=True)
class Since:
    """Names and the microversion each appears in (names not listed exist in every version)."""

    table: Mapping[str, Version]

    def has(self, name: str, version: Version) -> bool:
        return tuple(version) >= self.table.get(name, FIRST)

    def only(self, mapping: Mapping[str, Any], version: Version) -> dict[str, Any]:
        return {k: v for k, v in mapping.items() if self.has(k, version)}

    def names_at(self, version: Version) -> set[str]:
        """The listed names that exist at ``version``."""
        return {name for name in self.table if self.has(name, version)}


@dataclass(frozen=True)
class ByVersion(Generic[T]):
    """A value per microversion: each key is the version from which its value holds."""

    values: Mapping[Version, T]

    def at(self, version: Version) -> T:
        current = [since for since in self.values if since <= tuple(version)]
        return self.values[max(current)]
