"""cells.selectors: the reads of the cell registry other apps use."""
from __future__ import annotations

import pytest

from cells import selectors
from cells.models import HostMapping, InstanceMapping
from cells.services import host_mapping_delete, instance_mapping_create
from tests.conftest import ALL_DATABASES

pytestmark = pytest.mark.django_db(databases=ALL_DATABASES)


def test_cell_list_filters_cell0_and_disabled(cells):
    # given cell2 disabled
    cells["cell2"].disabled = True
    cells["cell2"].save()
    # then each filter leaves the expected cells, in id order
    assert [c.name for c in selectors.cell_list()] == ["cell0", "cell1", "cell2"]
    assert [c.name for c in selectors.cell_list(cell0=False)] == ["cell1", "cell2"]
    assert [c.name for c in selectors.cell_list(cell0=False, enabled_only=True)] == ["cell1"]


def test_host_mappings(cells):
    # given two hosts mapped to cell1 and cell2
    HostMapping.objects.create(host="b-host", cell=cells["cell2"])
    HostMapping.objects.create(host="a-host", cell=cells["cell1"])
    # then they are found by host, with their cell
    assert selectors.host_mapping_get("a-host").cell.name == "cell1"
    assert selectors.host_mapping_get("nowhere") is None
    assert set(selectors.host_mappings(["a-host", "nowhere"])) == {"a-host"}
    assert selectors.host_is_mapped("b-host") and not selectors.host_is_mapped("nowhere")
    assert selectors.mapped_hosts() == ["a-host", "b-host"]
    assert selectors.host_cell_names() == {"a-host": "cell1", "b-host": "cell2"}
    # when one mapping is deleted
    host_mapping_delete("a-host")
    # then it is gone
    assert selectors.mapped_hosts() == ["b-host"]


def test_instance_mappings(cells):
    # given a server waiting for a host and two servers of two projects in cell1
    instance_mapping_create(instance_uuid="u-waiting", project_id="p1", user_id="u")
    instance_mapping_create(instance_uuid="u-1", project_id="p1", user_id="u", cell=cells["cell1"])
    instance_mapping_create(instance_uuid="u-2", project_id="p2", user_id=None, cell=cells["cell1"])
    # then a mapping comes with its cell (None while waiting)
    assert selectors.instance_mapping_get("u-waiting").cell is None
    assert selectors.instance_mapping_get("u-1").cell.name == "cell1"
    assert selectors.instance_mapping_get("missing") is None
    # and a cell's mappings filter by project
    in_cell1 = selectors.instance_mappings_in([cells["cell1"]])
    assert sorted(m.instance_uuid for m in in_cell1) == ["u-1", "u-2"]
    assert [m.instance_uuid for m in selectors.instance_mappings_in([cells["cell1"]], project_id="p2")] == ["u-2"]
    # and one queued for delete is left out
    InstanceMapping.objects.filter(instance_uuid="u-1").update(queued_for_delete=True)
    assert [m.instance_uuid for m in selectors.instance_mappings_in([cells["cell1"]])] == ["u-2"]


def _fields(obj):
    return {f.attname: getattr(obj, f.attname) for f in obj._meta.concrete_fields} | {"_db": obj._state.db}


def test_the_prepared_reads_are_the_orms(cells):
    # given a host mapped to cell2 (the conductor's two reads per build: the cells and a host's mapping)
    from cells.models import CellMapping
    from cloudcore.core import prepared

    HostMapping.objects.create(host="a-host", cell=cells["cell2"])
    # when they are read (statements prepared once per process)
    every = selectors.all_cells()
    mapping = selectors.host_mapping_get("a-host")
    # then the ORM's instances, in id order, the mapping's cell read with it
    assert [_fields(c) for c in every] == [_fields(c) for c in CellMapping.objects.order_by("id")]
    assert _fields(mapping) == _fields(HostMapping.objects.get(host="a-host"))
    assert _fields(mapping.cell) == _fields(cells["cell2"])
    assert prepared._object_statements[selectors.CELLS_KEY] is not None
    assert prepared._object_statements["cells.host_mapping"] is not None
