"""Faults in the middle of operations on a live cloud (PostgreSQL cells + Redis), then recovery.

The cloud (tests/e2e/faults.py ``FaultCloud``) runs every process of ``run_cloud`` as its own
child so one can be killed and restarted. Each scenario stops an operation at a known step (a row
lock the next step waits on, see faults.py), injects the fault, restores what was killed, runs the
stale task_state reaper once (TASK_STATE_TIMEOUT lowered to 2 s for that run), and then checks
the databases directly (``consistency_problems``): no server stuck in a task_state, every server
in exactly its mapped cell, no allocation on a consumer that is gone or a migration that ended,
no volume attachment or port of a missing server.

=================  =======================================  =====================================
fault              operation                                stopped at
=================  =======================================  =====================================
compute kill -9    build                                    compute: task_state -> networking
conductor kill -9  same-cell resize                         conductor: migration -> migrating
conductor kill -9  build                                    conductor: mapping -> cell
redis kill -9      cross-cell resize (volume attached)      conductor: source copy, after the
                                                            target cell's copy exists
compute kill -9    cross-cell resize                        source compute: task_state ->
                                                            resize_migrated
cell DB down       same-cell resize                         source compute: task_state ->
                                                            resize_migrated (API keeps answering)
compute kill -9    same-cell resize                         destination compute: finishing (server
                                                            row), source guest already down
conductor kill -9  cross-cell resize (volume attached)      conductor: source copy, after the
                                                            target copy and its attachment exist
redis kill -9      build                                    conductor: mapping -> cell (its cast to
                                                            the compute host then fails)
redis kill -9      same-cell resize                         source compute: task_state ->
                                                            resize_migrated (its cast of the finish
                                                            then fails)
cell DB down       build                                    conductor: creating the instance in
                                                            the cell (never gets there)
cell DB down       cross-cell resize (target cell's DB)     destination compute: finishing (target
                                                            copy's row)
every DB backend   reads from 12 clients at once            the web's kept connections, their
terminated while                                            backends stopped (SIGSTOP) so that
stopped                                                     none has said so when it is checked
=================  =======================================  =====================================

A compute host that was restarted has lost its guests (the simulated hypervisor, libvirt's
test:// driver, keeps them in memory), so a scenario that needs a guest on compute1 after one of
compute1's restarts boots a fresh server there (``fresh_on_compute1``). A worker whose broker went
away while it ran a task survives (cloudcore.celery: kombu's Redis channel and its closed connection).

Runs under ``make test-e2e-postgres`` (a pytest run of its own, so that this cloud is the only one).
"""
from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests

from .cloud import free_port, fresh_postgres_databases, make_env
from .faults import (
    Api,
    Databases,
    FaultCloud,
    RowLock,
    TableLock,
    consistency_problems,
    pg_backends_terminated_unheard,
    pg_database_down,
    pg_database_up,
    redis_kill9,
    redis_start,
    wait_blocked,
    wait_for,
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.e2e,
    pytest.mark.postgres,
    pytest.mark.skipif(
        not (os.environ.get("CLOUDCORE_E2E_DATABASE_URL") and os.environ.get("CLOUDCORE_E2E_BROKER_URL")),
        reason="needs CLOUDCORE_E2E_DATABASE_URL and CLOUDCORE_E2E_BROKER_URL (make test-e2e-postgres)",
    ),
]

AZ = {"compute1": "az1", "compute2": "az1", "compute3": "az2", "compute4": "az2"}
TINY, SMALL = "1", "2"


