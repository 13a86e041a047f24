"""Multiattach volumes through the compute and volume APIs, as Nova (2.60) and Cinder share them:
a volume of a type with ``multiattach="<is> True"`` is attached to two servers (each its own
attachment and BDM), stays ``in-use`` until its last attachment goes, cannot be deleted while
attached nor swapped away from one of several servers; below 2.60 it is refused, as is a
shelved-offloaded server and a host whose driver cannot share a volume."""
from __future__ import annotations

from typing import Any

import pytest

from tests.functional.volumes.test_volume_api import call

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])

OLD = "Multiattach volumes are only supported starting with compute API version 2.60."


def multiattach_volume(cloud: Any, client: Any, **fields: Any) -> dict[str, Any]:
    """A volume of a multiattach type (``openstack volume create --type multiattach-type``)."""
    from volumes.models import VolumeType

    if not VolumeType.objects.filter(name="multiattach-type").exists():
        created = call(cloud.admin(), "post", "/volume/v3/types",
                       {"volume_type": {"name": "multiattach-type", "extra_specs": {"multiattach": "<is> True"}}})
        assert created.status_code == 200, created.content
    response = call(client, "post", "/volume/v3/volumes",
                    {"volume": {"size": 1, "volume_type": "multiattach-type", **fields}})
    assert response.status_code == 202, response.content
    return response.json()["volume"]


def attach(cloud: Any, client: Any, server_id: str, volume_id: str, version: str = "2.60") -> Any:
    return cloud.post(client, f"servers/{server_id}/os-volume_attachments",
                      {"volumeAttachment": {"volumeId": volume_id}}, version=version)


def volume(client: Any, volume_id: str) -> dict[str, Any]:
    return call(client, "get", f"/volume/v3/volumes/{volume_id}").json()["volume"]


def shared_by_two(cloud: Any, client: Any) -> tuple[dict[str, Any], dict[str, Any], str]:
    """Two ACTIVE servers with one multiattach volume attached to both (Tempest's
    ``_create_and_multiattach``)."""
    one, two = cloud.create_server(client, "ma-1"), cloud.create_server(client, "ma-2")
    vid = multiattach_volume(cloud, client)["id"]
    assert attach(cloud, client, one["id"], vid).status_code == 200
    assert attach(cloud, client, two["id"], vid).status_code == 200
    return one, two, vid


def test_a_volume_of_a_multiattach_type_is_multiattach(bfv: Any) -> None:
    client = bfv.member()
    # given a type with the multiattach extra spec, when a volume of it is created
    vol = multiattach_volume(bfv, client)
    # then the volume is multiattach, a volume of the default type is not
    assert vol["multiattach"] is True and volume(client, vol["id"])["multiattach"] is True
    plain = call(client, "post", "/volume/v3/volumes", {"volume": {"size": 1}}).json()["volume"]
    assert plain["multiattach"] is False


def test_two_servers_share_a_volume_and_detach_one_by_one(bfv: Any) -> None:
    from volumes.models import Volume

    client = bfv.member()
    one, two = bfv.create_server(client, "ma-1"), bfv.create_server(client, "ma-2")
    vid = multiattach_volume(bfv, client)["id"]
    # below 2.60 the volume cannot be attached at all (Nova's 400), and nothing is reserved
    refused = attach(bfv, client, one["id"], vid, version="2.59")
    assert refused.status_code == 400 and refused.json()["badRequest"]["message"] == OLD
    assert Volume.objects.get(pk=vid).status == "available"
    # when it is attached to both servers at 2.60
    first, second = attach(bfv, client, one["id"], vid), attach(bfv, client, two["id"], vid)
    assert (first.status_code, second.status_code) == (200, 200), (first.content, second.content)
    # then Cinder lists two attachments, one per server, and the volume is in-use
    shown = volume(client, vid)
    assert shown["status"] == "in-use"
    assert sorted(a["server_id"] for a in shown["attachments"]) == sorted([one["id"], two["id"]])
    assert len({a["attachment_id"] for a in shown["attachments"]}) == 2
    # and each server has its own BDM of it
    for server in (one, two):
        listed = bfv.get(client, f"servers/{server['id']}/os-volume_attachments", version="2.89").json()
        assert [a["volumeId"] for a in listed["volumeAttachments"]] == [vid]
    # the volume cannot be deleted while attached
    assert call(client, "delete", f"/volume/v3/volumes/{vid}").status_code == 400
    # when it is detached from the first server, it stays in-use, attached to the second
    assert bfv.delete(client, f"servers/{one['id']}/os-volume_attachments/{vid}").status_code == 202
    shown = volume(client, vid)
    assert shown["status"] == "in-use" and [a["server_id"] for a in shown["attachments"]] == [two["id"]]
    assert bfv.get(client, f"servers/{one['id']}/os-volume_attachments").json()["volumeAttachments"] == []
    # and when the second server is deleted, its attachment goes and the volume is available
    assert bfv.delete(client, f"servers/{two['id']}").status_code == 204
    shown = volume(client, vid)
    assert shown["status"] == "available" and shown["attachments"] == []
    assert call(client, "delete", f"/volume/v3/volumes/{vid}").status_code == 202


