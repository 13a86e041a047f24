"""The whole live cloud on PostgreSQL and Redis: ``manage.py run_cloud`` (web, conductor, beat,
volume worker, four compute workers, each its own process) with the API database and one
PostgreSQL database per cell (cell0, cell1, cell2), Celery over Redis, driven with the real
``openstack`` CLI only. A cross-cell resize is confirmed, then the server moves back into the
first cell and that is reverted; the databases are then read directly (psycopg2).

Runs under ``make test-e2e-postgres`` (part of ``make test``), which starts PostgreSQL and Redis
and sets ``CLOUDCORE_E2E_DATABASE_URL`` / ``CLOUDCORE_E2E_BROKER_URL``; skipped without them.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any

import pytest

from .cloud import ROOT, LiveCloud, pg_connect

pytestmark = [
    pytest.mark.slow,
    pytest.mark.e2e,
    pytest.mark.postgres,
    pytest.mark.skipif(
        not (os.environ.get("CLOUDCORE_E2E_DATABASE_URL") and os.environ.get("CLOUDCORE_E2E_BROKER_URL")),
        reason="needs CLOUDCORE_E2E_DATABASE_URL and CLOUDCORE_E2E_BROKER_URL (make test-e2e-postgres)",
    ),
]

CELL1_HOSTS = ("compute1", "compute2")
CELL2_HOSTS = ("compute3", "compute4")


@pytest.fixture(scope="module")
def cloud(live_cloud: LiveCloud) -> LiveCloud:
    assert live_cloud.env["CLOUDCORE_DATABASE_URL"].startswith("postgres"), live_cloud.env
    assert live_cloud.env["CLOUDCORE_BROKER_URL"].startswith("redis"), live_cloud.env
    return live_cloud.wait_computes_up(timeout=120)


def wait_status(cloud: LiveCloud, name: str, wanted: str, timeout: float = 120) -> dict[str, Any]:
    cloud.server_status(name, wanted, timeout=timeout)
    shown: dict[str, Any] = cloud.openstack_json("server", "show", name)
    assert shown["status"] == wanted, f"{name} is {shown['status']}, not {wanted}: {shown.get('fault')}"
    return shown


class Databases:
    """Direct reads of the cloud's PostgreSQL databases; table names come from the models."""

    def __init__(self, api_url: str) -> None:
        from django.apps import apps

        from cells.models import CellMapping, InstanceMapping
        from cloudcore.core.models import CellModel
        from scheduling.models import Allocation, Consumer, ResourceProvider
        from servers.models import Instance, InstanceAction, InstanceActionEvent, Migration

        self.t = {m.__name__: m._meta.db_table for m in (
            CellMapping, InstanceMapping, Allocation, Consumer, ResourceProvider, Instance, InstanceAction,
            InstanceActionEvent, Migration)}
        # every cell table that holds rows of a server, by its instance_uuid column
        self.per_instance = sorted(
            m._meta.db_table for m in apps.get_models()
            if issubclass(m, CellModel) and any(f.name == "instance_uuid" for f in m._meta.concrete_fields)
        )
        self.api = pg_connect(api_url)
        rows = self.api_rows(f"SELECT name, uuid, database_connection FROM {self.t['CellMapping']}")
        assert sorted(r[0] for r in rows) == ["cell0", "cell1", "cell2"], rows
        assert all(r[2].startswith("postgres") for r in rows), rows
        self.cell_uuid = {name: cell_uuid for name, cell_uuid, _ in rows}
        self.cells = {name: pg_connect(url) for name, _, url in rows}

    def close(self) -> None:
        for conn in (self.api, *self.cells.values()):
            conn.close()

    def api_rows(self, query: str, *params: Any) -> list[tuple[Any, ...]]:
        with self.api.cursor() as cur:
            cur.execute(query, params)
            return cur.fetchall()

    def cell_rows(self, cell: str, query: str, *params: Any) -> list[tuple[Any, ...]]:
        with self.cells[cell].cursor() as cur:
            cur.execute(query, params)
            return cur.fetchall()

    def cells_holding(self, instance_uuid: str) -> dict[str, dict[str, int]]:
        """cell name -> {table: row count} of every cell database that has any row of the server."""
        found: dict[str, dict[str, int]] = {}
        for cell in self.cells:
            counts = {self.t["Instance"]: self.cell_rows(
                cell, f"SELECT count(*) FROM {self.t['Instance']} WHERE uuid = %s", instance_uuid)[0][0]}
            for table in self.per_instance:
                counts[table] = self.cell_rows(
                    cell, f"SELECT count(*) FROM {table} WHERE instance_uuid = %s", instance_uuid)[0][0]
            counts[self.t["InstanceActionEvent"]] = self.cell_rows(
                cell, f"SELECT count(*) FROM {self.t['InstanceActionEvent']} e JOIN {self.t['InstanceAction']} a "
                      "ON e.action_id = a.id WHERE a.instance_uuid = %s", instance_uuid)[0][0]
            if any(counts.values()):
                found[cell] = {table: n for table, n in counts.items() if n}
        return found

    def instance(self, cell: str, instance_uuid: str) -> dict[str, Any]:
        with self.cells[cell].cursor() as cur:
            cur.execute(f"SELECT uuid, host, node, vm_state, task_state, hidden, deleted, flavor "
                        f"FROM {self.t['Instance']} WHERE uuid = %s", (instance_uuid,))
            row = cur.fetchone()
            assert row is not None, f"{instance_uuid} is not in {cell}"
            return dict(zip([c.name for c in cur.description], row, strict=True))

    def migrations(self, cell: str, instance_uuid: str) -> list[tuple[str, str, str, bool]]:
        return [tuple(r) for r in self.cell_rows(
            cell, f"SELECT uuid, status, migration_type, cross_cell_move FROM {self.t['Migration']} "
                  "WHERE instance_uuid = %s AND NOT deleted ORDER BY id", instance_uuid)]

    def mapped_cell(self, instance_uuid: str) -> str:
        rows = self.api_rows(
            f"SELECT c.name FROM {self.t['InstanceMapping']} m JOIN {self.t['CellMapping']} c ON m.cell_id = c.id "
            "WHERE m.instance_uuid = %s", instance_uuid)
        assert len(rows) == 1, rows
        return str(rows[0][0])

    def allocations(self, consumer_uuid: str) -> list[tuple[str, int]]:
        """(resource provider name, used) of every allocation held by ``consumer_uuid``."""
        return [tuple(r) for r in self.api_rows(
            f"SELECT rp.name, a.used FROM {self.t['Allocation']} a "
            f"JOIN {self.t['Consumer']} c ON a.consumer_id = c.id "
            f"JOIN {self.t['ResourceProvider']} rp ON a.resource_provider_id = rp.id "
            "WHERE c.uuid = %s", consumer_uuid)]