@dataclass
class Env:
    cloud: FaultCloud
    api: Api
    admin: Api
    db: Databases
    image: str

    def boot(self, name: str, host: str | None) -> str:
        """Boot on ``host`` (forced: its zone stays in the request spec, so no cross-cell move
        later) or, with None, wherever the scheduler finds room."""
        body: dict[str, Any] = {"server": {"name": name, "flavorRef": TINY, "imageRef": self.image,
                                           "networks": "auto"}}
        if host:
            body["server"]["availability_zone"] = f"{AZ[host]}:{host}"
        return str(self.api.call("POST", "/servers", body, expect=202).json()["server"]["id"])

    def services(self, status: str, *hosts: str) -> None:
        for svc in self.admin.call("GET", "/os-services?binary=nova-compute", expect=200).json()["services"]:
            if svc["host"] in hosts:
                self.admin.call("PUT", f"/os-services/{svc['id']}", {"status": status}, expect=200)

    def resize(self, server_id: str, flavor: str = SMALL) -> None:
        self.api.call("POST", f"/servers/{server_id}/action", {"resize": {"flavorRef": flavor}}, expect=202)

    def reaped(self, server_id: str, *, expect: str = "ERROR") -> dict[str, Any]:
        """Run the reaper once; the server comes out of its task_state with a fault."""
        time.sleep(2.1)
        rows = {cell: self.db.instance(cell, server_id) for cell in self.db.cell_url}
        assert self.cloud.reap(timeout=2) >= 1, f"nothing reaped: {rows}\n{self.cloud.tail(20)}"
        shown = self.api.server(server_id)
        assert shown["status"] == expect and shown["OS-EXT-STS:task_state"] is None, shown
        if expect == "ERROR":
            assert "did not finish" in shown["fault"]["message"], shown["fault"]
        return shown

    def assert_consistent(self) -> None:
        problems = consistency_problems(self.db)
        assert problems == [], "\n".join(problems) + "\n" + self.cloud.tail(15)

    def assert_all_running(self) -> None:
        dead = {name: code for name, code in self.cloud.alive().items() if code is not None}
        assert dead == {}, f"processes died: {dead}\n{self.cloud.tail(30)}"

    def migration(self, cell: str, server_id: str) -> tuple[str, str, bool]:
        return self.db.migrations(cell, server_id)[-1]

    def held(self, consumer: str) -> dict[str, set[str]]:
        """provider -> resource classes held by ``consumer``."""
        out: dict[str, set[str]] = {}
        for rp, rc, _used in self.db.allocations(consumer):
            out.setdefault(rp, set()).add(rc)
        return out


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    var_dir = Path(tmp_path_factory.mktemp("fault-cloud"))
    port = free_port()
    with fresh_postgres_databases(os.environ["CLOUDCORE_E2E_DATABASE_URL"]) as api_url:
        cloud = FaultCloud(var_dir=var_dir, port=port, env=make_env(var_dir, port, CLOUDCORE_DATABASE_URL=api_url))
        assert cloud.env["CLOUDCORE_BROKER_URL"].startswith("redis"), cloud.env
        try:
            cloud.start()
            for rule in ("compute:servers:resize:cross_cell", "os_compute_api:servers:create:forced_host"):
                cloud.manage("policy", "grant", rule, "--project", "demo")
            api, admin = Api(cloud, "cloudcore-demo-admin"), Api(cloud, "cloudcore-admin")
            wait_for("four compute services up", lambda: sum(
                s["state"] == "up" for s in admin.call("GET", "/os-services?binary=nova-compute").json()["services"]
            ) == 4, timeout=120)
            images = requests.get(f"{cloud.url}/image/v2/images?name=tiny", timeout=30,
                                  headers={"X-Auth-Token": api.token}).json()["images"]
            yield Env(cloud=cloud, api=api, admin=admin, db=Databases(api_url), image=images[0]["id"])
        finally:
            cloud.stop()


@pytest.fixture(scope="module")
def servers(env: Env) -> dict[str, str]:
    """The servers the scenarios move, booted together up front (all ACTIVE)."""
    wanted = {"resize-conductor": "compute1", "xcell-redis": "compute1", "xcell-compute": "compute1",
              "resize-pg": "compute1", "bystander": "compute3"}
    wait_for("compute1 up (restarted by an earlier scenario)", lambda: any(
        s["host"] == "compute1" and s["state"] == "up"
        for s in env.admin.call("GET", "/os-services?binary=nova-compute").json()["services"]), timeout=120)
    env.services("disabled", "compute2", "compute3", "compute4")
    try:  # no zone in their request specs: they may move to the other cell's zone
        ids = {name: env.boot(f"f-{name}", None) for name in wanted if name != "bystander"}
        for server_id in ids.values():  # isolated builds call the services over HTTP: slower under load
            env.api.wait_status(server_id, "ACTIVE", timeout=300)
    finally:
        env.services("enabled", "compute2", "compute3", "compute4")
    ids["bystander"] = env.boot("f-bystander", "compute3")
    for name, server_id in ids.items():
        env.api.wait_status(server_id, "ACTIVE", timeout=300)
        assert env.admin.server(server_id)["OS-EXT-SRV-ATTR:host"] == wanted[name]
    return ids


