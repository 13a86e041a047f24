"""Seed 2 with real processes: ``manage.py compute`` on a private var dir (its own SQLite API
and cell databases). Each refusal exits non-zero with the reference's message and leaves the
databases and the identity file exactly as they were."""
from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[3]


class Site:
    def __init__(self, var: Path) -> None:
        self.var = var
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("CLOUDCORE_")}
        self.env.update(CLOUDCORE_VAR_DIR=str(var), DJANGO_SETTINGS_MODULE="cloudcore.settings",
                        CLOUDCORE_SECRET_KEY="x", CLOUDCORE_NOTIFICATIONS_ENABLED="false",
                        # no web server nor conductor here: placement answers through the process's
                        # own WSGI handler and the cast to the conductor runs in-process
                        CLOUDCORE_SERVICE_TRANSPORT="inprocess", CLOUDCORE_CELERY_EAGER="true")

    def manage(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=self.env, capture_output=True,
                              text=True, timeout=120)

    def compute(self, host: str, *extra: str, state: str = "compute1") -> subprocess.CompletedProcess[str]:
        return self.manage("compute", "--host", host, "--cell", "cell1", "--state-path", str(self.var / state),
                           "--vcpus", "4", *extra)

    def snapshot(self) -> dict[str, list[tuple]]:
        out = {}
        for db, tables in (("cell1.sqlite3", ("hosts_service", "hosts_computenode")),
                           ("api.sqlite3", ("cells_hostmapping", "scheduling_resourceprovider"))):
            with sqlite3.connect(self.var / db) as conn:
                for table in tables:
                    out[table] = sorted(conn.execute(f"SELECT * FROM {table}").fetchall())  # noqa: S608
        return out

    def identity(self, state: str = "compute1") -> Path:
        return self.var / state / "compute_id"


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    var = tmp_path_factory.mktemp("identity-template")
    site = Site(var)
    assert site.manage("migrate", "--api-only", "-v0").returncode == 0
    assert site.manage("cell_v2", "map_cell0").returncode == 0
    made = site.manage("cell_v2", "create_cell", "--name", "cell1", "--database_connection",
                       f"sqlite:///{var}/cell1.sqlite3")
    assert made.returncode == 0, made.stderr
    return var


@pytest.fixture
def site(template: Path, tmp_path: Path) -> Iterator[Site]:
    import shutil

    var = tmp_path / "var"
    shutil.copytree(template, var)
    with sqlite3.connect(var / "api.sqlite3") as conn:  # the copies' cells point at the copies
        conn.execute("UPDATE cells_cellmapping SET database_connection = replace(database_connection, ?, ?)",
                     (str(template), str(var)))
    yield Site(var)


def registered(site: Site) -> str:
    first = site.compute("compute1", "--register-only")
    assert first.returncode == 0, first.stderr
    return site.identity().read_text().strip()


def refused(site: Site, result: subprocess.CompletedProcess[str], before: dict, message: str) -> None:
    assert result.returncode != 0
    assert message in result.stderr, result.stderr
    assert site.snapshot() == before


def test_greenfield_start_writes_the_identity_once_and_restarts(site: Site) -> None:
    node_uuid = registered(site)
    assert str(uuid.UUID(node_uuid)) == node_uuid
    rows = site.snapshot()
    assert len(rows["hosts_computenode"]) == 1 and len(rows["hosts_service"]) == 1
    assert any(r for r in rows["scheduling_resourceprovider"] if node_uuid in r)
    # a restart keeps the same identity and the same rows
    again = site.compute("compute1", "--register-only")
    assert again.returncode == 0, again.stderr
    assert site.identity().read_text().strip() == node_uuid
    assert len(site.snapshot()["hosts_computenode"]) == 1


def test_preprovisioned_identity_is_used(site: Site) -> None:
    wanted = str(uuid.uuid4())
    (site.var / "compute1").mkdir(parents=True, exist_ok=True)
    site.identity().write_text(f"  {wanted}\n")
    assert site.compute("compute1", "--register-only").returncode == 0
    assert site.identity().read_text().strip() == wanted
    assert any(wanted in r for r in site.snapshot()["hosts_computenode"])


def test_host_rename_is_refused(site: Site) -> None:
    node_uuid = registered(site)
    before = site.snapshot()
    result = site.compute("compute1-renamed", "--check-only")
    refused(site, result, before, f"My node {node_uuid} has host 'compute1' but my host is 'compute1-renamed'")
    # the refusal is left for operators in the host's state path (the console lists it)
    record = json.loads((site.var / "compute1" / "startup-refusal.json").read_text())
    assert record["host"] == "compute1-renamed" and "Possible rename detected" in record["message"]
    # and a good start clears it
    assert site.compute("compute1", "--check-only").returncode == 0
    assert not (site.var / "compute1" / "startup-refusal.json").exists()


