"""The Cinder v3 subset through HTTP: version document, volumes from an image, the attachment state
machine (3.27+), os-reimage (3.68) and its events, types; with and without the project in the URL."""
from __future__ import annotations

from typing import Any

import pytest

from tests.functional.volumes.conftest import IMAGE_A, IMAGE_B

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])

V = "volume 3.70"


def call(client: Any, method: str, path: str, body: Any = None, version: str = V) -> Any:
    from django.test import TestCase

    with TestCase.captureOnCommitCallbacks(execute=True):
        return getattr(client, method)(path, body, format="json", HTTP_OPENSTACK_API_VERSION=version)


def test_version_document(bfv: Any) -> None:
    response = bfv.member().get("/volume/")
    assert response.status_code == 300 and response.json()["versions"][0]["version"] == "3.70"


def test_volume_from_image_lifecycle_and_attachments(bfv: Any) -> None:
    from volumes.backends import get_backend

    client = bfv.member()
    # given a volume created from an image (project id in the URL, as clients build it)
    created = call(client, "post", "/volume/v3/someproject/volumes", {"volume": {"size": 1, "imageRef": bfv.image_a,
                                                                               "name": "boot"}})
    assert created.status_code == 202, created.content
    vid = created.json()["volume"]["id"]
    vol = call(client, "get", f"/volume/v3/volumes/{vid}").json()["volume"]
    assert vol["status"] == "available" and vol["bootable"] == "true"
    assert vol["volume_image_metadata"]["image_id"] == bfv.image_a
    assert get_backend().path(vid).read_bytes()[:len(IMAGE_A)] == IMAGE_A
    assert response_header(call(client, "get", "/volume/v3/volumes/detail")) == V
    # when an attachment is created without connector → reserved
    att = call(client, "post", "/volume/v3/attachments", {"attachment": {"volume_uuid": vid,
                                                                         "instance_uuid": None}}).json()
    aid = att["attachment"]["id"]
    assert status(client, vid) == "reserved"
    # then an update with a connector returns connection_info and the volume is attaching
    upd = call(client, "put", f"/volume/v3/attachments/{aid}", {"attachment": {"connector": {"host": "h1"}}})
    assert upd.json()["attachment"]["connection_info"]["data"]["volume_id"] == vid
    assert status(client, vid) == "attaching"
    assert call(client, "post", f"/volume/v3/attachments/{aid}/action", {"os-complete": None}).status_code == 204
    assert status(client, vid) == "in-use"
    # an in-use volume cannot be deleted or reimaged
    assert call(client, "delete", f"/volume/v3/volumes/{vid}").status_code == 400
    reimage = {"os-reimage": {"image_id": bfv.image_b}}
    assert call(client, "post", f"/volume/v3/volumes/{vid}/action", reimage).status_code == 400
    assert call(client, "delete", f"/volume/v3/attachments/{aid}").status_code == 200
    assert status(client, vid) == "available"
    # os-reimage exists from 3.68 only, and writes the image's bytes
    assert call(client, "post", f"/volume/v3/volumes/{vid}/action", reimage, version="volume 3.67").status_code == 400
    assert call(client, "post", f"/volume/v3/volumes/{vid}/action", reimage).status_code == 202
    assert status(client, vid) == "available"
    assert get_backend().path(vid).read_bytes()[:len(IMAGE_B)] == IMAGE_B
    assert call(client, "delete", f"/volume/v3/volumes/{vid}").status_code == 202
    assert call(client, "get", f"/volume/v3/volumes/{vid}").status_code == 404


def test_attachments_need_3_27_and_other_projects_see_nothing(bfv: Any) -> None:
    client = bfv.member()
    vid = call(client, "post", "/volume/v3/volumes", {"volume": {"size": 1}}).json()["volume"]["id"]
    assert call(client, "get", "/volume/v3/attachments", version="volume 3.26").status_code == 404
    other = bfv.member("demo2", project="demo2")
    assert call(other, "get", f"/volume/v3/volumes/{vid}").status_code == 404
    assert call(client, "get", "/volume/v3/volumes/nope").json()["itemNotFound"]["code"] == 404


def test_types_and_bad_size(bfv: Any) -> None:
    client = bfv.member()
    types = call(client, "get", "/volume/v3/types").json()["volume_types"]
    assert [t["name"] for t in types] == ["__DEFAULT__"]
    bad = call(client, "post", "/volume/v3/volumes", {"volume": {"size": "x"}})
    assert bad.status_code == 400 and "badRequest" in bad.json()


def test_reimage_backend_failure_puts_volume_in_error(bfv: Any) -> None:
    from volumes.backends import get_backend

    client = bfv.member()
    vid = call(client, "post", "/volume/v3/volumes", {"volume": {"size": 1}}).json()["volume"]["id"]
    get_backend().inject_fault("reimage")
    call(client, "post", f"/volume/v3/volumes/{vid}/action", {"os-reimage": {"image_id": bfv.image_b}})
    assert status(client, vid) == "error"