def fresh_on_compute1(env: Env, servers: dict[str, str], name: str) -> str:
    """A new ACTIVE server on compute1 with no zone in its request spec (like ``servers``'),
    for a scenario after compute1 was restarted: the simulated hypervisor (libvirt's test://
    driver) keeps its guests in memory, so the guests ``servers`` booted there are gone and an
    operation on them fails at once on compute1. Deleted by the last test."""
    env.services("disabled", "compute2", "compute3", "compute4")
    try:
        server_id = env.boot(f"f-{name}", None)
        env.api.wait_status(server_id, "ACTIVE", timeout=120)
    finally:
        env.services("enabled", "compute2", "compute3", "compute4")
    assert env.admin.server(server_id)["OS-EXT-SRV-ATTR:host"] == "compute1"
    servers[name] = server_id
    return server_id


def test_compute_killed_mid_build(env: Env) -> None:
    """compute1 is killed while it builds (blocked setting task_state ``networking``)."""
    cloud, db = env.cloud, env.db
    cloud.freeze("compute1")  # the build cast waits for it; the lock is taken first
    try:
        server_id = env.boot("f-build-compute", "compute1")
        wait_for("the conductor to place the server in cell1",
                 lambda: (db.instance("cell1", server_id) or {}).get("task_state") == "scheduling")
        lock = RowLock(db.cell_url["cell1"], db.t["Instance"], "uuid = %s", server_id)
    finally:
        cloud.thaw("compute1")
    try:
        blocked = wait_blocked(cloud, db, "cell1", "compute1")
        assert blocked.statement.startswith(("UPDATE", "EXECUTE cloudcore_")), blocked
        cloud.kill9("compute1")
        db.terminate_backend(blocked.backend_pid)
    finally:
        lock.release()
    cloud.restart("compute1")
    assert set(env.held(server_id)) == {"compute1"}
    env.reaped(server_id)
    env.assert_consistent()
    # deleting the errored server frees everything it held
    env.api.call("DELETE", f"/servers/{server_id}", expect=204)
    wait_for("the server to go", lambda: env.api.call("GET", f"/servers/{server_id}").status_code == 404)
    assert env.held(server_id) == {}
    env.assert_consistent()
    env.assert_all_running()


def test_conductor_killed_mid_build(env: Env) -> None:
    """The conductor is killed after it created the instance in cell1, before it pointed the
    instance mapping at cell1 (blocked on the mapping row)."""
    cloud, db = env.cloud, env.db
    cloud.freeze("conductor")
    try:
        server_id = env.boot("f-build-conductor", "compute2")
        lock = RowLock(db.api_url, db.t["InstanceMapping"], "instance_uuid = %s", server_id)
    finally:
        cloud.thaw("conductor")
    try:
        blocked = wait_blocked(cloud, db, None, "conductor")
        assert db.instance("cell1", server_id) is not None
        cloud.kill9("conductor")
        db.terminate_backend(blocked.backend_pid)
    finally:
        lock.release()
    cloud.restart("conductor")
    env.reaped(server_id)
    env.assert_consistent()
    env.api.call("DELETE", f"/servers/{server_id}", expect=204)
    wait_for("the server to go", lambda: env.api.call("GET", f"/servers/{server_id}").status_code == 404)
    assert env.held(server_id) == {}
    env.assert_consistent()
    env.assert_all_running()


