"""Isolation you can prove (issue 16, item 3): the live cloud with its compute workers isolated,
each started with its own cell's database URL only and no API database URL in its environment
(``CLOUDCORE_COMPUTE_ISOLATION``, ``cells.agent``). On PostgreSQL (``make test-e2e-postgres``)
each cell's computes connect as a role that may connect to that cell's database only
(``cell_roles``); on SQLite each gets only its cell's file. The CLI suite's flow then runs on this
cloud, a cross-cell resize with confirm and revert included, and no compute log may show an
``IsolationViolation``.

Runs when ``CLOUDCORE_COMPUTE_ISOLATION`` is on for the suite (the compute side must first stop
using the API database: until then the computes refuse to start, IsolationViolation in their logs).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings

from cells.dburl import url_map

from . import test_cli_postgres as postgres_suite
from .cloud import COMPUTE_CELLS, ROOT, LiveCloud, pg_connect
from .livecloud import running_cloud
from .test_cli_cloud import (  # noqa: F401 - the CLI suite's flow, collected again on this cloud
    test_boot_list_and_impossible_flavor,
    test_cross_cell_resize_confirm_then_back_and_revert,
    test_four_hosts_and_hypervisors,
    test_power_actions_and_rebuild,
    test_project_quota_set_enforced_and_reset,
    test_resize_confirm_and_revert,
    test_shelve_offload_unshelve_to_host,
)

ON_POSTGRES = bool(os.environ.get("CLOUDCORE_E2E_DATABASE_URL") and os.environ.get("CLOUDCORE_E2E_BROKER_URL"))

pytestmark = [
    pytest.mark.slow,
    pytest.mark.e2e,
    pytest.mark.skipif(not settings.COMPUTE_ISOLATION,
                       reason="needs CLOUDCORE_COMPUTE_ISOLATION=true (on once the compute side uses no API database)"),
]
postgres_only = pytest.mark.skipif(not ON_POSTGRES, reason="needs make test-e2e-postgres")

HOST_CELLS = {"compute1": "cell1", "compute2": "cell1", "compute3": "cell2", "compute4": "cell2"}


def violations(var_dir: Path) -> list[str]:
    """The IsolationViolation lines of the compute workers' logs."""
    return [f"{path.name}: {line}" for path in sorted((var_dir / "log").glob("compute*.log"))
            for line in path.read_text(errors="replace").splitlines() if "IsolationViolation" in line]


@pytest.fixture(scope="module")
def isolated_cloud(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveCloud]:
    """On PostgreSQL a cloud of its own (each cell's computes connect as that cell's role). On SQLite
    the session's ``live_cloud``: with ``COMPUTE_ISOLATION`` on (the default) its computes already run
    isolated, each with its own cell's file, which is all a second cloud would have."""
    if not ON_POSTGRES:
        cloud: LiveCloud = request.getfixturevalue("live_cloud")
        yield cloud
        found = violations(cloud.var_dir)
        assert not found, "compute workers reached beyond their cell:\n" + "\n".join(found[:40])
        return
    with running_cloud(tmp_path_factory, "isolated-cloud", broker_db=2, isolated_computes=True) as cloud:
        yield cloud
        found = violations(cloud.var_dir)
        assert not found, "compute workers reached beyond their cell:\n" + "\n".join(found[:40])


@pytest.fixture(scope="module")
def cloud(isolated_cloud: LiveCloud) -> LiveCloud:
    return isolated_cloud.wait_computes_up(timeout=120, why="\n".join(violations(isolated_cloud.var_dir)[:40]))


@pytest.fixture(autouse=True)
def _cli_suite_once_on_sqlite(request: pytest.FixtureRequest) -> None:
    if not ON_POSTGRES and request.function.__module__ != __name__:
        pytest.skip("on SQLite the isolated cloud is the session's cloud, where tests/e2e/test_cli_cloud.py runs "
                    "this test; on PostgreSQL (make test-e2e-postgres) it runs here, on a cloud of its own")


def compute_environments(cloud: LiveCloud) -> dict[str, dict[str, str]]:
    """host -> the environment its running compute process was started with (/proc)."""
    processes = json.loads((cloud.var_dir / "processes.json").read_text())["processes"]
    pids = {p["name"]: p["pid"] for p in processes}
    found = {}
    for host in HOST_CELLS:
        raw = Path(f"/proc/{pids[host]}/environ").read_bytes().split(b"\0")
        found[host] = dict(item.decode().partition("=")[::2] for item in raw if item)
    return found


def test_computes_have_only_their_cell_database(cloud: LiveCloud) -> None:
    envs = compute_environments(cloud)
    own_urls = url_map(cloud.env.get("CLOUDCORE_DEMO_COMPUTE_DATABASES", ""))
    for host, cell in HOST_CELLS.items():
        env = envs[host]
        assert not {"CLOUDCORE_DATABASE_URL", "CLOUDCORE_CELL_DATABASES"} & set(env), host
        assert env["CLOUDCORE_COMPUTE_CELL_NAME"] == cell
        url = env["CLOUDCORE_COMPUTE_CELL_DATABASE_URL"]
        if ON_POSTGRES:
            assert url == own_urls[cell]
        else:
            assert url.endswith(f"/{cell}.sqlite3"), url
        assert env["CLOUDCORE_SERVICE_PASSWORD"] and env["CLOUDCORE_BROKER_URL"]
    # each cell's computes name the cell by the uuid of its mapping (in the API database, which they cannot read)
    listed = subprocess.run([sys.executable, "manage.py", "cell_v2", "list_cells"], cwd=ROOT, env=cloud.env,
                            capture_output=True, text=True, check=True).stdout
    for host, cell in HOST_CELLS.items():
        row = next(line for line in listed.splitlines() if f"| {cell} " in line)
        assert envs[host]["CLOUDCORE_COMPUTE_CELL"] in row, (host, row)


@postgres_only
def test_cell_roles_reach_only_their_own_cell_database(cloud: LiveCloud) -> None:
    import psycopg2

    api_url = cloud.env["CLOUDCORE_DATABASE_URL"]
    own_urls = url_map(cloud.env["CLOUDCORE_DEMO_COMPUTE_DATABASES"])
    assert sorted(own_urls) == sorted(COMPUTE_CELLS)
    api_name = api_url.rsplit("/", 1)[1]
    for cell, url in own_urls.items():
        conn = pg_connect(url)  # its own cell's database: it reads and writes the cloud's tables
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT host FROM hosts_service WHERE \"binary\" = 'nova-compute'")
                assert sorted(r[0] for r in cur.fetchall()) == sorted(h for h, c in HOST_CELLS.items() if c == cell)
                cur.execute("UPDATE hosts_service SET report_count = report_count WHERE false")  # needs UPDATE
        finally:
            conn.close()
        prefix, _, _ = url.rpartition("/")
        for other in (api_name, *(f"{api_name}_{c}" for c in ("cell0", *COMPUTE_CELLS) if c != cell)):
            with pytest.raises(psycopg2.OperationalError, match="permission denied for database"):
                pg_connect(f"{prefix}/{other}")


@postgres_only
def test_cross_cell_resize_databases(cloud: LiveCloud) -> None:
    """The PostgreSQL suite's cross-cell resize, confirm and revert with its reads of every database."""
    postgres_suite.test_cross_cell_resize_on_postgres_and_redis(cloud)
