"""Inside a compute agent, images go through Glance's HTTP API and notifications through the
conductor: the agent itself never reads or writes an Image or NotificationRecord row (the agent's
mark makes the router refuse both, so any direct access fails these tests)."""
from __future__ import annotations

from typing import Any

import pytest

from cells.context import target_cell
from cells.isolation import IsolationViolation, compute_agent
from cloudcore.core import notifications
from cloudcore.core.context import RequestContext
from cloudcore.core.models import NotificationRecord
from compute import ops
from compute.build import image_meta
from compute.clients import images as glance
from conductor import rpc as conductor_rpc
from images.models import Image
from images.services import image_data_path, image_snapshot_create
from servers.models import Instance
from servers.services.notify import notify_instance
from tests.cloud import Cloud

pytestmark = pytest.mark.django_db(databases="__all__")


def _ctx(instance: Instance) -> RequestContext:
    return RequestContext(user_id=instance.user_id, project_id=instance.project_id, roles=["member"])


@pytest.fixture(autouse=True)
def _built_without_isolation(settings: Any) -> None:
    """The servers here are built with the compute tasks unmarked (whatever the env says): each
    test marks the agent itself around the step it proves."""
    settings.COMPUTE_ISOLATION = False


def _server(cloud: Cloud) -> Instance:
    server = cloud.create_server(cloud.member(), "vm1")
    return cloud.instance(server["id"])


def test_image_meta_inside_an_agent_comes_from_glances_api(cloud: Cloud, cells: dict[str, Any]) -> None:
    # given an image with a kernel, known only to Glance
    image = Image.objects.get(id=cloud.image_id)
    image.properties = {"kernel_id": "k-1", "hw_disk_bus": "virtio"}
    image.save()
    # when the agent of cell1 reads its meta
    with compute_agent(cells["cell1"]):
        with pytest.raises(IsolationViolation):  # (the agent really cannot read the row)
            Image.objects.filter(id=cloud.image_id).exists()
        meta = image_meta(cloud.image_id)
        # then it has Glance's answer and the store's file paths
        with pytest.raises(glance.ImageNotFound):
            image_meta("no-such-image")
    assert meta is not None
    assert meta["id"] == cloud.image_id and meta["disk_format"] == "qcow2" and meta["size"] == 1024 * 1024
    assert meta["properties"] == {"kernel_id": "k-1", "hw_disk_bus": "virtio"}
    assert meta["path"] == str(image_data_path(cloud.image_id))
    assert meta["kernel_path"] == str(image_data_path("k-1"))


def test_snapshot_inside_an_agent_uploads_the_disk_through_glance(cloud: Cloud, cells: dict[str, Any]) -> None:
    # given a server and the queued image the API created for its createImage
    instance = _server(cloud)
    image = image_snapshot_create(_ctx(instance), name="snap", instance_uuid=instance.uuid)
    # when its host takes the snapshot as the agent of cell1
    with compute_agent(cells["cell1"]), target_cell(cells["cell1"]):
        ops.snapshot(_ctx(instance), Instance.objects.get(uuid=instance.uuid), image_id=image.id)
    # then Glance holds the bytes and activated the image, still the server's project's
    image.refresh_from_db()
    assert image.status == "active" and image.owner == instance.project_id
    assert image.size == len(b"snapshot of " + instance.uuid.encode())
    assert image_data_path(image.id).read_bytes() == b"snapshot of " + instance.uuid.encode()


def test_a_failed_snapshot_inside_an_agent_deletes_its_image(cloud: Cloud, cells: dict[str, Any]) -> None:
    # given a server whose host will fail to snapshot its disk
    instance = _server(cloud)
    image = image_snapshot_create(_ctx(instance), name="snap", instance_uuid=instance.uuid)
    cloud.driver(str(instance.host)).fail_snapshots = 1
    # when the snapshot runs as the agent of cell1
    with compute_agent(cells["cell1"]), target_cell(cells["cell1"]), pytest.raises(Exception, match="snapshot"):
        ops.snapshot(_ctx(instance), Instance.objects.get(uuid=instance.uuid), image_id=image.id)
    # then the image is deleted (as Nova does) and the server has no task left
    assert not Image.objects.filter(id=image.id).exists()
    assert Image.all_objects.get(id=image.id).deleted
    assert cloud.instance(instance.uuid).task_state is None


