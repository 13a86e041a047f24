"""rebuild of image-backed servers (new image, fields per microversion, stopped stays SHUTOFF) and
of PENDING servers (scheduled again from cell0, seed 3)."""
from __future__ import annotations

from typing import Any

import pytest

from tests.cloud import Cloud

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])


def second_image(cloud: Cloud) -> str:
    from images.models import Image

    return Image.objects.create(name="tiny2", status="active", visibility="public", disk_format="raw",
                                container_format="bare", size=1024, owner="admin").id


def test_rebuild_with_new_image_name_and_metadata(cloud: Cloud) -> None:
    client = cloud.member()
    server = cloud.create_server(client, "vm1")
    new_image = second_image(cloud)
    response = cloud.action(client, server["id"], {"rebuild": {"imageRef": new_image, "name": "vm1b",
                                                               "metadata": {"role": "web"}}})
    assert response.status_code == 202
    body = response.json()["server"]
    assert body["adminPass"] and body["id"] == server["id"]
    shown = cloud.show(client, server["id"])
    assert shown["status"] == "ACTIVE" and shown["name"] == "vm1b" and shown["metadata"] == {"role": "web"}
    assert shown["image"]["id"] == new_image
    assert cloud.domain(server["id"]).isActive()
    actions = cloud.get(client, f"servers/{server['id']}/os-instance-actions").json()["instanceActions"]
    assert actions[0]["action"] == "rebuild"
    assert len(cloud.notifications("instance.rebuild.end")) == 1


def test_rebuild_of_a_stopped_server_ends_shutoff(cloud: Cloud) -> None:
    client = cloud.member()
    server = cloud.create_server(client, "vm1")
    cloud.action(client, server["id"], {"os-stop": None})
    assert cloud.action(client, server["id"], {"rebuild": {"imageRef": cloud.image_id}}).status_code == 202
    assert cloud.show(client, server["id"])["status"] == "SHUTOFF"
    assert not cloud.domain(server["id"]).isActive()


@pytest.mark.parametrize(("version", "field", "value", "code"), [
    ("2.53", "key_name", None, 400), ("2.54", "key_name", None, 202),
    ("2.56", "user_data", "aGk=", 400), ("2.57", "user_data", "aGk=", 202), ("2.57", "user_data", "***", 400),
    ("2.89", "hostname", "h1", 400), ("2.90", "hostname", "h1", 202),
    ("2.18", "description", "d", 400), ("2.19", "description", "d", 202),
])
def test_rebuild_fields_per_microversion(cloud: Cloud, version: str, field: str, value: Any, code: int) -> None:
    client = cloud.member()
    server = cloud.create_server(client, "vm1")
    response = cloud.action(client, server["id"], {"rebuild": {"imageRef": cloud.image_id, field: value}},
                            version=version)
    assert response.status_code == code, response.content
    if field == "user_data" and code == 202:  # the answer carries what the server now has
        assert response.json()["server"]["user_data"] == value
        as_admin = cloud.action(cloud.admin(), server["id"], {"rebuild": {"imageRef": cloud.image_id}},
                                version="2.75").json()["server"]
        assert as_admin["user_data"] == value and "OS-EXT-SRV-ATTR:user_data" not in as_admin


def test_rebuild_errors(cloud: Cloud) -> None:
    client = cloud.member()
    server = cloud.create_server(client, "vm1")
    assert cloud.action(client, server["id"], {"rebuild": {}}).status_code == 400
    assert cloud.action(client, server["id"], {"rebuild": {"imageRef": "no-such-image"}}).status_code == 400
    assert cloud.action(client, server["id"], {"rebuild": {"imageRef": cloud.image_id,
                                                           "key_name": "nokey"}}, version="2.54").status_code == 400
    cloud.action(client, server["id"], {"shelve": None})
    shelved = cloud.action(client, server["id"], {"rebuild": {"imageRef": cloud.image_id}})
    assert shelved.status_code == 409


def test_rebuild_of_a_pending_server_schedules_it_again(cloud: Cloud, settings: Any) -> None:
    settings.USE_PENDING_STATE = True
    client = cloud.member()
    big = cloud.flavor("m1.huge", vcpus=16)
    server = cloud.create_server(client, "waiting", flavor=big.name)
    assert cloud.show(client, server["id"], version="2.105")["status"] == "PENDING"
    assert cloud.cell_of(server["id"]) == "cell0"
    # when room appears (a bigger host) and the server is rebuilt
    cloud.add_host("compute9", cell="cell2", zone="az2", vcpus=16, memory_mb=65536)
    response = cloud.action(client, server["id"], {"rebuild": {"imageRef": cloud.image_id}}, version="2.105")
    assert response.status_code == 202
    # then it is built in a real cell with the same uuid
    shown = cloud.show(client, server["id"], version="2.105")
    assert shown["status"] == "ACTIVE" and shown["id"] == server["id"]
    assert cloud.cell_of(server["id"]) == "cell2"


