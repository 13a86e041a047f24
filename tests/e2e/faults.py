"""Fault injection for the end-to-end fault suite (tests/e2e/test_faults.py).

``FaultCloud`` starts the same processes as ``manage.py run_cloud`` (web, conductor, beat, volume,
one ``manage.py compute`` per demo host) but each as its own child of the test, so that one can be
frozen (SIGSTOP), killed with SIGKILL and restarted by the test itself while the others keep
running (run_cloud's supervisor would restart it on its own schedule).

To catch an operation *in the middle*, a test holds a row lock (``SELECT ... FOR UPDATE``) on the
row the next step of the operation updates, and waits until the process that runs that step is
blocked on it (``pg_stat_activity`` / ``pg_locks``, matched to the process by its TCP port); the
fault is injected then, so where the operation stops is deterministic, not a matter of timing.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import pytest
import requests

from .cloud import ROOT, LiveCloud, _pg_params, pg_connect

SERVICES_SCRIPT = ROOT / "scripts" / "services.sh"


class ServerFailed(Exception):
    """A server went to ERROR while a test waited for another status."""


def wait_for(what: str, check: Callable[[], Any], timeout: float = 60.0, interval: float = 0.2,
             fatal: type[BaseException] | None = None) -> Any:
    """Poll ``check`` until it returns something truthy; that value is returned. An exception of
    type ``fatal`` ends the wait at once; any other is taken for a fault in progress."""
    deadline = time.monotonic() + timeout
    last_exc: BaseException | None = None
    while time.monotonic() < deadline:
        try:
            value = check()
        except Exception as exc:  # noqa: BLE001 - a fault is in progress: keep polling
            if fatal is not None and isinstance(exc, fatal):
                raise
            last_exc, value = exc, None
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}" + (f" (last error: {last_exc})"
                                                                            if last_exc else ""))


@dataclass
class FaultCloud(LiveCloud):
    children: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    argv: dict[str, list[str]] = field(default_factory=dict)
    child_env: dict[str, dict[str, str]] = field(default_factory=dict)

    def start(self, timeout: float = 240.0) -> None:
        self.manage("migrate", "--verbosity", "0")
        self.manage("demo_setup")
        # the processes run_cloud starts, each with the environment it gives it
        listing = self.manage(
            "shell", "-c", "import json, os; from cloudcore.core.demo import collect_processes, web_process; "
            f"env = dict(os.environ); processes = [web_process('127.0.0.1:{self.port}', env), "
            "*collect_processes(env)]; print(json.dumps([[p.name, p.argv, p.environment(env)] for p in processes]))")
        for name, argv, env in json.loads(listing.strip().splitlines()[-1]):
            self.argv[name], self.child_env[name] = argv, env
        (self.var_dir / "log").mkdir(parents=True, exist_ok=True)
        for name in self.argv:
            self.spawn(name)
        wait_for("the API", lambda: requests.get(f"{self.url}/compute/", timeout=2).status_code == 200, timeout)

    def spawn(self, name: str) -> None:
        log = open(self.var_dir / "log" / f"{name}.log", "ab")  # noqa: SIM115 - owned by the child
        self.children[name] = subprocess.Popen(self.argv[name], cwd=ROOT, env=self.child_env[name], stdout=log,
                                               stderr=subprocess.STDOUT, start_new_session=True)
        log.close()

    def pid(self, name: str) -> int:
        return self.children[name].pid

    def signal(self, name: str, sig: int) -> None:
        os.killpg(self.children[name].pid, sig)

    def freeze(self, name: str) -> None:
        self.signal(name, signal.SIGSTOP)

    def thaw(self, name: str) -> None:
        self.signal(name, signal.SIGCONT)

    def kill9(self, name: str) -> None:
        self.signal(name, signal.SIGKILL)
        self.children[name].wait(timeout=10)

    def restart(self, name: str) -> None:
        assert self.children[name].poll() is not None, f"{name} is still running"
        self.spawn(name)

    def alive(self) -> dict[str, int | None]:
        """name -> exit code of every child (None: running)."""
        return {name: child.poll() for name, child in self.children.items()}

    def stop(self) -> None:
        for child in self.children.values():
            if child.poll() is None:
                try:
                    os.killpg(child.pid, signal.SIGCONT)
                    os.killpg(child.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + 20
        for child in self.children.values():
            try:
                child.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(child.pid, signal.SIGKILL)
                child.wait()

    def tail(self, lines: int = 40) -> str:
        out = []
        for path in sorted((self.var_dir / "log").glob("*.log")):
            text = path.read_text(errors="replace").splitlines()[-lines:]
            out.append(f"--- {path.name}\n" + "\n".join(text))
        return "\n".join(out)

    def reap(self, timeout: int = 2) -> int:
        """Run the stale task_state reaper once (what beat runs every PERIODIC_INTERVAL) with
        TASK_STATE_TIMEOUT lowered to ``timeout`` seconds (the setting's minimum is 60)."""
        out = self.manage("shell", "-c", "from django.conf import settings; "
                          f"settings.TASK_STATE_TIMEOUT = {int(timeout)}; "
                          "from conductor.periodic import reap_stale_task_states; print(reap_stale_task_states())")
        return int(out.strip().splitlines()[-1])


# --- the HTTP APIs -----------------------------------------------------------------------------


class Api:
    """The compute API as one project's user (a Keystone token from clouds.yaml's credentials)."""

    def __init__(self, cloud: LiveCloud, cloud_name: str = "cloudcore-admin") -> None:
        import yaml

        auth = yaml.safe_load(cloud.clouds_yaml.read_text())["clouds"][cloud_name]["auth"]
        body = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
            "name": auth["username"], "password": auth["password"],
            "domain": {"name": auth.get("user_domain_name", "Default")}}}},
            "scope": {"project": {"name": auth["project_name"],
                                  "domain": {"name": auth.get("project_domain_name", "Default")}}}}}
        response = requests.post(f"{cloud.url}/identity/v3/auth/tokens", json=body, timeout=30)
        assert response.status_code == 201, response.text
        self.token = response.headers["X-Subject-Token"]
        self.base = f"{cloud.url}/compute/v2.1"
        self.cloud = cloud

    def call(self, method: str, path: str, body: Any = None, version: str = "2.79",
             expect: int | tuple[int, ...] | None = None) -> requests.Response:
        response = requests.request(method, self.base + path, json=body, timeout=60, headers={
            "X-Auth-Token": self.token, "OpenStack-API-Version": f"compute {version}"})
        if expect is not None:
            wanted = (expect,) if isinstance(expect, int) else expect
            assert response.status_code in wanted, f"{method} {path}: {response.status_code} {response.text}"
        return response

    def server(self, server_id: str) -> dict[str, Any]:
        return self.call("GET", f"/servers/{server_id}", expect=200).json()["server"]

    def wait_status(self, server_id: str, *wanted: str, timeout: float = 90) -> dict[str, Any]:
        """Poll until the server shows one of ``wanted`` with no task; an unwanted ERROR fails at once,
        and either failure says what the server last showed and what every process last logged."""
        last: dict[str, Any] = {}

        def check() -> dict[str, Any] | None:
            shown = last["server"] = self.server(server_id)
            if shown["status"] == "ERROR" and "ERROR" not in wanted:
                raise ServerFailed(shown)
            return shown if shown["status"] in wanted and not shown.get("OS-EXT-STS:task_state") else None

        try:
            return wait_for(f"{server_id} in {wanted}", check, timeout, fatal=ServerFailed)
        except (AssertionError, ServerFailed) as exc:
            shown = last.get("server", {})
            summary = {key: shown.get(key) for key in ("status", "OS-EXT-STS:task_state", "OS-EXT-STS:vm_state",
                                                       "OS-EXT-SRV-ATTR:host", "fault", "updated")}
            raise AssertionError(f"{exc}; the server last showed {summary}\n{self.cloud.tail(25)}") from None