def status(client: Any, vid: str) -> str:
    return call(client, "get", f"/volume/v3/volumes/{vid}").json()["volume"]["status"]


def response_header(response: Any) -> str:
    return response["OpenStack-API-Version"]


def test_list_filters_by_name_for_client_lookups(bfv: Any) -> None:
    client = bfv.member()
    call(client, "post", "/volume/v3/volumes", {"volume": {"size": 1, "name": "data"}})
    call(client, "post", "/volume/v3/volumes", {"volume": {"size": 1, "name": "other"}})
    found = call(client, "get", "/volume/v3/volumes/detail?name=data").json()["volumes"]
    assert [v["name"] for v in found] == ["data"]


def test_create_with_the_clis_nulls_and_the_create_view_has_no_extension_fields(bfv: Any) -> None:
    # given the body `openstack volume create --size 1 vol1` sends (nulls for what was not given)
    client = bfv.member()
    body = {"volume": {"size": 1, "consistencygroup_id": None, "snapshot_id": None, "name": "vol1",
                       "description": None, "volume_type": None, "availability_zone": None, "metadata": None,
                       "imageRef": None, "source_volid": None, "backup_id": None, "multiattach": None}}
    # when it is posted
    created = call(client, "post", "/volume/v3/volumes", body)
    # then the volume is made, and the create view is Cinder's: no extension attributes
    assert created.status_code == 202, created.content
    volume = created.json()["volume"]
    assert volume["metadata"] == {} and volume["description"] is None
    assert "os-vol-tenant-attr:tenant_id" not in volume and "volume_image_metadata" not in volume
    # and show gives the tenant attribute to the project's readers and admins (Cinder's default since Xena)
    vid = volume["id"]
    owner = volume["links"][0]["href"].split("/v3/")[1].split("/")[0]
    assert call(client, "get", f"/volume/v3/volumes/{vid}").json()["volume"]["os-vol-tenant-attr:tenant_id"] == owner
    shown = call(bfv.admin(), "get", f"/volume/v3/volumes/{vid}").json()["volume"]
    assert shown["os-vol-tenant-attr:tenant_id"] == owner
    # and an update with null metadata keeps the metadata
    call(client, "put", f"/volume/v3/volumes/{vid}", {"volume": {"metadata": {"a": "1"}}})
    updated = call(client, "put", f"/volume/v3/volumes/{vid}", {"volume": {"name": "v", "metadata": None}})
    assert updated.status_code == 200 and updated.json()["volume"]["metadata"] == {"a": "1"}


def test_availability_zones_and_extensions(bfv: Any) -> None:
    client = bfv.member()
    zones = call(client, "get", "/volume/v3/someproject/os-availability-zone")
    assert zones.json() == {"availabilityZoneInfo": [{"zoneName": "nova", "zoneState": {"available": True}}]}
    extensions = call(client, "get", "/volume/v3/someproject/extensions").json()["extensions"]
    assert "os-vol-tenant-attr" in {e["alias"] for e in extensions}
    refused = call(client, "post", "/volume/v3/volumes", {"volume": {"size": 1, "availability_zone": "az9"}})
    assert refused.status_code == 400 and "az9" in refused.json()["badRequest"]["message"]


def _make(client: Any, name: str, **extra: Any) -> str:
    created = call(client, "post", "/volume/v3/volumes", {"volume": {"size": 1, "name": name, **extra}})
    assert created.status_code == 202, created.content
    return created.json()["volume"]["id"]


