"""Sorted pages of servers over two cells, paged by marker, against the straightforward answer: every
server that matches, of every cell, sorted on (sort key, uuid), cut into pages. ``server_list`` reads
each cell's rows up to the page's size and merges them, the rows made instances only once the merge
keeps them: ties of the sort key across cells, a nullable key, deleted servers, other projects and a
build request must all come out as the straightforward list has them, whatever the list reads."""
from __future__ import annotations

import datetime as dt
import itertools
import uuid as uuidlib
from typing import Any
from urllib.parse import urlencode

import pytest
from django.db import connection, connections

from cells.context import target_cell
from cells.models import InstanceMapping
from cloudcore.core.context import RequestContext
from cloudcore.core.keyset import after_row, sort_order
from identity.models import Project
from servers.models import BuildRequest, Instance
from servers.selectors import server_list
from tests.apihelpers import admin_client, member_client
from tests.conftest import ALL_DATABASES
from tests.factories import InstanceFactory

pytestmark = pytest.mark.django_db(databases=ALL_DATABASES)

OWNER = RequestContext(user_id="user-a", project_id="project-a", roles=["member"])
ADMIN = RequestContext(user_id="admin", project_id="admin", roles=["admin"], is_admin=True)
BASE = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
#: sort keys with ties across the cells (names, states, times repeated), a nullable one (host) and a unique one
SORT_KEYS = ("created_at", "display_name", "vm_state", "host", "launched_at", "uuid")
NULLABLE = ("host", "launched_at")


