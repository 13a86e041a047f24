"""Listing servers across cells: build requests first, merge-sorted instances, marker paging,
duplicates dropped, down cells reported."""
from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from cells.models import InstanceMapping
from cloudcore.core.context import RequestContext
from servers.models import BuildRequest, Instance
from servers.selectors import MarkerNotFound, ServerNotFound, server_get, server_list
from tests.conftest import ALL_DATABASES
from tests.factories import InstanceFactory

pytestmark = pytest.mark.django_db(databases=ALL_DATABASES)

OWNER = RequestContext(user_id="user-a", project_id="project-a", roles=["member"])
OTHER = RequestContext(user_id="user-b", project_id="project-b", roles=["member"])
ADMIN = RequestContext(user_id="admin", project_id="admin", roles=["admin"], is_admin=True)


def _server(cells, cell, minutes_ago, **kw):
    created = timezone.now() - dt.timedelta(minutes=minutes_ago)
    inst = InstanceFactory(cell=cells[cell], created_at=created, **kw)
    InstanceMapping.objects.create(instance_uuid=inst.uuid, cell=cells[cell], project_id=inst.project_id)
    return inst


def test_list_merges_cells_newest_first_with_build_requests_first(cells):
    # given servers in two cells and one not yet scheduled
    old = _server(cells, "cell1", 30)
    mid = _server(cells, "cell2", 20)
    new = _server(cells, "cell1", 10)
    br = BuildRequest.objects.create(instance_uuid="b" * 8 + "-0000-0000-0000-000000000000",
                                     project_id="project-a", instance={"display_name": "building"})
    InstanceMapping.objects.create(instance_uuid=br.instance_uuid, cell=None, project_id="project-a")
    # when the owner lists
    result = server_list(OWNER, filters={}, limit=None, marker=None)
    # then build requests come first, then instances newest first
    assert [r.uuid for r in result.records] == [br.instance_uuid, new.uuid, mid.uuid, old.uuid]


def test_a_build_request_whose_server_is_already_in_its_cell_is_listed_once_as_the_cell_row(cells):
    # given a server the conductor has created in cell1 whose build request is not deleted yet
    # (the window between the two writes, two databases), and another server still building
    placed = _server(cells, "cell1", 10, project_id="project-a", display_name="placed")
    BuildRequest.objects.create(instance_uuid=placed.uuid, project_id="project-a",
                                instance={"display_name": "placed"})
    building = BuildRequest.objects.create(instance_uuid="c" * 8 + "-0000-0000-0000-000000000000",
                                           project_id="project-a", instance={"display_name": "building"})
    # when the owner lists
    records = server_list(OWNER, filters={}, limit=None, marker=None).records
    # then each server is there once: the one still building first, the placed one as its cell's row
    assert [r.uuid for r in records] == [building.instance_uuid, placed.uuid]
    assert records[1].instance is not None and records[1].build_request is None


def test_marker_paging_across_cells(cells):
    servers = [_server(cells, "cell1" if i % 2 else "cell2", 50 - i) for i in range(5)]
    expected = [s.uuid for s in reversed(servers)]
    page1 = server_list(OWNER, filters={}, limit=2, marker=None)
    page2 = server_list(OWNER, filters={}, limit=2, marker=page1.records[-1].uuid)
    page3 = server_list(OWNER, filters={}, limit=2, marker=page2.records[-1].uuid)
    got = [r.uuid for r in page1.records + page2.records + page3.records]
    assert got == expected
    with pytest.raises(MarkerNotFound):
        server_list(OWNER, filters={}, limit=2, marker="00000000-0000-0000-0000-00000000dead")


def test_other_projects_see_nothing_and_get_404(cells):
    inst = _server(cells, "cell1", 5)
    assert server_list(OTHER, filters={}, limit=None, marker=None).records == []
    with pytest.raises(ServerNotFound):
        server_get(OTHER, inst.uuid)
    assert server_get(ADMIN, inst.uuid).instance.uuid == inst.uuid
    assert len(server_list(ADMIN, filters={"all_tenants": True}, limit=None, marker=None).records) == 1


def test_hidden_copy_and_duplicate_uuid_listed_once(cells):
    # given the same server in both cells (a cross-cell move): target visible, source hidden
    inst = _server(cells, "cell2", 5)
    InstanceFactory(cell=cells["cell1"], uuid=inst.uuid, hidden=True)
    result = server_list(OWNER, filters={}, limit=None, marker=None)
    assert [r.uuid for r in result.records] == [inst.uuid]
    assert result.records[0].cell.name == "cell2"


def test_status_and_name_filters(cells):
    a = _server(cells, "cell1", 5, display_name="web-1", vm_state="active")
    _server(cells, "cell2", 6, display_name="db-1", vm_state="stopped")
    p = _server(cells, "cell0", 7, display_name="web-2", vm_state="pending")
    by_name = server_list(OWNER, filters={"name": "^web"}, limit=None, marker=None)
    assert {r.uuid for r in by_name.records} == {a.uuid, p.uuid}
    errors_old = server_list(OWNER, filters={"status": ["ERROR"]}, limit=None, marker=None, version=(2, 104))
    assert [r.uuid for r in errors_old.records] == [p.uuid]
    pending_new = server_list(OWNER, filters={"status": ["PENDING"]}, limit=None, marker=None, version=(2, 105))
    assert [r.uuid for r in pending_new.records] == [p.uuid]


