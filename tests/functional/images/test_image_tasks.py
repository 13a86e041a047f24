"""Glance's tasks API through HTTP: ``POST /v2/tasks`` of type ``import`` answers 201 with the task
pending; the conductor (eager here, once the request commits) reads the URL and the task ends
``success`` with its image, or ``failure`` with the reason and no image left behind. Admins only."""
from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.test import TestCase
from rest_framework.test import APIClient

from tests.apihelpers import admin_client, auth_client, make_identity

pytestmark = pytest.mark.django_db
DISK = b"CLOUDCORE-TASK-IMPORT\n" + bytes(4096)
REDIRECTS = {"/elsewhere": "file:///etc/passwd", "/ftp": "ftp://127.0.0.1/disk.raw"}


class _Files(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        if self.path in REDIRECTS:
            self.send_response(302)
            self.send_header("Location", REDIRECTS[self.path])
            self.end_headers()
            return
        if self.path not in ("/disk.raw", "/unsized.raw"):
            self.send_error(404)
            return
        self.send_response(200)
        if self.path == "/disk.raw":
            self.send_header("Content-Length", str(len(DISK)))
        self.end_headers()
        self.wfile.write(DISK)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def web(settings: Any) -> Iterator[str]:
    """A web server on this machine serving ``DISK`` at ``/disk.raw`` (and without its length at
    ``/unsized.raw``), redirects to a local file (``/elsewhere``) and to FTP (``/ftp``), 404 elsewhere.
    Its loopback address and free port are let through the import's filter, as an operator would
    let a local mirror (``IMAGE_IMPORT_ALLOWED_NETWORKS``, ``IMAGE_IMPORT_ALLOWED_PORTS``)."""
    settings.IMAGE_IMPORT_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    settings.IMAGE_IMPORT_ALLOWED_PORTS = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Files)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def task_body(url: str, **properties: Any) -> dict[str, Any]:
    image = {"name": "imported", "disk_format": "raw", "container_format": "bare", "visibility": "public",
             **properties}
    return {"type": "import",
            "input": {"import_from": url, "import_from_format": "raw", "image_properties": image}}


def create_task(client: APIClient, body: dict[str, Any]) -> Any:
    # the conductor's run is cast once the request commits, and runs eagerly (tests.cloud does the same)
    with TestCase.captureOnCommitCallbacks(execute=True):
        return client.post("/image/v2/tasks", body, format="json")


def test_an_import_task_makes_an_active_image_from_the_url(web: str) -> None:
    admin = admin_client()
    # when an admin creates an import task for a URL that serves a raw disk
    response = create_task(admin, task_body(f"{web}/disk.raw"))
    # then 201 with the task as it was created: pending, its input, no result yet
    assert response.status_code == 201, response.content
    created = response.json()
    assert created["status"] == "pending" and created["type"] == "import" and created["result"] is None
    assert created["input"]["import_from"] == f"{web}/disk.raw"
    assert response["Location"].endswith(f"/image/v2/tasks/{created['id']}")
    # and the task ended in success, naming an active image holding the URL's bytes
    task = admin.get(f"/image/v2/tasks/{created['id']}").json()
    assert task["status"] == "success", task
    assert task["expires_at"] and task["message"] == ""
    image_id = task["result"]["image_id"]
    image = admin.get(f"/image/v2/images/{image_id}").json()
    assert image["status"] == "active" and image["name"] == "imported" and image["size"] == len(DISK)
    assert image["visibility"] == "public" and image["disk_format"] == "raw"
    assert b"".join(admin.get(f"/image/v2/images/{image_id}/file").streaming_content) == DISK
    # and the image's task list (2.12) and the tasks list show it
    assert [t["id"] for t in admin.get(f"/image/v2/images/{image_id}/tasks").json()["tasks"]] == [task["id"]]
    listed = admin.get("/image/v2/tasks?status=success").json()["tasks"]
    assert [t["id"] for t in listed] == [task["id"]] and "input" not in listed[0]


@pytest.mark.parametrize(("path", "reason"), [("/missing.qcow2", "HTTP 404"), (None, "refused"),
                                              ("/elsewhere", "file:///etc/passwd"),
                                              ("/ftp", "not http or https: ftp://127.0.0.1/disk.raw")])
def test_an_import_task_whose_url_cannot_be_read_fails_and_leaves_no_image(web: str, path: str | None,
                                                                           reason: str) -> None:
    admin = admin_client()
    # given a URL that answers 404, a port nobody listens on (a server stopped just now), or a
    # redirect to a file of the cloud's own machine or to another protocol
    if path is None:
        stopped = ThreadingHTTPServer(("127.0.0.1", 0), _Files)
        url = f"http://127.0.0.1:{stopped.server_address[1]}/disk.qcow2"
        stopped.server_close()
    else:
        url = f"{web}{path}"
    # when an import task is created for it
    response = create_task(admin, task_body(url, name="unreadable"))
    assert response.status_code == 201, response.content
    # then the task ends in failure and says why, and the image it made is gone
    task = admin.get(f"/image/v2/tasks/{response.json()['id']}").json()
    assert task["status"] == "failure", task
    assert reason in task["message"] and url in task["message"]
    assert task["result"] is None
    assert admin.get("/image/v2/images?name=unreadable").json()["images"] == []