def test_cross_cell_resize_on_postgres_and_redis(cloud: LiveCloud) -> None:
    """Boot in cell1 (cell2's hosts disabled), resize into cell2 (cell1's disabled) and confirm;
    move back into cell1 and revert. The server ends in cell2 only, with its migrations
    confirmed and reverted, its mapping on cell2 and no allocations left on either migration."""

    def services(action: str, *hosts: str) -> None:
        for host in hosts:
            cloud.openstack("compute", "service", "set", f"--{action}", host, "nova-compute", cloud="cloudcore-admin")

    granted = subprocess.run([sys.executable, "manage.py", "policy", "grant", "compute:servers:resize:cross_cell",
                              "--project", "demo"], cwd=ROOT, env=cloud.env, capture_output=True, text=True)
    assert granted.returncode == 0, granted.stdout + granted.stderr
    db = Databases(cloud.env["CLOUDCORE_DATABASE_URL"])
    try:
        services("disable", *CELL2_HOSTS)
        created = cloud.openstack_json("server", "create", "--flavor", "m1.tiny", "--image", "tiny",
                                       "--network", "demo-net", "--wait", "pgxc")
        assert created["status"] == "ACTIVE"
        server_id = created["id"]
        assert db.mapped_cell(server_id) == "cell1"
        assert set(db.cells_holding(server_id)) == {"cell1"}
        assert db.instance("cell1", server_id)["host"] in CELL1_HOSTS

        # 1. cell1 -> cell2, confirm
        services("enable", *CELL2_HOSTS)
        services("disable", *CELL1_HOSTS)
        cloud.openstack("server", "resize", "--flavor", "m1.small", "pgxc", cloud="cloudcore-demo-admin")
        wait_status(cloud, "pgxc", "VERIFY_RESIZE")
        listed = [(s["Name"], s["Status"]) for s in cloud.openstack_json("server", "list")]
        assert [row for row in listed if row[0] == "pgxc"] == [("pgxc", "VERIFY_RESIZE")]
        admin_rows = [s for s in cloud.openstack_json("server", "list", "--all-projects", "--long",
                                                      cloud="cloudcore-admin") if s["Name"] == "pgxc"]
        assert len(admin_rows) == 1 and admin_rows[0]["Host"] in CELL2_HOSTS
        # both copies exist while the resize awaits confirmation: the source one hidden
        assert db.mapped_cell(server_id) == "cell2"
        assert set(db.cells_holding(server_id)) == {"cell1", "cell2"}
        assert db.instance("cell1", server_id)["hidden"] is True
        assert db.instance("cell2", server_id)["hidden"] is False
        ((first_migration, status, kind, cross_cell),) = db.migrations("cell2", server_id)
        assert (status, kind, cross_cell) == ("finished", "resize", True)
        assert db.allocations(first_migration), "the migration holds the source allocations while resized"

        cloud.openstack("server", "resize", "confirm", "pgxc", cloud="cloudcore-demo-admin")
        shown = wait_status(cloud, "pgxc", "ACTIVE")
        assert "m1.small" in json.dumps(shown["flavor"])
        assert set(db.cells_holding(server_id)) == {"cell2"}
        assert db.mapped_cell(server_id) == "cell2"
        assert db.migrations("cell2", server_id) == [(first_migration, "confirmed", "resize", True)]
        assert db.allocations(first_migration) == []

        # 2. cell2 -> cell1, revert
        services("enable", *CELL1_HOSTS)
        services("disable", *CELL2_HOSTS)
        cloud.openstack("server", "resize", "--flavor", "m1.medium", "pgxc", cloud="cloudcore-demo-admin")
        wait_status(cloud, "pgxc", "VERIFY_RESIZE")
        listed = [(s["Name"], s["Status"]) for s in cloud.openstack_json("server", "list")]
        assert [row for row in listed if row[0] == "pgxc"] == [("pgxc", "VERIFY_RESIZE")]
        assert db.mapped_cell(server_id) == "cell1"
        assert db.instance("cell1", server_id)["host"] in CELL1_HOSTS
        second_migration = db.migrations("cell1", server_id)[-1][0]
        assert second_migration != first_migration

        cloud.openstack("server", "resize", "revert", "pgxc", cloud="cloudcore-demo-admin")
        shown = wait_status(cloud, "pgxc", "ACTIVE")
        assert "m1.small" in json.dumps(shown["flavor"])

        # 3. straight from the databases
        holding = db.cells_holding(server_id)
        assert set(holding) == {"cell2"}, holding
        assert db.mapped_cell(server_id) == "cell2"
        row = db.instance("cell2", server_id)
        assert row["host"] in CELL2_HOSTS and row["node"] == row["host"]
        assert (row["vm_state"], row["task_state"], row["hidden"], row["deleted"]) == ("active", None, False, False)
        assert row["flavor"]["name"] == "m1.small"
        assert db.migrations("cell2", server_id) == [
            (first_migration, "confirmed", "resize", True),
            (second_migration, "reverted", "resize", True),
        ]
        assert db.allocations(first_migration) == []
        assert db.allocations(second_migration) == []
        held = db.allocations(server_id)
        assert held and {provider for provider, _ in held} == {row["node"]}, held
        assert sorted(used for _, used in held) == sorted([1, 2048, 20]), held
    finally:
        services("enable", *CELL1_HOSTS, *CELL2_HOSTS)
        db.close()


