"""``os-volume_attachments``: attach an empty volume to a running server, fields per microversion,
2.85 delete_on_termination update, detach, root volume not detachable, cleanup on delete."""
from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])


def new_volume(cloud: Any, client: Any) -> str:
    from django.test import TestCase

    with TestCase.captureOnCommitCallbacks(execute=True):
        r = client.post("/volume/v3/volumes", {"volume": {"size": 1}}, format="json")
    return r.json()["volume"]["id"]


def test_attach_show_update_detach(bfv: Any) -> None:
    from volumes.models import Volume

    client = bfv.member()
    server = bfv.create_server(client, "vm1")
    vid = new_volume(bfv, client)
    path = f"servers/{server['id']}/os-volume_attachments"
    # when a volume is attached with a tag (2.89 shape)
    r = bfv.post(client, path, {"volumeAttachment": {"volumeId": vid, "tag": "data"}}, version="2.89")
    assert r.status_code == 200, r.content
    body = r.json()["volumeAttachment"]
    assert body["volumeId"] == vid and body["tag"] == "data" and "id" not in body and body["bdm_uuid"]
    # then the volume is in-use through a completed attachment
    assert Volume.objects.get(pk=vid).status == "in-use"
    listed = bfv.get(client, path, version="2.79").json()["volumeAttachments"]
    assert listed[0]["id"] == vid and listed[0]["delete_on_termination"] is False and "attachment_id" not in listed[0]
    assert "tag" not in bfv.get(client, f"{path}/{vid}", version="2.69").json()["volumeAttachment"]
    # attaching the same volume again is a 400
    assert bfv.post(client, path, {"volumeAttachment": {"volumeId": vid}}).status_code == 400
    # 2.85 delete_on_termination update
    upd = bfv.put(client, f"{path}/{vid}", {"volumeAttachment": {"volumeId": vid, "delete_on_termination": True}},
                  version="2.85")
    assert upd.status_code == 202
    assert bfv.get(client, f"{path}/{vid}", version="2.85").json()["volumeAttachment"]["delete_on_termination"]
    # detach
    assert bfv.delete(client, f"{path}/{vid}").status_code == 202
    assert Volume.objects.get(pk=vid).status == "available"
    assert bfv.get(client, f"{path}/{vid}").status_code == 404


def test_delete_on_termination_volume_goes_with_the_server(bfv: Any) -> None:
    from volumes.models import Volume

    client = bfv.member()
    server = bfv.create_server(client, "vm1")
    keep, drop = new_volume(bfv, client), new_volume(bfv, client)
    path = f"servers/{server['id']}/os-volume_attachments"
    bfv.post(client, path, {"volumeAttachment": {"volumeId": keep}}, version="2.79")
    bfv.post(client, path, {"volumeAttachment": {"volumeId": drop, "delete_on_termination": True}}, version="2.79")
    # the list pages with limit and offset, as Nova's does
    every = bfv.get(client, path).json()["volumeAttachments"]
    assert len(every) == 2
    assert bfv.get(client, f"{path}?limit=1&offset=1").json()["volumeAttachments"] == every[1:]
    first = bfv.get(client, f"{path}?limit=1", version="2.102").json()["volumeAttachments"]
    assert [a["volumeId"] for a in first] == [every[0]["volumeId"]]
    assert bfv.delete(client, f"servers/{server['id']}").status_code == 204
    assert Volume.objects.get(pk=keep).status == "available"
    assert not Volume.objects.filter(pk=drop).exists()


def test_root_volume_cannot_be_detached(bfv: Any) -> None:
    from tests.functional.volumes.test_rebuild_bfv import boot_bfv, root_volume

    client = bfv.member()
    server = boot_bfv(bfv, client)
    _bdm, vol = root_volume(bfv, server["id"])
    r = bfv.delete(client, f"servers/{server['id']}/os-volume_attachments/{vol.id}")
    assert r.status_code == 400


def test_boot_from_an_existing_bootable_volume(bfv: Any) -> None:
    from django.test import TestCase

    from volumes.models import Volume

    client = bfv.member()
    # given a bootable volume made from an image (openstack server create --volume VOL)
    with TestCase.captureOnCommitCallbacks(execute=True):
        vid = client.post("/volume/v3/volumes", {"volume": {"size": 1, "imageRef": bfv.image_a}},
                          format="json").json()["volume"]["id"]
    bdm = [{"boot_index": 0, "uuid": vid, "source_type": "volume", "destination_type": "volume"}]
    server = bfv.create_server(client, "vm-vol", image=None, block_device_mapping_v2=bdm)
    # then the server is ACTIVE on it, the volume in-use and kept after the server is deleted
    assert bfv.show(client, server["id"])["status"] == "ACTIVE"
    assert Volume.objects.get(pk=vid).status == "in-use"
    bfv.delete(client, f"servers/{server['id']}")
    assert Volume.objects.get(pk=vid).status == "available"