def test_rebuild_of_a_pending_server_without_room_stays_pending(cloud: Cloud, settings: Any) -> None:
    settings.USE_PENDING_STATE = True
    client = cloud.member()
    big = cloud.flavor("m1.huge", vcpus=16)
    server = cloud.create_server(client, "waiting", flavor=big.name)
    assert cloud.action(client, server["id"], {"rebuild": {"imageRef": cloud.image_id}},
                        version="2.105").status_code == 202
    assert cloud.show(client, server["id"], version="2.105")["status"] == "PENDING"
    assert cloud.show(client, server["id"], version="2.104")["status"] == "ERROR"
    assert cloud.cell_of(server["id"]) == "cell0"


@pytest.mark.parametrize(("version", "reduced"), [("2.53", True), ("2.74", True), ("2.75", False)])
def test_rebuild_response_is_reduced_before_275(cloud: Cloud, version: str, reduced: bool) -> None:
    # given a server
    client = cloud.member()
    server = cloud.create_server(client, "vm-shape")
    # when it is rebuilt at the version
    response = cloud.action(client, server["id"], {"rebuild": {"imageRef": second_image(cloud)}}, version=version)
    # then before 2.75 the body has none of the extended attributes (Nova's, and Tempest's schema); from 2.75 all
    body = response.json()["server"]
    extended = {"OS-EXT-AZ:availability_zone", "OS-EXT-STS:vm_state", "OS-SRV-USG:launched_at", "config_drive",
                "security_groups", "os-extended-volumes:volumes_attached"}
    assert response.status_code == 202 and body["adminPass"]
    assert (extended & set(body)) == (set() if reduced else extended)
    # but key_name is in a rebuild's answer from 2.54, server_groups from 2.71
    assert ("key_name" in body) is (version >= "2.54")
    assert ("server_groups" in body) is (version >= "2.71")
    assert ("user_data" in body) is (version >= "2.57")  # None here: the server has none
    address = next(iter(body["addresses"].values()))[0]
    assert ("OS-EXT-IPS:type" not in address) is reduced


def test_a_host_refusing_the_new_image_is_found_by_the_conductor_after_the_202(cloud: Cloud) -> None:
    from cells.context import target_cell
    from images.models import Image
    from scheduling.models import RequestSpec
    from servers.models import InstanceAction, InstanceActionEvent

    # given an ACTIVE server on an x86_64 host and an image for another architecture
    client = cloud.member()
    server = cloud.create_server(client, "vm1")
    arm = Image.objects.create(name="arm", status="active", visibility="public", disk_format="raw",
                               container_format="bare", size=1024, owner="admin",
                               properties={"hw_architecture": "aarch64"}).id
    # when it is rebuilt with that image, renamed on the way
    response = cloud.action(client, server["id"], {"rebuild": {"imageRef": arm, "name": "renamed"}})
    # then the API accepted it (the host check is the conductor's, after the commit)
    assert response.status_code == 202
    # and the conductor's check refused the host: ERROR with Nova's NoValidHost fault, never rebuilt
    shown = cloud.show(client, server["id"])
    assert shown["status"] == "ERROR" and shown["name"] == "renamed"
    assert shown["fault"]["message"].startswith("No valid host was found.")
    assert shown["image"]["id"] == cloud.image_id
    # and the image properties it keeps are its own image's again (the API had put the new one's)
    sysmeta = cloud.instance(server["id"]).system_metadata
    assert sysmeta["image_base_image_ref"] == cloud.image_id and "image_hw_architecture" not in sysmeta
    assert cloud.domain(server["id"]).isActive()
    # and the rebuild action failed at the conductor's rebuild_server event
    with target_cell(cloud.cell_of(server["id"])):
        action = InstanceAction.objects.get(instance_uuid=server["id"], action="rebuild")
        events = list(InstanceActionEvent.objects.filter(action=action).values_list("event", "result"))
    assert action.message == "Error" and events == [("rebuild_server", "Error")]
    # and the request spec keeps the image the server still runs
    assert RequestSpec.objects.get(instance_uuid=server["id"]).spec["image"]["id"] == cloud.image_id
    # and the conductor said so as Nova's does: compute_task.rebuild_server.error
    (error,) = [n["payload"]["nova_object.data"] for n in cloud.notifications("compute_task.rebuild_server.error")]
    assert (error["instance_uuid"], error["state"]) == (server["id"], "error")
    assert error["reason"]["nova_object.data"]["exception"] == "NoValidHost"
    assert cloud.notifications("instance.rebuild_scheduled") == []


