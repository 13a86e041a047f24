"""Targeting a cell: which cell database the cell models of this context use.

``with target_cell(cell): Instance.objects.filter(...)`` reads and writes the cell's database.
The target is a context variable, so threads and tasks each have their own; nothing falls back
to the API database.
"""
from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from cloudcore.core.exceptions import NotFound

from . import registry

if TYPE_CHECKING:
    from .models import CellMapping

_current_alias: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "cloudcore_cell_alias", default=None
)
_current_cell: contextvars.ContextVar[CellMapping | None] = contextvars.ContextVar(
    "cloudcore_cell", default=None
)


class CellNotFound(NotFound):
    message = "Cell %(cell)s doesn't exist."


def _resolve(cell: CellMapping | str) -> CellMapping:
    # The router (settings.DATABASE_ROUTERS) imports this module before the app registry is
    # ready, when no model module may be imported yet.
    from .isolation import IsolationViolation, agent_cell
    from .models import CellMapping

    agent = agent_cell()
    if agent is not None:
        # A compute agent knows only its own cell, and never reads the API database to find it.
        if not agent.owns(cell):
            raise IsolationViolation(f"the compute agent of cell {agent.uuid} cannot target cell {cell}")
        return agent.mapping
    if isinstance(cell, CellMapping):
        return cell
    from .selectors import cell_find

    found = cell_find(cell)
    if found is None:
        raise CellNotFound(cell=cell)
    return found


def resolve_cell(cell: CellMapping | str) -> CellMapping:
    """The CellMapping of ``cell`` (a mapping, or a cell uuid or name); CellNotFound if none."""
    return _resolve(cell)


@contextmanager
def target_cell(cell: CellMapping | str) -> Iterator[CellMapping]:
    """Target ``cell`` (a CellMapping, or a cell uuid or name) for the duration of the block."""
    mapping = _resolve(cell)
    alias = registry.alias_for(mapping)
    token_alias = _current_alias.set(alias)
    token_cell = _current_cell.set(mapping)
    try:
        yield mapping
    finally:
        _current_alias.reset(token_alias)
        _current_cell.reset(token_cell)


@contextmanager
def untargeted() -> Iterator[None]:
    """No cell targeted for the block (an API request served in-process starts from none)."""
    token_alias = _current_alias.set(None)
    token_cell = _current_cell.set(None)
    try:
        yield
    finally:
        _current_alias.reset(token_alias)
        _current_cell.reset(token_cell)


def current_alias() -> str | None:
    return _current_alias.get()


def current_cell() -> CellMapping | None:
    return _current_cell.get()
