"""cells.registry: a cell's database registered (or dropped) while other threads of the process
iterate the connections (``connections.all()`` around every request and task)."""
from __future__ import annotations

import uuid

from django.conf import settings
from django.db import connections

from cells import registry
from cells.models import CellMapping


def _cell() -> CellMapping:
    return CellMapping(uuid=str(uuid.uuid4()), name="registry-test",
                       database_connection="sqlite:////tmp/cloudcore-registry-test/cell.sqlite3")


def test_a_cell_registered_during_an_iteration_of_the_connections_leaves_it_going() -> None:
    # given: another thread's iteration of the connections, begun (a request starting)
    cell = _cell()
    walk = iter(connections)
    first = next(walk)
    # when: a cell is used for the first time
    alias = registry.alias_for(cell)
    try:
        # then: the cell's database is known at once
        assert alias == f"cell-{cell.uuid}"
        assert alias in connections.settings and alias in settings.DATABASES
        # and the iteration ends over the databases it began with (a dict grown in place raised
        # "dictionary changed size during iteration" here)
        assert alias not in [first, *walk]
    finally:
        registry.forget(cell.uuid)


def test_a_cell_forgotten_during_an_iteration_of_the_connections_leaves_it_going() -> None:
    # given: a registered cell, and an iteration of the connections begun
    cell = _cell()
    alias = registry.alias_for(cell)
    walk = iter(connections)
    seen = [next(walk)]
    # when: the cell is deleted
    registry.forget(cell.uuid)
    # then: it is gone from the connections and the settings
    assert alias not in connections.settings and alias not in settings.DATABASES
    # and the iteration ends over the databases it began with, the forgotten one included
    seen += list(walk)
    assert alias in seen
