"""Register cell database connections in ``django.db.connections`` at run time.

A cell's connection alias is its name when the settings pre-declare a database of that name
(``CLOUDCORE_CELL_DATABASES``, the test suite), otherwise ``cell-<uuid>``. Registering needs no
settings change: a cell created while the process runs is usable at once.

The handler's and the settings' dicts of databases are replaced, never changed in place: other
threads of the process iterate them without this module's lock (``connections.all()``, which
Django's request signals and Celery's fixup call around every request and task), and a dict that
grows under an iterator raises "dictionary changed size during iteration" (a 500 for a request
that was starting while another thread's request used a cell for the first time).
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections

from .dburl import database_config

if TYPE_CHECKING:
    from .models import CellMapping

_lock = threading.Lock()
# cell uuid -> alias; filled as cells are used.
_aliases: dict[str, str] = {}


def _preconfigured(name: str | None) -> bool:
    return bool(name) and name != DEFAULT_DB_ALIAS and name in settings.DATABASES


def alias_for(cell: CellMapping) -> str:
    """Return the connection alias of ``cell``, registering its database on first use."""
    alias = _aliases.get(cell.uuid)
    if alias is not None and alias in connections.settings:
        return alias
    with _lock:
        if _preconfigured(cell.name):
            alias = str(cell.name)
        else:
            alias = f"cell-{cell.uuid}"
            if alias not in connections.settings:
                config = database_config(cell.database_connection)
                # configure_settings() fills Django's per-connection defaults; it insists on a default.
                configured = connections.configure_settings({DEFAULT_DB_ALIAS: settings.DATABASES[DEFAULT_DB_ALIAS],
                                                             alias: config})
                _replace_databases(lambda databases: {**databases, alias: configured[alias]})
        _aliases[cell.uuid] = alias
    return alias


def forget(cell_uuid: str) -> None:
    """Drop the connection of a deleted cell."""
    with _lock:
        alias = _aliases.pop(cell_uuid, None)
        if alias and alias.startswith("cell-") and alias in connections.settings:
            try:
                connections[alias].close()
            finally:
                _replace_databases(lambda databases: {k: v for k, v in databases.items() if k != alias})


def _replace_databases(change: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
    """Give the connection handler, and the settings, ``change``'s new dict of databases (see the
    module's docstring); one dict for both when they were one."""
    shared = connections.settings is settings.DATABASES
    connections.settings = change(connections.settings)  # (a cached_property's value, replaced)
    settings.DATABASES = connections.settings if shared else change(settings.DATABASES)


def is_cell_alias(alias: str) -> bool:
    return alias != DEFAULT_DB_ALIAS


def register_all() -> list[CellMapping]:
    """Register every mapped cell; returns the mappings."""
    # Imported by cells.context, which the router loads before the app registry is ready.
    from .models import CellMapping

    cells = list(CellMapping.objects.all())
    for cell in cells:
        alias_for(cell)
    return cells


def drop_broken_connections() -> int:
    """Close this thread's database connections that an error left unusable (a backend terminated,
    a database restarted or down), so that the next query connects again instead of failing with
    "connection already closed". For a worker's failure path, which records the failure right after
    the error, outside the request cycle (Celery's Django fixup only checks connections between
    tasks). Connections inside a transaction are left to it. Returns how many were closed."""
    closed = 0
    for conn in connections.all(initialized_only=True):
        if conn.connection is None or conn.in_atomic_block or not conn.errors_occurred:
            continue
        if conn.is_usable():
            conn.errors_occurred = False
            continue
        conn.close()
        closed += 1
    return closed
