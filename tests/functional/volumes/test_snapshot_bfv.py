"""``createImage`` of a volume-backed server (Nova's ``snapshot_volume_backed``): a forced snapshot
of each volume and a data-less image naming them in ``block_device_mapping``; booting from that
image creates the new server's volumes from the snapshots."""
from __future__ import annotations

import json
from typing import Any

import pytest

from tests.functional.volumes.conftest import IMAGE_A
from tests.functional.volumes.test_rebuild_bfv import boot_bfv, root_volume, volume_bytes
from tests.functional.volumes.test_volume_api import call

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])


def snapshot(cloud: Any, client: Any, server_id: str, version: str = "2.45", **body: Any) -> Any:
    return cloud.action(client, server_id, {"createImage": {"name": "bfv-snap", **body}}, version=version)


def server_cell(cloud: Any, server_id: str) -> Any:
    from cells.context import target_cell

    return target_cell(cloud.cells[cloud.hosts[cloud.instance(server_id).host]["cell"]])


def mapping(image: Any) -> list[dict[str, Any]]:
    return json.loads(image.properties["block_device_mapping"])


def test_create_image_snapshots_each_volume_and_answers_the_image_id_from_2_45(bfv: Any) -> None:
    from images.models import Image
    from servers.models import InstanceAction, InstanceActionEvent
    from volumes.models import Snapshot, Volume

    # given a volume-backed server (1 GB root volume) with a 2 GB data volume attached
    client = bfv.member()
    server = boot_bfv(bfv, client)
    data = call(client, "post", "/volume/v3/volumes", {"volume": {"size": 2}}).json()["volume"]["id"]
    attached = bfv.post(client, f"servers/{server['id']}/os-volume_attachments", {"volumeAttachment": {
        "volumeId": data}})
    assert attached.status_code == 200, attached.content
    _bdm, root = root_volume(bfv, server["id"])
    # when it is snapshotted (2.45: the image id in the body)
    response = snapshot(bfv, client, server["id"], metadata={"purpose": "backup"})
    # then 202 with the image id and no Location
    assert response.status_code == 202, response.content
    assert "Location" not in response
    image = Image.objects.get(id=response.json()["image_id"])
    # the image holds no data, is active and private to the server's project
    assert image.status == "active" and image.size == 0 and image.name == "bfv-snap"
    assert image.owner == bfv.instance(server["id"]).project_id and image.visibility == "private"
    props = image.properties
    assert props["bdm_v2"] == "True" and props["purpose"] == "backup"
    assert props["root_device_name"] == "/dev/vda"
    # one forced snapshot per volume, of the volume's size, both volumes still in use
    entries = mapping(image)
    assert [e["boot_index"] for e in entries] == [0, None]
    for entry, volume_id, size in zip(entries, (root.id, data), (1, 2), strict=True):
        snap = Snapshot.objects.get(pk=entry["snapshot_id"])
        assert snap.volume_id == volume_id and snap.size == size and snap.status == "available"
        assert snap.name == "snapshot for bfv-snap"
        assert entry["source_type"] == "snapshot" and entry["destination_type"] == "volume"
        assert entry["volume_size"] == size and "volume_id" not in entry
        assert Volume.objects.get(pk=volume_id).status == "in-use"
    assert entries[0]["delete_on_termination"] is True and entries[0]["device_name"] == "/dev/vda"
    # the server is untouched: no task, ACTIVE; the action and its API event are recorded
    shown = bfv.show(client, server["id"])
    assert shown["status"] == "ACTIVE" and shown["OS-EXT-STS:task_state"] is None
    with server_cell(bfv, server["id"]):
        action = InstanceAction.objects.get(instance_uuid=server["id"], action="createImage")
        event = InstanceActionEvent.objects.get(action=action)
    assert event.event == "api_snapshot_instance" and event.result == "Success"
    # no instance.snapshot.* notification: those belong to an image upload by the host
    assert not bfv.notifications("instance.snapshot.start") and not bfv.notifications("instance.snapshot.end")


