"""cells.agent: an isolated compute's cell from its settings, and the environment that starts one;
compute.demo hands that environment to the demo compute hosts when COMPUTE_ISOLATION is on."""
from __future__ import annotations

import pytest

from cells.agent import API_ONLY_ENV, configured_cell, isolated_environment
from cells.models import CellMapping
from cloudcore.core.demo import DemoProcess
from cloudcore.core.exceptions import InvalidConfiguration
from compute import demo as compute_demo
from tests.conftest import ALL_DATABASES

CELL_UUID = "0b5a1c4e-4d2f-4f55-9a43-0f3e8c2a9b11"


def test_no_configured_cell_when_the_process_has_the_api_database(settings):
    settings.COMPUTE_CELL, settings.COMPUTE_CELL_DATABASE_URL = "", ""
    assert configured_cell() is None


def test_configured_cell_is_built_from_the_settings_alone(settings):
    # (no database access is allowed in this test: a query would raise)
    settings.COMPUTE_CELL, settings.COMPUTE_CELL_NAME = CELL_UUID.upper(), "cell7"
    settings.COMPUTE_CELL_DATABASE_URL = "postgres://cell7@db/cell7"
    cell = configured_cell()
    assert cell is not None and cell.pk is None
    assert (cell.uuid, cell.name, cell.database_connection) == (CELL_UUID, "cell7", "postgres://cell7@db/cell7")


def test_configured_cell_must_be_named_by_uuid(settings):
    settings.COMPUTE_CELL, settings.COMPUTE_CELL_DATABASE_URL = "cell1", "sqlite:////tmp/cell1.sqlite3"
    with pytest.raises(InvalidConfiguration, match="must be the cell's uuid"):
        configured_cell()


def test_isolated_environment_has_the_cell_database_and_no_api_database(settings):
    settings.SERVICE_USER_NAME, settings.SERVICE_PASSWORD = "svc", "svc-secret"
    cell = CellMapping(uuid=CELL_UUID, name="cell1", database_connection="postgres://api-user@db/cell1")
    env = {"PATH": "/bin", "CLOUDCORE_DATABASE_URL": "postgres://api-user@db/api",
           "CLOUDCORE_CELL_DATABASES": "cell1=postgres://api-user@db/cell1",
           "CLOUDCORE_DEMO_COMPUTE_DATABASES": "cell1=postgres://cell1-role@db/cell1",
           "CLOUDCORE_PUBLIC_URL": "http://10.0.0.1:8000/", "CLOUDCORE_BROKER_URL": "redis://broker:6379/0"}

    isolated = isolated_environment(env, cell=cell)
    assert not set(API_ONLY_ENV) & set(isolated)
    assert isolated["PATH"] == "/bin"
    assert isolated["CLOUDCORE_COMPUTE_CELL"] == CELL_UUID
    assert isolated["CLOUDCORE_COMPUTE_CELL_NAME"] == "cell1"
    assert isolated["CLOUDCORE_COMPUTE_CELL_DATABASE_URL"] == "postgres://api-user@db/cell1"
    assert isolated["CLOUDCORE_BROKER_URL"] == "redis://broker:6379/0"
    assert (isolated["CLOUDCORE_SERVICE_USER_NAME"], isolated["CLOUDCORE_SERVICE_PASSWORD"]) == ("svc", "svc-secret")
    assert isolated["CLOUDCORE_SERVICE_AUTH_URL"] == "http://10.0.0.1:8000/identity/v3"
    # a URL of its own (a role that may reach only this cell's database) wins over the mapping's
    own = isolated_environment(env, cell=cell, database_url="postgres://cell1-role@db/cell1")
    assert own["CLOUDCORE_COMPUTE_CELL_DATABASE_URL"] == "postgres://cell1-role@db/cell1"


def test_demo_process_environment_drops_what_it_must_not_get():
    proc = DemoProcess("c", ["x"], env={"B": "2", "C": "3"}, unset=("A", "C"))
    assert proc.environment({"A": "1", "B": "1", "D": "4"}) == {"B": "2", "D": "4", "CLOUDCORE_PROCESS_NAME": "c"}


@pytest.mark.django_db(databases=ALL_DATABASES)
@pytest.mark.parametrize("isolated", [False, True])
def test_demo_compute_hosts_run_isolated_with_compute_isolation(cells, settings, isolated):
    settings.COMPUTE_ISOLATION = isolated
    settings.DEMO_COMPUTE_DATABASES = {"cell2": "sqlite:////elsewhere/cell2.sqlite3"}
    base = {"CLOUDCORE_DATABASE_URL": "sqlite:////var/api.sqlite3", "PATH": "/bin"}
    procs = {p.name: p for p in compute_demo.processes(base)}
    assert sorted(procs) == ["compute1", "compute2", "compute3", "compute4"]
    envs = {name: proc.environment(base) for name, proc in procs.items()}
    # each keeps its connections between tasks (as the web and the conductor), named after itself
    for name, env in envs.items():
        assert (env["CLOUDCORE_DB_CONN_MAX_AGE"], env["CLOUDCORE_PROCESS_NAME"]) == ("300", name)
    if not isolated:
        assert all(env == {**base, "CLOUDCORE_DB_CONN_MAX_AGE": "300", "CLOUDCORE_PROCESS_NAME": name}
                   for name, env in envs.items())
        return
    for name, cell in (("compute1", "cell1"), ("compute2", "cell1"), ("compute3", "cell2"), ("compute4", "cell2")):
        env = envs[name]
        assert "CLOUDCORE_DATABASE_URL" not in env
        assert env["CLOUDCORE_COMPUTE_CELL"] == cells[cell].uuid
    assert envs["compute1"]["CLOUDCORE_COMPUTE_CELL_DATABASE_URL"] == cells["cell1"].database_connection
    assert envs["compute3"]["CLOUDCORE_COMPUTE_CELL_DATABASE_URL"] == "sqlite:////elsewhere/cell2.sqlite3"


@pytest.mark.django_db(databases=ALL_DATABASES)
def test_demo_compute_hosts_need_their_cells_mapped_to_run_isolated(settings):
    settings.COMPUTE_ISOLATION = True
    with pytest.raises(InvalidConfiguration, match="compute1's cell cell1 is not mapped"):
        compute_demo.processes({})
