"""Soft delete (``RECLAIM_INSTANCE_INTERVAL``), ``restore``, ``forceDelete`` and the periodic reclaim
on the in-process cloud: states, the guest, allocations and quota kept, instance actions and events,
notifications, Nova's 409s, policy."""
from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.test import TestCase
from django.utils import timezone

from cells.context import target_cell
from conductor import periodic
from scheduling.placement.services import allocations_get
from servers.choices import PowerState, TaskState
from servers.models import Instance, InstanceAction
from tests.cloud import Cloud

from .test_pause_suspend_rescue import active_server, conflict, events, last_action

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])


@pytest.fixture
def deferred(settings: Any) -> None:
    settings.RECLAIM_INSTANCE_INTERVAL = 3600


def soft_deleted_server(cloud: Cloud, client: Any) -> str:
    sid = active_server(cloud, client)["id"]
    assert cloud.delete(client, f"servers/{sid}").status_code == 204
    return sid


def allocated(sid: str) -> bool:
    return bool(allocations_get(consumer_uuid=sid).allocations)


def in_use(cloud: Cloud, client: Any) -> int:
    return int(cloud.get(client, "limits").json()["limits"]["absolute"]["totalInstancesUsed"])


def test_delete_soft_deletes_and_restore_brings_it_back(cloud: Cloud, deferred: None) -> None:
    # given the interval on and an active server
    client = cloud.member()
    # when it is deleted
    sid = soft_deleted_server(cloud, client)
    # then it is SOFT_DELETED, its guest off, its allocations and its quota kept
    shown = cloud.show(client, sid)
    assert shown["status"] == "SOFT_DELETED" and shown["OS-EXT-STS:vm_state"] == "soft-delete"
    assert shown["OS-EXT-STS:task_state"] is None and shown["OS-EXT-STS:power_state"] == PowerState.SHUTDOWN
    assert not cloud.domain(sid).isActive()
    assert allocated(sid) and in_use(cloud, client) == 1
    assert cloud.instance(sid).deleted_at is not None and not cloud.instance(sid).deleted
    action = last_action(cloud, sid)
    assert action["action"] == "delete"
    assert [(e["event"], e["result"]) for e in action["events"]] == [("compute_soft_delete_instance", "Success")]
    assert [len(events(cloud, f"instance.soft_delete.{p}", sid)) for p in ("start", "end")] == [1, 1]
    assert events(cloud, "instance.delete.start", sid) == []
    # other actions are refused in that state
    assert conflict(cloud.action(client, sid, {"os-start": None})) == (
        f"Cannot 'start' instance {sid} while it is in vm_state soft-delete")
    # when it is restored
    assert cloud.action(client, sid, {"restore": None}).status_code == 202
    # then it runs again, with the action, its event and the notifications
    shown = cloud.show(client, sid)
    assert shown["status"] == "ACTIVE" and shown["OS-EXT-STS:power_state"] == PowerState.RUNNING
    assert cloud.domain(sid).isActive() and cloud.instance(sid).deleted_at is None
    action = last_action(cloud, sid)
    assert action["action"] == "restore"
    assert [(e["event"], e["result"]) for e in action["events"]] == [("compute_restore_instance", "Success")]
    assert [len(events(cloud, f"instance.restore.{p}", sid)) for p in ("start", "end")] == [1, 1]
    # and restoring an active server is Nova's 409
    assert conflict(cloud.action(client, sid, {"restore": None})) == (
        f"Cannot 'restore' instance {sid} while it is in vm_state active")


def test_force_delete_of_a_soft_deleted_server(cloud: Cloud, deferred: None) -> None:
    client = cloud.member()
    sid = soft_deleted_server(cloud, client)
    # when it is force-deleted it is gone: guest, allocations, quota
    assert cloud.action(client, sid, {"forceDelete": None}).status_code == 202
    assert cloud.get(client, f"servers/{sid}").status_code == 404
    assert cloud.domain(sid) is None and not allocated(sid) and in_use(cloud, client) == 0
    with target_cell(cloud.cell_of(sid)):
        recorded = list(InstanceAction.all_objects.filter(instance_uuid=sid).order_by("-id"))
        assert [a.action for a in recorded][:2] == ["forceDelete", "delete"]
        assert [e.event for e in recorded[0].events.all()] == ["compute_terminate_instance"]
    assert [len(events(cloud, f"instance.delete.{p}", sid)) for p in ("start", "end")] == [1, 1]


