"""Periodic jobs: timed shelve offload, resize auto-confirm, and the stale task_state reaper."""
from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.test import TestCase
from django.utils import timezone

from cells.context import target_cell
from conductor import periodic
from servers.models import Instance, InstanceFault, Migration
from tests.cloud import Cloud

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])


def run(fn: Any) -> int:
    with TestCase.captureOnCommitCallbacks(using="default", execute=True):
        return fn()


def test_shelved_server_is_offloaded_after_the_offload_time(cloud: Cloud, settings: Any) -> None:
    settings.SHELVED_OFFLOAD_TIME = 3600
    client = cloud.member()
    server = cloud.create_server(client, "vm1")
    cloud.action(client, server["id"], {"shelve": None})
    assert cloud.show(client, server["id"])["status"] == "SHELVED"
    assert run(periodic.offload_shelved) == 0  # not yet due
    with target_cell(cloud.cell_of(server["id"])):
        inst = Instance.objects.get(uuid=server["id"])
        inst.system_metadata["shelved_at"] = (timezone.now() - timedelta(hours=2)).isoformat()
        inst.save(update_fields=["system_metadata"])
    assert run(periodic.offload_shelved) == 1
    assert cloud.show(client, server["id"])["status"] == "SHELVED_OFFLOADED"


def test_never_offloaded_with_minus_one(cloud: Cloud, settings: Any) -> None:
    settings.SHELVED_OFFLOAD_TIME = -1
    client = cloud.member()
    server = cloud.create_server(client, "vm1")
    cloud.action(client, server["id"], {"shelve": None})
    assert run(periodic.offload_shelved) == 0
    assert cloud.show(client, server["id"])["status"] == "SHELVED"


def test_resize_confirmed_after_the_window(cloud: Cloud, settings: Any) -> None:
    settings.RESIZE_CONFIRM_WINDOW = 60
    client = cloud.member()
    server = cloud.create_server(client, "vm1")
    bigger = cloud.flavor("m1.bigger", vcpus=2, ram=1024, disk=2)
    cloud.action(client, server["id"], {"resize": {"flavorRef": bigger.flavorid}})
    assert run(periodic.confirm_resizes) == 0
    with target_cell(cloud.cell_of(server["id"])):
        Migration.objects.filter(instance_uuid=server["id"]).update(updated_at=timezone.now() - timedelta(hours=1))
    assert run(periodic.confirm_resizes) == 1
    assert cloud.show(client, server["id"])["status"] == "ACTIVE"


def test_stale_task_states_are_reaped(cloud: Cloud, settings: Any) -> None:
    client = cloud.member()
    stuck = cloud.create_server(client, "stuck")
    fresh = cloud.create_server(client, "fresh")
    old = timezone.now() - timedelta(seconds=settings.TASK_STATE_TIMEOUT + 60)
    with target_cell(cloud.cell_of(stuck["id"])):
        Instance.objects.filter(uuid=stuck["id"]).update(task_state="powering-off", updated_at=old)
    with target_cell(cloud.cell_of(fresh["id"])):
        Instance.objects.filter(uuid=fresh["id"]).update(task_state="powering-off")
    assert run(periodic.reap_stale_task_states) == 1
    shown = cloud.show(client, stuck["id"])
    assert shown["status"] == "ERROR" and shown["OS-EXT-STS:task_state"] is None
    with target_cell(cloud.cell_of(stuck["id"])):
        assert "did not finish" in InstanceFault.objects.get(instance_uuid=stuck["id"]).message
    assert cloud.show(client, fresh["id"])["OS-EXT-STS:task_state"] == "powering-off"


def test_the_reaper_covers_cell0(cloud: Cloud, settings: Any) -> None:
    """A server in cell0 stuck in a task_state (e.g. a PENDING rebuild whose API process died) is
    reset like any other."""
    settings.USE_PENDING_STATE = True
    client = cloud.member()
    stuck = cloud.create_server(client, "stuck", flavor=cloud.flavor("m1.huge", vcpus=16).name)
    assert cloud.cell_of(stuck["id"]) == "cell0"
    old = timezone.now() - timedelta(seconds=settings.TASK_STATE_TIMEOUT + 60)
    with target_cell("cell0"):
        Instance.objects.filter(uuid=stuck["id"]).update(task_state="rebuilding", updated_at=old)
    assert run(periodic.reap_stale_task_states) == 1
    shown = cloud.show(client, stuck["id"], version="2.105")
    assert shown["status"] == "ERROR" and shown["OS-EXT-STS:task_state"] is None
