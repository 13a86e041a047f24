"""The cells are read once per request (scatter-gather, listing, resolving a name), and a request
that changes a cell reads them again."""
from __future__ import annotations

from typing import Any

import pytest

from cells.context import resolve_cell
from cells.scatter import scatter_gather
from cells.selectors import cell_list
from cloudcore.core import scope
from tests.conftest import ALL_DATABASES

pytestmark = pytest.mark.django_db(databases=ALL_DATABASES)


def test_cells_are_read_once_per_request_and_again_after_a_change(cells: dict[str, Any],
                                                                    django_assert_num_queries: Any) -> None:
    with scope.request_scope():
        with django_assert_num_queries(1):
            assert [c.name for c in cell_list()] == ["cell0", "cell1", "cell2"]
            assert [c.name for c in cell_list(cell0=False, enabled_only=True)] == ["cell1", "cell2"]
            assert resolve_cell("cell2").uuid == cells["cell2"].uuid
            assert resolve_cell(cells["cell1"].uuid).name == "cell1"
            assert len(scatter_gather(lambda cell: cell.name)) == 3
        cells["cell2"].disabled = True
        cells["cell2"].save()
        assert [c.name for c in cell_list(cell0=False, enabled_only=True)] == ["cell1"]