def test_below_2_45_the_location_header_names_the_image(bfv: Any) -> None:
    from images.models import Image

    client = bfv.member()
    server = boot_bfv(bfv, client, stopped=True)
    response = snapshot(bfv, client, server["id"], version="2.44")
    assert response.status_code == 202 and not response.content
    image_id = response["Location"].rsplit("/", 1)[-1]
    assert "/image/v2/images/" in response["Location"] and Image.objects.get(id=image_id).size == 0


def test_image_properties_are_inherited_less_the_non_inheritable(bfv: Any) -> None:
    from images.models import Image

    # given a server booted from an image with custom, signature and os_glance properties
    Image.objects.filter(id=bfv.image_a).update(properties={
        "hw_disk_bus": "virtio", "img_signature": "sig", "os_glance_importing_to_stores": "x",
        "cache_in_nova": "True", "block_device_mapping": "[]"})
    client = bfv.member()
    server = boot_bfv(bfv, client)
    # when it is snapshotted with metadata that tries to set the mapping itself
    response = snapshot(bfv, client, server["id"], metadata={"bdm_v2": "no", "hw_disk_bus": "scsi"})
    props = Image.objects.get(id=response.json()["image_id"]).properties
    # then the image properties are inherited, the user's metadata wins over them, the
    # non-inheritable ones are dropped and the mapping is the snapshot's own
    assert props["hw_disk_bus"] == "scsi" and props["bdm_v2"] == "True"
    assert not {"img_signature", "os_glance_importing_to_stores", "cache_in_nova"} & set(props)
    assert mapping(Image.objects.get(id=response.json()["image_id"]))[0]["source_type"] == "snapshot"


def test_boot_from_the_image_creates_the_root_volume_from_the_snapshot(bfv: Any) -> None:
    from images.models import Image
    from volumes.models import Snapshot

    client = bfv.member()
    server = boot_bfv(bfv, client)
    image_id = snapshot(bfv, client, server["id"]).json()["image_id"]
    snap_id = mapping(Image.objects.get(id=image_id))[0]["snapshot_id"]
    # when a server boots from the image without any block device of its own
    new = bfv.create_server(client, "from-snap", image=image_id)
    # then it is ACTIVE and volume-backed: its root volume was made from the snapshot
    shown = bfv.wait_for_status(client, new["id"], "ACTIVE")
    assert shown["image"] == ""
    bdm, vol = root_volume(bfv, new["id"])
    assert bdm.source_type == "snapshot" and bdm.snapshot_id == snap_id and bdm.boot_index == 0
    assert vol.snapshot_id == snap_id and vol.size == 1 and vol.status == "in-use"
    assert vol.id != root_volume(bfv, server["id"])[1].id
    assert volume_bytes(vol.id, len(IMAGE_A)) == IMAGE_A
    # its system metadata does not carry the mapping (too large, as in Nova)
    assert "image_block_device_mapping" not in bfv.instance(new["id"]).system_metadata
    # and deleting the image leaves the snapshots
    assert bfv.delete(client, f"/image/v2/images/{image_id}").status_code == 204
    assert Snapshot.objects.get(pk=snap_id).status == "available"


def test_the_clients_image_root_gives_way_to_the_images_mapping(bfv: Any) -> None:
    client = bfv.member()
    server = boot_bfv(bfv, client)
    image_id = snapshot(bfv, client, server["id"]).json()["image_id"]
    # when the request also names the image as a local root (as the openstack CLI does)
    bdm = [{"boot_index": 0, "uuid": image_id, "source_type": "image", "destination_type": "local",
            "delete_on_termination": True}]
    new = bfv.create_server(client, "cli-style", image=image_id, block_device_mapping_v2=bdm)
    # then that root is dropped: the server is volume-backed on a volume from the snapshot
    assert bfv.wait_for_status(client, new["id"], "ACTIVE")["image"] == ""
    root, vol = root_volume(bfv, new["id"])
    assert root.source_type == "snapshot" and vol.snapshot_id == root.snapshot_id