def test_deleting_one_server_releases_only_its_attachment(bfv: Any) -> None:
    client = bfv.member()
    one, two, vid = shared_by_two(bfv, client)
    # when the first server is deleted
    assert bfv.delete(client, f"servers/{one['id']}").status_code == 204
    # then the volume is still in-use by the second one only
    shown = volume(client, vid)
    assert shown["status"] == "in-use" and [a["server_id"] for a in shown["attachments"]] == [two["id"]]


def test_a_volume_that_is_not_multiattach_stays_with_its_server(bfv: Any) -> None:
    client = bfv.member()
    one, two = bfv.create_server(client, "ma-1"), bfv.create_server(client, "ma-2")
    vid = call(client, "post", "/volume/v3/volumes", {"volume": {"size": 1}}).json()["volume"]["id"]
    assert attach(bfv, client, one["id"], vid).status_code == 200
    # when a second server asks for it (at any microversion), Cinder's refusal is a 400
    refused = attach(bfv, client, two["id"], vid)
    assert refused.status_code == 400 and "status must be available" in refused.json()["badRequest"]["message"]
    assert [a["server_id"] for a in volume(client, vid)["attachments"]] == [one["id"]]
    assert bfv.get(client, f"servers/{two['id']}/os-volume_attachments").json()["volumeAttachments"] == []


def test_swap_of_a_volume_shared_by_two_servers_is_refused(bfv: Any) -> None:
    from volumes.models import Volume

    client, admin = bfv.member(), bfv.admin()
    one, two, vid = shared_by_two(bfv, client)
    other = call(client, "post", "/volume/v3/volumes", {"volume": {"size": 1}}).json()["volume"]["id"]
    # when an admin swaps it for another volume on the first server
    path = f"servers/{one['id']}/os-volume_attachments/{vid}"
    refused = bfv.put(admin, path, {"volumeAttachment": {"volumeId": other}}, version="2.60")
    # then Nova's 400, and nothing changed: the new volume was not reserved
    assert refused.status_code == 400
    assert refused.json()["badRequest"]["message"] == (
        "Swapping multi-attach volumes with more than one read/write attachment is not supported.")
    assert Volume.objects.get(pk=other).status == "available"
    assert len(volume(client, vid)["attachments"]) == 2
    # with only one attachment left, the swap is allowed
    assert bfv.delete(client, f"servers/{two['id']}/os-volume_attachments/{vid}").status_code == 202
    swapped = bfv.put(admin, path, {"volumeAttachment": {"volumeId": other}}, version="2.60")
    assert swapped.status_code == 202, swapped.content
    assert Volume.objects.get(pk=vid).status == "available" and Volume.objects.get(pk=other).status == "in-use"


def test_boot_from_a_multiattach_volume_needs_2_60(bfv: Any) -> None:
    client = bfv.member()
    vid = multiattach_volume(bfv, client, imageRef=bfv.image_a)["id"]
    bdm = [{"boot_index": 0, "uuid": vid, "source_type": "volume", "destination_type": "volume",
            "delete_on_termination": False}]
    # below 2.60 the create is refused before anything is recorded
    refused = bfv.create_server(client, "ma-boot", image=None, block_device_mapping_v2=bdm, version="2.59",
                                expect=400)
    assert refused["badRequest"]["message"] == OLD
    # at 2.60 the server boots from it, and a second server may attach it too
    server = bfv.create_server(client, "ma-boot", image=None, block_device_mapping_v2=bdm, version="2.60")
    assert bfv.show(client, server["id"])["status"] == "ACTIVE"
    other = bfv.create_server(client, "ma-2")
    assert attach(bfv, client, other["id"], vid).status_code == 200
    assert len(volume(client, vid)["attachments"]) == 2
    # deleting the booted server keeps the volume (not delete_on_termination), in-use by the other
    assert bfv.delete(client, f"servers/{server['id']}").status_code == 204
    shown = volume(client, vid)
    assert shown["status"] == "in-use" and [a["server_id"] for a in shown["attachments"]] == [other["id"]]


