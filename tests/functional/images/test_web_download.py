"""Glance's interoperable import with ``web-download``: ``POST /v2/images/{id}/import`` on a queued
image answers 202 with the image ``importing``; the conductor (eager here, once the request commits)
reads the URL into it as an ``api_image_import`` task, which the image's task list (2.12) shows. A
member may do it for its own image: the URL's port and the addresses its connections reach are
filtered (``images.fetch``). What cannot be read leaves the image queued, without data."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.test import TestCase
from rest_framework.test import APIClient

from cloudcore.core.exceptions import Conflict
from images.models import Image, ImageStatus, ImageTask
from images.services import _store, image_data_path
from tests.apihelpers import admin_client, auth_client, make_identity

from .test_image_tasks import DISK, web  # noqa: F401 - the web server fixture

pytestmark = pytest.mark.django_db


def member() -> APIClient:
    user, project = make_identity("alice", project="demo", roles=["member"])
    return auth_client(user, project)


def queued(client: APIClient, **body: Any) -> str:
    created = client.post("/image/v2/images", {"name": "wd", "disk_format": "raw", "container_format": "bare",
                                               **body}, format="json")
    assert created.status_code == 201, created.content
    return str(created.json()["id"])


def web_download(client: APIClient, image_id: str, uri: str | None) -> Any:
    method = {"name": "web-download", **({"uri": uri} if uri is not None else {})}
    with TestCase.captureOnCommitCallbacks(execute=True):
        return client.post(f"/image/v2/images/{image_id}/import", {"method": method}, format="json")


def tasks_of(client: APIClient, image_id: str) -> list[dict[str, Any]]:
    response = client.get(f"/image/v2/images/{image_id}/tasks", HTTP_OPENSTACK_API_VERSION="2.12")
    assert response.status_code == 200, response.content
    return list(response.json()["tasks"])


def test_a_member_imports_an_image_from_a_url(web: str) -> None:  # noqa: F811
    client = member()
    image_id = queued(client)
    # when its owner imports a queued image from a URL
    response = web_download(client, image_id, f"{web}/disk.raw")
    # then 202, and the conductor made the URL's bytes the image's data
    assert response.status_code == 202, response.content
    image = client.get(f"/image/v2/images/{image_id}").json()
    assert image["status"] == "active" and image["size"] == len(DISK) and image["checksum"]
    assert b"".join(client.get(f"/image/v2/images/{image_id}/file").streaming_content) == DISK
    # and the image's task list shows the import's task, ended in success
    [task] = tasks_of(client, image_id)
    assert task["type"] == "api_image_import" and task["status"] == "success", task
    assert task["input"]["import_req"]["method"]["uri"] == f"{web}/disk.raw"
    assert task["result"] == {"image_id": image_id}
    # and an admin's tasks API lists it under its type
    listed = admin_client().get("/image/v2/tasks?type=api_image_import").json()["tasks"]
    assert [t["id"] for t in listed] == [task["id"]]


@pytest.mark.parametrize(("path", "reason"), [("/missing.raw", "HTTP 404"),
                                              ("/elsewhere", "file:///etc/passwd")])
def test_a_url_that_cannot_be_read_leaves_the_image_queued(web: str, path: str, reason: str) -> None:  # noqa: F811
    client = member()
    image_id = queued(client)
    assert web_download(client, image_id, f"{web}{path}").status_code == 202
    # then the image is queued again, with no data, and the task says why
    image = client.get(f"/image/v2/images/{image_id}").json()
    assert image["status"] == "queued" and image["size"] is None and image["checksum"] is None
    [task] = tasks_of(client, image_id)
    assert task["status"] == "failure" and reason in task["message"], task
    assert not image_data_path(image_id).exists()
    # and it can be imported again
    assert web_download(client, image_id, f"{web}/disk.raw").status_code == 202
    assert client.get(f"/image/v2/images/{image_id}").json()["status"] == "active"


def test_the_cloud_does_not_read_its_own_addresses_for_a_member(web: str, settings: Any) -> None:  # noqa: F811
    client = member()
    image_id = queued(client)
    # given the defaults: no address that is not global, and ports 80 and 443 only
    settings.IMAGE_IMPORT_ALLOWED_NETWORKS = []
    settings.IMAGE_IMPORT_ALLOWED_PORTS = [80, 443]
    # a URL naming another port is refused at once, the image left queued
    refused = web_download(client, image_id, f"{web}/disk.raw")
    assert refused.status_code == 400 and "does not pass filtering" in refused.content.decode()
    assert client.get(f"/image/v2/images/{image_id}").json()["status"] == "queued" and tasks_of(client, image_id) == []
    # a URL on an allowed port that reaches this machine fails at the address it connected to
    settings.IMAGE_IMPORT_ALLOWED_PORTS = []
    assert web_download(client, image_id, f"{web}/disk.raw").status_code == 202
    [task] = tasks_of(client, image_id)
    assert task["status"] == "failure" and "an address image data may not be read from" in task["message"]
    assert client.get(f"/image/v2/images/{image_id}").json()["status"] == "queued"


def test_bad_requests_are_refused_and_change_nothing(web: str) -> None:  # noqa: F811
    client = member()
    image_id = queued(client)
    # no uri: 400; not an http(s) URL: 400
    assert web_download(client, image_id, None).status_code == 400
    assert web_download(client, image_id, "file:///etc/passwd").status_code == 400
    # an image without its formats: Glance's 409, as for glance-direct
    bare = queued(client, disk_format=None, container_format=None)
    refused = web_download(client, bare, f"{web}/disk.raw")
    assert refused.status_code == 409 and "'disk_format' needs to be set before import" in refused.content.decode()
    # an active image: 409
    assert web_download(client, image_id, f"{web}/disk.raw").status_code == 202
    again = web_download(client, image_id, f"{web}/disk.raw")
    assert again.status_code == 409 and "'queued' state" in again.content.decode()
    # another project's image: not found
    other_user, other_project = make_identity("bob", project="other", roles=["member"])
    assert web_download(auth_client(other_user, other_project), image_id, f"{web}/disk.raw").status_code == 404
    assert len(tasks_of(client, image_id)) == 1


def test_an_image_deleted_before_its_data_arrives_stays_deleted(web: str, tmp_path: Path) -> None:  # noqa: F811
    client = member()
    image_id = queued(client)
    # when the image is deleted after the import was accepted, before the conductor ran it
    with TestCase.captureOnCommitCallbacks(execute=False) as casts:
        response = client.post(f"/image/v2/images/{image_id}/import",
                               {"method": {"name": "web-download", "uri": f"{web}/disk.raw"}}, format="json")
    assert response.status_code == 202
    assert client.get(f"/image/v2/images/{image_id}").json()["status"] == "importing"
    assert client.delete(f"/image/v2/images/{image_id}").status_code == 204
    for cast in casts:
        cast()
    # then the task fails and the image stays deleted, with no data stored
    row = Image.all_objects.get(id=image_id)
    assert row.deleted and row.status == ImageStatus.DELETED
    task = ImageTask.objects.get(image_id=image_id)
    assert task.status == "failure" and "no longer importing" in task.message
    assert not image_data_path(image_id).exists()
    # and data that was on its way when it was deleted is dropped, not activated (the store's swap)
    row.status = ImageStatus.IMPORTING
    received = tmp_path / "received"
    received.write_bytes(DISK)
    with pytest.raises(Conflict, match="changed while its data was stored"):
        _store(row, received)
    assert Image.all_objects.get(id=image_id).status == ImageStatus.DELETED
    assert not image_data_path(image_id).exists()
