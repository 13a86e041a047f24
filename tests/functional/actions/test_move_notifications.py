"""A same-cell resize or cold migration emits Nova's notifications, no others (issue 17, item 10):
the exact event types of each path (success, each failure) and the payloads' field names, which
are those of Nova's versioned payloads (``doc/notification_samples`` in Nova)."""
from __future__ import annotations

from typing import Any

import pytest

from tests.cloud import Cloud

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])

#: Nova's InstancePayload (with ``locked_reason``), its FlavorPayload 1.4 and ExceptionPayload 1.1.
INSTANCE_FIELDS = {
    "architecture", "availability_zone", "block_devices", "created_at", "deleted_at", "display_name",
    "display_description", "host", "host_name", "ip_addresses", "kernel_id", "key_name", "launched_at",
    "image_uuid", "metadata", "locked", "locked_reason", "node", "os_type", "progress", "ramdisk_id",
    "reservation_id", "state", "task_state", "power_state", "tenant_id", "terminated_at", "auto_disk_config",
    "flavor", "updated_at", "user_id", "uuid", "request_id", "action_initiator_user", "action_initiator_project",
}
FLAVOR_FIELDS = {"description", "disabled", "ephemeral_gb", "extra_specs", "flavorid", "is_public", "memory_mb",
                 "name", "projects", "root_gb", "rxtx_factor", "swap", "vcpu_weight", "vcpus"}
EXCEPTION_FIELDS = {"exception", "exception_message", "function_name", "module_name", "traceback"}
COMPUTE_TASK_FIELDS = {"instance_uuid", "reason", "request_spec", "state"}
#: the scheduler's own notifications, first in every move that got a destination
SCHEDULED = ["scheduler.select_destinations.start", "scheduler.select_destinations.end"]


class Notifications:
    """The notifications emitted from the moment it is made."""

    def __init__(self, cloud: Cloud) -> None:
        self.cloud, self.start = cloud, len(cloud.notifications())

    def all(self) -> list[dict[str, Any]]:
        return self.cloud.notifications()[self.start:]

    def types(self) -> list[str]:
        return [n["event_type"] for n in self.all()]

    def one(self, event_type: str) -> dict[str, Any]:
        (found,) = [n for n in self.all() if n["event_type"] == event_type]
        return found


def active(cloud: Cloud, client: Any) -> tuple[str, str]:
    server = cloud.create_server(client, "mover", availability_zone="az1")
    shown = cloud.wait_for_status(cloud.admin(), server["id"], "ACTIVE")
    return server["id"], shown["OS-EXT-SRV-ATTR:host"]


def resized(cloud: Cloud, client: Any, sid: str) -> str:
    bigger = cloud.flavor("m1.bigger", vcpus=2, ram=1024, disk=2)
    assert cloud.action(client, sid, {"resize": {"flavorRef": bigger.flavorid}}).status_code == 202
    shown = cloud.show(cloud.admin(), sid)
    assert shown["status"] == "VERIFY_RESIZE", shown.get("fault")
    return str(shown["OS-EXT-SRV-ATTR:host"])


def assert_exception_payload(payload: dict[str, Any], message: str) -> None:
    assert payload["nova_object.name"] == "ExceptionPayload"
    assert set(payload["nova_object.data"]) == EXCEPTION_FIELDS
    assert message in payload["nova_object.data"]["exception_message"]


def test_resize_then_confirm_emits_nova_events_and_resize_prep_payload(cloud: Cloud) -> None:
    # given an active server
    client = cloud.member()
    sid, _ = active(cloud, client)
    seen = Notifications(cloud)
    # when resized within its cell, then confirmed
    dest = resized(cloud, client, sid)
    assert cloud.action(client, sid, {"confirmResize": None}).status_code == 204
    # then exactly Nova's events (the source's resize.end and the destination's resize_finish.*
    # race in Nova: only the order within one host is asserted), resize_prep as prep_resize emits them
    types = seen.types()
    assert sorted(types) == sorted([
        *SCHEDULED, "instance.resize_prep.start", "instance.resize_prep.end", "instance.resize.start",
        "instance.resize.end", "instance.resize_finish.start", "instance.resize_finish.end",
        "instance.resize_confirm.start", "instance.resize_confirm.end",
    ])
    assert types[:5] == [*SCHEDULED, "instance.resize_prep.start", "instance.resize_prep.end", "instance.resize.start"]
    assert types[-2:] == ["instance.resize_confirm.start", "instance.resize_confirm.end"]
    # and resize_prep carries Nova's InstanceActionResizePrepPayload, from the destination
    prep = seen.one("instance.resize_prep.start")
    assert prep["publisher_id"] == f"nova-compute:{dest}" and prep["priority"] == "INFO"
    payload = prep["payload"]
    assert payload["nova_object.name"] == "InstanceActionResizePrepPayload"
    data = payload["nova_object.data"]
    assert set(data) == INSTANCE_FIELDS | {"fault", "new_flavor"}
    assert data["fault"] is None and data["task_state"] == "resize_prep" and data["uuid"] == sid
    assert set(data["new_flavor"]["nova_object.data"]) == FLAVOR_FIELDS
    assert data["new_flavor"]["nova_object.data"]["name"] == "m1.bigger"
    assert data["flavor"]["nova_object.data"]["name"] == "m1.tiny"
    # and the others are Nova's InstanceActionPayload
    end = seen.one("instance.resize_confirm.end")["payload"]
    assert end["nova_object.name"] == "InstanceActionPayload"
    assert set(end["nova_object.data"]) == INSTANCE_FIELDS | {"fault"}


