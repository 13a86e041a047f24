"""Versioned notifications of a build and a delete: recorded in the API database, and published to
the broker's ``notifications`` topic exchange (read back by a test consumer on kombu's memory transport)."""
from __future__ import annotations

import pytest

from cloudcore.core.models import NotificationRecord
from tests.notifications import published_notifications

ALL = ["default", "cell0", "cell1", "cell2"]
pytestmark = pytest.mark.django_db(databases=ALL)


def _events() -> list[str]:
    return list(NotificationRecord.objects.order_by("id").values_list("event_type", flat=True))


def test_build_and_delete_emit_novas_event_sequence(cloud):
    client = cloud.member()
    sid = cloud.create_server(client, "n1", networks="demo-net")["id"]
    events = _events()
    # then the scheduler, create and update notifications were emitted in order
    for name in ("scheduler.select_destinations.start", "scheduler.select_destinations.end",
                 "instance.create.start", "instance.create.end"):
        assert name in events, name
    assert events.index("scheduler.select_destinations.end") < events.index("instance.create.start")
    assert events.index("instance.create.start") < events.index("instance.create.end")
    updates = NotificationRecord.objects.filter(event_type="instance.update").order_by("id")
    states = [u.payload["payload"]["nova_object.data"]["state_update"]["state"] for u in updates]
    assert states[-1] == "active"
    end = NotificationRecord.objects.get(event_type="instance.create.end").payload
    assert end["payload"]["nova_object.data"]["uuid"] == sid
    assert end["publisher_id"].startswith("nova-compute:")
    ips = end["payload"]["nova_object.data"]["ip_addresses"]
    assert ips[0]["nova_object.data"]["label"] == "demo-net"
    assert ips[0]["nova_object.data"]["address"].startswith("10.0.0.")
    # when deleted
    cloud.delete(client, f"servers/{sid}")
    events = _events()
    deleting = events[events.index("instance.delete.start"):]
    # the guest, its ports and its volumes go between instance.shutdown.start and .end (Nova's _shutdown_instance)
    assert [e for e in deleting if e.startswith(("instance.delete.", "instance.shutdown."))] == [
        "instance.delete.start", "instance.shutdown.start", "instance.shutdown.end", "instance.delete.end"]
    shutdown = NotificationRecord.objects.get(event_type="instance.shutdown.start").payload["payload"]
    start = NotificationRecord.objects.get(event_type="instance.delete.start").payload["payload"]
    assert shutdown["nova_object.data"]["ip_addresses"] == start["nova_object.data"]["ip_addresses"] != []
    ended = NotificationRecord.objects.get(event_type="instance.shutdown.end").payload["payload"]
    assert ended["nova_object.data"]["ip_addresses"] == []


def test_no_valid_host_emits_build_instances_error(cloud):
    cloud.flavor("m1.huge", vcpus=1, ram=30000)
    cloud.create_server(cloud.member(), "n2", flavor="m1.huge")
    record = NotificationRecord.objects.get(event_type="compute_task.build_instances.error")
    assert record.priority == "ERROR"
    data = record.payload["payload"]["nova_object.data"]
    assert data["reason"]["nova_object.data"]["exception"] == "NoValidHost" and data["state"] == "error"


def test_spawn_failure_emits_instance_create_error(cloud):
    for host in ("compute1", "compute2"):
        cloud.driver(host).fail_spawns = 1
    cloud.create_server(cloud.member(), "n3", availability_zone="az1")
    record = NotificationRecord.objects.get(event_type="instance.create.error")
    fault = record.payload["payload"]["nova_object.data"]["fault"]["nova_object.data"]
    assert fault["exception"] == "MaxRetriesExceeded"
    assert fault["exception_message"].startswith("Exceeded maximum number of retries.")


def test_consumer_reads_published_payloads_from_the_broker(cloud, settings):
    # given the notifications published for real on an in-memory broker
    with published_notifications(settings) as received:
        # when a server is created
        sid = cloud.create_server(cloud.member(), "n4")["id"]
    # then a consumer bound to versioned_notifications.info gets Nova-shaped envelopes
    types = [m["event_type"] for m in received]
    assert "instance.create.end" in types and "scheduler.select_destinations.start" in types
    end = next(m for m in received if m["event_type"] == "instance.create.end")
    assert end["priority"] == "INFO"
    assert end["payload"]["nova_object.name"] == "InstanceActionPayload"
    assert end["payload"]["nova_object.data"]["uuid"] == sid
    assert end["payload"]["nova_object.data"]["state"] == "active"


