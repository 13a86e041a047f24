"""Glance v2 subset through HTTP: create, upload/download with checksums, patch, visibility,
tags, delete, and the errors clients get."""
from __future__ import annotations

import hashlib
import io
import json

import pytest
from rest_framework.test import APIClient

from tests.apihelpers import admin_client, auth_client, make_identity

pytestmark = pytest.mark.django_db
PATCH = "application/openstack-images-v2.1-json-patch"
PATCH_20 = "application/openstack-images-v2.0-json-patch"


def member(name: str = "alice", project: str = "demo") -> APIClient:
    user, proj = make_identity(name, project=project, roles=["member"])
    return auth_client(user, proj)


def create(client: APIClient, **body: object) -> dict:
    body = {"name": "img", "disk_format": "raw", "container_format": "bare", **body}
    response = client.post("/image/v2/images", body, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def test_versions_document() -> None:
    response = APIClient().get("/image/")
    assert response.status_code == 300
    assert response.json()["versions"][0]["id"] == "v2.16"


def test_upload_download_round_trip_with_checksums(settings: object, tmp_path: object) -> None:
    client = member()
    image = create(client, name="data", os_distro="debian")
    assert image["status"] == "queued" and image["os_distro"] == "debian" and image["visibility"] == "shared"
    data = b"cloudcore" * 1000
    response = client.put(f"/image/v2/images/{image['id']}/file", data, content_type="application/octet-stream")
    assert response.status_code == 204
    shown = client.get(f"/image/v2/images/{image['id']}").json()
    assert shown["status"] == "active" and shown["size"] == len(data)
    assert shown["checksum"] == hashlib.md5(data).hexdigest()  # noqa: S324
    assert shown["os_hash_algo"] == "sha512" and shown["os_hash_value"] == hashlib.sha512(data).hexdigest()
    download = client.get(f"/image/v2/images/{image['id']}/file")
    assert download.status_code == 200 and b"".join(download.streaming_content) == data
    # a second upload to an active image is a conflict
    again = client.put(f"/image/v2/images/{image['id']}/file", b"x", content_type="application/octet-stream")
    assert again.status_code == 409


def test_json_patch_updates_properties_and_name() -> None:
    client = member()
    image = create(client)
    ops = [{"op": "replace", "path": "/name", "value": "renamed"}, {"op": "add", "path": "/hw_arch", "value": "x86_64"}]
    response = client.patch(f"/image/v2/images/{image['id']}", json.dumps(ops), content_type=PATCH)
    assert response.status_code == 200
    assert response.json()["name"] == "renamed" and response.json()["hw_arch"] == "x86_64"
    bad = client.patch(f"/image/v2/images/{image['id']}",
                       json.dumps([{"op": "replace", "path": "/status", "value": "active"}]), content_type=PATCH)
    assert bad.status_code == 403


def test_json_patch_in_glances_v20_format() -> None:
    # given an image, and a client speaking the older patch format (Tempest's image client does)
    client = member()
    image = create(client)
    ops = [{"replace": "/name", "value": "renamed"}, {"add": "/hw_cpu_cores", "value": "5"}]
    # when it patches
    response = client.patch(f"/image/v2/images/{image['id']}", json.dumps(ops),
                            content_type="application/openstack-images-v2.0-json-patch")
    # then the changes apply as with the v2.1 format
    assert response.status_code == 200, response.content
    assert response.json()["name"] == "renamed" and response.json()["hw_cpu_cores"] == "5"
    removed = client.patch(f"/image/v2/images/{image['id']}", json.dumps([{"remove": "/hw_cpu_cores"}]),
                           content_type="application/openstack-images-v2.0-json-patch")
    assert removed.status_code == 200 and "hw_cpu_cores" not in removed.json()
    # and an operation naming two verbs is a 400
    bad = client.patch(f"/image/v2/images/{image['id']}", json.dumps([{"add": "/a", "remove": "/b"}]),
                       content_type="application/openstack-images-v2.0-json-patch")
    assert bad.status_code == 400


def test_private_image_invisible_to_other_projects_public_visible() -> None:
    owner = member("alice", "demo")
    other = member("bob", "demo2")
    private = create(owner, name="mine", visibility="private")
    assert other.get(f"/image/v2/images/{private['id']}").status_code == 404
    assert private["id"] not in [i["id"] for i in other.get("/image/v2/images").json()["images"]]
    # a member may not publicise; an admin may
    assert owner.post("/image/v2/images", {"name": "pub", "visibility": "public"}, format="json").status_code == 403
    public = create(admin_client(), name="shared-with-all", visibility="public")
    assert other.get(f"/image/v2/images/{public['id']}").status_code == 200


def test_an_admin_creates_an_image_for_another_project_a_member_cannot() -> None:
    # given a project whose member will look for images (the compute's snapshots are made this way)
    user, proj = make_identity("alice", project="demo", roles=["member"])
    owner, project = auth_client(user, proj), str(proj.id)
    # when an admin creates an image owned by that project
    image = create(admin_client(), name="for-demo", visibility="private", owner=project)
    # then the project owns and sees it
    assert image["owner"] == project
    assert owner.get(f"/image/v2/images/{image['id']}").status_code == 200
    # and a member may not create one for another project (its own is fine)
    other = member("bob", "demo2")
    refused = other.post("/image/v2/images", {"name": "x", "owner": project}, format="json")
    assert refused.status_code == 403 and "not permitted to create images owned by" in refused.content.decode()
    assert create(owner, name="own", owner=project)["owner"] == project


def test_list_filters_paging_and_tags() -> None:
    client = member()
    ids = [create(client, name=f"i{n}")["id"] for n in range(3)]
    page = client.get("/image/v2/images?limit=2").json()
    assert len(page["images"]) == 2 and "next" in page
    assert [i["name"] for i in client.get("/image/v2/images?name=i1").json()["images"]] == ["i1"]
    assert client.put(f"/image/v2/images/{ids[0]}/tags/gold").status_code == 204
    assert [i["id"] for i in client.get("/image/v2/images?tag=gold").json()["images"]] == [ids[0]]
    assert client.get("/image/v2/images?sort_key=bogus").status_code == 400
    assert client.get("/image/v2/images?limit=x").status_code == 400


def test_list_pages_after_a_marker() -> None:
    client = member()
    ids = [create(client, name=f"m{n}")["id"] for n in range(3)]
    listed = [i["id"] for i in client.get("/image/v2/images?sort_key=name&sort_dir=asc").json()["images"]]
    assert listed == ids
    page = client.get(f"/image/v2/images?sort_key=name&sort_dir=asc&marker={ids[0]}&limit=1").json()["images"]
    assert [i["id"] for i in page] == [ids[1]]
    unknown = client.get("/image/v2/images?marker=00000000-0000-0000-0000-000000000000")
    assert unknown.status_code == 404


def test_delete_and_protected() -> None:
    client = member()
    image = create(client, protected=True)
    assert client.delete(f"/image/v2/images/{image['id']}").status_code == 403
    client.patch(f"/image/v2/images/{image['id']}",
                 json.dumps([{"op": "replace", "path": "/protected", "value": False}]), content_type=PATCH)
    assert client.delete(f"/image/v2/images/{image['id']}").status_code == 204
    assert client.get(f"/image/v2/images/{image['id']}").status_code == 404


def test_bad_bodies_are_4xx() -> None:
    client = member()
    assert client.post("/image/v2/images", {"disk_format": "floppy"}, format="json").status_code == 400
    assert client.post("/image/v2/images", ["x"], format="json").status_code == 400
    assert client.post("/image/v2/images", {"status": "active"}, format="json").status_code == 403
    assert APIClient().get("/image/v2/images").status_code == 401


def test_demo_setup_registers_its_two_images_once() -> None:
    from images import demo
    from images.models import Image

    make_identity("admin", project="admin", roles=["admin"])
    lines: list[str] = []
    demo.setup(lines.append)
    demo.setup(lines.append)
    tiny, alt = Image.objects.get(name="tiny"), Image.objects.get(name="tiny-alt")
    for image in (tiny, alt):
        assert image.status == "active" and image.visibility == "public" and image.size == demo.SIZE
    # two distinct images (a rebuild has a new one to take)
    assert tiny.checksum != alt.checksum
    assert lines == ["images: registered image tiny", "images: registered image tiny-alt"]


def test_deactivate_reactivate_and_tasks(settings: object, tmp_path: object) -> None:
    admin, user = admin_client(), member()
    image = create(admin, name="shut", visibility="public")
    url = f"/image/v2/images/{image['id']}"
    # a queued image cannot be deactivated
    assert admin.post(f"{url}/actions/deactivate").status_code == 403
    admin.put(f"{url}/file", b"bytes" * 100, content_type="application/octet-stream")
    # a project that does not own it may not deactivate it
    assert user.post(f"{url}/actions/deactivate").status_code == 403
    # when its owner deactivates it (twice: the second is a no-op)
    for _ in range(2):
        assert admin.post(f"{url}/actions/deactivate").status_code == 204
    assert user.get(url).json()["status"] == "deactivated"
    # then only an admin may download its data, and no volume is made from it
    refused = user.get(f"{url}/file")
    assert refused.status_code == 403 and "deactivated" in refused.content.decode()
    assert admin.get(f"{url}/file").status_code == 200
    assert user.post(f"{url}/actions/reactivate").status_code == 403
    volume = user.post("/volume/v3/volumes", {"volume": {"size": 1, "imageRef": image["id"]}}, format="json")
    assert volume.status_code == 400 and "is not active" in volume.json()["badRequest"]["message"]
    # reactivated, it is active again
    assert admin.post(f"{url}/actions/reactivate").status_code == 204
    assert user.get(url).json()["status"] == "active"
    assert user.get(f"{url}/file").status_code == 200
    # no asynchronous task ever runs on an image here (the 2.12 list is empty; 404 for an unseen image)
    assert user.get(f"{url}/tasks").json() == {"tasks": []}
    private = create(user, name="mine")
    assert member("bob", "demo2").get(f"/image/v2/images/{private['id']}/tasks").status_code == 404


def test_an_admin_gives_an_image_to_another_project_its_owner_cannot() -> None:
    # given a member's image
    user, proj = make_identity("alice", project="demo", roles=["member"])
    owner = auth_client(user, proj)
    image = create(owner, name="mine")
    url = f"/image/v2/images/{image['id']}"
    give = [{"op": "replace", "path": "/owner", "value": "another-project"}]
    # when its owner tries to give it away, then Glance's 403 and the image stays its own
    refused = owner.patch(url, json.dumps(give), content_type=PATCH)
    assert refused.status_code == 403, refused.content
    assert "Owner can't be updated by non admin." in refused.content.decode()
    assert owner.get(url).json()["owner"] == str(proj.id)
    # when an admin does, then the other project owns it (and the first no longer sees the private image)
    admin = admin_client()
    given = admin.patch(url, json.dumps(give), content_type=PATCH)
    assert given.status_code == 200, given.content
    assert given.json()["owner"] == "another-project"
    assert admin.get(url).json()["owner"] == "another-project"
    # and an owner that is not a string is a 400, its removal a 403
    assert admin.patch(url, json.dumps([{"op": "replace", "path": "/owner", "value": 5}]),
                       content_type=PATCH).status_code == 400
    assert admin.patch(url, json.dumps([{"op": "remove", "path": "/owner"}]), content_type=PATCH).status_code == 403


def test_os_glance_properties_are_reserved() -> None:
    client = member()
    # when an image is created with a property of Glance's os_glance namespace, then 403 and no image
    refused = client.post("/image/v2/images", {"name": "reserved", "os_glance_foo": "bar"}, format="json")
    assert refused.status_code == 403, refused.content
    assert "Attribute 'os_glance_foo' is reserved." in refused.content.decode()
    assert client.get("/image/v2/images?name=reserved").json()["images"] == []
    # when one is added to an image (either patch format), or one is removed, then 403 and nothing changes
    image = create(client)
    url = f"/image/v2/images/{image['id']}"
    for ops, media in [([{"op": "add", "path": "/os_glance_foo", "value": "bar"}], PATCH),
                       ([{"add": "/os_glance_import_task", "value": "x"}], PATCH_20),
                       ([{"op": "add", "path": "/deleted", "value": "true"}], PATCH),
                       ([{"op": "remove", "path": "/os_glance_foo"}], PATCH)]:
        response = client.patch(url, json.dumps(ops), content_type=media)
        assert response.status_code == 403, (ops, response.content)
        assert "is reserved" in response.content.decode()
    assert not [k for k in client.get(url).json() if k.startswith("os_glance") or k == "deleted"]


def test_a_chunked_upload_is_stored_whole_and_an_image_without_data_downloads_as_204() -> None:
    client = member()
    image = create(client, name="chunked")
    url = f"/image/v2/images/{image['id']}"
    # given an image with no data yet: its download is Glance's 204, no body
    empty = client.get(f"{url}/file")
    assert empty.status_code == 204 and empty.content == b""
    # when its bytes come with Transfer-Encoding: chunked and no Content-Length (Tempest, glanceclient,
    # our compute's snapshot upload), the WSGI server handing the de-chunked body over as its input
    data = bytes(range(256)) * 4
    response = client.generic("PUT", f"{url}/file", b"", CONTENT_TYPE="application/octet-stream",
                              HTTP_TRANSFER_ENCODING="chunked", **{"wsgi.input": io.BytesIO(data)})
    assert response.status_code == 204, response.content
    # then all of them are the image's data, through a deactivation and reactivation
    assert client.get(url).json()["size"] == len(data)
    assert client.post(f"{url}/actions/deactivate").status_code == 204
    assert client.post(f"{url}/actions/reactivate").status_code == 204
    download = client.get(f"{url}/file")
    assert download.status_code == 200 and b"".join(download.streaming_content) == data