def test_processes_keep_their_connections_named(cloud: LiveCloud) -> None:
    """After a boot, the compute host that built the server still holds its connections to its
    cell's database, idle (kept between tasks and heartbeats, not a backend forked per build), and
    every connection names its process in ``application_name`` (``pg_stat_activity``)."""
    created = cloud.openstack_json("server", "create", "--flavor", "m1.tiny", "--image", "tiny",
                                   "--network", "demo-net", "--wait", "pgkept")
    assert created["status"] == "ACTIVE"
    shown = cloud.openstack_json("server", "show", created["id"], cloud="cloudcore-admin")
    host = shown["OS-EXT-SRV-ATTR:host"]
    db = Databases(cloud.env["CLOUDCORE_DATABASE_URL"])
    try:
        cell = db.mapped_cell(created["id"])
        ((cell_database,),) = db.cell_rows(cell, "SELECT current_database()")
        backends = db.api_rows("SELECT application_name, datname, state, query FROM pg_stat_activity "
                               "WHERE application_name LIKE 'cloudcore-%%'")
        names = {name for name, *_ in backends}
        assert {"cloudcore-web", "cloudcore-conductor"} <= names, sorted(names)
        kept = [(datname, state, query) for name, datname, state, query in backends if name == f"cloudcore-{host}"]
        assert kept, f"{host} holds no connection after its build: {sorted(names)}"
        assert {datname for datname, *_ in kept} == {cell_database}, kept
        # its start-up's, its heartbeat's and its build's connections at least (closing them after
        # every task and beat, it kept only its start-up's, and a beat's for the instant of the beat)
        assert len(kept) >= 3, kept
    finally:
        db.close()
        cloud.openstack("server", "delete", "--wait", "pgkept")