def test_conductor_killed_mid_same_cell_resize(env: Env, servers: dict[str, str]) -> None:
    """The conductor is killed after scheduling a resize compute1 -> compute2 (destination
    allocations claimed) while it records the destination on the migration."""
    cloud, db = env.cloud, env.db
    server_id = servers["resize-conductor"]
    cloud.freeze("conductor")
    try:
        env.resize(server_id)
        lock = RowLock(db.cell_url["cell1"], db.t["Migration"], "instance_uuid = %s", server_id)
    finally:
        cloud.thaw("conductor")
    try:
        blocked = wait_blocked(cloud, db, "cell1", "conductor")
        migration_id = env.migration("cell1", server_id)[0]
        assert set(env.held(server_id)) == {"compute2"} and set(env.held(migration_id)) == {"compute1"}
        cloud.kill9("conductor")
        db.terminate_backend(blocked.backend_pid)
    finally:
        lock.release()
    cloud.restart("conductor")
    env.reaped(server_id)
    assert env.migration("cell1", server_id) == (migration_id, "error", False)
    assert set(env.held(server_id)) == {"compute1"} and env.held(migration_id) == {}
    env.assert_consistent()
    env.assert_all_running()


def test_redis_killed_mid_cross_cell_resize(env: Env, servers: dict[str, str]) -> None:
    """Redis is killed (and comes back empty) while the conductor is half-way through a cross-cell
    resize: the server's copy is already in cell2; the conductor's call to the source host then
    fails, and the conductor rolls the move back itself (nothing is left for the reaper)."""
    cloud, db = env.cloud, env.db
    server_id = servers["xcell-redis"]
    volume = attach_volume(env, server_id)
    env.services("disabled", "compute2")
    try:
        cloud.freeze("conductor")
        try:
            env.resize(server_id)
            lock = RowLock(db.cell_url["cell1"], db.t["Instance"], "uuid = %s", server_id)
        finally:
            cloud.thaw("conductor")
        try:
            blocked = wait_blocked(cloud, db, "cell1", "conductor")
            assert db.instance("cell2", server_id) is not None, f"no copy in cell2 yet; blocked at {blocked}"
            migration_id = env.migration("cell1", server_id)[0]
            redis_kill9()
        finally:
            lock.release()
        wait_for("the conductor to go on", lambda: db.instance("cell1", server_id)["task_state"] == "resize_migrating")
        time.sleep(3)  # its cast to compute1 fails meanwhile
        redis_start()
    finally:
        env.services("enabled", "compute2")
    wait_for("the conductor to roll the move back",
             lambda: db.instance("cell1", server_id)["task_state"] is None, timeout=120)
    assert env.api.server(server_id)["status"] == "ACTIVE"
    assert db.instance("cell1", server_id)["host"] == "compute1"
    assert db.instance("cell2", server_id) is None
    assert env.migration("cell1", server_id)[:2] == (migration_id, "error")
    assert set(env.held(server_id)) == {"compute1"} and env.held(migration_id) == {}
    env.assert_consistent()
    env.assert_all_running()
    detach_volume(env, server_id, volume)


def attach_volume(env: Env, server_id: str) -> str:
    volume = requests.post(f"{env.cloud.url}/volume/v3/volumes", timeout=30, headers={"X-Auth-Token": env.api.token},
                           json={"volume": {"size": 1, "name": "f-vol"}})
    assert volume.status_code in (200, 202), volume.text
    volume_id = volume.json()["volume"]["id"]
    wait_for("the volume", lambda: requests.get(f"{env.cloud.url}/volume/v3/volumes/{volume_id}", timeout=30,
                                                headers={"X-Auth-Token": env.api.token}).json()["volume"]["status"]
             == "available")
    env.api.call("POST", f"/servers/{server_id}/os-volume_attachments", {"volumeAttachment": {"volumeId": volume_id}},
                 expect=200)
    wait_for("the attachment", lambda: requests.get(f"{env.cloud.url}/volume/v3/volumes/{volume_id}", timeout=30,
                                                    headers={"X-Auth-Token": env.api.token}).json()["volume"]["status"]
             == "in-use")
    return volume_id


def detach_volume(env: Env, server_id: str, volume_id: str) -> None:
    env.api.call("DELETE", f"/servers/{server_id}/os-volume_attachments/{volume_id}", expect=(202, 409))


