"""What a compute agent may touch: its own cell's database, and nothing else.

A compute host in cell X reads and writes only cell X's database (DESIGN.md, isolation). It
reaches placement, images, volumes and networks through their HTTP APIs with a service token
(``compute.clients``), or asks the conductor. This module makes that checkable:

- ``compute_agent(cell)`` marks the current context as the compute agent of ``cell``. While it is
  active the router refuses every API model and every other cell's database with
  ``IsolationViolation``, and ``target_cell`` accepts only the agent's own cell without reading
  the API database to resolve it.
- ``agent_process(cell)`` does the same for the whole process (``manage.py compute`` when its
  environment names only its cell database): threads the worker starts inherit it.
- ``service_side()`` lifts the mark for the block: an API request served in-process (the tests'
  WSGI transport of ``compute.clients``) or a conductor task run eagerly in the same thread.

In the test suite the compute tasks enter ``compute_agent`` (``settings.COMPUTE_ISOLATION``), so
every functional test that drives a server through its life proves the compute side stays in its
cell.
"""
from __future__ import annotations

import contextvars
import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, ParamSpec, TypeVar

if TYPE_CHECKING:
    from .models import CellMapping


class IsolationViolation(RuntimeError):
    """A compute agent reached for a database that is not its own cell's (a programming error)."""


@dataclass(frozen=True)
class AgentCell:
    mapping: CellMapping
    alias: str

    @property
    def uuid(self) -> str:
        return str(self.mapping.uuid)

    def owns(self, cell: CellMapping | str) -> bool:
        if isinstance(cell, str):
            return cell in (self.mapping.uuid, self.mapping.name)
        return bool(cell.uuid == self.mapping.uuid)


# A context's own mark wins over the process's; ``_SERVICE`` means "explicitly not an agent".
_SERVICE = object()
_agent: contextvars.ContextVar[AgentCell | object | None] = contextvars.ContextVar("cloudcore_agent", default=None)
_process_agent: AgentCell | None = None


def agent_cell() -> AgentCell | None:
    """The cell whose compute agent the current context is, or None on the service side."""
    mark = _agent.get()
    if mark is _SERVICE:
        return None
    if isinstance(mark, AgentCell):
        return mark
    return _process_agent


def _agent_for(cell: CellMapping) -> AgentCell:
    from . import registry  # registry imports models: the router loads this module before apps are ready

    return AgentCell(mapping=cell, alias=registry.alias_for(cell))


@contextmanager
def compute_agent(cell: CellMapping) -> Iterator[AgentCell]:
    agent = _agent_for(cell)
    token = _agent.set(agent)
    try:
        yield agent
    finally:
        _agent.reset(token)


def agent_process(cell: CellMapping) -> AgentCell:
    """Mark this whole process as the compute agent of ``cell`` (not undone: a worker's lifetime)."""
    global _process_agent
    _process_agent = _agent_for(cell)
    return _process_agent


@contextmanager
def service_side() -> Iterator[None]:
    token = _agent.set(_SERVICE)
    try:
        yield
    finally:
        _agent.reset(token)


P = ParamSpec("P")
R = TypeVar("R")


def on_service_side(func: Callable[P, R]) -> Callable[P, R]:
    """Run a service-side task (conductor, volume worker) outside any compute agent's mark, as it
    would run in its own process; needed when an agent's cast is applied eagerly in-process."""
    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with service_side():
            return func(*args, **kwargs)
    return wrapper


def check_database(model_name: str, alias: str) -> None:
    """Raise unless the current context may use database ``alias`` for ``model_name``."""
    agent = agent_cell()
    if agent is None or alias == agent.alias:
        return
    what = "the API database" if alias == "default" else f"database {alias!r}"
    raise IsolationViolation(
        f"the compute agent of cell {agent.mapping.name or agent.uuid} must not use {what} "
        f"({model_name}); go through the service's HTTP API or the conductor"
    )