def test_down_cell_servers_are_reported_not_fatal(cells, settings):
    # given a server in cell2 and cell2's database unreachable
    ok = _server(cells, "cell1", 5)
    lost = _server(cells, "cell2", 6)
    from cells import scatter

    real = scatter.scatter_gather

    def broken(fn, cell_list=None, **kw):
        results = real(fn, cell_list, **kw)
        results[cells["cell2"].uuid] = scatter.CellFailure(cells["cell2"].uuid, "timeout")
        return results

    import servers.selectors as selectors

    selectors.scatter_gather, saved = broken, selectors.scatter_gather
    try:
        result = server_list(OWNER, filters={}, limit=None, marker=None)
    finally:
        selectors.scatter_gather = saved
    # then the healthy cell's server is listed normally and the other as a down-cell stub
    assert result.down_cells == [cells["cell2"].uuid]
    by_uuid = {r.uuid: r for r in result.records}
    assert by_uuid[ok.uuid].instance is not None
    assert by_uuid[lost.uuid].down_cell is True


def test_a_page_makes_instances_of_the_rows_the_merge_keeps_only(cells, monkeypatch):
    # given six servers, three in each cell, their times interleaved
    servers = [_server(cells, "cell1" if i % 2 else "cell2", 60 - i) for i in range(6)]
    made = []
    from_db = Instance.__dict__["from_db"].__func__

    def counted(cls, db, field_names, values):
        made.append(values)
        return from_db(cls, db, field_names, values)

    monkeypatch.setattr(Instance, "from_db", classmethod(counted))
    # when a page of three is listed (each cell reads up to three rows: six read)
    records = server_list(OWNER, filters={}, limit=3, marker=None, columns=("display_name", "created_at")).records
    # then the newest three come, in order, and only those three rows were made instances, their
    # times as the ORM reads them (aware) and the columns not asked deferred
    newest = list(reversed(servers))[:3]
    assert [r.uuid for r in records] == [s.uuid for s in newest]
    assert len(made) == 3
    for record, server in zip(records, newest, strict=True):
        assert record.instance is not None and record.cell is not None
        assert record.instance.created_at == server.created_at and record.instance.created_at.tzinfo is not None
        assert record.instance.display_name == server.display_name
        assert "host" not in record.instance.__dict__


def test_the_shown_keys_of_request_specs_are_read_from_their_columns(cells):
    from scheduling.services.request_specs import request_specs_create
    from servers.selectors import request_spec_keys_of

    # given servers with request specs (one with a hint beyond 64 bits, which orjson reads as a float,
    # and no zone key), one whose spec has none of the keys shown, one without, and a spec of a server with no mapping
    # (read as Nova's list reads specs: by instance uuid)
    with_hints = _server(cells, "cell1", 3)
    big = _server(cells, "cell2", 2)
    without = _server(cells, "cell1", 1)
    bare = _server(cells, "cell2", 4)
    specs = {with_hints.uuid: {"availability_zone": "az1", "scheduler_hints": {"group": ["g"], "n": 1.5},
                               "instance_group": {"uuid": "g", "hosts": ["h"]}, "flavor": {"name": "m1.tiny"}},
             big.uuid: {"scheduler_hints": {"n": 2 ** 70 + 1, "d": {"é": [None, {}]}}, "image": {"id": "i"}},
             bare.uuid: {"availability_zone": None, "flavor": {"name": "m1.tiny"}},
             "unmapped-0000-0000-0000-000000000000": {"availability_zone": "az2"}}
    request_specs_create(specs)
    uuids = [with_hints.uuid, big.uuid, without.uuid, bare.uuid, "unmapped-0000-0000-0000-000000000000"]
    # when a page's specs are read
    found = request_spec_keys_of(uuids)
    # then each server with a spec has the keys a body shows, their values as stored (the group as
    # its uuid, None where the spec has none), and no other
    assert found == {
        bare.uuid: {"availability_zone": None, "scheduler_hints": None, "instance_group": None},
        with_hints.uuid: {"availability_zone": "az1", "scheduler_hints": {"group": ["g"], "n": 1.5},
                          "instance_group": {"uuid": "g"}},
        big.uuid: {"availability_zone": None, "scheduler_hints": {"n": 2 ** 70 + 1, "d": {"é": [None, {}]}},
                   "instance_group": None},
        "unmapped-0000-0000-0000-000000000000": {"availability_zone": "az2", "scheduler_hints": None,
                                                 "instance_group": None},
    }
    assert found[big.uuid]["scheduler_hints"]["n"] == 2 ** 70 + 1
    # and a show's record carries its server's spec, read with its mapping (None without one)
    assert server_get(OWNER, with_hints.uuid, with_spec=True).spec == specs[with_hints.uuid]
    record = server_get(OWNER, without.uuid, with_spec=True)
    assert record.spec_read and record.spec is None
    assert not server_get(OWNER, with_hints.uuid).spec_read