def test_compute_killed_mid_cross_cell_resize(env: Env, servers: dict[str, str]) -> None:
    """compute1 (the source) is killed during a cross-cell resize: the guest is down, the
    target cell's copy exists, the server's task_state would become ``resize_migrated``."""
    cloud, db = env.cloud, env.db
    server_id = servers["xcell-compute"]
    env.services("disabled", "compute2")
    try:
        cloud.freeze("compute1")
        try:
            env.resize(server_id)
            wait_for("the conductor to cast to the source",
                     lambda: db.instance("cell1", server_id)["task_state"] == "resize_migrating")
            lock = RowLock(db.cell_url["cell1"], db.t["Instance"], "uuid = %s", server_id)
        finally:
            cloud.thaw("compute1")
        try:
            blocked = wait_blocked(cloud, db, "cell1", "compute1")
            assert db.instance("cell2", server_id) is not None
            migration_id = env.migration("cell1", server_id)[0]
            cloud.kill9("compute1")
            db.terminate_backend(blocked.backend_pid)
        finally:
            lock.release()
        cloud.restart("compute1")
    finally:
        env.services("enabled", "compute2")
    env.reaped(server_id)
    assert db.instance("cell2", server_id) is None
    assert env.migration("cell1", server_id)[:2] == (migration_id, "error")
    assert set(env.held(server_id)) == {"compute1"} and env.held(migration_id) == {}
    env.assert_consistent()
    env.assert_all_running()


def test_cell_database_down_mid_same_cell_resize(env: Env, servers: dict[str, str]) -> None:
    """cell1's database goes away (connections terminated, new ones refused) while compute1 is
    in the middle of a resize; meanwhile the API answers, cell1's servers UNKNOWN from 2.69."""
    cloud, db = env.cloud, env.db
    server_id, bystander = servers["resize-pg"], servers["bystander"]
    cloud.freeze("compute1")
    try:
        env.resize(server_id)
        wait_for("the conductor to cast to the source",
                 lambda: db.instance("cell1", server_id)["task_state"] == "resize_migrating")
        lock = RowLock(db.cell_url["cell1"], db.t["Instance"], "uuid = %s", server_id)
    finally:
        cloud.thaw("compute1")
    migration_id = env.migration("cell1", server_id)[0]
    try:
        blocked = wait_blocked(cloud, db, "cell1", "compute1")
        pg_database_down(db.cell_url["cell1"], first=(blocked.backend_pid,))
    finally:
        lock.release()
    try:
        for version in ("2.69", "2.79", "2.1"):
            listed = env.api.call("GET", "/servers/detail", version=version)
            assert listed.status_code == 200, (version, listed.status_code, listed.text)
            status = {s["id"]: s["status"] for s in listed.json()["servers"]}
            assert status[bystander] == "ACTIVE", (version, status)
            if version != "2.1":
                assert status[server_id] == "UNKNOWN", (version, status)
                assert status[servers["resize-conductor"]] == "UNKNOWN", (version, status)
        shown = env.api.call("GET", f"/servers/{server_id}", version="2.69")
        assert shown.status_code == 200 and shown.json()["server"]["status"] == "UNKNOWN", shown.text
        assert env.api.call("GET", f"/servers/{bystander}").status_code == 200
        time.sleep(2)
    finally:
        pg_database_up(db.cell_url["cell1"])
    wait_for("cell1 to answer again", lambda: env.api.server(server_id)["status"] != "UNKNOWN")
    env.reaped(server_id)
    assert env.migration("cell1", server_id) == (migration_id, "error", False)
    assert set(env.held(server_id)) == {"compute1"} and env.held(migration_id) == {}
    env.assert_consistent()
    env.assert_all_running()


def test_compute_killed_mid_same_cell_resize(env: Env, servers: dict[str, str]) -> None:
    """compute2 (the destination) is killed while it finishes a resize compute1 -> compute2: the
    source guest is down, the server would take the new flavor on compute2 (blocked on its row)."""
    cloud, db = env.cloud, env.db
    server_id = fresh_on_compute1(env, servers, "resize-compute")
    cloud.freeze("compute2")  # the finish cast waits for it
    try:
        env.resize(server_id)
        wait_for("the source half", lambda: db.instance("cell1", server_id)["task_state"] == "resize_migrated")
        lock = RowLock(db.cell_url["cell1"], db.t["Instance"], "uuid = %s", server_id)
    finally:
        cloud.thaw("compute2")
    try:
        blocked = wait_blocked(cloud, db, "cell1", "compute2")
        migration_id = env.migration("cell1", server_id)[0]
        assert set(env.held(server_id)) == {"compute2"} and set(env.held(migration_id)) == {"compute1"}
        cloud.kill9("compute2")
        db.terminate_backend(blocked.backend_pid)
    finally:
        lock.release()
    cloud.restart("compute2")
    env.reaped(server_id)
    assert env.migration("cell1", server_id) == (migration_id, "error", False)
    assert set(env.held(server_id)) == {"compute1"} and env.held(migration_id) == {}
    env.assert_consistent()
    env.assert_all_running()


