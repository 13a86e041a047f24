"""Glance v2 through HTTP, the parts clients and Tempest lean on beyond CRUD: the content of an
upload is inspected (qcow2 and raw work, a mislabelled or unsafe file is refused), glance-direct
import (stage then import), member sharing, ``os_hidden`` and protected images."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from images.services import image_data_path, staging_path
from tests.apihelpers import admin_client, auth_client, make_identity

pytestmark = pytest.mark.django_db
PATCH = "application/openstack-images-v2.1-json-patch"
OCTETS = "application/octet-stream"


def member(name: str, project: str) -> tuple[APIClient, str]:
    user, proj = make_identity(name, project=project, roles=["member"])
    return auth_client(user, proj), str(proj.id)


def create(client: APIClient, **body: object) -> dict:
    body = {"name": "img", "disk_format": "raw", "container_format": "bare", **body}
    response = client.post("/image/v2/images", body, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def qcow2(tmp_path: Path, name: str = "disk.qcow2", *options: str) -> bytes:
    path = tmp_path / name
    subprocess.run(["qemu-img", "create", "-f", "qcow2", *options, str(path), "4M"],  # noqa: S607
                   check=True, capture_output=True)
    return path.read_bytes()


def upload(client: APIClient, image_id: str, data: bytes, kind: str = "file") -> object:
    return client.put(f"/image/v2/images/{image_id}/{kind}", data, content_type=OCTETS)


def test_qcow2_and_raw_uploads_are_inspected(tmp_path: Path) -> None:
    client, _ = member("alice", "demo")
    # given a real qcow2 file and raw bytes, each declared as what it is
    as_qcow2 = create(client, name="q", disk_format="qcow2")
    as_raw = create(client, name="r", disk_format="raw")
    # when they are uploaded
    assert upload(client, as_qcow2["id"], qcow2(tmp_path)).status_code == 204
    assert upload(client, as_raw["id"], b"\0" * 65536).status_code == 204
    # then both are active, the qcow2 with its virtual size read from its header
    shown = client.get(f"/image/v2/images/{as_qcow2['id']}").json()
    assert shown["status"] == "active" and shown["virtual_size"] == 4 * 1024 * 1024
    assert shown["size"] == image_data_path(as_qcow2["id"]).stat().st_size < 4 * 1024 * 1024
    raw = client.get(f"/image/v2/images/{as_raw['id']}").json()
    assert raw["status"] == "active" and raw["virtual_size"] == raw["size"] == 65536


@pytest.mark.parametrize("declared", ["raw", "qcow2"])
def test_content_that_disagrees_with_disk_format_is_refused(tmp_path: Path, declared: str) -> None:
    client, _ = member("alice", "demo")
    # given a qcow2 file labelled raw, or raw bytes labelled qcow2
    image = create(client, disk_format=declared)
    data = qcow2(tmp_path) if declared == "raw" else b"just some raw bytes" * 100
    # when it is uploaded
    response = upload(client, image["id"], data)
    # then Glance's 400, the bytes are dropped and the image is still queued
    assert response.status_code == 400
    assert f"Image content does not match disk_format {declared}" in response.content.decode()
    assert client.get(f"/image/v2/images/{image['id']}").json()["status"] == "queued"
    assert not image_data_path(image["id"]).exists()
    # and the right label is then accepted
    right = "qcow2" if declared == "raw" else "raw"
    client.patch(f"/image/v2/images/{image['id']}",
                 json.dumps([{"op": "replace", "path": "/disk_format", "value": right}]), content_type=PATCH)
    assert upload(client, image["id"], data).status_code == 204


@pytest.mark.parametrize("option", ["backing_file", "data_file"])
def test_qcow2_with_a_backing_or_data_file_is_refused(tmp_path: Path, option: str) -> None:
    client, _ = member("alice", "demo")
    base = tmp_path / "base.qcow2"
    base.write_bytes(qcow2(tmp_path, "base.qcow2"))
    options = ["-b", str(base), "-F", "qcow2"] if option == "backing_file" else ["-o", f"data_file={tmp_path}/d.raw"]
    image = create(client, disk_format="qcow2")
    response = upload(client, image["id"], qcow2(tmp_path, "evil.qcow2", *options))
    assert response.status_code == 400 and "does not pass safety check" in response.content.decode()
    assert client.get(f"/image/v2/images/{image['id']}").json()["status"] == "queued"


def test_formats_glance_cannot_inspect_are_taken_as_declared() -> None:
    client, _ = member("alice", "demo")
    kernel = create(client, disk_format="aki", container_format="aki")
    assert upload(client, kernel["id"], b"a kernel, not a disk").status_code == 204


def test_glance_direct_import(tmp_path: Path) -> None:
    client, _ = member("alice", "demo")
    # given the discovery document
    info = client.get("/image/v2/info/import").json()
    assert info["import-methods"]["value"] == ["glance-direct", "web-download"]
    image = create(client, disk_format="qcow2")
    # import before staging is a conflict
    early = client.post(f"/image/v2/images/{image['id']}/import", {"method": {"name": "glance-direct"}}, format="json")
    assert early.status_code == 409
    # when the bytes are staged
    assert upload(client, image["id"], qcow2(tmp_path), kind="stage").status_code == 204
    assert client.get(f"/image/v2/images/{image['id']}").json()["status"] == "uploading"
    # web-download is for a queued image only, and an unknown method is refused
    web = client.post(f"/image/v2/images/{image['id']}/import",
                      {"method": {"name": "web-download", "uri": "http://example.com/x"}}, format="json")
    assert web.status_code == 409 and "'queued' state" in web.content.decode()
    other = client.post(f"/image/v2/images/{image['id']}/import", {"method": {"name": "copy-image"}}, format="json")
    assert other.status_code == 400 and "Import method copy-image is not valid." in other.content.decode()
    # then an import makes them the image's data
    done = client.post(f"/image/v2/images/{image['id']}/import", {"method": {"name": "glance-direct"}}, format="json")
    assert done.status_code == 202
    shown = client.get(f"/image/v2/images/{image['id']}").json()
    assert shown["status"] == "active" and shown["virtual_size"] == 4 * 1024 * 1024 and shown["checksum"]
    assert not staging_path(image["id"]).exists()


def test_import_of_mislabelled_staged_bytes_is_refused(tmp_path: Path) -> None:
    client, _ = member("alice", "demo")
    image = create(client, disk_format="raw")
    assert upload(client, image["id"], qcow2(tmp_path), kind="stage").status_code == 204
    refused = client.post(f"/image/v2/images/{image['id']}/import", {"method": {"name": "glance-direct"}},
                          format="json")
    assert refused.status_code == 400 and "does not match disk_format raw" in refused.content.decode()
    assert client.get(f"/image/v2/images/{image['id']}").json()["status"] == "queued"
    assert not staging_path(image["id"]).exists()


def test_members_share_an_image_after_accepting() -> None:
    owner, _ = member("alice", "demo")
    other, other_project = member("bob", "demo2")
    image = create(owner, name="to-share", visibility="shared")
    base = f"/image/v2/images/{image['id']}/members"
    # a private image has no members
    private = create(owner, name="private", visibility="private")
    assert owner.post(f"/image/v2/images/{private['id']}/members", {"member": other_project},
                      format="json").status_code == 403
    # given the owner adds the other project
    added = owner.post(base, {"member": other_project}, format="json")
    assert added.status_code == 200
    assert added.json()["status"] == "pending" and added.json()["member_id"] == other_project
    assert owner.post(base, {"member": other_project}, format="json").status_code == 409
    # then before accepting, the member finds the image by id but not in its list
    assert other.get(f"/image/v2/images/{image['id']}").status_code == 200
    assert image["id"] not in [i["id"] for i in other.get("/image/v2/images").json()["images"]]
    pending = other.get("/image/v2/images?member_status=pending").json()["images"]
    assert image["id"] in [i["id"] for i in pending]
    # the owner cannot accept for it
    assert owner.put(f"{base}/{other_project}", {"status": "accepted"}, format="json").status_code == 403
    assert other.put(f"{base}/{other_project}", {"status": "maybe"}, format="json").status_code == 400
    # when the member accepts
    accepted = other.put(f"{base}/{other_project}", {"status": "accepted"}, format="json")
    assert accepted.status_code == 200 and accepted.json()["status"] == "accepted"
    # then the image is in its list, and both see the membership
    assert image["id"] in [i["id"] for i in other.get("/image/v2/images").json()["images"]]
    assert [m["member_id"] for m in owner.get(base).json()["members"]] == [other_project]
    assert other.get(f"{base}/{other_project}").json()["status"] == "accepted"
    # a member may not remove members; the owner may, and the image is gone for it
    assert other.delete(f"{base}/{other_project}").status_code == 403
    assert owner.delete(f"{base}/{other_project}").status_code == 204
    assert owner.get(f"{base}/{other_project}").status_code == 404
    assert other.get(f"/image/v2/images/{image['id']}").status_code == 404
    # the member schemas are served
    assert APIClient().get("/image/v2/schemas/member").status_code == 401
    assert owner.get("/image/v2/schemas/members").json()["name"] == "members"


def test_hidden_images_are_left_out_of_lists_unless_asked_for() -> None:
    client, _ = member("alice", "demo")
    hidden = create(client, name="hidden", os_hidden=True)
    create(client, name="shown")
    names = [i["name"] for i in client.get("/image/v2/images").json()["images"]]
    assert "shown" in names and "hidden" not in names
    listed = client.get("/image/v2/images?os_hidden=true").json()["images"]
    assert [i["id"] for i in listed] == [hidden["id"]]
    assert client.get(f"/image/v2/images/{hidden['id']}").json()["os_hidden"] is True


def test_a_protected_image_cannot_be_deleted_even_by_an_admin() -> None:
    client, _ = member("alice", "demo")
    image = create(client, protected=True)
    assert admin_client().delete(f"/image/v2/images/{image['id']}").status_code == 403
    assert client.get(f"/image/v2/images/{image['id']}").json()["status"] == "queued"