def test_cold_migration_emits_resize_prep_with_the_same_flavor(cloud: Cloud) -> None:
    client, admin = cloud.member(), cloud.admin()
    sid, source = active(cloud, client)
    seen = Notifications(cloud)
    assert cloud.action(admin, sid, {"migrate": None}).status_code == 202
    assert cloud.show(admin, sid)["status"] == "VERIFY_RESIZE"
    assert seen.types()[:4] == [*SCHEDULED, "instance.resize_prep.start", "instance.resize_prep.end"]
    data = seen.one("instance.resize_prep.end")["payload"]["nova_object.data"]
    assert data["new_flavor"]["nova_object.data"]["name"] == data["flavor"]["nova_object.data"]["name"] == "m1.tiny"
    assert data["host"] == source


def test_no_valid_host_emits_only_migrate_server_error(cloud: Cloud) -> None:
    client = cloud.member()
    sid, _ = active(cloud, client)
    # compute1/compute2 have 4 vCPUs each and one runs the server: a filler fills the other
    cloud.create_server(client, "filler", availability_zone="az1")
    huge = cloud.flavor("m1.wide", vcpus=4, ram=8192, disk=40)
    seen = Notifications(cloud)
    assert cloud.action(client, sid, {"resize": {"flavorRef": huge.flavorid}}).status_code == 202
    assert cloud.show(client, sid)["status"] == "ACTIVE"
    # no resize_prep: the conductor failed before any destination was prepared
    assert seen.types() == ["scheduler.select_destinations.start", "compute_task.migrate_server.error"]
    error = seen.one("compute_task.migrate_server.error")
    assert error["priority"] == "ERROR" and error["payload"]["nova_object.name"] == "ComputeTaskPayload"
    data = error["payload"]["nova_object.data"]
    assert COMPUTE_TASK_FIELDS <= set(data) <= COMPUTE_TASK_FIELDS | {"scheduling_trace"}
    assert data["state"] == "active"
    assert_exception_payload(data["reason"], "No valid host was found")


def test_conductor_failure_after_scheduling_emits_migrate_server_error(cloud: Cloud, monkeypatch: Any) -> None:
    from compute import rpc as compute_rpc

    client = cloud.member()
    sid, source = active(cloud, client)

    def refused(**kwargs: Any) -> None:
        raise compute_rpc.CallNotDelivered(op="resize_at_source", host=source, reason="broker down")

    # given the cast to the source host cannot be sent (the broker refuses it)
    monkeypatch.setattr(compute_rpc, "resize_at_source", refused)
    seen = Notifications(cloud)
    bigger = cloud.flavor("m1.bigger", vcpus=2, ram=1024, disk=2)
    assert cloud.action(client, sid, {"resize": {"flavorRef": bigger.flavorid}}).status_code == 202
    # then the conductor's failure is Nova's migrate_server error, the server active and idle
    shown = cloud.show(cloud.admin(), sid)
    assert shown["status"] == "ACTIVE" and shown["OS-EXT-STS:task_state"] is None
    assert seen.types() == [*SCHEDULED, "instance.resize_prep.start", "instance.resize_prep.end",
                            "compute_task.migrate_server.error"]
    assert seen.one("compute_task.migrate_server.error")["payload"]["nova_object.data"]["state"] == "active"