def test_conductor_killed_mid_cross_cell_resize(env: Env, servers: dict[str, str]) -> None:
    """The conductor is killed half-way through a cross-cell resize (volume attached): the target
    cell's copy and its volume attachment exist, the source copy is being updated."""
    cloud, db = env.cloud, env.db
    server_id = fresh_on_compute1(env, servers, "xcell-conductor")
    volume = attach_volume(env, server_id)
    env.services("disabled", "compute2")
    try:
        cloud.freeze("conductor")
        try:
            env.resize(server_id)
            lock = RowLock(db.cell_url["cell1"], db.t["Instance"], "uuid = %s", server_id)
        finally:
            cloud.thaw("conductor")
        try:
            blocked = wait_blocked(cloud, db, "cell1", "conductor")
            assert db.instance("cell2", server_id) is not None, f"no copy in cell2 yet; blocked at {blocked}"
            assert len(attachments(env, volume)) == 2  # the source's and the target's
            migration_id = env.migration("cell1", server_id)[0]
            cloud.kill9("conductor")
            db.terminate_backend(blocked.backend_pid)
        finally:
            lock.release()
        cloud.restart("conductor")
    finally:
        env.services("enabled", "compute2")
    env.reaped(server_id)
    assert db.instance("cell2", server_id) is None
    assert env.migration("cell1", server_id)[:2] == (migration_id, "error")
    assert set(env.held(server_id)) == {"compute1"} and env.held(migration_id) == {}
    assert [host for host, _ in attachments(env, volume)] == ["compute1"]
    env.assert_consistent()
    env.assert_all_running()
    detach_volume(env, server_id, volume)


def attachments(env: Env, volume_id: str) -> list[tuple[str | None, str]]:
    """(attached host, status) of the volume's live attachments."""
    return sorted((tuple(r) for r in env.db.api(
        f"SELECT attached_host, attach_status FROM {env.db.t['VolumeAttachment']} "
        "WHERE volume_id = %s AND NOT deleted", volume_id)), key=lambda r: (r[0] or "", r[1]))


def test_redis_killed_mid_build(env: Env) -> None:
    """Redis is killed while the conductor places a build (blocked on the instance mapping, the
    instance already in cell1): its cast to compute2 then fails; Redis comes back empty."""
    cloud, db = env.cloud, env.db
    cloud.freeze("conductor")
    try:
        server_id = env.boot("f-build-redis", "compute2")
        lock = RowLock(db.api_url, db.t["InstanceMapping"], "instance_uuid = %s", server_id)
    finally:
        cloud.thaw("conductor")
    try:
        wait_blocked(cloud, db, None, "conductor")
        assert db.instance("cell1", server_id) is not None
        redis_kill9()
    finally:
        lock.release()
    try:
        wait_for("the conductor to go on", lambda: not db.api(
            f"SELECT 1 FROM {db.t['BuildRequest']} WHERE instance_uuid = %s", server_id))
        time.sleep(3)  # its cast to compute2 fails meanwhile
    finally:
        redis_start()
    assert db.instance("cell1", server_id)["task_state"] == "scheduling"
    env.reaped(server_id)
    assert set(env.held(server_id)) == {"compute2"}
    env.assert_consistent()
    env.api.call("DELETE", f"/servers/{server_id}", expect=204)
    wait_for("the server to go", lambda: env.api.call("GET", f"/servers/{server_id}").status_code == 404)
    assert env.held(server_id) == {}
    env.assert_consistent()
    env.assert_all_running()


