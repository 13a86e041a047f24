"""Regressions found by the live fault suite (tests/e2e/test_faults.py), reproduced in-process.

- A host's half of a same-cell resize that fails (e.g. its cast to the destination fails because
  the broker is down, or the driver fails) left the migration open (``post-migrating``) holding
  the source's allocations: the server went ERROR with no task_state, so the reaper never saw it,
  and the allocations outlived the server's delete (3 allocations: VCPU, MEMORY_MB, DISK_GB).
- A build that died in the conductor after the scheduler's claim but before the server reached
  its cell (the cell database down) kept its allocations after the server was deleted, and a
  build that never reached a cell (the conductor's cast lost with the broker) stayed in BUILD
  forever: the stale task_state reaper only looked at cell rows.
"""
from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.db import OperationalError
from django.utils import timezone

from cells.context import target_cell
from conductor import periodic
from scheduling.placement.services import allocations_get
from servers.models import BuildRequest, Migration
from tests.cloud import Cloud

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])


def held(consumer: str) -> set[str]:
    return set(allocations_get(consumer_uuid=consumer).allocations)


def node(cloud: Cloud, host: str) -> str:
    return cloud.hosts[host]["node_uuid"]


def resized_with_failure(cloud: Cloud, fail: str) -> tuple[dict[str, Any], Migration]:
    client = cloud.admin()
    server = cloud.create_server(client, "vm1", availability_zone="az1:compute1")
    cloud.wait_for_status(client, server["id"], "ACTIVE")
    if fail == "source":
        cloud.driver("compute1").fail_power_offs = 1
    else:
        cloud.driver("compute2").fail_spawns = 1
    bigger = cloud.flavor("m1.bigger", vcpus=2, ram=1024, disk=2)
    assert cloud.action(client, server["id"], {"resize": {"flavorRef": bigger.flavorid}}).status_code == 202
    shown = cloud.show(cloud.admin(), server["id"])
    assert shown["status"] == "ERROR" and shown["OS-EXT-STS:task_state"] is None, shown
    with target_cell(cloud.cells["cell1"]):
        return shown, Migration.objects.get(instance_uuid=server["id"])


@pytest.mark.parametrize("fail", ["source", "destination"])
def test_failed_host_half_of_a_resize_ends_the_migration(cloud: Cloud, fail: str) -> None:
    shown, migration = resized_with_failure(cloud, fail)
    assert migration.status == "error"
    assert held(migration.uuid) == set()
    where = "compute1" if fail == "source" else "compute2"
    assert shown["OS-EXT-SRV-ATTR:host"] == where and held(shown["id"]) == {node(cloud, where)}
    # deleting the errored server leaves nothing behind
    assert cloud.delete(cloud.admin(), f"servers/{shown['id']}").status_code == 204
    assert held(shown["id"]) == set() and held(migration.uuid) == set()


def build_dead_in_conductor(cloud: Cloud, monkeypatch: pytest.MonkeyPatch) -> str:
    """The conductor claims a host, then cannot create the server in its cell (database down)."""
    from conductor import build as conductor_build

    def cell_down(*_args: Any, **_kwargs: Any) -> Any:
        raise OperationalError("the cell database is unavailable")

    monkeypatch.setattr(conductor_build, "instance_from_build_request", cell_down)
    with pytest.raises(OperationalError):
        cloud.create_server(cloud.admin(), "vm1", availability_zone="az1:compute1")
    monkeypatch.undo()
    server_id = BuildRequest.objects.get().instance_uuid
    assert held(server_id) == {node(cloud, "compute1")}
    return server_id


def test_deleting_a_build_that_never_reached_its_cell_frees_its_allocations(
        cloud: Cloud, monkeypatch: pytest.MonkeyPatch) -> None:
    server_id = build_dead_in_conductor(cloud, monkeypatch)
    assert cloud.show(cloud.admin(), server_id)["status"] == "BUILD"
    assert cloud.delete(cloud.admin(), f"servers/{server_id}").status_code == 204
    assert held(server_id) == set()


def test_reaper_buries_a_build_that_never_reached_a_cell(cloud: Cloud, monkeypatch: pytest.MonkeyPatch,
                                                         settings: Any) -> None:
    server_id = build_dead_in_conductor(cloud, monkeypatch)
    assert periodic.reap_stale_task_states() == 0  # not stale yet
    BuildRequest.objects.update(created_at=timezone.now() - timedelta(seconds=settings.TASK_STATE_TIMEOUT + 60))
    assert periodic.reap_stale_task_states() == 1
    shown = cloud.show(cloud.admin(), server_id)
    assert shown["status"] == "ERROR" and shown["OS-EXT-STS:task_state"] is None
    assert "did not finish" in shown["fault"]["message"]
    assert cloud.cell_of(server_id) == "cell0" and not BuildRequest.objects.exists()
    assert held(server_id) == set()
    assert cloud.delete(cloud.admin(), f"servers/{server_id}").status_code == 204
