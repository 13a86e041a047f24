"""cells.transactions: each database's transaction block owns its on_commit."""
from __future__ import annotations

import pytest
from django.db import connections

from cells.transactions import api_atomic, api_db, api_on_commit, atomic, cell_db, is_api_db
from tests.conftest import ALL_DATABASES

pytestmark = pytest.mark.django_db(databases=ALL_DATABASES)


class Boom(Exception):
    pass


def test_aliases_are_named_by_cells(cells):
    # then the API database and each cell's database have their connection alias
    assert api_db() == "default" and is_api_db("default")
    assert cell_db(cells["cell1"]) == "cell1" and not is_api_db("cell1")


def test_atomic_opens_a_transaction_on_the_cells_database_only(cells):
    # given no block of our own on cell1 or cell2
    depth = {alias: len(connections[alias].atomic_blocks) for alias in ("cell1", "cell2", "default")}
    # when a cell1 block is open
    with atomic(cells["cell1"]) as tx:
        # then cell1 gained a block and the others did not
        assert tx.alias == "cell1"
        assert len(connections["cell1"].atomic_blocks) == depth["cell1"] + 1
        assert len(connections["cell2"].atomic_blocks) == depth["cell2"]
        assert len(connections["default"].atomic_blocks) == depth["default"]


def test_cell_on_commit_waits_for_that_cells_commit(cells, django_capture_on_commit_callbacks):
    calls: list[str] = []
    # when a callback is registered inside a cell1 block
    with django_capture_on_commit_callbacks(using="default") as on_api, \
            django_capture_on_commit_callbacks(using="cell1", execute=True) as on_cell1:
        with atomic(cells["cell1"]) as tx:
            tx.on_commit(lambda: calls.append("cell1"))
    # then it is cell1's callback, not the API database's, and it ran on cell1's commit
    assert len(on_cell1) == 1 and on_api == []
    assert calls == ["cell1"]


def test_api_on_commit_is_dropped_when_the_api_block_rolls_back(cells, django_capture_on_commit_callbacks):
    # when the API block that registered a callback fails
    with django_capture_on_commit_callbacks(using="default") as on_api:
        with pytest.raises(Boom):
            with api_atomic() as tx:
                tx.on_commit(lambda: None)
                raise Boom
        # and a callback is registered after it, outside any block of ours
        api_on_commit(lambda: None)
    # then only the second one waits for the API database's commit
    assert len(on_api) == 1