def test_redis_killed_mid_same_cell_resize(env: Env, servers: dict[str, str]) -> None:
    """Redis is killed while compute1 takes its guest down for a resize compute1 -> compute2
    (blocked on the server's row): its cast of the finish to compute2 fails. The source half's
    failure ends the migration (``error``, allocations back on compute1): nothing is left open."""
    cloud, db = env.cloud, env.db
    server_id = fresh_on_compute1(env, servers, "resize-redis")
    cloud.freeze("compute1")
    try:
        env.resize(server_id)
        wait_for("the conductor to cast to the source",
                 lambda: db.instance("cell1", server_id)["task_state"] == "resize_migrating")
        lock = RowLock(db.cell_url["cell1"], db.t["Instance"], "uuid = %s", server_id)
    finally:
        cloud.thaw("compute1")
    migration_id = env.migration("cell1", server_id)[0]
    try:
        wait_blocked(cloud, db, "cell1", "compute1")
        redis_kill9()
    finally:
        lock.release()
    try:
        wait_for("compute1 to give up", lambda: db.instance("cell1", server_id)["task_state"] is None, timeout=60)
    finally:
        redis_start()
    env.cloud.reap(timeout=2)
    shown = env.api.server(server_id)
    assert shown["status"] == "ERROR" and shown["OS-EXT-STS:task_state"] is None, shown
    assert env.migration("cell1", server_id) == (migration_id, "error", False)
    assert set(env.held(server_id)) == {"compute1"} and env.held(migration_id) == {}
    env.assert_consistent()
    env.assert_all_running()


def test_cell_database_down_mid_build(env: Env, servers: dict[str, str]) -> None:
    """cell1's database goes away while the conductor creates a build's instance there (after the
    scheduler claimed compute1): the server never reaches its cell. Meanwhile the API answers
    (cell1's servers UNKNOWN, the build from its BuildRequest); afterwards the reaper buries the
    build in cell0 (ERROR) and drops its claim."""
    cloud, db = env.cloud, env.db
    bystander = servers["bystander"]
    cloud.freeze("conductor")
    try:
        server_id = env.boot("f-build-pg", "compute1")
        lock = TableLock(db.cell_url["cell1"], db.t["Instance"])
    finally:
        cloud.thaw("conductor")
    try:
        blocked = wait_blocked(cloud, db, "cell1", "conductor")
        assert blocked.statement.startswith(("INSERT", "EXECUTE cloudcore_")), blocked
        assert set(env.held(server_id)) == {"compute1"}
        pg_database_down(db.cell_url["cell1"], first=(blocked.backend_pid,))
    finally:
        lock.release()
    try:
        listed = env.api.call("GET", "/servers/detail", version="2.69")
        assert listed.status_code == 200, listed.text
        status = {s["id"]: s["status"] for s in listed.json()["servers"]}
        assert status[bystander] == "ACTIVE" and status[servers["resize-pg"]] == "UNKNOWN", status
        assert status[server_id] == "BUILD", status
        time.sleep(1)
    finally:
        pg_database_up(db.cell_url["cell1"])
    wait_for("cell1 to answer again", lambda: env.api.server(servers["resize-pg"])["status"] != "UNKNOWN")
    assert db.instance("cell1", server_id) is None
    env.reaped(server_id)
    assert db.instance("cell0", server_id)["vm_state"] == "error"
    assert env.held(server_id) == {}
    env.assert_consistent()
    env.api.call("DELETE", f"/servers/{server_id}", expect=204)
    wait_for("the server to go", lambda: env.api.call("GET", f"/servers/{server_id}").status_code == 404)
    env.assert_consistent()
    env.assert_all_running()