def _servers(cells: dict[str, Any]) -> list[Instance]:
    """Eighteen servers of two projects alternating between cell1 and cell2, three deleted; their
    creation times, names, states, hosts and launch times repeat across the cells."""
    made = []
    for i in range(18):
        cell = cells["cell1" if i % 2 else "cell2"]
        instance = InstanceFactory(
            cell=cell, project_id="project-b" if i % 5 == 4 else "project-a",
            created_at=BASE + dt.timedelta(minutes=i // 3), updated_at=BASE + dt.timedelta(hours=i),
            display_name=f"web-{i % 4}", vm_state=("active", "stopped", "error")[i % 3],
            host=None if i % 4 == 0 else f"host-{i % 3}",
            launched_at=None if i % 6 == 0 else BASE + dt.timedelta(minutes=i % 2),
            deleted=i in (3, 8, 13),
        )
        InstanceMapping.objects.create(instance_uuid=instance.uuid, cell=cell, project_id=instance.project_id)
        made.append(instance)
    return made


def _straightforward(servers: list[Instance], sort: list[tuple[str, str]], keep: Any) -> list[str]:
    """The uuids of ``servers`` that ``keep`` holds, sorted on each (key, direction) of ``sort`` in
    turn then on uuid ascending whatever the directions (Nova's cross-cell merge, InstanceSortContext),
    a missing key first when ascending (as the list has always merged)."""
    tie_breaker = [] if any(k == "uuid" for k, _d in sort) else [("uuid", "asc")]
    return [s.uuid for s in _sorted([s for s in servers if keep(s)], [*sort, *tie_breaker], getattr)]


def _sorted(items: list[Any], sort: list[tuple[str, str]], value: Any) -> list[Any]:
    """``items`` sorted on each (key, direction) of ``sort`` in turn, ``value(item, key)`` a key's
    value, None first ascending: a stable sort per key, the last key first."""
    ordered = list(items)
    for sort_key, sort_dir in reversed(sort):
        ordered.sort(key=lambda item, k=sort_key: (0, "") if value(item, k) is None else (1, value(item, k)),
                     reverse=sort_dir == "desc")
    return ordered


def _pages(actor: RequestContext, filters: dict[str, Any], limit: int, **sort: list[str]) -> list[str]:
    """Every page of ``limit`` servers, the next one asked from the last one of the page before."""
    listed: list[str] = []
    marker = None
    while True:
        result = server_list(actor, filters=filters, limit=limit, marker=marker,
                             columns=("display_name", "host"), **sort)
        # every cell answered the page after the marker (none failed on its sort key's value)
        assert result.down_cells == []
        records = result.records
        for record in records:
            if record.build_request is not None:
                assert record.instance is None and record.build_request.instance_uuid == record.uuid
            else:
                assert record.instance is not None and record.instance.uuid == record.uuid
        listed += [r.uuid for r in records]
        if len(records) < limit:
            return listed
        marker = records[-1].uuid


@pytest.mark.parametrize("sort_key", SORT_KEYS)
@pytest.mark.parametrize("sort_dir", ["asc", "desc"])
def test_sorted_pages_over_two_cells_are_the_straightforward_list_cut_in_pages(cells, sort_key, sort_dir):
    # given eighteen servers in two cells whose sort keys tie across the cells
    servers = _servers(cells)
    since = BASE + dt.timedelta(hours=9)
    for actor, filters, keep in (
        (OWNER, {}, lambda s: s.project_id == "project-a" and not s.deleted),
        (ADMIN, {"all_tenants": True}, lambda s: not s.deleted),
        (ADMIN, {"all_tenants": True, "project_id": "project-b"}, lambda s: s.project_id == "project-b"
         and not s.deleted),
        (ADMIN, {"all_tenants": True, "deleted": True}, lambda s: s.deleted),
        # changes-since alone lists the servers deleted since then too
        (OWNER, {"changes-since": since}, lambda s: s.project_id == "project-a" and s.updated_at >= since),
    ):
        _assert_pages_are_the_straightforward_list(servers, actor, filters, keep, [(sort_key, sort_dir)])


#: sorts on two and three keys in mixed directions, with nullable keys first, between or last
SEVERAL_KEYS = (
    [("display_name", "asc"), ("host", "desc")],
    [("host", "asc"), ("display_name", "desc")],
    [("vm_state", "desc"), ("launched_at", "asc"), ("display_name", "desc")],
    [("launched_at", "desc"), ("host", "asc"), ("created_at", "desc")],
    [("display_name", "desc"), ("vm_state", "asc"), ("host", "asc")],
    [("created_at", "asc"), ("uuid", "desc")],
)


@pytest.mark.parametrize("sort", SEVERAL_KEYS, ids=lambda sort: ",".join(f"{k}:{d}" for k, d in sort))
def test_pages_sorted_on_several_keys_are_the_straightforward_list_cut_in_pages(cells, sort):
    # given eighteen servers in two cells whose sort keys tie across the cells
    servers = _servers(cells)
    since = BASE + dt.timedelta(hours=9)
    for actor, filters, keep in (
        (OWNER, {}, lambda s: s.project_id == "project-a" and not s.deleted),
        (ADMIN, {"all_tenants": True}, lambda s: not s.deleted),
        (ADMIN, {"all_tenants": True, "deleted": True}, lambda s: s.deleted),
        (OWNER, {"changes-since": since}, lambda s: s.project_id == "project-a" and s.updated_at >= since),
    ):
        # then every key counts, in its direction, in each cell, in the merge and after a marker
        _assert_pages_are_the_straightforward_list(servers, actor, filters, keep, sort)


def _assert_pages_are_the_straightforward_list(
    servers: list[Instance], actor: RequestContext, filters: dict[str, Any], keep: Any, sort: list[tuple[str, str]]
) -> None:
    expected = _straightforward(servers, sort, keep)
    sort_keys, sort_dirs = [k for k, _d in sort], [d for _k, d in sort]
    for limit in (1, 2, 5, 1000):
        # when the first page of that size is listed
        first = server_list(actor, filters=filters, limit=limit, marker=None, sort_keys=sort_keys,
                            sort_dirs=sort_dirs).records
        # then it is the straightforward list's first servers
        assert [r.uuid for r in first] == expected[:limit], (filters, limit)
        # when the pages of that size are listed one after the other
        listed = _pages(actor, filters, limit, sort_keys=sort_keys, sort_dirs=sort_dirs)
        # then they are the straightforward list, cut in pages
        assert listed == expected, (filters, limit)


def test_a_page_after_a_build_request_continues_in_the_cells(cells):
    # given a build request and servers in both cells
    servers = _servers(cells)
    br = BuildRequest.objects.create(instance_uuid="b" * 8 + "-0000-0000-0000-000000000000",
                                     project_id="project-a", instance={"display_name": "building"})
    InstanceMapping.objects.create(instance_uuid=br.instance_uuid, cell=None, project_id="project-a")
    # when the owner lists a page of three, newest first, then the rest after it
    records = server_list(OWNER, filters={}, limit=3, marker=None).records
    rest = server_list(OWNER, filters={}, limit=1000, marker=records[-1].uuid).records
    # then the build request comes first, then the cells' servers as the straightforward list has them
    expected = _straightforward(servers, [("created_at", "desc")],
                                lambda s: s.project_id == "project-a" and not s.deleted)
    assert [r.uuid for r in records + rest] == [br.instance_uuid, *expected]
    assert records[0].build_request is not None


def _one_sided(cells: dict[str, Any]) -> tuple[list[Instance], list[Instance]]:
    """Six servers in cell1 newer than six in cell2: a page of the newest comes from cell1 alone."""
    newer = [_server_at(cells, "cell1", 100 + i) for i in range(6)]
    older = [_server_at(cells, "cell2", i) for i in range(6)]
    return newer, older


def _server_at(cells: dict[str, Any], cell: str, minute: int) -> Instance:
    instance = InstanceFactory(cell=cells[cell], created_at=BASE + dt.timedelta(minutes=minute),
                               display_name=f"{cell}-{minute}", host=f"host-{minute}")
    InstanceMapping.objects.create(instance_uuid=instance.uuid, cell=cells[cell], project_id=instance.project_id)
    return instance


def test_a_page_from_one_cell_alone_is_its_whole_rows(cells):
    # given six servers in cell1 newer than the six of cell2
    newer, older = _one_sided(cells)
    # when the owner lists pages of six
    page = server_list(OWNER, filters={}, limit=6, marker=None, columns=("display_name", "host")).records
    rest = server_list(OWNER, filters={}, limit=6, marker=page[-1].uuid, columns=("display_name", "host")).records
    # then the first page is cell1's six, the next cell2's, each a whole row of its cell
    assert [r.uuid for r in page] == [s.uuid for s in reversed(newer)]
    assert [r.uuid for r in rest] == [s.uuid for s in reversed(older)]
    for record, server in zip(page + rest, [*reversed(newer), *reversed(older)], strict=True):
        assert record.instance is not None and record.cell is not None
        assert (record.instance.display_name, record.instance.host) == (server.display_name, server.host)
        assert record.instance.created_at == server.created_at
        assert record.cell.name == server.display_name.split("-")[0]


def _api_pages(client: Any, path: str, query: Any) -> list[str]:
    """The ids of every page of ``GET path?query``, each next page asked by the next link of the page
    before (whose marker is the last server of that page)."""
    listed: list[str] = []
    url = f"/compute/v2.1/{path}?{urlencode(query)}"
    while True:
        response = client.get(url)
        assert response.status_code == 200, (url, response.content)
        body = response.json()
        listed += [server["id"] for server in body["servers"]]
        if "servers_links" not in body:
            return listed
        url = body["servers_links"][0]["href"]


def _member_of_project_a() -> Any:
    """An API client of a member of the project whose id is project-a."""
    Project.objects.create(id="project-a", name="project-a", domain_id="default")
    return member_client("user-a", project="project-a")


@pytest.mark.parametrize("path", ["servers", "servers/detail"])
@pytest.mark.parametrize("sort_dir", ["asc", "desc"])
def test_api_pages_go_past_deleted_servers_and_null_sort_keys(cells, path, sort_dir):
    # given eighteen servers in two cells, three deleted, hosts and launch times null on some
    servers = _servers(cells)
    admin = admin_client()
    since = BASE + dt.timedelta(hours=9)
    for query, keep in (
        ({"deleted": "True"}, lambda s: s.deleted),
        ({"changes-since": since.isoformat()}, lambda s: s.updated_at >= since),
        ({}, lambda s: not s.deleted),
    ):
        for sort_key in NULLABLE:
            # when an admin lists every project's servers in pages of two, sorted on a nullable key
            query = {**query, "all_tenants": "1", "sort_key": sort_key, "sort_dir": sort_dir, "limit": 2}
            listed = _api_pages(admin, path, query)
            # then the pages, paged by markers deleted or whose key is null, are the straightforward list
            assert listed == _straightforward(servers, [(sort_key, sort_dir)], keep), query


@pytest.mark.parametrize("path", ["servers", "servers/detail"])
@pytest.mark.parametrize("sort", SEVERAL_KEYS[:3], ids=lambda sort: ",".join(f"{k}:{d}" for k, d in sort))
def test_api_pages_sorted_on_several_keys_keep_them_in_their_next_links(cells, path, sort):
    # given eighteen servers in two cells
    servers = _servers(cells)
    # when an admin lists every project's servers in pages of two, a sort_key and a sort_dir per key
    # (as novaclient's --sort key1:dir1,key2:dir2 sends them)
    query = [("all_tenants", "1"), ("limit", "2"), *[("sort_key", k) for k, _d in sort],
             *[("sort_dir", d) for _k, d in sort]]
    listed = _api_pages(admin_client(), path, query)
    # then the pages, each asked by the next link of the one before, are the list sorted on every key
    assert listed == _straightforward(servers, sort, lambda s: not s.deleted)


@pytest.mark.parametrize(("query", "sort"), [
    # no direction: every key descending (get_sort_params' default)
    ("sort_key=display_name&sort_key=host", [("display_name", "desc"), ("host", "desc")]),
    # fewer directions than keys: the missing ones are the first (process_sort_params' padding)
    ("sort_key=display_name&sort_key=host&sort_dir=asc", [("display_name", "asc"), ("host", "asc")]),
    ("sort_key=vm_state&sort_key=launched_at&sort_key=display_name&sort_dir=desc&sort_dir=asc",
     [("vm_state", "desc"), ("launched_at", "asc"), ("display_name", "desc")]),
    # no key: created_at, in the direction given
    ("sort_dir=asc", [("created_at", "asc")]),
], ids=["no-dir", "one-dir-two-keys", "two-dirs-three-keys", "no-key"])
def test_api_missing_sort_directions_are_padded_as_nova_pads_them(cells, query, sort):
    # given eighteen servers in two cells
    servers = _servers(cells)
    # when an admin lists every project's servers with fewer directions than keys
    response = admin_client().get(f"/compute/v2.1/servers?all_tenants=1&{query}")
    # then each key without a direction is sorted in the padded one
    assert response.status_code == 200, response.content
    assert [s["id"] for s in response.json()["servers"]] == _straightforward(servers, sort, lambda s: not s.deleted)


def test_api_a_members_ignored_sort_key_takes_its_direction_with_it(cells):
    # given servers of project-a
    servers = _servers(cells)
    client = _member_of_project_a()
    # when a member sorts on host (an admin's key, ignored for members) then display_name, each
    # with its direction
    response = client.get("/compute/v2.1/servers?sort_key=host&sort_key=display_name&sort_dir=asc&sort_dir=desc")
    # then the list is sorted on display_name alone, in display_name's direction (as Nova drops a
    # removed key's direction with it)
    assert response.status_code == 200, response.content
    mine = _straightforward(servers, [("display_name", "desc")],
                            lambda s: s.project_id == "project-a" and not s.deleted)
    assert [s["id"] for s in response.json()["servers"]] == mine


@pytest.mark.parametrize("path", ["servers", "servers/detail"])
@pytest.mark.parametrize("query", [
    "sort_key=display_name&sort_dir=asc&sort_dir=desc",
    "sort_key=display_name&sort_key=host&sort_dir=asc&sort_dir=desc&sort_dir=asc",
    # no key is created_at, one key
    "sort_dir=asc&sort_dir=desc",
])
def test_api_more_sort_directions_than_keys_is_400_with_the_fault_body(cells, path, query):
    # given servers in two cells
    _servers(cells)
    # when an admin gives more directions than keys
    response = admin_client().get(f"/compute/v2.1/{path}?all_tenants=1&{query}")
    # then it is Nova's 400 (process_sort_params' InvalidInput)
    assert response.status_code == 400, response.content
    assert response.json() == {"badRequest": {
        "code": 400, "message": "Invalid input received: Sort direction size exceeds sort key size"}}


@pytest.mark.parametrize(("query", "message"), [
    ("sort_key=display_name&sort_key=bogus", "Invalid sort_key 'bogus'"),
    ("sort_key=display_name&sort_key=host&sort_dir=asc&sort_dir=up", "Invalid sort_dir 'up'"),
])
def test_api_every_sort_key_and_direction_is_validated(cells, query, message):
    # given servers in two cells
    _servers(cells)
    # when an admin gives a valid first key and direction, then an invalid one
    response = admin_client().get(f"/compute/v2.1/servers?all_tenants=1&{query}")
    # then the invalid one is refused as it is refused alone
    assert response.status_code == 400, response.content
    assert response.json() == {"badRequest": {"code": 400, "message": message}}


def test_api_a_deleted_server_is_a_marker_of_the_live_servers_too(cells):
    # given servers of project-a, one of them deleted
    servers = _servers(cells)
    client = _member_of_project_a()
    deleted = next(s for s in servers if s.deleted and s.project_id == "project-a")
    # when the member lists the servers after the deleted one, newest first (as Nova reads a marker
    # with read_deleted='yes')
    response = client.get(f"/compute/v2.1/servers?marker={deleted.uuid}")
    # then they are the live servers that come after it
    assert response.status_code == 200, response.content
    mine = _straightforward(servers, [("created_at", "desc")], lambda s: s.project_id == "project-a")
    live = {s.uuid for s in servers if not s.deleted}
    after = [u for u in mine[mine.index(deleted.uuid) + 1:] if u in live]
    assert [s["id"] for s in response.json()["servers"]] == after


def test_api_a_marker_that_is_no_server_is_400_with_the_fault_body(cells):
    # given servers of two projects
    servers = _servers(cells)
    client = _member_of_project_a()
    others = next(s for s in servers if s.project_id == "project-b")
    for marker in (str(uuidlib.uuid4()), others.uuid, "not-a-uuid"):
        # when a member pages from a server that does not exist, or that is another project's
        response = client.get(f"/compute/v2.1/servers/detail?marker={marker}")
        # then it is Nova's 400
        assert response.status_code == 400, (marker, response.content)
        assert response.json() == {"badRequest": {"code": 400, "message": f"marker [{marker}] not found"}}


@pytest.mark.parametrize("dirs", list(itertools.product([False, True], repeat=3)))
def test_the_rows_after_a_marker_of_nullable_keys_are_those_the_merge_puts_after_it(cells, dirs):
    # given servers of each pair of a null or set host and a null or set launch time, twice each
    hosts, launches = (None, "host-1", "host-2"), (None, BASE, BASE + dt.timedelta(minutes=1))
    servers = [InstanceFactory(cell=cells["cell1"], host=host, launched_at=launched)
               for host, launched in itertools.product(hosts, launches) for _ in range(2)]
    keys = list(zip(("host", "launched_at", "uuid"), dirs, strict=True))
    # sorted as the merge sorts them: null before every value, key after key (a stable sort per key)
    ordered = list(servers)
    for column, desc in reversed(keys):
        ordered.sort(key=lambda s, c=column: (0, "") if getattr(s, c) is None else (1, getattr(s, c)), reverse=desc)
    with target_cell(cells["cell1"]):
        # when the cell is asked for the rows sorted on the keys
        rows = Instance.all_objects.order_by(*sort_order(Instance, keys))
        # then they are in the merge's order
        assert [r.uuid for r in rows] == [s.uuid for s in ordered]
        for i, marker in enumerate(ordered):
            # when it is asked for the rows after each server in turn
            values = [getattr(marker, column) for column, _desc in keys]
            after = rows.filter(after_row(Instance, keys, values))
            # then they are those after it in the merge's order
            assert [r.uuid for r in after] == [s.uuid for s in ordered[i + 1:]], (keys, values)


def _build_requests() -> list[BuildRequest]:
    """Five build requests, four of project-a, created in the inverse order of their uuids (the uuid
    and the build request's id do not break ties alike); their names and creation times tie, their
    vm_state (building), host and launch time are those of every build request."""
    made = []
    for i, (name, minute) in enumerate([("web-1", 30), ("web-0", 20), ("web-1", 20), ("web-0", 30), ("web-1", 20)]):
        br = BuildRequest.objects.create(
            instance_uuid=f"{'fedcb'[i] * 8}-0000-4000-8000-000000000000",
            project_id="project-b" if i == 3 else "project-a", instance={"display_name": name},
            created_at=BASE + dt.timedelta(minutes=minute))
        InstanceMapping.objects.create(instance_uuid=br.instance_uuid, cell=None, project_id=br.project_id)
        made.append(br)
    return made


def _build_request_value(br: BuildRequest, key: str) -> Any:
    """A build request's value of a sort key: that of its instance, as the API shows it."""
    shown = {"created_at": br.created_at, "id": br.pk, "uuid": br.instance_uuid, "vm_state": "building"}
    return shown[key] if key in shown else br.instance.get(key)


def _straightforward_builds(brs: list[BuildRequest], sort: list[tuple[str, str]], keep: Any) -> list[str]:
    """The uuids of ``brs`` that ``keep`` holds, sorted on ``sort`` then on created_at and the build
    request's id in the first direction unless among the keys (Nova's BuildRequestList.get_by_filters,
    with process_sort_params' default keys)."""
    defaults = [(k, sort[0][1]) for k in ("created_at", "id") if all(k != key for key, _d in sort)]
    return [br.instance_uuid for br in _sorted([br for br in brs if keep(br)], [*sort, *defaults],
                                                _build_request_value)]


#: sorts on which the build requests tie on some keys (vm_state, host, launched_at: the same for all)
BUILD_REQUEST_SORTS = (
    [("created_at", "desc")],
    [("created_at", "asc")],
    [("display_name", "asc"), ("host", "desc")],
    [("display_name", "desc"), ("created_at", "asc")],
    [("vm_state", "desc"), ("launched_at", "asc"), ("display_name", "desc")],
    [("host", "asc"), ("uuid", "desc")],
)


@pytest.mark.parametrize("sort", BUILD_REQUEST_SORTS, ids=lambda sort: ",".join(f"{k}:{d}" for k, d in sort))
def test_build_requests_come_first_sorted_on_every_key_and_pages_cross_into_the_cells(cells, sort):
    # given eighteen servers in two cells and five build requests whose keys tie on some sort keys
    servers = _servers(cells)
    brs = _build_requests()
    sort_keys, sort_dirs = [k for k, _d in sort], [d for _k, d in sort]
    for actor, filters, project in ((OWNER, {}, "project-a"), (ADMIN, {"all_tenants": True}, None)):
        expected = [
            *_straightforward_builds(brs, sort, lambda br, p=project: p in (None, br.project_id)),
            *_straightforward(servers, sort, lambda s, p=project: p in (None, s.project_id) and not s.deleted),
        ]
        for limit in (1, 2, 3, 5, 1000):
            # when the pages of that size are listed, each after the last server of the one before
            # (a build request, the last build request, or a server in a cell)
            listed = _pages(actor, filters, limit, sort_keys=sort_keys, sort_dirs=sort_dirs)
            # then the build requests come first, sorted on every key as Nova sorts them, then the
            # cells' servers: the straightforward list cut in pages
            assert listed == expected, (filters, limit)


@pytest.mark.parametrize("path", ["servers", "servers/detail"])
def test_api_pages_of_build_requests_sorted_on_several_keys(cells, path):
    # given servers in two cells and build requests that tie on their names
    servers = _servers(cells)
    brs = _build_requests()
    sort = [("display_name", "asc"), ("created_at", "desc")]
    # when an admin lists every project's servers in pages of two, sorted on name then creation time
    query = [("all_tenants", "1"), ("limit", "2"), *[("sort_key", k) for k, _d in sort],
             *[("sort_dir", d) for _k, d in sort]]
    listed = _api_pages(admin_client(), path, query)
    # then the build requests come first in that order, then the cells' servers
    assert listed == [*_straightforward_builds(brs, sort, lambda br: True),
                      *_straightforward(servers, sort, lambda s: not s.deleted)]


@pytest.mark.parametrize("sort_dir", ["asc", "desc"])
def test_servers_that_tie_on_every_key_are_in_uuid_order_ascending(cells, sort_dir):
    # given twelve servers, six in each cell, equal on every sort key but uuid
    servers = []
    for i in range(12):
        cell = cells["cell1" if i % 2 else "cell2"]
        instance = InstanceFactory(cell=cell, project_id="project-a", created_at=BASE, display_name="same",
                                   vm_state="active", host="host-1", launched_at=BASE)
        InstanceMapping.objects.create(instance_uuid=instance.uuid, cell=cell, project_id=instance.project_id)
        servers.append(instance)
    ascending = sorted(s.uuid for s in servers)
    for sort_keys in (["created_at"], ["display_name", "vm_state", "host", "launched_at", "created_at"]):
        for limit in (1, 2, 5, 1000):
            # when they are listed in pages sorted on those keys, in one direction
            listed = _pages(OWNER, {}, limit, sort_keys=sort_keys, sort_dirs=[sort_dir] * len(sort_keys))
            # then ties are broken by uuid ascending whatever the direction (Nova's InstanceSortContext),
            # in each cell, across the cells and after every marker
            assert listed == ascending, (sort_keys, limit)
    # and so by the API's default order, newest first
    response = _member_of_project_a().get("/compute/v2.1/servers/detail?limit=5")
    assert response.status_code == 200, response.content
    assert [s["id"] for s in response.json()["servers"]] == ascending[:5]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's NULLs order in an index")
@pytest.mark.parametrize("desc", [False, True], ids=["asc", "desc"])
def test_postgresql_reads_a_list_sorted_on_host_in_its_order_from_an_index(cells, desc):
    # given servers in a cell, some with no host
    servers = _servers(cells)
    in_cell1 = {s.uuid for i, s in enumerate(servers) if i % 2}  # (_servers puts the odd ones there)
    keys = [("host", desc), ("uuid", False)]
    with target_cell(cells["cell1"]):
        rows = Instance.all_objects.filter(deleted=False).order_by(*sort_order(Instance, keys))[:5]
        with connections[rows.db].cursor() as cursor:
            # (the planner would scan and sort so small a table: the plan it makes when it must not)
            cursor.execute("SET LOCAL enable_seqscan = off")
            cursor.execute("SET LOCAL enable_sort = off")
        # when a page is asked sorted on host, NULLs first ascending (last descending) as the merge has them
        plan = rows.explain()
        # then the host index gives that order (only the uuid ties are sorted) where a plain index
        # has the NULLs last ascending and every row was sorted
        assert "Presorted Key: host" in plan, plan
        assert [r.uuid for r in rows] == _straightforward(
            servers, [("host", "desc" if desc else "asc")], lambda s: s.uuid in in_cell1 and not s.deleted)[:5]


#: names whose code point order is not a linguistic collation's (case, punctuation, accents)
NAMES = ("b", "B", "a", "A", "_z", "Zed", "e", "\u00e9", "resized", "resize_prep", "web-1", "web1")


@pytest.mark.parametrize("sort_key", ["display_name", "task_state"])
@pytest.mark.parametrize("sort_dir", ["asc", "desc"])
def test_text_sort_keys_page_in_code_point_order_over_two_cells(cells, sort_key, sort_dir):
    # given servers in two cells whose names (and task states) differ by case, punctuation and accents
    servers = []
    for i, name in enumerate(NAMES):
        cell = cells["cell1" if i % 2 else "cell2"]
        instance = InstanceFactory(cell=cell, project_id="project-a", display_name=name, task_state=name,
                                   created_at=BASE + dt.timedelta(minutes=i))
        InstanceMapping.objects.create(instance_uuid=instance.uuid, cell=cell, project_id="project-a")
        servers.append(instance)
    # when they are listed in pages of three, sorted on the key
    listed = _pages(OWNER, {}, 3, sort_keys=[sort_key], sort_dirs=[sort_dir])
    # then every page continues where the one before ended, in the order Python compares the strings
    assert listed == _straightforward(servers, [(sort_key, sort_dir)], lambda s: True)


@pytest.mark.skipif(connection.vendor != "postgresql", reason="SQLite's default collation is the code point order")
def test_postgresql_orders_the_text_sort_keys_by_code_point_whatever_the_databases_collation(cells):
    from cloudcore.core.models import CodePointCharField

    text_keys = sorted(f.column for f in Instance._meta.concrete_fields if isinstance(f, CodePointCharField))
    assert {"display_name", "host", "task_state", "vm_state"} <= set(text_keys)
    for cell in ("cell1", "cell2"):
        with target_cell(cells[cell]), connections[Instance.objects.all().db].cursor() as cursor:
            # the columns have the "C" collation of their own (a linguistic database default orders
            # these names otherwise: shown with ICU's English collation)
            cursor.execute("SELECT column_name, collation_name FROM information_schema.columns "
                           "WHERE table_name = %s AND column_name = ANY(%s)", [Instance._meta.db_table, text_keys])
            assert dict(cursor.fetchall()) == dict.fromkeys(text_keys, "C")
            cursor.execute("SELECT x FROM unnest(%s::text[]) AS x ORDER BY x COLLATE \"en-x-icu\"", [list(NAMES)])
            assert [row[0] for row in cursor.fetchall()] != sorted(NAMES)
