"""Scatter-gather over real cells: a cell whose database cannot be reached, and a cell that does
not answer in time, are reported as failed while the other cells still answer."""
from __future__ import annotations

import time
from typing import Any

import pytest

from cells.models import CellMapping
from cells.scatter import CellFailure, failed, scatter_gather
from servers.models import Instance
from tests.factories import InstanceFactory

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"], transaction=True)


def test_unreachable_cell_database_is_reported_the_others_answer(cells: dict, settings: Any) -> None:
    settings.CELL_SCATTER_INLINE = False  # real threads, real per-cell connections
    InstanceFactory(cell=cells["cell1"])
    dead = CellMapping.objects.create(name="dead", database_connection="postgres://nobody@127.0.0.1:1/nowhere")
    results = scatter_gather(lambda _cell: Instance.objects.count(),
                             [cells["cell1"], cells["cell2"], dead], timeout=30)
    assert results[cells["cell1"].uuid] == 1 and results[cells["cell2"].uuid] == 0
    assert failed(results[dead.uuid]) and results[dead.uuid].reason == "error"


def test_cell_that_does_not_answer_in_time_is_a_timeout(cells: dict, settings: Any) -> None:
    settings.CELL_SCATTER_INLINE = False

    def slow_in_cell2(cell: CellMapping) -> str:
        if cell.name == "cell2":
            time.sleep(3)
        return cell.name or ""

    started = time.monotonic()
    results = scatter_gather(slow_in_cell2, [cells["cell1"], cells["cell2"]], timeout=0.5)
    assert time.monotonic() - started < 2.5  # the caller is not held by the slow cell
    assert results[cells["cell1"].uuid] == "cell1"
    outcome = results[cells["cell2"].uuid]
    assert isinstance(outcome, CellFailure) and outcome.timed_out