def test_a_requested_volume_root_replaces_the_images(bfv: Any) -> None:
    from volumes.models import Volume

    client = bfv.member()
    server = boot_bfv(bfv, client)
    image_id = snapshot(bfv, client, server["id"]).json()["image_id"]
    own = call(client, "post", "/volume/v3/volumes", {"volume": {"size": 1, "imageRef": bfv.image_b}}).json()
    Volume.objects.filter(pk=own["volume"]["id"]).update(status="available", bootable=True)
    # when the request names its own root volume
    bdm = [{"boot_index": 0, "uuid": own["volume"]["id"], "source_type": "volume", "destination_type": "volume"}]
    new = bfv.create_server(client, "own-root", image=image_id, block_device_mapping_v2=bdm)
    # then the root is the request's volume, not one from the image's snapshot
    root, vol = root_volume(bfv, new["id"])
    assert root.source_type == "volume" and vol.id == own["volume"]["id"]


def test_refusals(bfv: Any) -> None:
    from images.models import Image
    from servers.models import Instance
    from volumes.models import Snapshot

    client = bfv.member()
    server = boot_bfv(bfv, client)
    # a server with a task is 409; a locked one 409 for its non-admin owner
    before = Image.objects.count()
    with server_cell(bfv, server["id"]):
        Instance.objects.filter(uuid=server["id"]).update(task_state="rebooting")
    assert snapshot(bfv, client, server["id"]).status_code == 409
    with server_cell(bfv, server["id"]):
        Instance.objects.filter(uuid=server["id"]).update(task_state=None)
    bfv.action(client, server["id"], {"lock": None})
    assert snapshot(bfv, client, server["id"]).status_code == 409
    bfv.action(client, server["id"], {"unlock": None})
    # createBackup stays refused for a volume-backed server
    backup = bfv.action(client, server["id"], {"createBackup": {"name": "b", "backup_type": "daily",
                                                                "rotation": 1}})
    assert backup.status_code == 400
    # a volume the volume service will not snapshot (quota): the error, and no image
    project = bfv.instance(server["id"]).project_id
    assert call(bfv.admin(), "put", f"/volume/v3/os-quota-sets/{project}",
                {"quota_set": {"snapshots": 0}}).status_code == 200
    refused = snapshot(bfv, client, server["id"])
    assert refused.status_code in (403, 413), refused.content
    assert Image.objects.count() == before and not Snapshot.objects.exists()
    # an image asking for quiescing on an ACTIVE server: 400 (no guest agent here)
    with server_cell(bfv, server["id"]):
        Instance.objects.filter(uuid=server["id"]).update(system_metadata={"image_os_require_quiesce": "yes"})
    quiesce = snapshot(bfv, client, server["id"])
    assert quiesce.status_code == 400 and "Quiescing is not supported" in quiesce.content.decode()
    assert Image.objects.count() == before


def test_policy_allow_volume_backed(bfv: Any, settings: Any, tmp_path: Any) -> None:
    from cloudcore.core.policy import override_set

    settings.POLICY_FILE = tmp_path / "policy.yaml"
    client = bfv.member()
    server = boot_bfv(bfv, client)
    override_set("os_compute_api:servers:create_image:allow_volume_backed", "admin")
    assert snapshot(bfv, client, server["id"]).status_code == 403


def test_boot_from_an_unknown_snapshot_is_400(bfv: Any) -> None:
    client = bfv.member()
    bdm = [{"boot_index": 0, "uuid": "00000000-0000-0000-0000-000000000000", "source_type": "snapshot",
            "destination_type": "volume", "volume_size": 1}]
    body = bfv.create_server(client, "x", image=None, block_device_mapping_v2=bdm, expect=400)
    assert "failed to get snapshot" in body["badRequest"]["message"]
