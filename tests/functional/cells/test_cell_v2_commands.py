"""``manage.py cell_v2`` and ``db archive_deleted_rows``: behaviour and Nova's exit codes.

In-process against the test cells (cell0/cell1/cell2 pre-declared), plus a real-process run of
the whole operator sequence on a fresh var dir (a cell created at run time is usable at once).
"""
from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from django.utils import timezone

from cells.context import target_cell
from cells.models import CELL0_UUID, CellMapping, HostMapping, InstanceMapping
from hosts.models import ComputeNode
from servers.models import BlockDeviceMapping, Instance, InstanceAction, InstanceFault
from tests.factories import ComputeNodeFactory, InstanceFactory, ServiceFactory

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])
ROOT = Path(__file__).resolve().parents[3]


def run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command(*args, stdout=out, stderr=err)
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    return code, out.getvalue(), err.getvalue()


def test_map_cell0_twice_is_zero(cells: dict) -> None:
    code, out, _ = run("cell_v2", "map_cell0")
    assert code == 0 and "already setup" in out
    assert CellMapping.objects.filter(uuid=CELL0_UUID).count() == 1


def test_create_cell_duplicate_database_is_2_and_missing_url_is_1(cells: dict) -> None:
    url = cells["cell1"].database_connection
    code, _, err = run("cell_v2", "create_cell", "--name", "again", "--database_connection", url)
    assert code == 2 and "already exists" in err
    code, _, err = run("cell_v2", "create_cell", "--name", "nourl")
    assert code == 1
    code, _, _ = run("cell_v2", "create_cell", "--name", "bad", "--database_connection", "nonsense")
    assert code == 1
    assert not CellMapping.objects.filter(name__in=["again", "nourl", "bad"]).exists()


def test_list_cells_masks_passwords(cells: dict) -> None:
    CellMapping.objects.filter(name="cell2").update(transport_url="redis://user:s3cret@host:6379/0")
    code, out, _ = run("cell_v2", "list_cells")
    assert code == 0
    assert "cell1" in out and "s3cret" not in out and "user:****@" in out
    _, verbose, _ = run("cell_v2", "list_cells", "--verbose")
    assert "s3cret" in verbose


def test_discover_hosts_maps_new_compute_nodes_once(cells: dict) -> None:
    # given two compute hosts registered in cell1 and one in cell2, none mapped
    for host, cell in (("c1", "cell1"), ("c2", "cell1"), ("c3", "cell2")):
        svc = ServiceFactory(cell=cells[cell], host=host)
        ComputeNodeFactory(cell=cells[cell], host=host, service=svc)
    # when discover_hosts runs
    code, out, _ = run("cell_v2", "discover_hosts", "--verbose")
    # then each host is mapped to its own cell and its node marked mapped
    assert code == 0 and "Found 3 unmapped computes." in out
    assert dict(HostMapping.objects.values_list("host", "cell__name")) == {"c1": "cell1", "c2": "cell1", "c3": "cell2"}
    with target_cell(cells["cell1"]):
        assert set(ComputeNode.objects.values_list("mapped", flat=True)) == {1}
    # and a second run finds nothing; --strict makes that exit 1
    assert run("cell_v2", "discover_hosts", "--strict")[0] == 1
    assert run("cell_v2", "discover_hosts")[0] == 0


def test_discover_hosts_by_service_and_duplicate_is_2(cells: dict) -> None:
    ServiceFactory(cell=cells["cell1"], host="dup")
    ServiceFactory(cell=cells["cell2"], host="dup")
    code, _, err = run("cell_v2", "discover_hosts", "--by-service")
    assert code == 2 and "Duplicate host mapping" in err
    assert HostMapping.objects.filter(host="dup").count() == 1


def test_list_hosts_and_unknown_cell(cells: dict) -> None:
    HostMapping.objects.create(host="h1", cell=cells["cell1"])
    code, out, _ = run("cell_v2", "list_hosts")
    assert code == 0 and "h1" in out and "cell1" in out
    assert run("cell_v2", "list_hosts", "--cell_uuid", "nope")[0] == 1


def test_delete_cell_exit_codes(cells: dict) -> None:
    assert run("cell_v2", "delete_cell", "--cell_uuid", "no-such-cell")[0] == 1
    HostMapping.objects.create(host="h2", cell=cells["cell2"])
    assert run("cell_v2", "delete_cell", "--cell_uuid", cells["cell2"].uuid)[0] == 2
    InstanceFactory(cell=cells["cell2"])
    assert run("cell_v2", "delete_cell", "--cell_uuid", cells["cell2"].uuid, "--force")[0] == 3
    assert CellMapping.objects.filter(name="cell2").exists()


def test_delete_empty_cell_with_force_removes_host_mappings(cells: dict) -> None:
    HostMapping.objects.create(host="h3", cell=cells["cell2"])
    assert run("cell_v2", "delete_cell", "--cell_uuid", cells["cell2"].uuid, "--force")[0] == 0
    assert not CellMapping.objects.filter(name="cell2").exists()
    assert not HostMapping.objects.filter(host="h3").exists()


def test_map_instances_in_batches(cells: dict) -> None:
    for _ in range(3):
        InstanceFactory(cell=cells["cell1"])
    assert run("cell_v2", "map_instances", "--cell_uuid", cells["cell1"].uuid, "--max-count", "2")[0] == 1
    assert InstanceMapping.objects.count() == 2
    assert run("cell_v2", "map_instances", "--cell_uuid", cells["cell1"].uuid, "--max-count", "2")[0] == 0
    assert InstanceMapping.objects.filter(cell=cells["cell1"]).count() == 3
    assert run("cell_v2", "map_instances", "--cell_uuid", cells["cell1"].uuid, "--max-count", "0")[0] == 127