def test_list_pages_sorts_and_filters_by_metadata(bfv: Any) -> None:
    # given three volumes, two tagged with metadata
    client = bfv.member()
    ids = [_make(client, f"v{i}", metadata={"tier": "gold"} if i else {}) for i in range(3)]
    # when listed sorted by id ascending, two at a time
    first = call(client, "get", "/volume/v3/volumes/detail?sort_key=id&sort_dir=asc&limit=2").json()["volumes"]
    rest = call(client, "get", f"/volume/v3/volumes/detail?sort=id:asc&limit=2&marker={first[-1]['id']}")
    # then the pages are in order and complete
    assert [v["id"] for v in first + rest.json()["volumes"]] == sorted(ids)
    # and display_name sorts as name does (Cinder's alias)
    by_name = call(client, "get", "/volume/v3/volumes?sort=display_name:desc").json()["volumes"]
    assert [v["name"] for v in by_name] == ["v2", "v1", "v0"]
    # and a full page links the next one as Cinder does (same path and query, marker moved); a short page does not
    page = call(client, "get", "/volume/v3/volumes?sort=id:asc&limit=2").json()
    (link,) = page["volumes_links"]
    assert link["rel"] == "next"
    assert link["href"] == f"http://testserver/volume/v3/volumes?sort=id%3Aasc&limit=2&marker={sorted(ids)[1]}"
    followed = call(client, "get", link["href"].removeprefix("http://testserver")).json()
    assert [v["id"] for v in followed["volumes"]] == sorted(ids)[2:] and "volumes_links" not in followed
    # and the metadata filter keeps the tagged ones (JSON or a dict's repr)
    tagged = call(client, "get", '/volume/v3/volumes/detail?metadata={"tier": "gold"}').json()["volumes"]
    assert sorted(v["id"] for v in tagged) == sorted(ids[1:])
    assert len(call(client, "get", "/volume/v3/volumes?metadata={'tier': 'gold'}").json()["volumes"]) == 2
    # and bad paging is a 400 or 404, and "volumes/" names no volume
    assert call(client, "get", "/volume/v3/volumes?sort_key=color").status_code == 400
    assert call(client, "get", "/volume/v3/volumes?marker=nope").status_code == 404
    assert call(client, "get", "/volume/v3/volumes/").status_code == 404
    assert call(client, "delete", "/volume/v3/volumes/").status_code == 404


def test_admin_lists_one_projects_volumes_with_all_tenants_and_project_id(bfv: Any) -> None:
    # given a member's volume and an admin's
    member, admin = bfv.member(), bfv.admin()
    mine = _make(member, "members")
    _make(admin, "admins")
    project = call(member, "get", f"/volume/v3/volumes/{mine}").json()["volume"]
    owner = call(admin, "get", f"/volume/v3/volumes/{mine}").json()["volume"]["os-vol-tenant-attr:tenant_id"]
    assert project["os-vol-tenant-attr:tenant_id"] == owner
    # when the admin lists every project's volumes narrowed to the member's project
    listed = call(admin, "get", f"/volume/v3/volumes/detail?all_tenants=1&project_id={owner}").json()["volumes"]
    # then only the member's volume is there, with its owner shown
    assert [(v["id"], v["os-vol-tenant-attr:tenant_id"]) for v in listed] == [(mine, owner)]
    # and without all_tenants the admin sees only its own
    assert [v["name"] for v in call(admin, "get", "/volume/v3/volumes").json()["volumes"]] == ["admins"]


def test_volume_metadata_crud(bfv: Any) -> None:
    client = bfv.member()
    vid = _make(client, "meta", metadata={"a": "1"})
    base = f"/volume/v3/volumes/{vid}/metadata"
    assert call(client, "post", base, {"metadata": {"b": "2"}}).json() == {"metadata": {"a": "1", "b": "2"}}
    assert call(client, "get", f"{base}/b").json() == {"meta": {"b": "2"}}
    assert call(client, "put", f"{base}/b", {"meta": {"b": "3"}}).json() == {"meta": {"b": "3"}}
    assert call(client, "put", f"{base}/b", {"meta": {"c": "3"}}).status_code == 400
    assert call(client, "put", base, {"metadata": {"z": "9"}}).json() == {"metadata": {"z": "9"}}
    assert call(client, "delete", f"{base}/z").status_code == 200
    assert call(client, "get", base).json() == {"metadata": {}}
    assert call(client, "delete", f"{base}/z").status_code == 404
    other = bfv.member(name="eve", project="other")
    assert call(other, "get", base).status_code == 404


def test_bootable_readonly_and_upload_to_image(bfv: Any) -> None:
    from images.models import Image
    from volumes.backends import get_backend

    # given a volume made from an image (its data is the image's)
    client = bfv.member()
    vid = _make(client, "src", imageRef=bfv.image_a)
    act = f"/volume/v3/volumes/{vid}/action"
    # when its flags are set, they read back as Cinder shows them
    assert call(client, "post", act, {"os-set_bootable": {"bootable": False}}).status_code == 200
    assert call(client, "get", f"/volume/v3/volumes/{vid}").json()["volume"]["bootable"] == "false"
    assert call(client, "post", act, {"os-update_readonly_flag": {"readonly": True}}).status_code == 202
    assert call(client, "get", f"/volume/v3/volumes/{vid}").json()["volume"]["metadata"]["readonly"] == "True"
    # and uploading it makes an active image with the volume's bytes
    up = call(client, "post", act, {"os-volume_upload_image": {"image_name": "from-vol", "disk_format": "raw"}})
    assert up.status_code == 202, up.content
    image = Image.objects.get(id=up.json()["os-volume_upload_image"]["image_id"])
    from images.services import image_data_path

    assert image.status == "active" and image.name == "from-vol"
    assert image_data_path(image.id).read_bytes() == get_backend().path(vid).read_bytes()
    # and an unknown snapshot or source volume is a 404
    for source in ("snapshot_id", "source_volid"):
        missing = call(client, "post", "/volume/v3/volumes", {"volume": {"size": 1, source: "nope"}})
        assert missing.status_code == 404, source


