"""The router keeps every row in its home database."""
from __future__ import annotations

import pytest
from django.db import connections

from cells.context import CellNotFound, target_cell
from cloudcore.core.exceptions import CellNotTargeted, ObjectActionError
from servers.models import Flavor, Instance
from tests.conftest import ALL_DATABASES
from tests.factories import FlavorFactory, InstanceFactory

pytestmark = pytest.mark.django_db(databases=ALL_DATABASES)


def _tables(alias: str) -> set[str]:
    with connections[alias].cursor() as cursor:
        return set(connections[alias].introspection.table_names(cursor))


def test_tables_exist_only_in_their_home_database():
    # given the migrated test databases
    api, cell1 = _tables("default"), _tables("cell1")
    # then API tables are only in default and cell tables only in cells
    assert "servers_flavor" in api and "servers_flavor" not in cell1
    assert "cells_cellmapping" in api and "cells_cellmapping" not in cell1
    assert "servers_instance" in cell1 and "servers_instance" not in api
    assert "hosts_computenode" in cell1 and "hosts_computenode" not in api
    assert "identity_user" in api and "identity_user" not in cell1


def test_cell_model_without_target_raises(cells):
    with pytest.raises(CellNotTargeted):
        Instance.objects.count()
    with pytest.raises(CellNotTargeted):
        Instance(project_id="p", user_id="u").save()


def test_rows_land_only_in_the_targeted_cell(cells):
    # given an instance created in cell1
    inst = InstanceFactory(cell=cells["cell1"])
    # then cell1 has it and cell2 does not
    with target_cell(cells["cell1"]):
        assert Instance.objects.filter(uuid=inst.uuid).exists()
    with target_cell(cells["cell2"]):
        assert not Instance.objects.filter(uuid=inst.uuid).exists()
    # and API models ignore the target
    with target_cell(cells["cell2"]):
        FlavorFactory(name="x1")
    assert Flavor.objects.filter(name="x1").exists()


def test_target_cell_by_name_and_uuid(cells):
    with target_cell("cell2") as cell:
        assert cell.uuid == cells["cell2"].uuid
    with target_cell(cells["cell1"].uuid) as cell:
        assert cell.name == "cell1"
    with pytest.raises(CellNotFound):
        with target_cell("no-such-cell"):
            pass


def test_object_loaded_from_one_cell_cannot_be_saved_into_another(cells):
    inst = InstanceFactory(cell=cells["cell1"])
    with target_cell(cells["cell1"]):
        loaded = Instance.objects.get(uuid=inst.uuid)
    with target_cell(cells["cell2"]):
        loaded.display_name = "moved"
        with pytest.raises(ObjectActionError):
            loaded.save()