def test_swap_volume_copies_data_and_releases_the_old_volume(bfv: Any) -> None:
    from volumes.backends import get_backend
    from volumes.models import Volume

    client = bfv.member()
    admin = bfv.admin()
    server = bfv.create_server(client, "vm1")
    old, new = new_volume(bfv, client), new_volume(bfv, client)
    path = f"servers/{server['id']}/os-volume_attachments"
    assert bfv.post(client, path, {"volumeAttachment": {"volumeId": old}}).status_code == 200
    with open(get_backend().path(old), "r+b") as fh:
        fh.write(b"DATA-ON-THE-OLD-VOLUME")
    # a member may not swap (admin rule)
    assert bfv.put(client, f"{path}/{old}", {"volumeAttachment": {"volumeId": new}}).status_code == 403
    # when an admin swaps it for the new volume
    response = bfv.put(admin, f"{path}/{old}", {"volumeAttachment": {"volumeId": new}})
    assert response.status_code == 202, response.content
    # then the new volume holds the data and is attached in the old one's place; the old is free
    assert get_backend().path(new).read_bytes().startswith(b"DATA-ON-THE-OLD-VOLUME")
    assert Volume.objects.get(pk=new).status == "in-use" and Volume.objects.get(pk=old).status == "available"
    listed = bfv.get(client, path).json()["volumeAttachments"]
    assert [a["volumeId"] for a in listed] == [new]
    # swapping to a volume that is not available is a 400
    assert bfv.put(admin, f"{path}/{new}", {"volumeAttachment": {"volumeId": new}}, version="2.85").status_code == 202
    other = new_volume(bfv, client)
    bfv.post(client, path, {"volumeAttachment": {"volumeId": other}})
    assert bfv.put(admin, f"{path}/{new}", {"volumeAttachment": {"volumeId": other}}).status_code == 400


def test_attach_answers_202_without_a_body_from_2_101(bfv: Any) -> None:
    from volumes.models import Volume

    client = bfv.member()
    server = bfv.create_server(client, "vm101")
    path = f"servers/{server['id']}/os-volume_attachments"
    # at 2.100 the attach answers 200 with the attachment
    first = new_volume(bfv, client)
    old = bfv.post(client, path, {"volumeAttachment": {"volumeId": first}}, version="2.100")
    assert old.status_code == 200 and old.json()["volumeAttachment"]["volumeId"] == first
    # at 2.101 it answers 202 with no body, and the volume is attached all the same
    second = new_volume(bfv, client)
    new = bfv.post(client, path, {"volumeAttachment": {"volumeId": second}}, version="2.101")
    assert new.status_code == 202 and not new.content, new.content
    assert Volume.objects.get(pk=second).status == "in-use"


def test_attach_and_detach_on_a_shelved_offloaded_server(bfv: Any) -> None:
    from servers.models import BlockDeviceMapping
    from volumes.models import Volume, VolumeAttachment

    client = bfv.member()
    server = bfv.create_server(client, "vm1")
    bfv.wait_for_status(client, server["id"], "ACTIVE")
    assert bfv.action(client, server["id"], {"shelve": None}).status_code == 202
    bfv.wait_for_status(client, server["id"], "SHELVED_OFFLOADED")  # offloaded at once (time 0)
    keep, drop = new_volume(bfv, client), new_volume(bfv, client)
    path = f"servers/{server['id']}/os-volume_attachments"
    # when volumes are attached to the server that has no host (2.20)
    for vid in (keep, drop):
        assert bfv.post(client, path, {"volumeAttachment": {"volumeId": vid}}, version="2.20").status_code == 200
    # then they are in-use at once, through attachments that no host has connected yet
    assert {v.status for v in Volume.objects.filter(pk__in=[keep, drop])} == {"in-use"}
    bdm = BlockDeviceMapping.objects.using(bfv.cell_of(server["id"])).get(instance_uuid=server["id"],
                                                                          volume_id=keep)
    assert bdm.connection_info is None and bdm.device_name
    # and detaching one releases it without any host
    assert bfv.delete(client, f"{path}/{drop}", version="2.20").status_code == 202
    assert Volume.objects.get(pk=drop).status == "available"
    assert [a["volumeId"] for a in bfv.get(client, path).json()["volumeAttachments"]] == [keep]
    # when the server is unshelved, its new host connects the volume attached meanwhile
    assert bfv.action(client, server["id"], {"unshelve": None}).status_code == 202
    bfv.wait_for_status(client, server["id"], "ACTIVE")
    att = VolumeAttachment.objects.get(volume_id=keep, deleted=False)
    assert att.attach_status == "attached" and att.attached_host == bfv.instance(server["id"]).host
    bdm = BlockDeviceMapping.objects.using(bfv.cell_of(server["id"])).get(instance_uuid=server["id"],
                                                                          volume_id=keep)
    assert bdm.connection_info["data"]["volume_id"] == keep
    assert bfv.get(client, f"{path}/{keep}").json()["volumeAttachment"]["device"]


def test_attach_on_a_shelved_server_still_on_its_host(bfv: Any, settings: Any) -> None:
    from volumes.models import Volume

    settings.SHELVED_OFFLOAD_TIME = -1
    client = bfv.member()
    server = bfv.create_server(client, "vm1")
    bfv.wait_for_status(client, server["id"], "ACTIVE")
    assert bfv.action(client, server["id"], {"shelve": None}).status_code == 202
    bfv.wait_for_status(client, server["id"], "SHELVED")
    vid = new_volume(bfv, client)
    path = f"servers/{server['id']}/os-volume_attachments"
    # its host attaches the volume, as for a stopped server
    assert bfv.post(client, path, {"volumeAttachment": {"volumeId": vid}}, version="2.20").status_code == 200
    assert Volume.objects.get(pk=vid).status == "in-use"
    assert bfv.delete(client, f"{path}/{vid}").status_code == 202
    assert Volume.objects.get(pk=vid).status == "available"
    # swapping stays refused there (Nova swaps only on active, paused and resized servers)
    other = new_volume(bfv, client)
    assert bfv.post(client, path, {"volumeAttachment": {"volumeId": vid}}).status_code == 200
    swap = bfv.put(bfv.admin(), f"{path}/{vid}", {"volumeAttachment": {"volumeId": other}})
    assert swap.status_code == 409
