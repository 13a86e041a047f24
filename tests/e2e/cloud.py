"""A live cloudcore for end-to-end tests: ``manage.py run_cloud`` (what ``make run`` runs) in a
private var dir on a free port, with every process real (web, conductor, compute workers, ...).

``LiveCloud.openstack("server", "list", cloud="cloudcore-demo")`` runs the real ``openstack``
CLI against it with the ``clouds.yaml`` the demo setup wrote.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class LiveCloud:
    var_dir: Path
    port: int
    env: dict[str, str]
    process: subprocess.Popen[bytes] | None = None
    log_path: Path = field(init=False)
    #: openstacksdk connections by cloud name (``sdk``), kept for the cloud's life
    connections: dict[str, Any] = field(init=False, default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self.log_path = self.var_dir / "run_cloud.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def clouds_yaml(self) -> Path:
        return self.var_dir / "clouds.yaml"

    def start(self, timeout: float = 240.0) -> None:
        log = open(self.log_path, "ab")  # noqa: SIM115 - closed with the process
        self.process = subprocess.Popen(
            [sys.executable, "manage.py", "run_cloud", "--bind", f"127.0.0.1:{self.port}"],
            cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"run_cloud exited with {self.process.returncode}:\n{self.tail()}")
            try:
                with urllib.request.urlopen(f"{self.url}/compute/", timeout=2) as response:  # noqa: S310
                    # run_cloud says so once every demo host is mapped, as a user would see it
                    if response.status == 200 and self.clouds_yaml.exists() and self.says_running():
                        return
            except OSError:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"run_cloud did not come up in {timeout}s:\n{self.tail()}")

    def says_running(self) -> bool:
        return self.log_path.exists() and b"cloudcore is running:" in self.log_path.read_bytes()

    def stop(self) -> None:
        self.close_connections()
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGINT)
        try:
            self.process.wait(timeout=40)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def tail(self, lines: int = 80) -> str:
        out = []
        for path in [self.log_path, *sorted((self.var_dir / "log").glob("*.log"))]:
            if path.exists():
                text = path.read_text(errors="replace").splitlines()[-lines:]
                out.append(f"--- {path.name}\n" + "\n".join(text))
        return "\n".join(out)

    def openstack(self, *args: str, cloud: str = "cloudcore-demo", check: bool = True,
                  timeout: float = 180.0) -> subprocess.CompletedProcess[str]:
        """Run the ``openstack`` CLI (``-f json`` added when the command lists/shows)."""
        exe = shutil.which("openstack", path=str(Path(sys.executable).parent)) or "openstack"
        env = {**os.environ, "OS_CLIENT_CONFIG_FILE": str(self.clouds_yaml), "OS_CLOUD": cloud}
        for key in list(env):
            if key.startswith("OS_") and key not in ("OS_CLIENT_CONFIG_FILE", "OS_CLOUD"):
                env.pop(key)
        result = subprocess.run([exe, *args], env=env, capture_output=True, text=True, timeout=timeout)
        if check and result.returncode != 0:
            raise AssertionError(
                f"openstack {' '.join(args)} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
                f"\n{self.tail(40)}"
            )
        return result

    def manage(self, *args: str, timeout: float = 180.0) -> str:
        """Run ``manage.py`` against this cloud (its environment: same databases); its stdout."""
        result = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=self.env, capture_output=True,
                                text=True, timeout=timeout)
        assert result.returncode == 0, f"manage.py {' '.join(args[:2])} failed:\n{result.stdout}\n{result.stderr}"
        return result.stdout

    def openstack_json(self, *args: str, cloud: str = "cloudcore-demo") -> Any:
        return json.loads(self.openstack(*args, "-f", "json", cloud=cloud).stdout)

    def sdk(self, cloud: str = "cloudcore-demo") -> Any:
        """An openstacksdk connection as ``cloud`` from this cloud's ``clouds.yaml``, kept (one
        token) until ``stop``. For the waits between the CLI steps a test checks: polling with the
        CLI pays its start-up (1-3 s on a loaded 2-core machine) on every poll, an SDK GET a few ms."""
        if cloud not in self.connections:
            from .traffic import connect

            self.connections[cloud] = connect(self, cloud)
        return self.connections[cloud]

    def close_connections(self) -> None:
        for conn in self.connections.values():
            conn.close()
        self.connections.clear()

    def poll(self, fetch: Callable[[Any], Any], done: Callable[[Any], bool], what: str, *,
             cloud: str = "cloudcore-demo", timeout: float = 60.0, interval: float = 0.5) -> Any:
        """``fetch(connection)`` (an openstacksdk connection as ``cloud``) once ``done`` says yes of
        it; AssertionError naming ``what``, the last value and the logs past ``timeout``."""
        conn = self.sdk(cloud)
        deadline = time.monotonic() + timeout
        while True:
            value = fetch(conn)
            if done(value):
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"{what}: still {value!r} after {timeout:.0f} s\n{self.tail(40)}")
            time.sleep(interval)

    def server_status(self, name: str, *wanted: str | None, cloud: str = "cloudcore-demo",
                      timeout: float = 90) -> str | None:
        """The status of server ``name`` (None: there is none) once it is one of ``wanted``, polled
        with openstacksdk: the wait is not what a CLI test checks, the ``show`` after it is."""
        status: str | None = self.poll(
            lambda conn: getattr(conn.compute.find_server(name, ignore_missing=True), "status", None),
            lambda status: status in wanted, f"server {name} to be one of {wanted}", cloud=cloud, timeout=timeout)
        return status

    def volume_status(self, kind: str, name: str, *wanted: str | None, cloud: str = "cloudcore-demo",
                      timeout: float = 60) -> str | None:
        """The status of the ``kind`` (volume, snapshot, backup, group, group_snapshot) ``name``
        (None: there is none) once it is one of ``wanted``, polled with openstacksdk."""
        def fetch(conn: Any) -> str | None:
            return getattr(getattr(conn.block_storage, f"find_{kind}")(name, ignore_missing=True), "status", None)

        status: str | None = self.poll(fetch, lambda status: status in wanted, f"{kind} {name} to be one of {wanted}",
                                       cloud=cloud, timeout=timeout)
        return status

    def wait_computes_up(self, timeout: float = 90, hosts: int = 4, why: str = "") -> LiveCloud:
        """This cloud, once ``hosts`` compute services are up (polled with openstacksdk: no CLI start
        per poll); AssertionError (with the logs and ``why``) otherwise."""
        def up(conn: Any) -> int:
            return len([s for s in conn.compute.services() if s.binary == "nova-compute" and s.state == "up"])

        try:
            self.poll(up, lambda count: count == hosts, f"{hosts} compute hosts to come up", cloud="cloudcore-admin",
                      timeout=timeout, interval=1)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{why}") from None
        return self


def make_env(var_dir: Path, port: int, *, external: bool = True, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLOUDCORE_")}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    env.update({
        "CLOUDCORE_VAR_DIR": str(var_dir),
        "CLOUDCORE_PUBLIC_URL": f"http://127.0.0.1:{port}",
        "CLOUDCORE_ADMIN_PASSWORD": "admin-secret",
        "CLOUDCORE_DEMO_PASSWORD": "demo-secret",
        "CLOUDCORE_SECRET_KEY": "e2e-only-secret",
        "DJANGO_SETTINGS_MODULE": "cloudcore.settings",
        # the console proxies: ports of their own, so that clouds up at once do not fight over them
        "CLOUDCORE_NOVNCPROXY_PORT": str(free_port()),
        "CLOUDCORE_SERIALPROXY_PORT": str(free_port()),
    })
    # Real PostgreSQL / Redis when make test started them (see the Makefile); SQLite otherwise.
    # The fixture that creates fresh PostgreSQL databases passes CLOUDCORE_DATABASE_URL in ``extra``.
    for key in ("CLOUDCORE_BROKER_URL", "CLOUDCORE_DATABASE_URL") if external else ():
        if os.environ.get("CLOUDCORE_E2E_" + key[len("CLOUDCORE_"):]):
            env[key] = os.environ["CLOUDCORE_E2E_" + key[len("CLOUDCORE_"):]]
    env.update(extra)
    return env


#: The cell databases ``cells.demo`` puts next to the API database (``<api name>_<cell>``).
DEMO_CELL_NAMES = ("cell0", "cell1", "cell2")


@contextmanager
def fresh_postgres_databases(base_url: str) -> Iterator[str]:
    """Create a fresh API database ``<name>_<unix time>_<random>`` and its demo cell databases
    (``..._cell0``, ``..._cell1``, ``..._cell2``) on the server of ``base_url``; yield the API
    database URL; drop them all afterwards. ``cell_v2 create_cell`` does not create databases."""
    import psycopg2
    from psycopg2 import sql

    parsed = urllib.parse.urlsplit(base_url)
    base_name = parsed.path.lstrip("/") or "cloudcore_e2e"
    api_name = f"{base_name}_{int(time.time())}_{uuid.uuid4().hex[:6]}"
    names = [api_name, *(f"{api_name}_{cell}" for cell in DEMO_CELL_NAMES)]
    admin = psycopg2.connect(**_pg_params(base_url, "postgres"))
    admin.autocommit = True
    try:
        with admin.cursor() as cur:
            _drop_stale(cur, base_name)
            for name in names:
                cur.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        try:
            yield urllib.parse.urlunsplit(parsed._replace(path=f"/{api_name}"))
        finally:
            with admin.cursor() as cur:
                for name in names:
                    cur.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
    finally:
        admin.close()


def _drop_stale(cur: Any, base_name: str, max_age: float = 3 * 3600) -> None:
    """Drop what an interrupted earlier run left behind: ``<base>_<unix time>_...`` databases
    older than ``max_age`` seconds (a run that is still going is never that old)."""
    from psycopg2 import sql

    cur.execute("SELECT datname FROM pg_database WHERE datname LIKE %s",
                (base_name.replace("_", r"\_") + r"\_%",))
    for (name,) in cur.fetchall():
        stamp = name[len(base_name) + 1:].split("_", 1)[0]
        if stamp.isdigit() and int(stamp) < time.time() - max_age:
            cur.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
    # the cell roles of ``cell_roles`` (named after their databases), now that those are gone
    cur.execute("SELECT rolname FROM pg_roles WHERE rolname LIKE %s", (base_name.replace("_", r"\_") + r"\_%",))
    for (name,) in cur.fetchall():
        stamp = name[len(base_name) + 1:].split("_", 1)[0]
        if stamp.isdigit() and int(stamp) < time.time() - max_age:
            cur.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(name)))


def _pg_params(url: str, dbname: str) -> dict[str, Any]:
    parsed = urllib.parse.urlsplit(url)
    return {"host": parsed.hostname or "127.0.0.1", "port": parsed.port or 5432,
            "user": urllib.parse.unquote(parsed.username or "postgres"),
            "password": urllib.parse.unquote(parsed.password or "") or None, "dbname": dbname}


def pg_connect(database_url: str) -> Any:
    """A psycopg2 connection (autocommit) to the database named in ``database_url``."""
    import psycopg2

    conn = psycopg2.connect(**_pg_params(database_url, urllib.parse.urlsplit(database_url).path.lstrip("/")))
    conn.autocommit = True
    return conn



#: The cells that have compute hosts in the demo cloud.
COMPUTE_CELLS = ("cell1", "cell2")


def _database_url(url: str, name: str, userinfo: str | None = None) -> str:
    """``url`` naming database ``name`` (and, given ``userinfo``, connecting as that user)."""
    parsed = urllib.parse.urlsplit(url)
    netloc = parsed.netloc if userinfo is None else f"{userinfo}@{parsed.netloc.rsplit('@', 1)[-1]}"
    return urllib.parse.urlunsplit(parsed._replace(netloc=netloc, path=f"/{name}"))


def _execute(url: str, *statements: Any) -> None:
    conn = pg_connect(url)
    try:
        with conn.cursor() as cur:
            for statement in statements:
                cur.execute(statement)
    finally:
        conn.close()


@contextmanager
def cell_roles(api_url: str) -> Iterator[dict[str, str]]:
    """For the databases of ``fresh_postgres_databases`` (API database ``api_url``): a login role per
    compute cell (``<api database>_<cell>``) that may connect only to its cell's database (CONNECT
    revoked from PUBLIC on every database of the cloud and granted to the cell's role on its own)
    and may read and write the tables ``migrate`` creates there later (default privileges of the
    migrating user). Enter it before the cloud migrates. Yields {cell name: database URL as that
    role}; the roles are dropped afterwards."""
    from psycopg2 import sql

    api_name = urllib.parse.urlsplit(api_url).path.lstrip("/")
    roles = {cell: f"{api_name}_{cell}" for cell in COMPUTE_CELLS}
    revoke = [sql.SQL("REVOKE CONNECT ON DATABASE {} FROM PUBLIC").format(sql.Identifier(name))
              for name in (api_name, *(f"{api_name}_{cell}" for cell in DEMO_CELL_NAMES))]
    _execute(api_url, *revoke)
    urls: dict[str, str] = {}
    try:
        for cell, role in roles.items():
            password = uuid.uuid4().hex
            who = sql.Identifier(role)
            _execute(api_url, sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(who, sql.Literal(password)),
                     sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(sql.Identifier(role), who))
            _execute(_database_url(api_url, role),
                     sql.SQL("GRANT USAGE ON SCHEMA public TO {}").format(who),
                     sql.SQL("ALTER DEFAULT PRIVILEGES IN SCHEMA public "
                             "GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO {}").format(who),
                     sql.SQL("ALTER DEFAULT PRIVILEGES IN SCHEMA public "
                             "GRANT USAGE, SELECT, UPDATE ON SEQUENCES TO {}").format(who))
            urls[cell] = _database_url(api_url, role, userinfo=f"{role}:{password}")
        yield urls
    finally:
        admin = pg_connect(api_url)
        try:
            with admin.cursor() as cur:
                cur.execute("SELECT rolname FROM pg_roles WHERE rolname = ANY(%s)", (list(roles.values()),))
                made = [row[0] for row in cur.fetchall()]
        finally:
            admin.close()
        for role in made:  # what it holds in its cell's database (default privileges included), then itself
            _execute(_database_url(api_url, role), sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
            _execute(api_url, sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))