def test_a_shelved_offloaded_server_cannot_take_a_multiattach_volume(bfv: Any) -> None:
    client = bfv.member()
    server = bfv.create_server(client, "ma-1")
    assert bfv.action(client, server["id"], {"shelve": None}).status_code == 202
    bfv.wait_for_status(client, server["id"], "SHELVED_OFFLOADED")
    vid = multiattach_volume(bfv, client)["id"]
    refused = attach(bfv, client, server["id"], vid)
    assert refused.status_code == 400
    assert refused.json()["badRequest"]["message"] == (
        "Attaching multiattach volumes is not supported for shelved-offloaded instances.")
    assert volume(client, vid)["status"] == "available"


def test_resize_and_shelve_keep_the_shared_volume(bfv: Any) -> None:
    client = bfv.member()
    one, two, vid = shared_by_two(bfv, client)
    bigger = bfv.flavor("ma-bigger", ram=1024, disk=2)
    # when the first server is resized and confirmed, and the second shelved and unshelved
    assert bfv.action(client, one["id"], {"resize": {"flavorRef": bigger.flavorid}}).status_code == 202
    bfv.wait_for_status(client, one["id"], "VERIFY_RESIZE")
    assert bfv.action(client, one["id"], {"confirmResize": None}).status_code == 204
    assert bfv.action(client, two["id"], {"shelve": None}).status_code == 202
    assert bfv.action(client, two["id"], {"unshelve": None}).status_code == 202
    # then both are ACTIVE and still share the volume
    for server in (one, two):
        bfv.wait_for_status(client, server["id"], "ACTIVE")
        listed = bfv.get(client, f"servers/{server['id']}/os-volume_attachments").json()["volumeAttachments"]
        assert [a["volumeId"] for a in listed] == [vid]
    shown = volume(client, vid)
    assert shown["status"] == "in-use"
    assert sorted(a["server_id"] for a in shown["attachments"]) == sorted([one["id"], two["id"]])


def test_a_host_that_cannot_share_volumes_fails_the_attach(bfv: Any) -> None:
    from types import SimpleNamespace

    from compute.resource_tracker import traits_for

    client = bfv.member()
    server = bfv.create_server(client, "ma-1")
    host = bfv.instance(server["id"]).host
    driver = bfv.driver(host)
    # given the server's host has no multiattach support (no trait COMPUTE_VOLUME_MULTI_ATTACH)
    driver.capabilities = {}
    assert "COMPUTE_VOLUME_MULTI_ATTACH" not in traits_for(SimpleNamespace(disabled=False), driver)
    vid = multiattach_volume(bfv, client)["id"]
    # when the volume is attached, the host refuses it and releases the attachment
    attach(bfv, client, server["id"], vid)
    assert bfv.get(client, f"servers/{server['id']}/os-volume_attachments").json()["volumeAttachments"] == []
    shown = volume(client, vid)
    assert shown["status"] == "available" and shown["attachments"] == []
    # and the attach action failed with the reason recorded on its event
    actions = bfv.get(client, f"servers/{server['id']}/os-instance-actions").json()["instanceActions"]
    failed = next(a for a in actions if a["action"] == "attach_volume")
    detail = bfv.get(bfv.admin(), f"servers/{server['id']}/os-instance-actions/{failed['request_id']}",
                     version="2.51").json()["instanceAction"]
    assert detail["events"][0]["result"] == "Error"
    assert "multiattach" in detail["events"][0]["traceback"]


def test_the_demo_cloud_has_a_multiattach_type(bfv: Any) -> None:
    from volumes import demo

    # given the demo's volume setup run (twice: it is idempotent)
    lines: list[str] = []
    demo.setup(lines.append)
    demo.setup(lines.append)
    client = bfv.member()
    # then a member sees the multiattach type, and a volume of it can be shared
    types = {t["name"]: t for t in call(client, "get", "/volume/v3/types").json()["volume_types"]}
    assert "multiattach" in types and "multiattach" in lines[0]
    vol = call(client, "post", "/volume/v3/volumes", {"volume": {"size": 1, "volume_type": "multiattach"}})
    assert vol.status_code == 202, vol.content
    assert vol.json()["volume"]["multiattach"] is True and vol.json()["volume"]["volume_type"] == "multiattach"
