"""SQL statements per list page do not grow with the number of servers (bulk extras per page)."""
from __future__ import annotations

import contextlib
import re
from collections import Counter

import pytest
from django.db import connections
from django.test import override_settings

ALL = ["default", "cell0", "cell1", "cell2"]
pytestmark = pytest.mark.django_db(databases=ALL)


@contextlib.contextmanager
def _count():
    counts = {"n": 0, "sql": []}

    def wrapper(execute, sql, params, many, context):
        counts["n"] += 1
        counts["sql"].append(sql)
        return execute(sql, params, many, context)

    with contextlib.ExitStack() as stack:
        for alias in ALL:
            stack.enter_context(connections[alias].execute_wrapper(wrapper))
        yield counts


def test_detail_page_statements_are_constant(cloud):
    client = cloud.member()
    admin = cloud.admin()
    sizes = {}
    for target in (2, 6):
        count = len(cloud.get(client, "servers").json()["servers"])
        while count < target:  # alternate the cells: statements are per cell, never per server
            cloud.create_server(client, "s", networks="demo-net", tags=["t"], metadata={"k": "v"},
                                availability_zone="az1" if count % 2 else "az2")
            count += 1
        for who, c, query in (("member", client, ""), ("admin", admin, "?all_tenants=1")):
            cloud.get(c, f"servers/detail{query}", version="2.100")  # warm caches (policy grants)
            with _count() as counts:
                response = cloud.get(c, f"servers/detail{query}", version="2.100")
            assert response.status_code == 200
            sizes[(who, target)] = counts["n"]
    assert sizes[("member", 2)] == sizes[("member", 6)], sizes
    assert sizes[("admin", 2)] == sizes[("admin", 6)], sizes


def test_instance_actions_paging_at_2_58(cloud):
    client = cloud.member()
    sid = cloud.create_server(client, "acts")["id"]
    for name in ("a", "b"):
        cloud.put(client, f"servers/{sid}/metadata/{name}", {"meta": {name: "1"}})
    from cells.context import target_cell
    from servers.models import InstanceAction

    with target_cell(cloud.cell_of(sid)):
        for i in range(3):
            InstanceAction.objects.create(instance_uuid=sid, action="reboot", request_id=f"req-{i}",
                                          project_id="p", user_id="u")
    page = cloud.get(client, f"servers/{sid}/os-instance-actions?limit=2", version="2.58").json()
    assert len(page["instanceActions"]) == 2 and page["links"][0]["rel"] == "next"
    marker = page["instanceActions"][-1]["request_id"]
    rest = cloud.get(client, f"servers/{sid}/os-instance-actions?limit=5&marker={marker}", version="2.58").json()
    seen = [a["request_id"] for a in page["instanceActions"] + rest["instanceActions"]]
    assert len(seen) == len(set(seen)) == 4
    assert cloud.get(client, f"servers/{sid}/os-instance-actions?marker=nope", version="2.58").status_code == 400
    assert cloud.get(client, f"servers/{sid}/os-instance-actions?changes-since=bad", version="2.58").status_code == 400


#: a multiple of a fifth of NOTIFICATIONS_KEEP's default (2,000): the boot whose notification ids
#: cross one also reads the cutoff of the rows to prune (``cloudcore.core.notifications._prune``)
PRUNE_STEP = 400


# No pruning of the stored notifications: which boot crosses a multiple of the step depends on the
# ids the worker's earlier tests used on PostgreSQL (a rolled-back sequence is not reset), so that
# boot made one statement more in some runs of the tier. The third boot here crosses one always.
@override_settings(NOTIFICATIONS_KEEP=0)
def test_boot_statements_do_not_grow_with_the_servers_already_there(cloud):
    from cloudcore.core.models import NotificationRecord

    client = cloud.member()
    counts, statements = [], []
    for i in range(6):
        if i == 2:
            last = NotificationRecord.objects.create(event_type="filler", priority="INFO", publisher_id="test").id
            NotificationRecord.objects.bulk_create(
                NotificationRecord(event_type="filler", priority="INFO", publisher_id="test")
                for _ in range(PRUNE_STEP - 2 - last % PRUNE_STEP))
        with _count() as c:
            cloud.create_server(client, f"b{i}", networks="none", availability_zone="az1")
        counts.append(c["n"])
        statements.append(c["sql"])
    # the first boot warms per-process caches; later ones must cost the same. On failure: the
    # statement shapes a boot ran more, and fewer, than the second boot.
    def shapes(sql: list[str]) -> Counter[str]:
        return Counter(re.sub(r"'[^']*'|\"s\d+_x\d+\"|\b\d+\b", "?", q) for q in sql)

    differ = {i: (shapes(sql) - shapes(statements[1]), shapes(statements[1]) - shapes(sql))
              for i, sql in enumerate(statements[2:], start=2) if len(sql) != len(statements[1])}
    assert len(set(counts[1:])) == 1, (counts, differ)