def test_a_build_put_in_pending_tells_the_external_service_what_it_needs(cloud, settings):
    """Seed 3: the external service decides what to free from the notifications alone: the
    request's resources and zone (select_destinations.start), the move to PENDING
    (instance.update), and the failure reason with the request (build_instances.error)."""
    settings.USE_PENDING_STATE = True
    cloud.flavor("m1.huge", vcpus=3, ram=30000)
    sid = cloud.create_server(cloud.member(), "waits", flavor="m1.huge", availability_zone="az1")["id"]

    def data(event_type):
        return [r.payload["payload"]["nova_object.data"]
                for r in NotificationRecord.objects.filter(event_type=event_type).order_by("id")]

    (start,) = data("scheduler.select_destinations.start")
    assert start["instance_uuid"] == sid and start["availability_zone"] == "az1"
    assert (start["flavor"]["vcpus"], start["flavor"]["memory_mb"]) == (3, 30000)
    assert data("scheduler.select_destinations.end") == []  # not sent when scheduling fails (Nova)
    update = data("instance.update")[-1]
    assert update["uuid"] == sid and update["state"] == "pending" and update["availability_zone"] == "az1"
    assert update["state_update"]["state"] == "pending" and update["state_update"]["old_state"] == "building"
    assert update["flavor"]["nova_object.data"]["memory_mb"] == 30000
    (error,) = data("compute_task.build_instances.error")
    assert error["state"] == "pending" and error["reason"]["nova_object.data"]["exception"] == "NoValidHost"
    assert "No valid host was found" in error["reason"]["nova_object.data"]["exception_message"]
    assert error["request_spec"]["flavor"]["memory_mb"] == 30000 and error["request_spec"]["availability_zone"] == "az1"


def test_the_rebuild_that_leaves_pending_emits_a_build_again(cloud, settings):
    """Seed 3's contract (docs/pending-state.md): the external service's rebuild is followed by
    the notifications of a new build, and its outcome by instance.update to active (or pending)."""
    settings.USE_PENDING_STATE = True
    client = cloud.member()
    cloud.flavor("m1.huge", vcpus=16)
    sid = cloud.create_server(client, "waits", flavor="m1.huge")["id"]
    # when room appears and the external service rebuilds the server
    cloud.add_host("compute9", cell="cell2", zone="az2", vcpus=16, memory_mb=65536)
    before = len(_events())  # (after the host joined its zone: aggregate.add_host.start/end)
    assert cloud.action(client, sid, {"rebuild": {"imageRef": cloud.image_id}}, version="2.105").status_code == 202
    # then the build's notifications follow, and the last instance.update says active
    assert _events()[before:] == [
        "scheduler.select_destinations.start", "scheduler.select_destinations.end", "instance.create.start",
        "instance.update", "instance.update", "instance.update", "instance.update", "instance.create.end",
    ]
    last = NotificationRecord.objects.filter(event_type="instance.update").order_by("id").last()
    data = last.payload["payload"]["nova_object.data"]
    assert data["uuid"] == sid and data["host"] == "compute9"
    assert data["state_update"] == {"old_state": "building", "state": "active", "old_task_state": "spawning",
                                    "new_task_state": None}


def test_a_rebuild_without_room_buries_the_server_as_pending_again(cloud, settings):
    settings.USE_PENDING_STATE = True
    client = cloud.member()
    cloud.flavor("m1.huge", vcpus=16)
    sid = cloud.create_server(client, "waits", flavor="m1.huge")["id"]
    before = len(_events())
    assert cloud.action(client, sid, {"rebuild": {"imageRef": cloud.image_id}}, version="2.105").status_code == 202
    assert _events()[before:] == ["scheduler.select_destinations.start", "instance.update",
                                  "compute_task.build_instances.error"]
    last = NotificationRecord.objects.filter(event_type="instance.update").order_by("id").last()
    assert last.payload["payload"]["nova_object.data"]["state_update"]["state"] == "pending"