def _sessions(db: Databases, databases: list[str]) -> int:
    """Backends ever started on ``databases`` (``pg_stat_database.sessions``), once their counts have
    reached the server's statistics (a backend reports them when idle, at most each second)."""
    db.api_rows("SELECT pg_stat_clear_snapshot()")
    ((count,),) = db.api_rows("SELECT coalesce(sum(sessions), 0) FROM pg_stat_database WHERE datname = ANY(%s)",
                              databases)
    return int(count)


def test_server_lists_keep_their_cell_connections(cloud: LiveCloud) -> None:
    """A server list reads every cell at once from threads of the web process that keep their
    connections (``cells.scatter``): the lists start at most those threads' first backends on the
    cells' databases, where each list started one per cell when a list made its threads."""
    workers = int(cloud.env.get("CLOUDCORE_WEB_WORKERS") or max(2, os.cpu_count() or 1))
    threads = int(cloud.env.get("CLOUDCORE_CELL_SCATTER_THREADS") or 2)
    # at most every web worker's every cell thread starts one, whatever the lists; one per list
    # and cell (3) is more than that
    bound, lists = workers * 3 * threads, 2 * workers * threads + 8
    conn = cloud.sdk()
    db = Databases(cloud.env["CLOUDCORE_DATABASE_URL"])
    try:
        cell_databases = [db.cell_rows(cell, "SELECT current_database()")[0][0] for cell in db.cells]
        list(conn.compute.servers())
        time.sleep(1.5)
        before = _sessions(db, cell_databases)
        for _ in range(lists):
            list(conn.compute.servers())
        time.sleep(1.5)  # the backends' counts reported
        started = _sessions(db, cell_databases) - before
        assert started <= bound, f"{started} backends started on the cells' databases by {lists} server lists"
    finally:
        db.close()
        conn.close()