def test_a_new_image_the_host_accepts_is_recorded_in_the_request_spec(cloud: Cloud) -> None:
    from scheduling.models import RequestSpec

    client = cloud.member()
    server = cloud.create_server(client, "vm1")
    image = second_image(cloud)
    assert cloud.action(client, server["id"], {"rebuild": {"imageRef": image}}).status_code == 202
    assert cloud.show(client, server["id"])["status"] == "ACTIVE"
    assert cloud.instance(server["id"]).image_ref == image
    assert RequestSpec.objects.get(instance_uuid=server["id"]).spec["image"]["id"] == image
    # and the conductor said the host was scheduled for it, before the host rebuilt it (Nova's)
    events = [n["event_type"] for n in cloud.notifications() if n["event_type"].startswith("instance.rebuild")]
    assert events == ["instance.rebuild_scheduled", "instance.rebuild.start", "instance.rebuild.end"]
    (scheduled,) = cloud.notifications("instance.rebuild_scheduled")
    assert scheduled["publisher_id"].startswith("nova-conductor:")
    assert scheduled["payload"]["nova_object.data"]["uuid"] == server["id"]


@pytest.mark.parametrize("pending", [False, True])
def test_rebuild_of_a_server_that_never_launched_is_409_unless_pending(cloud: Cloud, settings: Any,
                                                                       pending: bool) -> None:
    """ERROR in cell0 (no valid host), or a PENDING server that the external service reset to
    ERROR: Nova refuses the rebuild (never launched), nothing is cast, the server stays ERROR."""
    settings.USE_PENDING_STATE = pending
    client, admin = cloud.member(), cloud.admin()
    big = cloud.flavor("m1.huge", vcpus=16)
    server = cloud.create_server(client, "nowhere", flavor=big.name)
    assert cloud.show(client, server["id"], version="2.105")["status"] == ("PENDING" if pending else "ERROR")
    if pending:
        assert cloud.action(admin, server["id"], {"os-resetState": {"state": "error"}}).status_code == 202
    refused = cloud.action(client, server["id"], {"rebuild": {"imageRef": cloud.image_id}}, version="2.105")
    assert refused.status_code == 409, refused.content
    assert refused.json()["conflictingRequest"]["message"] == (
        f"Cannot 'rebuild' instance {server['id']} while it is in launched_at None")
    shown = cloud.show(client, server["id"], version="2.105")
    assert shown["status"] == "ERROR" and shown["OS-EXT-STS:task_state"] is None
    assert cloud.cell_of(server["id"]) == "cell0"


def test_a_pending_server_shows_progress_as_a_build_does(cloud: Cloud, settings: Any) -> None:
    settings.USE_PENDING_STATE = True
    client = cloud.member()
    server = cloud.create_server(client, "waiting", flavor=cloud.flavor("m1.huge", vcpus=16).name)
    shown = cloud.show(client, server["id"], version="2.105")
    assert shown["status"] == "PENDING" and shown["progress"] == 0
    assert "progress" not in cloud.show(client, server["id"], version="2.104")  # shown as ERROR there


def _actions(cloud: Cloud, client: Any, server_id: str) -> dict[str, dict[str, Any]]:
    listed = cloud.get(client, f"servers/{server_id}/os-instance-actions", version="2.84").json()["instanceActions"]
    out = {}
    for action in listed:
        shown = cloud.get(client, f"servers/{server_id}/os-instance-actions/{action['request_id']}",
                          version="2.84").json()["instanceAction"]
        out[action["action"]] = shown
    return out