def test_verify_instance_codes(cells: dict) -> None:
    assert run("cell_v2", "verify_instance", "--uuid", "nope")[0] == 1
    InstanceMapping.objects.create(instance_uuid="building", project_id="p")
    assert run("cell_v2", "verify_instance", "--uuid", "building")[0] == 2
    live = InstanceFactory(cell=cells["cell1"])
    InstanceMapping.objects.create(instance_uuid=live.uuid, cell=cells["cell1"], project_id="p")
    code, out, _ = run("cell_v2", "verify_instance", "--uuid", live.uuid)
    assert code == 0 and "cell1" in out
    gone = InstanceFactory(cell=cells["cell1"], deleted=True, deleted_at=timezone.now())
    InstanceMapping.objects.create(instance_uuid=gone.uuid, cell=cells["cell1"], project_id="p")
    assert run("cell_v2", "verify_instance", "--uuid", gone.uuid, "--quiet")[0] == 3
    InstanceMapping.objects.create(instance_uuid="archived-one", cell=cells["cell1"], project_id="p")
    assert run("cell_v2", "verify_instance", "--uuid", "archived-one")[0] == 4


def test_archive_deleted_rows_purges_deleted_servers_and_their_rows(cells: dict) -> None:
    # given a deleted server with children and a live one, both mapped
    gone = InstanceFactory(cell=cells["cell1"], deleted=True, deleted_at=timezone.now())
    live = InstanceFactory(cell=cells["cell1"])
    with target_cell(cells["cell1"]):
        BlockDeviceMapping.objects.create(instance_uuid=gone.uuid, source_type="image", destination_type="local",
                                          deleted=True)
        InstanceFault.objects.create(instance_uuid=gone.uuid, code=500, message="boom")
        InstanceAction.objects.create(instance_uuid=gone.uuid, action="delete", request_id="req-1")
    for inst in (gone, live):
        InstanceMapping.objects.create(instance_uuid=inst.uuid, cell=cells["cell1"], project_id="p")
    # when archiving
    code, out, _ = run("db", "archive_deleted_rows", "--verbose", "--until-complete")
    # then exit 1 (rows archived), the deleted server and everything of it is gone, the live one stays
    assert code == 1 and "instances: 1" in out
    with target_cell(cells["cell1"]):
        assert list(Instance.all_objects.values_list("uuid", flat=True)) == [live.uuid]
        assert not BlockDeviceMapping.all_objects.filter(instance_uuid=gone.uuid).exists()
        assert not InstanceFault.all_objects.filter(instance_uuid=gone.uuid).exists()
        assert not InstanceAction.all_objects.filter(instance_uuid=gone.uuid).exists()
    assert list(InstanceMapping.objects.values_list("instance_uuid", flat=True)) == [live.uuid]
    # and a second run archives nothing (exit 0)
    code, out, _ = run("db", "archive_deleted_rows", "--verbose")
    assert code == 0 and "Nothing was archived." in out
    assert run("db", "archive_deleted_rows", "--max_rows", "0")[0] == 2


@pytest.mark.slow
def test_operator_sequence_in_real_processes(tmp_path: Path) -> None:
    """A fresh var dir: migrate, map_cell0, create_cell (usable at once), list, delete."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLOUDCORE_")}
    env.update(CLOUDCORE_VAR_DIR=str(tmp_path), DJANGO_SETTINGS_MODULE="cloudcore.settings",
               CLOUDCORE_SECRET_KEY="x")

    def manage(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=120)

    assert manage("migrate", "--api-only", "-v0").returncode == 0
    assert manage("cell_v2", "map_cell0").returncode == 0
    assert manage("cell_v2", "map_cell0").returncode == 0
    url = f"sqlite:///{tmp_path}/late.sqlite3"
    created = manage("cell_v2", "create_cell", "--name", "late", "--database_connection", url, "--verbose")
    assert created.returncode == 0, created.stderr
    cell_uuid = created.stdout.strip().splitlines()[-1]
    assert (tmp_path / "late.sqlite3").exists()
    assert manage("cell_v2", "create_cell", "--name", "late2", "--database_connection", url).returncode == 2
    # a database that cannot be reached: exit 1 and no mapping (one left behind failed every later migrate)
    unreachable = manage("cell_v2", "create_cell", "--name", "unreachable",
                         "--database_connection", "postgres://nobody@127.0.0.1:1/nowhere",
                         "--transport-url", "redis://127.0.0.1:1/9")
    assert unreachable.returncode == 1, unreachable.stderr
    assert unreachable.stderr.startswith("Could not migrate the cell's database nowhere: ")
    assert unreachable.stderr.rstrip().endswith("No cell was created."), unreachable.stderr
    assert manage("migrate", "-v0").returncode == 0
    listing = manage("cell_v2", "list_cells")
    assert "late" in listing.stdout and "cell0" in listing.stdout and "unreachable" not in listing.stdout
    # the new cell's database is migrated: a server row can be written there at once
    script = (
        "import django; django.setup();"
        "from cells.context import target_cell; from servers.models import Instance;"
        f"ctx = target_cell('{cell_uuid}'); ctx.__enter__();"
        "Instance.objects.create(project_id='p', user_id='u'); print(Instance.objects.count())"
    )
    wrote = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
                           timeout=60)
    assert wrote.stdout.strip() == "1", wrote.stderr
    assert manage("cell_v2", "delete_cell", "--cell_uuid", cell_uuid).returncode == 3