def test_failed_confirm_emits_compute_exception_only(cloud: Cloud, monkeypatch: pytest.MonkeyPatch) -> None:
    from compute.clients import placement

    # given a server resized within its cell
    client = cloud.member()
    sid, _ = active(cloud, client)
    resized(cloud, client, sid)
    seen = Notifications(cloud)

    def unreachable(**kwargs: Any) -> None:
        raise ConnectionError("placement unreachable")

    # when the confirm cannot reach placement to drop the source's allocations
    with monkeypatch.context() as patch:
        patch.setattr(placement, "allocations_delete", unreachable)
        cloud.action(client, sid, {"confirmResize": None})
    # then the confirm failed: the server is ERROR with the fault (as Nova errors it out; a hard
    # reboot recovers it), and the events are Nova's: no instance.resize_confirm.error
    shown = cloud.show(cloud.admin(), sid)
    assert shown["status"] == "ERROR" and "placement unreachable" in shown["fault"]["message"]
    assert seen.types() == ["instance.resize_confirm.start", "instance.update", "compute.exception"]
    exception = seen.one("compute.exception")
    assert exception["priority"] == "ERROR" and exception["publisher_id"].startswith("nova-compute:")
    assert_exception_payload(exception["payload"], "placement unreachable")
    # and a hard reboot brings it back on its destination
    assert cloud.action(client, sid, {"reboot": {"type": "HARD"}}).status_code == 202
    assert cloud.show(cloud.admin(), sid)["status"] == "ACTIVE"


@pytest.mark.parametrize("where", ["dest", "source"])
def test_failed_revert_emits_compute_exception_only(cloud: Cloud, where: str) -> None:
    # given a server resized within its cell
    client = cloud.member()
    sid, source = active(cloud, client)
    dest = resized(cloud, client, sid)
    # when the destination cannot destroy its guest, or the source cannot spawn it again
    if where == "dest":
        cloud.driver(dest).fail_destroys = 1
    else:
        cloud.driver(source).fail_spawns = 1
    seen = Notifications(cloud)
    cloud.action(client, sid, {"revertResize": None})
    # then the server is ERROR with the fault, and the events are Nova's: no resize_revert.error
    shown = cloud.show(cloud.admin(), sid)
    injected = "destroy" if where == "dest" else "spawn"
    assert shown["status"] == "ERROR" and f"injected {injected} failure" in shown["fault"]["message"]
    failed = ["instance.resize_revert.start", "instance.update", "compute.exception"]
    if where == "dest":
        assert seen.types() == failed
    else:  # the destination's half succeeded; the source's (finish_revert_resize) failed inside it
        assert sorted(seen.types()) == sorted(["instance.resize_revert.start", "instance.resize_revert.end", *failed])
    assert "instance.resize_revert.error" not in seen.types()
    assert_exception_payload(seen.one("compute.exception")["payload"], f"injected {injected} failure")


def test_failed_finish_at_destination_emits_compute_exception_only(cloud: Cloud) -> None:
    client = cloud.member()
    sid, source = active(cloud, client)
    other = "compute2" if source == "compute1" else "compute1"
    cloud.driver(other).fail_spawns = 1
    seen = Notifications(cloud)
    bigger = cloud.flavor("m1.bigger", vcpus=2, ram=1024, disk=2)
    assert cloud.action(client, sid, {"resize": {"flavorRef": bigger.flavorid}}).status_code == 202
    assert cloud.show(client, sid)["status"] == "ERROR"
    # Nova has no instance.resize_finish.error (the source's resize.end races the destination)
    assert sorted(seen.types()) == sorted([
        *SCHEDULED, "instance.resize_prep.start", "instance.resize_prep.end", "instance.resize.start",
        "instance.resize.end", "instance.resize_finish.start", "instance.update", "compute.exception",
    ])
    assert_exception_payload(seen.one("compute.exception")["payload"], "injected spawn failure")


def test_failed_resize_at_source_emits_nova_resize_error(cloud: Cloud) -> None:
    client = cloud.member()
    sid, source = active(cloud, client)
    cloud.driver(source).fail_power_offs = 1
    seen = Notifications(cloud)
    bigger = cloud.flavor("m1.bigger", vcpus=2, ram=1024, disk=2)
    assert cloud.action(client, sid, {"resize": {"flavorRef": bigger.flavorid}}).status_code == 202
    assert seen.types() == [
        *SCHEDULED, "instance.resize_prep.start", "instance.resize_prep.end", "instance.resize.start",
        "instance.update", "instance.resize.error", "compute.exception",
    ]
    error = seen.one("instance.resize.error")
    assert error["priority"] == "ERROR"
    data = error["payload"]["nova_object.data"]
    assert set(data) == INSTANCE_FIELDS | {"fault"}
    assert_exception_payload(data["fault"], "injected power off failure")
