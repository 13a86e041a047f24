"""``manage.py compute`` isolated: configured with its cell's uuid and database URL only
(``cells.agent``), no API database URL. It checks its start-up against its own cell database
without opening the API database, and a use of the API database fails loudly."""
from __future__ import annotations

import sqlite3
import subprocess

import pytest

from . import test_node_identity_processes as identity_processes
from .test_node_identity_processes import Site, registered

pytestmark = pytest.mark.slow
# the var dir of seed 2's process tests: an API database with cell1 mapped, and cell1's database
template = identity_processes.template
site = identity_processes.site


def cell_uuid(site: Site, name: str = "cell1") -> str:
    with sqlite3.connect(site.var / "api.sqlite3") as conn:
        return str(conn.execute("SELECT uuid FROM cells_cellmapping WHERE name = ?", (name,)).fetchone()[0])


def isolated(site: Site, **extra: str) -> Site:
    """``site`` whose processes get only cell1's database (the API database file moved away)."""
    env = {"CLOUDCORE_COMPUTE_CELL": cell_uuid(site), "CLOUDCORE_COMPUTE_CELL_NAME": "cell1",
           "CLOUDCORE_COMPUTE_CELL_DATABASE_URL": f"sqlite:///{site.var}/cell1.sqlite3", **extra}
    (site.var / "api.sqlite3").rename(site.var / "api.sqlite3.away")
    other = Site(site.var)
    other.env.update({k: v for k, v in env.items() if v})
    return other


def cell_rows(site: Site) -> list[tuple]:
    with sqlite3.connect(site.var / "cell1.sqlite3") as conn:
        return sorted(conn.execute("SELECT * FROM hosts_computenode").fetchall())


def test_isolated_start_up_checks_read_only_the_own_cell(site: Site) -> None:
    node_uuid = registered(site)
    before = cell_rows(site)
    agent = isolated(site)
    checked = agent.compute("compute1", "--check-only")
    assert checked.returncode == 0, checked.stderr
    assert f"start-up checks passed (node {node_uuid})" in checked.stdout
    # a refusal is found in the cell database too
    renamed = agent.compute("compute1-renamed", "--check-only")
    assert renamed.returncode != 0
    assert f"My node {node_uuid} has host 'compute1' but my host is 'compute1-renamed'" in renamed.stderr
    # the API database was never opened (SQLite would have created an empty file) and nothing was written
    assert not (site.var / "api.sqlite3").exists()
    assert cell_rows(site) == before


def test_isolated_process_has_no_api_database(site: Site) -> None:
    agent = isolated(site)

    def shell(code: str) -> subprocess.CompletedProcess[str]:
        return agent.manage("shell", "-c", code)

    # default is an empty in-memory database: any query of an API table fails
    bare = shell("from django.conf import settings; print(settings.DATABASES['default']['NAME']); "
                 "from cells.models import CellMapping; CellMapping.objects.count()")
    assert bare.stdout.splitlines()[-1] == ":memory:" and "no such table: cells_cellmapping" in bare.stderr, bare
    # and as the compute agent of its cell (what manage.py compute makes it) the router refuses first
    agent_mark = shell("from cells.agent import enter_configured_cell; enter_configured_cell(); "
                       "from cells.models import CellMapping; CellMapping.objects.count()")
    assert "IsolationViolation: the compute agent of cell cell1 must not use the API database" in agent_mark.stderr
    assert not (site.var / "api.sqlite3").exists()


@pytest.mark.parametrize(("extra", "args", "message"), [
    ({"CLOUDCORE_DATABASE_URL": "sqlite:////tmp/api.sqlite3"}, (), "gets only its cell's database"),
    ({"CLOUDCORE_COMPUTE_CELL": "cell1"}, (), "must be the cell's uuid"),
    ({"CLOUDCORE_COMPUTE_CELL_DATABASE_URL": ""}, (), "go together"),
    ({}, ("--cell", "cell2"), "--cell cell2 is not this compute's cell"),
])
def test_isolated_configuration_mistakes_are_refused(site: Site, extra: dict[str, str], args: tuple[str, ...],
                                                     message: str) -> None:
    agent = isolated(site)
    for key, value in extra.items():
        if value:
            agent.env[key] = value
        else:
            agent.env.pop(key)
    result = agent.manage("compute", "--host", "compute1", "--state-path", str(site.var / "compute1"),
                          "--check-only", *args)
    assert result.returncode != 0
    assert message in result.stderr, result.stderr