# --- the databases -----------------------------------------------------------------------------


class Databases:
    """Direct reads of the cloud's PostgreSQL databases (a fresh connection per query, so that a
    cell database that was taken down and brought back is simply reconnected)."""

    def __init__(self, api_url: str) -> None:
        from django.apps import apps

        from cloudcore.core.models import CellModel

        self.api_url = api_url
        self.t = {m._meta.object_name: m._meta.db_table for m in apps.get_models()}
        self.per_instance = sorted(
            m._meta.db_table for m in apps.get_models()
            if issubclass(m, CellModel) and any(f.name == "instance_uuid" for f in m._meta.concrete_fields))
        rows = self.api(f"SELECT name, uuid, database_connection FROM {self.t['CellMapping']}")
        self.cell_url = {name: url for name, _, url in rows}
        self.cell_uuid = {name: cell_uuid for name, cell_uuid, _ in rows}

    def _query(self, url: str, query: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        conn = pg_connect(url)
        try:
            with conn.cursor() as cur:
                cur.execute(query, params)
                return cur.fetchall() if cur.description else []
        finally:
            conn.close()

    def api(self, query: str, *params: Any) -> list[tuple[Any, ...]]:
        return self._query(self.api_url, query, params)

    def cell(self, cell: str, query: str, *params: Any) -> list[tuple[Any, ...]]:
        return self._query(self.cell_url[cell], query, params)

    def instance(self, cell: str, uuid: str) -> dict[str, Any] | None:
        conn = pg_connect(self.cell_url[cell])
        try:
            with conn.cursor() as cur:
                cur.execute(f"SELECT uuid, host, vm_state, task_state, hidden, deleted FROM {self.t['Instance']} "
                            "WHERE uuid = %s", (uuid,))
                row = cur.fetchone()
                return dict(zip([c.name for c in cur.description], row, strict=True)) if row else None
        finally:
            conn.close()

    def migrations(self, cell: str, uuid: str) -> list[tuple[str, str, bool]]:
        return [tuple(r) for r in self.cell(
            cell, f"SELECT uuid, status, cross_cell_move FROM {self.t['Migration']} WHERE instance_uuid = %s "
                  "AND NOT deleted ORDER BY id", uuid)]

    def allocations(self, consumer_uuid: str) -> list[tuple[str, str, int]]:
        """(resource provider name, resource class, used) held by ``consumer_uuid``."""
        return sorted(tuple(r) for r in self.api(
            f"SELECT rp.name, rc.name, a.used FROM {self.t['Allocation']} a "
            f"JOIN {self.t['Consumer']} c ON a.consumer_id = c.id "
            f"JOIN {self.t['ResourceProvider']} rp ON a.resource_provider_id = rp.id "
            f"JOIN {self.t['ResourceClass']} rc ON a.resource_class_id = rc.id WHERE c.uuid = %s", consumer_uuid))

    def waiting_on_locks(self, cell: str | None) -> list[tuple[int, int, str]]:
        """(client TCP port, backend pid, query) of every backend of ``cell``'s database (None:
        the API database) waiting on a lock."""
        name = urllib.parse.urlsplit(self.cell_url[cell] if cell else self.api_url).path.lstrip("/")
        return [tuple(r) for r in self.api(
            "SELECT client_port, pid, query FROM pg_stat_activity WHERE datname = %s AND wait_event_type = 'Lock'",
            name)]

    def terminate_backend(self, backend_pid: int) -> None:
        self.api("SELECT pg_terminate_backend(%s)", backend_pid)


def process_ports(pid: int) -> set[int]:
    """Local TCP ports of ``pid`` and its children (gunicorn and prefork pools have children)."""
    ports: set[int] = set()
    try:
        proc = psutil.Process(pid)
        for p in [proc, *proc.children(recursive=True)]:
            ports.update(c.laddr.port for c in p.net_connections(kind="tcp") if c.laddr)
    except psutil.NoSuchProcess:
        pass
    return ports


class RowLock:
    """``SELECT ... FOR UPDATE`` on rows of a table, held until ``release()``."""

    def __init__(self, url: str, table: str, where: str, *params: Any) -> None:
        self.conn = pg_connect(url)
        self.conn.autocommit = False
        with self.conn.cursor() as cur:
            cur.execute(f"SELECT id FROM {table} WHERE {where} FOR UPDATE", params)
            self.rows = cur.fetchall()
        assert self.rows, f"nothing to lock in {table} where {where} {params}"

    def release(self) -> None:
        try:
            self.conn.rollback()
            self.conn.close()
        except Exception:  # noqa: BLE001 - the backend may have been terminated by a fault
            pass


class TableLock(RowLock):
    """``LOCK TABLE ... IN SHARE MODE`` (reads go on, every INSERT/UPDATE waits), held until
    ``release()``: stops a step that creates a row, which no row lock can."""

    def __init__(self, url: str, table: str) -> None:  # noqa: D107 - a RowLock on a whole table
        self.conn = pg_connect(url)
        self.conn.autocommit = False
        with self.conn.cursor() as cur:
            cur.execute(f"LOCK TABLE {table} IN SHARE MODE")
        self.rows = []


#: the head of a statement sent with its ``PREPARE`` (``cloudcore.core.serverprepared``)
_PREPARED = re.compile(r"^PREPARE \S+(?: \([^)]*\))? AS ")


@dataclass
class Blocked:
    backend_pid: int
    query: str

    @property
    def statement(self) -> str:
        """The statement blocked as the process wrote it: a prepared statement's own text when its
        ``PREPARE`` went with it; ``EXECUTE cloudcore_<n>(...)`` when its connection had prepared
        it before (the statement's text is that connection's to know)."""
        return _PREPARED.sub("", self.query)


def wait_blocked(cloud: FaultCloud, db: Databases, cell: str | None, process: str, timeout: float = 30) -> Blocked:
    """Wait until ``process`` waits on a lock in ``cell``'s database (None: the API database).

    After killing the process, ``db.terminate_backend(blocked.backend_pid)`` ends its statement
    before the lock is released, so the step it was blocked on never happens (a dead client's
    backend would otherwise go on and commit it)."""

    def check() -> Blocked | None:
        ports = process_ports(cloud.pid(process))
        for port, backend_pid, query in db.waiting_on_locks(cell):
            if port in ports:
                return Blocked(backend_pid, query)
        return None

    return wait_for(f"{process} to block on the row lock in {cell or 'the API database'}", check, timeout)


# --- infrastructure faults -----------------------------------------------------------------------


def services_dir() -> Path:
    return Path(os.environ.get("CLOUDCORE_SERVICES_DIR", "/tmp/cloudcore-services"))  # noqa: S108 - services.sh's default


def redis_kill9() -> None:
    pid = int((services_dir() / "redis.pid").read_text().strip())
    os.kill(pid, signal.SIGKILL)
    wait_for("redis to die", lambda: not psutil.pid_exists(pid) or psutil.Process(pid).status() == "zombie", 10)
    (services_dir() / "redis.pid").unlink(missing_ok=True)


def redis_start() -> None:
    result = subprocess.run([str(SERVICES_SCRIPT), "start", "redis"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


def pg_database_down(url: str, first: tuple[int, ...] = ()) -> None:
    """Refuse new connections to the database of ``url`` and terminate the open ones, the
    backends ``first`` before the others (e.g. a blocked statement before the lock holder, so
    that the statement never runs)."""
    name = urllib.parse.urlsplit(url).path.lstrip("/")
    admin = _pg_admin(url)
    try:
        with admin.cursor() as cur:
            cur.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
            for backend_pid in first:
                cur.execute("SELECT pg_terminate_backend(%s)", (backend_pid,))
            cur.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s "
                        "AND pid <> pg_backend_pid()", (name,))
    finally:
        admin.close()


def pg_database_up(url: str) -> None:
    name = urllib.parse.urlsplit(url).path.lstrip("/")
    admin = _pg_admin(url)
    try:
        with admin.cursor() as cur:
            cur.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
    finally:
        admin.close()


@contextlib.contextmanager
def pg_backends_terminated_unheard(urls: list[str], thaw_after: float = 0.5) -> Iterator[None]:
    """Every backend of the databases of ``urls`` stopped (SIGSTOP) and terminated, so that none has
    written its FATAL message when a client next looks at its socket; ``thaw_after`` seconds later,
    while the block runs, they are let go on (SIGCONT) and end. Skips the test where this process
    may not signal the server's backends."""
    names = [urllib.parse.urlsplit(url).path.lstrip("/") for url in urls]
    admin = _pg_admin(urls[0])
    stopped: list[int] = []
    try:
        with admin.cursor() as cur:
            cur.execute("SELECT pid FROM pg_stat_activity WHERE datname = ANY(%s) AND pid <> pg_backend_pid()",
                        (names,))
            try:
                for (pid,) in cur.fetchall():
                    os.kill(pid, signal.SIGSTOP)
                    stopped.append(pid)
            except PermissionError:
                pytest.skip("the PostgreSQL server's backends cannot be signalled from here")
            finally:
                cur.execute("SELECT pg_terminate_backend(pid) FROM unnest(%s::int[]) AS pid", (stopped,))
                thaw = threading.Timer(thaw_after, lambda: [_signalled(pid, signal.SIGCONT) for pid in stopped])
                thaw.start()
        yield
        thaw.join()
    finally:
        admin.close()


def _signalled(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def _pg_admin(url: str) -> Any:
    import psycopg2

    conn = psycopg2.connect(**_pg_params(url, "postgres"))
    conn.autocommit = True
    return conn


# --- what must hold once every fault is repaired -------------------------------------------------

#: migrations whose allocations are still legitimately held (in flight, or awaiting confirm/revert)
OPEN_MIGRATION_STATUSES = {"pre-migrating", "migrating", "post-migrating", "finished", "confirming", "reverting"}

#: migrations under way: their server is in a task_state until they end
IN_FLIGHT_MIGRATION_STATUSES = {"pre-migrating", "migrating", "post-migrating"}


def consistency_problems(db: Databases) -> list[str]:
    """Everything that is wrong across the API and cell databases, as readable lines:

    - a live server stuck in a task_state;
    - a mapped server whose visible, live instance row is not in exactly its mapped cell (lost or
      duplicated), a hidden copy outside a cross-cell VERIFY_RESIZE, an instance row with no mapping,
      an unmapped server without a BuildRequest or a BuildRequest of a mapped server;
    - allocations held by a consumer that is neither a live server nor an open migration, a
      migration under way whose server is in no task_state (it would hold its allocations forever);
    - a volume attachment, or a port, of a server that does not exist (any more).
    """
    t = db.t
    problems: list[str] = []
    rows: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    migrations: dict[str, tuple[str, str]] = {}
    moving: dict[str, str] = {}  # migration -> its server
    for cell in db.cell_url:
        for uuid, vm_state, task_state, hidden, deleted in db.cell(
                cell, f"SELECT uuid, vm_state, task_state, hidden, deleted FROM {t['Instance']}"):
            if deleted:
                continue
            rows.setdefault(uuid, []).append((cell, {"vm_state": vm_state, "task_state": task_state,
                                                     "hidden": hidden}))
            if task_state is not None:
                problems.append(f"server {uuid} in {cell} is stuck in task_state {task_state} ({vm_state})")
        for uuid, status, instance_uuid in db.cell(
                cell, f"SELECT uuid, status, instance_uuid FROM {t['Migration']} WHERE NOT deleted"):
            if uuid in migrations and migrations[uuid][1] != status:
                problems.append(f"migration {uuid} is {migrations[uuid][1]} in {migrations[uuid][0]} "
                                f"but {status} in {cell}")
            migrations[uuid] = (cell, status)
            moving[uuid] = instance_uuid
    mappings = {uuid: cell for uuid, cell in db.api(
        f"SELECT m.instance_uuid, c.name FROM {t['InstanceMapping']} m "
        f"LEFT JOIN {t['CellMapping']} c ON m.cell_id = c.id")}
    build_requests = {r[0] for r in db.api(f"SELECT instance_uuid FROM {t['BuildRequest']}")}
    for uuid, cell in mappings.items():
        held = rows.get(uuid, [])
        visible = [c for c, r in held if not r["hidden"]]
        if cell is None:
            if uuid not in build_requests:
                problems.append(f"server {uuid} is mapped to no cell and has no BuildRequest")
            if held:
                problems.append(f"server {uuid} is mapped to no cell but has rows in {[c for c, _ in held]}")
            continue
        if uuid in build_requests:
            problems.append(f"server {uuid} is mapped to {cell} but still has a BuildRequest")
        if not held:
            continue  # deleted (its mapping stays until archived)
        if visible != [cell]:
            problems.append(f"server {uuid} is mapped to {cell} but visible in {visible}")
        mapped_state = dict(held).get(cell, {}).get("vm_state")
        for c, r in held:
            if r["hidden"] and mapped_state != "resized":
                problems.append(f"server {uuid} has a hidden copy in {c} outside VERIFY_RESIZE")
    for uuid in rows:
        if uuid not in mappings:
            problems.append(f"server {uuid} has rows in {[c for c, _ in rows[uuid]]} but no instance mapping")
    live = set(rows)
    for uuid, instance_uuid in moving.items():
        status = migrations[uuid][1]
        if status in IN_FLIGHT_MIGRATION_STATUSES and instance_uuid in live and all(
                r["task_state"] is None for _, r in rows[instance_uuid]):
            problems.append(f"migration {uuid} is still {status} but server {instance_uuid} is not moving "
                            f"(its allocations: {db.allocations(uuid)})")
    for (consumer,) in db.api(f"SELECT DISTINCT c.uuid FROM {t['Allocation']} a JOIN {t['Consumer']} c "
                              "ON a.consumer_id = c.id"):
        if consumer in live:
            continue
        if consumer in migrations:
            if migrations[consumer][1] not in OPEN_MIGRATION_STATUSES:
                problems.append(f"migration {consumer} ended ({migrations[consumer][1]}) but holds "
                                f"{db.allocations(consumer)}")
            continue
        problems.append(f"consumer {consumer} (no live server or migration) holds {db.allocations(consumer)}")
    for att_id, instance_uuid, status in db.api(
            f"SELECT id, instance_uuid, attach_status FROM {t['VolumeAttachment']} WHERE NOT deleted"):
        if instance_uuid and instance_uuid not in live:
            problems.append(f"volume attachment {att_id} ({status}) of missing server {instance_uuid}")
    for port_id, device_id, owner in db.api(
            f"SELECT id, device_id, device_owner FROM {t['Port']} WHERE device_owner LIKE 'compute:%%'"):
        if device_id and device_id not in live:
            problems.append(f"port {port_id} ({owner}) of missing server {device_id}")
    return problems