def test_a_pending_rebuild_moves_the_whole_server_out_of_cell0_with_its_history(cloud: Cloud, settings: Any) -> None:
    from cells.context import target_cell
    from servers.models import BlockDeviceMapping, Instance, InstanceAction, InstanceFault, Tag

    settings.USE_PENDING_STATE = True
    client = cloud.member()
    server = cloud.create_server(client, "waiting", flavor=cloud.flavor("m1.huge", vcpus=16).name,
                                 version="2.52", tags=["keep-me"])
    assert cloud.cell_of(server["id"]) == "cell0"
    cloud.add_host("compute9", cell="cell2", zone="az2", vcpus=16, memory_mb=65536)
    assert cloud.action(client, server["id"], {"rebuild": {"imageRef": cloud.image_id}},
                        version="2.105").status_code == 202
    assert cloud.show(client, server["id"], version="2.105")["status"] == "ACTIVE"
    assert cloud.cell_of(server["id"]) == "cell2"
    # nothing of the server is left in cell0
    with target_cell("cell0"):
        for model in (InstanceAction, InstanceFault, BlockDeviceMapping):
            assert not model._base_manager.filter(instance_uuid=server["id"]).exists(), model
        assert not Tag.objects.filter(instance_uuid=server["id"]).exists()
        assert not Instance.all_objects.filter(uuid=server["id"]).exists()
    # and the history came along: the failed create, then the rebuild, finished, with its events
    history = _actions(cloud, client, server["id"])
    assert history["create"]["message"] == "Error"
    assert history["rebuild"]["message"] is None
    with target_cell("cell2"):
        rebuild = InstanceAction.objects.get(instance_uuid=server["id"], action="rebuild")
        assert rebuild.finish_time is not None
    assert "compute_build_and_run_instance" in {e["event"] for e in history["rebuild"]["events"]}
    assert cloud.get(client, f"servers/{server['id']}/tags", version="2.52").json()["tags"] == ["keep-me"]


def test_a_pending_rebuild_buried_again_keeps_one_copy_of_everything(cloud: Cloud, settings: Any) -> None:
    from cells.context import target_cell
    from servers.models import BlockDeviceMapping

    settings.USE_PENDING_STATE = True
    client = cloud.member()
    server = cloud.create_server(client, "waiting", flavor=cloud.flavor("m1.huge", vcpus=16).name)
    with target_cell("cell0"):
        bdms = BlockDeviceMapping.objects.filter(instance_uuid=server["id"]).count()
    for _ in range(2):
        assert cloud.action(client, server["id"], {"rebuild": {"imageRef": cloud.image_id}},
                            version="2.105").status_code == 202
        assert cloud.show(client, server["id"], version="2.105")["status"] == "PENDING"
    with target_cell("cell0"):
        assert BlockDeviceMapping.objects.filter(instance_uuid=server["id"]).count() == bdms
    history = cloud.get(client, f"servers/{server['id']}/os-instance-actions", version="2.84").json()
    names = [a["action"] for a in history["instanceActions"]]
    assert sorted(names) == ["create", "rebuild", "rebuild"]
    assert all(a["message"] == "Error" for a in history["instanceActions"])


def test_the_rebuild_answer_and_the_server_have_the_new_image_before_its_host_acts(
        cloud: Cloud, monkeypatch: pytest.MonkeyPatch) -> None:
    from conductor import rpc as conductor_rpc
    from images.models import Image

    # given a server of an image that asks for the guest agent, and another image with other properties
    Image.objects.filter(id=cloud.image_id).update(properties={"hw_qemu_guest_agent": "yes"})
    client = cloud.member()
    server = cloud.wait_for_status(client, cloud.create_server(client, "vm1")["id"], "ACTIVE")
    new_image = second_image(cloud)
    Image.objects.filter(id=new_image).update(properties={"os_type": "linux"})
    # and a conductor that has not acted on the rebuild yet (its cast held back)
    held: list[dict[str, Any]] = []
    monkeypatch.setattr(conductor_rpc, "rebuild_instance", lambda **kwargs: held.append(kwargs))
    # when the server is rebuilt with the new image
    response = cloud.action(client, server["id"], {"rebuild": {"imageRef": new_image}})
    # then the answer and a show already name the new image, as Nova's API sets it before the cast
    assert response.status_code == 202, response.content
    assert response.json()["server"]["image"]["id"] == new_image
    assert cloud.show(client, server["id"])["image"]["id"] == new_image
    # and the image properties the server keeps are the new image's, the old ones gone
    sysmeta = cloud.instance(server["id"]).system_metadata
    assert (sysmeta.get("image_os_type"), sysmeta.get("image_base_image_ref")) == ("linux", new_image)
    assert "image_hw_qemu_guest_agent" not in sysmeta
    assert len(held) == 1 and held[0]["image"]["id"] == new_image