def test_a_reader_may_look_but_every_write_is_refused_by_the_service(bfv: Any) -> None:
    member = bfv.member()
    vid = _make(member, "owned")
    reader = bfv.member("reader1", "demo", roles=("reader",))
    assert call(reader, "get", f"/volume/v3/volumes/{vid}").status_code == 200
    writes = [("post", "/volume/v3/volumes", {"volume": {"size": 1}}),
              ("put", f"/volume/v3/volumes/{vid}", {"volume": {"name": "mine"}}),
              ("post", f"/volume/v3/volumes/{vid}/action", {"os-extend": {"new_size": 2}}),
              ("post", f"/volume/v3/volumes/{vid}/metadata", {"metadata": {"a": "b"}}),
              ("put", f"/volume/v3/volumes/{vid}/metadata/a", {"meta": {"a": "c"}}),
              ("post", "/volume/v3/attachments", {"attachment": {"volume_uuid": vid}}),
              ("delete", f"/volume/v3/volumes/{vid}", None)]
    for method, path, body in writes:
        refused = call(reader, method, path, body)
        assert refused.status_code == 403, (method, path, refused.content)
    assert call(member, "get", f"/volume/v3/volumes/{vid}").json()["volume"]["name"] == "owned"


def test_qcow2_images_in_and_out_of_volumes(bfv: Any, tmp_path: Any) -> None:
    import subprocess

    from images.models import Image
    from images.services import image_data_path
    from volumes.backends import get_backend

    # given a qcow2 image whose guest disk starts with a marker
    raw = tmp_path / "disk.raw"
    raw.write_bytes(IMAGE_B)
    qcow2 = tmp_path / "disk.qcow2"
    subprocess.run(["qemu-img", "convert", "-f", "raw", "-O", "qcow2", str(raw), str(qcow2)],  # noqa: S607
                   check=True, capture_output=True)
    image = Image.objects.create(name="q", status="active", visibility="public", disk_format="qcow2",
                                 container_format="bare", size=qcow2.stat().st_size, owner="admin")
    image_data_path(image.id).write_bytes(qcow2.read_bytes())
    client = bfv.member()
    # when a volume is made from it, the volume holds the guest disk (converted), not the qcow2 file
    vid = _make(client, "from-qcow2", imageRef=image.id)
    assert get_backend().path(vid).read_bytes()[:len(IMAGE_B)] == IMAGE_B
    # and uploading the volume as qcow2 gives a real qcow2 image (inspected like any upload)
    up = call(client, "post", f"/volume/v3/volumes/{vid}/action",
              {"os-volume_upload_image": {"image_name": "back", "disk_format": "qcow2"}})
    assert up.status_code == 202, up.content
    back = Image.objects.get(id=up.json()["os-volume_upload_image"]["image_id"])
    assert back.status == "active" and back.disk_format == "qcow2" and back.virtual_size == 1024 ** 3
    assert image_data_path(back.id).read_bytes()[:4] == b"QFI\xfb"


def test_summary_counts_what_the_project_sees(bfv: Any) -> None:
    client = bfv.member()
    _make(client, "s1", size=2, metadata={"tier": "gold"})
    _make(client, "s2", metadata={"tier": "silver", "team": "a"})
    _make(bfv.member("demo2", "demo2"), "elsewhere", size=5)
    summary = call(client, "get", "/volume/v3/volumes/summary").json()["volume-summary"]
    assert (summary["total_count"], summary["total_size"]) == (2, 3)
    assert summary["metadata"] == {"tier": ["gold", "silver"], "team": ["a"]}
    # metadata from 3.36; the summary itself from 3.12
    assert "metadata" not in call(client, "get", "/volume/v3/volumes/summary", version="volume 3.35").json()[
        "volume-summary"]
    assert call(client, "get", "/volume/v3/volumes/summary", version="volume 3.11").status_code == 404


def test_legacy_reserve_and_unreserve(bfv: Any) -> None:
    client = bfv.member()
    vid = _make(client, "r")
    action = f"/volume/v3/volumes/{vid}/action"
    assert call(client, "post", action, {"os-reserve": None}).status_code == 202
    assert status(client, vid) == "attaching"
    # a reserved volume cannot be reserved again
    again = call(client, "post", action, {"os-reserve": None})
    assert again.status_code == 400 and "must be available" in again.json()["badRequest"]["message"]
    assert call(client, "post", action, {"os-unreserve": None}).status_code == 202
    assert status(client, vid) == "available"
    assert call(client, "post", action, {"os-unreserve": None}).status_code == 400