def test_detail_statements_are_the_same_for_10_and_200_servers(cloud):
    """The full detail list reads each kind of extra once per cell, never once per row: the same
    number of statements for 10 and for 200 servers (four booted with ports, tags and metadata,
    the others bulk copies of them, as the list_scale bench makes them), for a member and an admin,
    at 2.1 and at the newest microversion."""
    from bench.scenarios.list_scale import insert_copies
    from cells.context import target_cell
    from servers.models import Instance

    client = cloud.member()
    admin = cloud.admin()
    for i in range(4):
        cloud.create_server(client, f"list-{i}", networks="demo-net", tags=["t"], metadata={"k": "v"},
                            availability_zone="az1" if i % 2 else "az2")
    booted = {}
    for name in ("cell1", "cell2"):
        with target_cell(cloud.cells[name]):
            booted[name] = Instance.objects.filter(display_name__startswith="list-").count()
    cells = [name for name, n in booted.items() if n]
    assert len(cells) == 2, booted  # one availability zone per cell: the rows are in both
    counts = {}
    total, serial = 4, 0
    for target in (10, 200):
        missing = target - total
        for k, name in enumerate(cells):
            share = missing // len(cells) + (1 if k < missing % len(cells) else 0)
            insert_copies(cloud, name, share, serial=serial)
            serial += share
        total = target
        for who, c, query in (("member", client, ""), ("admin", admin, "?all_tenants=1")):
            for version in ("2.1", "latest"):
                cloud.get(c, f"servers/detail{query}", version=version)  # warm caches (policy grants)
                with _count() as counted:
                    response = cloud.get(c, f"servers/detail{query}", version=version)
                assert response.status_code == 200
                assert len(response.json()["servers"]) == target
                counts[(who, version, target)] = counted["n"]
    for who in ("member", "admin"):
        for version in ("2.1", "latest"):
            assert counts[(who, version, 10)] == counts[(who, version, 200)], counts


def test_project_page_is_read_in_order_from_an_index(cloud):
    """A member's detail page reads its project's rows in the page's order from an index (newest
    first, up to the limit) instead of sorting every row of the project in a temporary B-tree: a
    page of 1,000 of 10,000 servers sorted 5,000 rows per cell."""
    from django.test.utils import CaptureQueriesContext

    from cells.transactions import cell_db

    client = cloud.member()
    sid = cloud.create_server(client, "ordered", networks="none")["id"]
    connection = connections[cell_db(cloud.cells[cloud.cell_of(sid)])]
    with CaptureQueriesContext(connection) as captured:
        response = cloud.get(client, "servers/detail", version="latest")
    assert [s["id"] for s in response.json()["servers"]] == [sid]
    listed = [q["sql"] for q in captured.captured_queries
              if 'FROM "servers_instance"' in q["sql"] and "ORDER BY" in q["sql"]]
    assert len(listed) == 1, listed
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # a handful of rows: PostgreSQL would scan and sort them whatever the indexes; told to
            # avoid both where it can, it reads the index in the page's order only if one fits
            cursor.execute("SET enable_seqscan = off")
            cursor.execute("SET enable_sort = off")
            try:
                cursor.execute(f"EXPLAIN {listed[0]}")
                plan = " / ".join(row[0] for row in cursor.fetchall())
            finally:
                cursor.execute("RESET enable_seqscan")
                cursor.execute("RESET enable_sort")
            assert "Sort" not in plan, plan
        else:
            cursor.execute(f"EXPLAIN QUERY PLAN {listed[0]}")
            plan = " / ".join(row[-1] for row in cursor.fetchall())
            assert "TEMP B-TREE" not in plan, plan
    # (project_id, created_at, uuid DESC), read backwards: created_at newest first, uuid ascending
    assert "servers_ins_project_d7c1cf_idx" in plan, plan


def test_a_detail_page_reads_the_extras_of_the_fields_it_shows_only(cloud):
    # given an active server with a port in the member's project
    client = cloud.member()
    cloud.create_server(client, "s", networks="demo-net")
    for version, reads_specs in (("2.90", False), ("2.96", True)):
        cloud.get(client, "servers/detail", version=version)  # warm caches (policy grants)
        # when its detail list is read
        with _count() as counts:
            assert cloud.get(client, "servers/detail", version=version).status_code == 200
        # then request specs are read only where a listed field shows one (pinned_availability_zone
        # from 2.96; server_groups, from 2.71, is a show's only), and which servers have ports is
        # not asked of servers no longer building
        specs = [sql for sql in counts["sql"] if '"scheduling_requestspec"' in sql]
        assert bool(specs) is reads_specs, (version, specs)
        assert not [sql for sql in counts["sql"] if re.search(r'FROM "networks_port" WHERE', sql)], version


def test_a_members_detail_page_reads_no_administrators_column(cloud):
    # given a server of the member's project
    client = cloud.member()
    cloud.create_server(client, "s", networks="none")
    for who, c, query in (("member", client, ""), ("admin", cloud.admin(), "?all_tenants=1")):
        cloud.get(c, f"servers/detail{query}", version="2.90")  # warm caches (policy grants)
        # when the detail list is read at 2.90
        with _count() as counts:
            listed = cloud.get(c, f"servers/detail{query}", version="2.90").json()["servers"]
        # then the cells' instance statements read user_data (an administrator's attribute) for the admin only
        cells = [sql for sql in counts["sql"] if 'FROM "servers_instance"' in sql and "LIMIT" in sql]
        assert cells and all(('"user_data"' in sql) is (who == "admin") for sql in cells), who
        assert ("OS-EXT-SRV-ATTR:user_data" in listed[0]) is (who == "admin"), who