def test_shelve_inside_an_agent_creates_and_unshelve_deletes_the_image_through_glance(
        cloud: Cloud, cells: dict[str, Any], settings: Any) -> None:
    # given a server shelved (not offloaded) by its host as the agent of cell1
    settings.SHELVED_OFFLOAD_TIME = -1
    instance = _server(cloud)
    with compute_agent(cells["cell1"]), target_cell(cells["cell1"]):
        ops.shelve(_ctx(instance), Instance.objects.get(uuid=instance.uuid))
    # then the shelve image is the server's project's, private and active
    image_id = cloud.instance(instance.uuid).system_metadata["shelved_image_id"]
    image = Image.objects.get(id=image_id)
    assert (image.status, image.owner, image.visibility) == ("active", instance.project_id, "private")
    assert image.properties["instance_uuid"] == instance.uuid and image.properties["image_type"] == "snapshot"
    assert image.name == f"{instance.display_name}-shelved"
    # when it is unshelved on the same host
    with compute_agent(cells["cell1"]), target_cell(cells["cell1"]):
        ops.unshelve_power_on(_ctx(instance), Instance.objects.get(uuid=instance.uuid))
    # then the image is gone through Glance's delete
    assert Image.all_objects.get(id=image_id).deleted
    assert not image_data_path(image_id).exists()
    assert "shelved_image_id" not in cloud.instance(instance.uuid).system_metadata


def test_a_notification_emitted_inside_an_agent_is_recorded_by_the_conductor(
        cells: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    # given the conductor's cast watched
    casts: list[dict[str, Any]] = []
    real = conductor_rpc.record_notification
    monkeypatch.setattr(conductor_rpc, "record_notification",
                        lambda *, message: (casts.append(message), real(message=message)))
    # when the agent of cell1 emits a notification
    with compute_agent(cells["cell1"]):
        message = notifications.notify("instance.test.end", {"uuid": "u-1"}, publisher_id="nova-compute:c1")
    # then it went to the conductor, which kept it in the API database for the console
    assert message is not None and [m["message_id"] for m in casts] == [message["message_id"]]
    record = NotificationRecord.objects.get(event_type="instance.test.end")
    assert record.publisher_id == "nova-compute:c1" and record.payload["message_id"] == message["message_id"]


def test_a_notification_emitted_on_the_service_side_is_kept_in_place(
        cells: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    # given the conductor's cast watched
    casts: list[dict[str, Any]] = []
    monkeypatch.setattr(conductor_rpc, "record_notification", lambda *, message: casts.append(message))
    # when the API side emits a notification
    notifications.notify("flavor.test", {"x": 1})
    # then it is recorded where it was emitted, with no cast
    assert casts == [] and NotificationRecord.objects.filter(event_type="flavor.test").count() == 1


def test_create_image_end_to_end_with_the_compute_isolated(cloud: Cloud, settings: Any) -> None:
    # given a server, and its compute host from now on run as the agent of its cell only
    client = cloud.member()
    server = cloud.create_server(client, "vm1")
    settings.COMPUTE_ISOLATION = True
    # when its owner asks for an image of it
    response = cloud.action(client, server["id"], {"createImage": {"name": "snap1"}}, version="2.45")
    # then the image is active with the disk's bytes, and the action's notifications were recorded
    assert response.status_code == 202
    image = Image.objects.get(id=response.json()["image_id"])
    assert image.status == "active"
    assert image_data_path(image.id).read_bytes() == b"snapshot of " + server["id"].encode()
    assert cloud.show(client, server["id"])["OS-EXT-STS:task_state"] is None
    host = cloud.instance(server["id"]).host
    assert [n["publisher_id"] for n in cloud.notifications("instance.snapshot.end")] == [f"nova-compute:{host}"]


def test_instance_notifications_inside_an_agent_take_the_ips_from_the_hosts_network_info(
        cloud: Cloud, cells: dict[str, Any]) -> None:
    # given a server and the network info its host holds
    instance = _server(cloud)
    vifs = [{"id": "port-1", "address": "fa:16:3e:00:00:01", "devname": "tap1",
             "network": {"id": "net-1", "label": "demo-net",
                         "subnets": [{"version": 4, "ips": [{"address": "10.0.0.9"}]}]}}]
    # when the agent of cell1 emits instance.create.end with it
    with compute_agent(cells["cell1"]), target_cell(cells["cell1"]):
        notify_instance(_ctx(instance), "instance.create.end", Instance.objects.get(uuid=instance.uuid),
                        network_info=lambda: vifs)
    # then the payload lists those IPs (no read of the network service's rows from the agent)
    record = NotificationRecord.objects.filter(event_type="instance.create.end").order_by("-id").first()
    assert record is not None
    ips = [ip["nova_object.data"] for ip in record.payload["payload"]["nova_object.data"]["ip_addresses"]]
    assert [(ip["address"], ip["port_uuid"], ip["network_id"]) for ip in ips] == [("10.0.0.9", "port-1", "net-1")]