def test_an_import_task_bounds_what_it_reads_and_checks_the_format(web: str, settings: Any) -> None:
    admin = admin_client()
    # when the data is larger than the cloud reads from a URL, declared so or not, then failure
    settings.IMAGE_IMPORT_MAX_BYTES = 1024
    for path in ("disk.raw", "unsized.raw"):
        too_big = create_task(admin, task_body(f"{web}/{path}", name="too-big")).json()
        task = admin.get(f"/image/v2/tasks/{too_big['id']}").json()
        assert task["status"] == "failure" and "more than the 1024" in task["message"], task
    # when the data is not the declared disk format, then failure too (the upload's inspection)
    settings.IMAGE_IMPORT_MAX_BYTES = 1024**2
    mislabelled = create_task(admin, task_body(f"{web}/disk.raw", name="mislabelled", disk_format="qcow2")).json()
    task = admin.get(f"/image/v2/tasks/{mislabelled['id']}").json()
    assert task["status"] == "failure" and "does not match disk_format qcow2" in task["message"], task
    assert admin.get("/image/v2/images?name=too-big").json()["images"] == []
    assert admin.get("/image/v2/images?name=mislabelled").json()["images"] == []


@pytest.mark.parametrize(("change", "code", "words"), [
    ({"type": "export"}, 400, "Invalid type value: export"),
    ({"input": {"import_from_format": "raw", "image_properties": {}}}, 400, "'import_from'"),
    ({"input": {"import_from": "file:///etc/passwd", "import_from_format": "raw", "image_properties": {}}},
     400, "http or https"),
    ({"input": {"import_from": "ftp://example.com/x.raw", "import_from_format": "raw", "image_properties": {}}},
     400, "http or https"),
    ({"input": {"import_from": "http://example.com/x.raw", "import_from_format": "raw",
                "image_properties": {"os_glance_x": "1"}}}, 403, "is reserved"),
    ({"input": "http://example.com/x.raw"}, 400, "must be a JSON object"),
])
def test_bad_task_requests_are_refused_at_once(change: dict[str, Any], code: int, words: str) -> None:
    admin = admin_client()
    response = create_task(admin, {**task_body("http://example.com/x.raw"), **change})
    assert response.status_code == code, response.content
    assert words in response.content.decode()
    assert admin.get("/image/v2/tasks").json()["tasks"] == []


def test_the_tasks_api_is_for_admins() -> None:
    user, project = make_identity("alice", project="demo", roles=["member"])
    member = auth_client(user, project)
    refused = create_task(member, task_body("http://example.com/x.raw"))
    assert refused.status_code == 403
    assert "not authorized to complete tasks_api_access action" in refused.content.decode()
    assert member.get("/image/v2/tasks").status_code == 403
    assert admin_client().get("/image/v2/tasks/00000000-0000-0000-0000-000000000000").status_code == 404


def test_the_tasks_list_pages_after_a_marker(web: str) -> None:
    admin = admin_client()
    ids = sorted(create_task(admin, task_body(f"{web}/disk.raw")).json()["id"] for _ in range(3))
    listed = [t["id"] for t in admin.get("/image/v2/tasks?sort_key=id&sort_dir=asc").json()["tasks"]]
    assert listed == ids
    page = admin.get(f"/image/v2/tasks?sort_key=id&sort_dir=asc&marker={ids[0]}&limit=1").json()["tasks"]
    assert [t["id"] for t in page] == [ids[1]]
    unknown = admin.get("/image/v2/tasks?marker=00000000-0000-0000-0000-000000000000")
    assert unknown.status_code == 400, unknown.content


def test_an_import_task_may_not_name_a_port_that_is_not_allowed(web: str, settings: Any) -> None:
    admin = admin_client()
    # given Glance's default: a URL may name ports 80 and 443 only
    settings.IMAGE_IMPORT_ALLOWED_PORTS = [80, 443]
    # when an import task names another port, then 400 at once and no task
    response = create_task(admin, task_body(f"{web}/disk.raw", name="other-port"))
    assert response.status_code == 400, response.content
    assert "may not name port" in response.content.decode()
    assert admin.get("/image/v2/tasks").json()["tasks"] == []


@pytest.mark.parametrize("allowed", [[], ["10.0.0.0/8"]])
def test_an_import_task_does_not_read_the_clouds_own_addresses(web: str, settings: Any,
                                                             allowed: list[str]) -> None:
    admin = admin_client()
    # given the default: no network that is not global may be reached (or another one only)
    settings.IMAGE_IMPORT_ALLOWED_NETWORKS = allowed
    # when an import task names a server on this machine (by address, and by a name resolving to it)
    for url in (f"{web}/disk.raw", web.replace("127.0.0.1", "localhost") + "/disk.raw"):
        created = create_task(admin, task_body(url, name="internal"))
        assert created.status_code == 201, created.content
        # then the connection is refused at the address it reached: failure, no image, no byte read
        task = admin.get(f"/image/v2/tasks/{created.json()['id']}").json()
        assert task["status"] == "failure", task
        assert "an address image data may not be read from" in task["message"], task
    assert admin.get("/image/v2/images?name=internal").json()["images"] == []


def test_a_redirect_to_a_port_that_is_not_allowed_is_not_followed(web: str, settings: Any) -> None:
    admin = admin_client()
    # given a server that redirects to a port a URL may not name
    REDIRECTS["/to-port"] = "http://127.0.0.1:2379/v2/keys"
    settings.IMAGE_IMPORT_ALLOWED_PORTS = [int(web.rsplit(":", 1)[1])]
    try:
        created = create_task(admin, task_body(f"{web}/to-port", name="redirected"))
    finally:
        del REDIRECTS["/to-port"]
    # then the task fails on the redirect, naming it
    task = admin.get(f"/image/v2/tasks/{created.json()['id']}").json()
    assert task["status"] == "failure" and "may not name port 2379" in task["message"], task