def test_force_delete_of_an_active_server_and_with_a_task_running(cloud: Cloud, deferred: None) -> None:
    client = cloud.member()
    sid = active_server(cloud, client)["id"]
    # a task under way: Nova's 409
    with target_cell(cloud.cell_of(sid)):
        Instance.objects.filter(uuid=sid).update(task_state=TaskState.POWERING_OFF)
    assert conflict(cloud.action(client, sid, {"forceDelete": None})) == (
        f"Cannot 'force_delete' instance {sid} while it is in task_state powering-off")
    with target_cell(cloud.cell_of(sid)):
        Instance.objects.filter(uuid=sid).update(task_state=None)
    # no task: an active server is deleted at once, not soft-deleted
    assert cloud.action(client, sid, {"forceDelete": None}).status_code == 202
    assert cloud.get(client, f"servers/{sid}").status_code == 404 and not allocated(sid)


def test_without_the_interval_a_delete_is_immediate(cloud: Cloud) -> None:
    client = cloud.member()
    sid = active_server(cloud, client)["id"]
    assert conflict(cloud.action(client, sid, {"restore": None})) == (
        f"Cannot 'restore' instance {sid} while it is in vm_state active")
    assert cloud.delete(client, f"servers/{sid}").status_code == 204
    assert cloud.get(client, f"servers/{sid}").status_code == 404 and cloud.domain(sid) is None


def test_deleting_a_soft_deleted_server_deletes_it(cloud: Cloud, deferred: None) -> None:
    client = cloud.member()
    sid = soft_deleted_server(cloud, client)
    assert cloud.delete(client, f"servers/{sid}").status_code == 204
    assert cloud.get(client, f"servers/{sid}").status_code == 404 and not allocated(sid)


def test_periodic_reclaim_after_the_interval(cloud: Cloud, deferred: None) -> None:
    client = cloud.member()
    sid = soft_deleted_server(cloud, client)

    def reclaim() -> int:
        with TestCase.captureOnCommitCallbacks(using="default", execute=True):
            return periodic.reclaim_soft_deleted()

    # not yet due
    assert reclaim() == 0 and cloud.show(client, sid)["status"] == "SOFT_DELETED"
    # soft-deleted two hours ago: reclaimed, as a delete
    with target_cell(cloud.cell_of(sid)):
        Instance.objects.filter(uuid=sid).update(deleted_at=timezone.now() - timedelta(hours=2))
    assert reclaim() == 1
    assert cloud.get(client, f"servers/{sid}").status_code == 404
    assert cloud.domain(sid) is None and not allocated(sid)
    assert [len(events(cloud, f"instance.delete.{p}", sid)) for p in ("start", "end")] == [1, 1]
    assert reclaim() == 0


def test_locks_and_policy(cloud: Cloud, deferred: None) -> None:
    client = cloud.member()
    sid = soft_deleted_server(cloud, client)
    reader = cloud.member("reader", "demo", roles=("reader",))
    for body, rule in (({"restore": None}, "os_compute_api:os-deferred-delete:restore"),
                       ({"forceDelete": None}, "os_compute_api:os-deferred-delete:force")):
        denied = cloud.action(reader, sid, body)
        assert denied.status_code == 403
        assert denied.json()["forbidden"]["message"] == f"Policy doesn't allow {rule} to be performed."
        assert cloud.action(cloud.member("mallory", "demo2"), sid, body).status_code == 404
    admin = cloud.admin()
    assert cloud.action(admin, sid, {"lock": None}).status_code == 202
    assert conflict(cloud.action(client, sid, {"restore": None})) == f"Instance {sid} is locked"
    assert conflict(cloud.action(client, sid, {"forceDelete": None})) == f"Instance {sid} is locked"
    assert cloud.action(admin, sid, {"restore": None}).status_code == 202
    assert cloud.show(client, sid)["status"] == "ACTIVE"