def test_cell_database_down_mid_cross_cell_resize(env: Env, servers: dict[str, str]) -> None:
    """The target cell's database (cell2) goes away while the destination host finishes a
    cross-cell resize (blocked on the target copy's row): the rollback cannot reach cell2 then;
    the API keeps answering (cell2's servers UNKNOWN); once cell2 is back the reaper rolls the
    move back from the source cell."""
    cloud, db = env.cloud, env.db
    server_id, bystander = fresh_on_compute1(env, servers, "xcell-pg"), servers["bystander"]
    env.services("disabled", "compute2")
    try:
        # the conductor calls the destination (prep), then the source, then the destination again
        # (finish): holding the source back lets the target copy be locked before the finish
        cloud.freeze("compute1")
        try:
            env.resize(server_id)
            wait_for("the destination's prep", lambda: db.cell(
                "cell2", f"SELECT migration_context FROM {db.t['Instance']} WHERE uuid = %s", server_id)
                not in ([], [(None,)], [("",)]), timeout=60)
            time.sleep(2)  # the conductor's own writes to the copy follow at once; then it waits on compute1
            lock = RowLock(db.cell_url["cell2"], db.t["Instance"], "uuid = %s", server_id)
        finally:
            cloud.thaw("compute1")
        migration_id = env.migration("cell1", server_id)[0]
        dest = db.cell("cell1", f"SELECT dest_compute FROM {db.t['Migration']} WHERE uuid = %s", migration_id)[0][0]
        try:
            blocked = wait_blocked(cloud, db, "cell2", dest)
            pg_database_down(db.cell_url["cell2"], first=(blocked.backend_pid,))
        finally:
            lock.release()
    finally:
        env.services("enabled", "compute2")
    try:
        listed = env.api.call("GET", "/servers/detail", version="2.69")
        assert listed.status_code == 200, listed.text
        status = {s["id"]: s["status"] for s in listed.json()["servers"]}
        assert status[bystander] == "UNKNOWN" and status[server_id] not in ("UNKNOWN", "ERROR"), status
        time.sleep(2)
    finally:
        pg_database_up(db.cell_url["cell2"])
    wait_for("cell2 to answer again", lambda: env.api.server(bystander)["status"] == "ACTIVE")
    env.reaped(server_id)
    assert db.instance("cell2", server_id) is None
    assert env.migration("cell1", server_id)[:2] == (migration_id, "error")
    assert set(env.held(server_id)) == {"compute1"} and env.held(migration_id) == {}
    env.assert_consistent()
    env.assert_all_running()


def test_backends_terminated_before_they_say_so(env: Env, servers: dict[str, str]) -> None:
    """Every backend of the cloud's databases terminated while stopped (SIGSTOP), so that none has
    written its FATAL message when the web's threads look at their kept connections' sockets
    (``cloudcore.core.postgresql``), then requests from many clients at once: each request's first
    statement finds its connection closed and is sent again on a new one; none fails."""
    from concurrent.futures import ThreadPoolExecutor

    paths = ["/servers/detail", *(f"/servers/{server_id}" for server_id in servers.values())]

    def burst() -> list[int]:
        with ThreadPoolExecutor(12) as pool:
            return list(pool.map(lambda i: env.api.call("GET", paths[i % len(paths)]).status_code, range(12)))

    assert set(burst() + burst()) == {200}  # every web thread's connections made and kept
    web_log = env.cloud.var_dir / "log" / "web.log"
    recovered_before = web_log.read_text(errors="replace").count("found closed at its first statement")
    with pg_backends_terminated_unheard([env.db.api_url, *env.db.cell_url.values()]):
        statuses = burst()
    assert statuses == [200] * 12
    recovered = web_log.read_text(errors="replace").count("found closed at its first statement") - recovered_before
    assert recovered >= 1, env.cloud.tail(20)
    env.assert_all_running()


def test_recovered_cloud_builds_and_cleans_up(env: Env, servers: dict[str, str]) -> None:
    """After every fault the cloud still builds on the restarted host and through the restarted
    conductor and Redis; deleting every server leaves no allocation, attachment or port."""
    new = env.boot("f-after", "compute1")
    env.api.wait_status(new, "ACTIVE", timeout=120)
    all_ids = [new, *servers.values()]
    for server_id in all_ids:
        env.api.call("DELETE", f"/servers/{server_id}", expect=204)
    for server_id in all_ids:
        wait_for(f"{server_id} to go", lambda sid=server_id: env.api.call("GET", f"/servers/{sid}").status_code == 404,
                 timeout=90)
    env.assert_consistent()
    left = env.db.api(f"SELECT count(*) FROM {env.db.t['Allocation']}")[0][0]
    assert left == 0, env.db.api(f"SELECT * FROM {env.db.t['Allocation']}")
    env.assert_all_running()
