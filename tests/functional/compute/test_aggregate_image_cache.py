"""An aggregate's image pre-caching (``POST /os-aggregates/{id}/images``, 2.81) on cloudcore's own
libvirt driver: the hosts of the aggregate fetch the image into their image caches
(``<state_path>/_base/<image id>``), the others do not; the conductor tells how it went per host
in ``aggregate.cache_images.*`` notifications (a down host skipped, an image without data
failed); and Nova's refusals."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.cloud import Cloud

pytestmark = pytest.mark.django_db(databases="__all__")
DATA = b"CLOUDCORE-PRECACHED" * 512


def _image(cloud: Cloud, name: str, data: bytes | None = DATA) -> str:
    """A raw image of the admin (with ``data``, or none: queued), by the image API."""
    admin = cloud.admin()
    image = admin.post("/image/v2/images", {"name": name, "disk_format": "raw", "container_format": "bare"},
                       format="json").json()
    if data is not None:
        uploaded = admin.put(f"/image/v2/images/{image['id']}/file", data, content_type="application/octet-stream")
        assert uploaded.status_code == 204
    return str(image["id"])


def _aggregate_id(cloud: Cloud, name: str) -> int:
    listed = cloud.get(cloud.admin(), "os-aggregates").json()["aggregates"]
    return int(next(a["id"] for a in listed if a["name"] == name))


def _cache(cloud: Cloud, aggregate: Any, body: Any, version: str = "2.81", client: Any = None) -> Any:
    return cloud.post(client or cloud.admin(), f"os-aggregates/{aggregate}/images", body, version=version)


def _progress(cloud: Cloud) -> list[dict[str, Any]]:
    return [n["payload"]["nova_object.data"] for n in cloud.notifications("aggregate.cache_images.progress")]


def test_the_hosts_of_the_aggregate_cache_the_image(libvirt_cloud: Cloud, tmp_path: Path) -> None:
    cloud = libvirt_cloud
    image_id = _image(cloud, "to-cache")
    az1 = _aggregate_id(cloud, "az1")
    # when the admin asks the hosts of az1 to pre-cache it
    answer = _cache(cloud, az1, {"cache": [{"id": image_id}]})
    # then 202 with no body, and both hosts of az1 hold it in their image cache, the others not
    assert answer.status_code == 202 and answer.content == b""
    for host in ("compute1", "compute2"):
        assert (tmp_path / host / "_base" / image_id).read_bytes() == DATA, host
    for host in ("compute3", "compute4"):
        assert not (tmp_path / host / "_base" / image_id).exists(), host
    # the conductor said so: start, one progress per host (index of total), end
    start = cloud.notifications("aggregate.cache_images.start")
    end = cloud.notifications("aggregate.cache_images.end")
    assert len(start) == len(end) == 1
    assert start[0]["payload"]["nova_object.data"]["hosts"] == ["compute1", "compute2"]
    assert start[0]["publisher_id"].startswith("nova-conductor:")
    assert [(p["host"], p["index"], p["total"], p["images_cached"], p["images_failed"])
            for p in _progress(cloud)] == [("compute1", 1, 2, [image_id], []), ("compute2", 2, 2, [image_id], [])]
    # a second request finds it there: still cached on both
    assert _cache(cloud, az1, {"cache": [{"id": image_id}]}).status_code == 202
    assert [p["images_cached"] for p in _progress(cloud)[2:]] == [[image_id], [image_id]]


def test_a_down_host_is_skipped_and_an_image_without_data_fails(libvirt_cloud: Cloud, tmp_path: Path) -> None:
    cloud = libvirt_cloud
    admin = cloud.admin()
    good, empty = _image(cloud, "good"), _image(cloud, "empty", data=None)
    service = cloud.get(admin, "os-services?host=compute2", version="2.53").json()["services"][0]["id"]
    assert cloud.put(admin, f"os-services/{service}", {"forced_down": True}, version="2.53").status_code == 200
    # when both images are asked of az1, whose compute2 is down
    assert _cache(cloud, _aggregate_id(cloud, "az1"), {"cache": [{"id": good}, {"id": empty}]}).status_code == 202
    # then compute1 caches the one with data and fails the other; compute2 is skipped (both failed)
    assert [(p["host"], p["images_cached"], p["images_failed"]) for p in _progress(cloud)] == [
        ("compute1", [good], [empty]), ("compute2", [], [good, empty])]
    assert (tmp_path / "compute1" / "_base" / good).exists()
    assert not (tmp_path / "compute1" / "_base" / empty).exists()
    assert not (tmp_path / "compute2" / "_base" / good).exists()


def test_novas_refusals(libvirt_cloud: Cloud) -> None:
    cloud = libvirt_cloud
    image_id = _image(cloud, "refused")
    az1 = _aggregate_id(cloud, "az1")
    body = {"cache": [{"id": image_id}]}

    def refused(answer: Any, code: int) -> str:
        assert answer.status_code == code, answer.content
        return str(next(iter(answer.json().values()))["message"])

    # not before 2.81
    assert _cache(cloud, az1, body, version="2.80").status_code == 404
    # the admin's only
    assert refused(_cache(cloud, az1, body, client=cloud.member()), 403) == (
        "Policy doesn't allow compute:aggregates:images to be performed.")
    # the body: a list of one or more {"id": uuid}, nothing else
    for bad in ({}, {"cache": []}, {"cache": [{"id": "not-a-uuid"}]}, {"cache": [{"id": image_id, "x": 1}]},
                {"cache": [{"id": image_id}], "more": 1}):
        assert _cache(cloud, az1, bad).status_code == 400, bad
    assert refused(_cache(cloud, az1, {"cache": [{"id": image_id}, {"id": image_id}]}), 400) == (
        "Duplicate images in request")
    assert refused(_cache(cloud, "az1", body), 400) == "Invalid input received: id must be an integer."
    assert _cache(cloud, 999999, body).status_code == 404
    missing = "8c1f7c54-9f06-4e3b-8a54-000000000000"
    assert refused(_cache(cloud, az1, {"cache": [{"id": missing}]}), 400) == f"Image {missing} could not be found."
    # nothing was asked of the hosts
    assert cloud.notifications("aggregate.cache_images.start") == []