def test_hypervisor_hostname_change_is_refused(site: Site) -> None:
    node_uuid = registered(site)
    sidecar = site.var / "compute1" / "hypervisor.json"
    data = json.loads(sidecar.read_text())
    sidecar.write_text(json.dumps({**data, "hostname": "compute1.new.example"}))
    before = site.snapshot()
    result = site.compute("compute1", "--register-only")
    refused(site, result, before, f"My compute node {node_uuid} has hypervisor_hostname compute1 but virt driver "
                                  "reports it should be compute1.new.example. Possible rename detected")


def test_lost_identity_file_is_refused(site: Site) -> None:
    registered(site)
    site.identity().unlink()
    before = site.snapshot()
    result = site.compute("compute1", "--register-only")
    refused(site, result, before, "Refusing to start after potentially having lost that state!")
    assert not site.identity().exists()


def test_corrupt_identity_file_is_refused(site: Site) -> None:
    registered(site)
    site.identity().write_text("not-a-uuid\n")
    before = site.snapshot()
    refused(site, site.compute("compute1", "--register-only"), before, "Unable to parse UUID from")


def test_disagreeing_identity_files_are_refused(site: Site) -> None:
    node_uuid = registered(site)
    config = site.var / "etc" / "nova.conf"
    config.parent.mkdir()
    config.write_text("[DEFAULT]\n")
    other = str(uuid.uuid4())
    (config.parent / "compute_id").write_text(other)
    before = site.snapshot()
    result = site.compute("compute1", "--register-only", "--config", str(config))
    refused(site, result, before, f"UUID {node_uuid} in {site.identity()} does not match {other}")


def test_changed_uuid_is_a_duplicate_node(site: Site) -> None:
    registered(site)
    site.identity().write_text(str(uuid.uuid4()))
    before = site.snapshot()
    refused(site, site.compute("compute1", "--register-only"), before,
            "Duplicate compute node record found for host compute1 node compute1")


def test_new_service_over_existing_guests_is_refused(site: Site) -> None:
    state = site.var / "fresh"
    state.mkdir()
    (state / "node.xml").write_text(
        "<node><cpu><mhz>2400</mhz><model>t</model><nodes>1</nodes><sockets>1</sockets><cores>4</cores>"
        "<threads>1</threads><active>4</active></cpu><memory>8388608</memory>"
        "<domain type='test'><name>instance-11111111-2222-3333-4444-555555555555</name><memory>65536</memory>"
        "<os><type>hvm</type></os></domain></node>")
    (state / "hypervisor.json").write_text(json.dumps({"hostname": "fresh", "disk_gb": 40}))
    before = site.snapshot()
    result = site.compute("fresh", "--register-only", state="fresh")
    refused(site, result, before, "My hypervisor has existing instances, but I appear to be a new service")
    assert not (state / "compute_id").exists()


def test_upgrade_from_before_identity_persists_the_one_node(site: Site) -> None:
    node_uuid = registered(site)
    site.identity().unlink()
    with sqlite3.connect(site.var / "cell1.sqlite3") as conn:
        conn.execute("UPDATE hosts_service SET version = 60")
    assert site.compute("compute1", "--register-only").returncode == 0
    assert site.identity().read_text().strip() == node_uuid


def test_upgrade_with_two_nodes_is_refused(site: Site) -> None:
    registered(site)
    site.identity().unlink()
    with sqlite3.connect(site.var / "cell1.sqlite3") as conn:
        conn.execute("UPDATE hosts_service SET version = 60")
        cols = [r[1] for r in conn.execute("PRAGMA table_info(hosts_computenode)")]
        row = list(conn.execute("SELECT * FROM hosts_computenode").fetchone())
        row[cols.index("id")] = None
        row[cols.index("uuid")] = str(uuid.uuid4())
        row[cols.index("hypervisor_hostname")] = "compute1-b"
        conn.execute(f"INSERT INTO hosts_computenode VALUES ({','.join('?' * len(row))})", row)  # noqa: S608
    before = site.snapshot()
    refused(site, site.compute("compute1", "--register-only"), before,
            "Multiple nodes found in database, manual node uuid configuration required")


def test_a_plain_host_rename_with_the_default_state_path_is_refused(site: Site) -> None:
    """Seed 2 without pinning ``--state-path``: the compute_id lives in the machine's state path
    (``STATE_PATH``, as Nova's /var/lib/nova), whatever the host is called."""
    first = site.manage("compute", "--host", "compute1", "--cell", "cell1", "--vcpus", "4", "--register-only")
    assert first.returncode == 0, first.stderr
    identity = site.var / "state" / "compute_id"
    node_uuid = identity.read_text().strip()
    before = site.snapshot()
    renamed = site.manage("compute", "--host", "compute1-renamed", "--cell", "cell1", "--vcpus", "4",
                          "--register-only")
    refused(site, renamed, before, f"My node {node_uuid} has host 'compute1' but my host is 'compute1-renamed'")
    assert identity.read_text().strip() == node_uuid
