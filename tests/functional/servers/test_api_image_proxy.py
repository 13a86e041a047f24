"""The compute API's image proxy (up to 2.35): list, detail, show (a snapshot names its server),
delete; 404 from 2.36 as in Nova."""
from __future__ import annotations

import pytest

from tests.cloud import Cloud

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])


def test_the_image_proxy_shows_and_deletes_a_snapshot_up_to_235(cloud: Cloud) -> None:
    # given a snapshot of a server
    client = cloud.member()
    server = cloud.create_server(client, "vm1")
    image_id = cloud.action(client, server["id"], {"createImage": {"name": "snap1", "metadata": {"k": "v"}}},
                            version="2.45").json()["image_id"]
    # when the proxy is asked for it at 2.35
    shown = cloud.get(client, f"images/{image_id}", version="2.35")
    # then it is Nova's image body, naming the server it came from
    assert shown.status_code == 200, shown.content
    image = shown.json()["image"]
    assert image["name"] == "snap1" and image["status"] == "ACTIVE" and image["progress"] == 100
    assert image["metadata"]["k"] == "v" and image["server"]["id"] == server["id"]
    assert {"minRam", "minDisk", "created", "updated", "OS-EXT-IMG-SIZE:size", "links"} <= set(image)
    assert image["updated"] and image["created"]
    # and the lists carry it (brief and detail), filtered by name
    brief = cloud.get(client, "images?name=snap1", version="2.35").json()["images"]
    assert [i["id"] for i in brief] == [image_id] and set(brief[0]) == {"id", "name", "links"}
    detail = cloud.get(client, "images/detail", version="2.35").json()["images"]
    assert image_id in [i["id"] for i in detail]
    # and from 2.36 the proxy is gone
    assert cloud.get(client, f"images/{image_id}", version="2.36").status_code == 404
    assert cloud.get(client, "images", version="2.36").status_code == 404
    # and its owner deletes it through the proxy; then it is not found
    assert cloud.delete(client, f"images/{image_id}", version="2.35").status_code == 204
    missing = cloud.get(client, f"images/{image_id}", version="2.35")
    assert missing.status_code == 404 and missing.json()["itemNotFound"]["message"] == "Image not found."
    # and another project cannot see an image that is not shared with it
    other = cloud.member(name="eve", project="other")
    kept = cloud.action(client, server["id"], {"createImage": {"name": "snap2"}}, version="2.45").json()["image_id"]
    assert cloud.get(other, f"images/{kept}", version="2.35").status_code == 404


def test_proxy_filters_by_server_and_type_and_edits_metadata(cloud: Cloud) -> None:
    client = cloud.member()
    server = cloud.create_server(client, "vm1")
    snap = cloud.action(client, server["id"], {"createImage": {"name": "snap2", "metadata": {"a": "1"}}},
                        version="2.45").json()["image_id"]
    # the list filters on the server (its id or its URL) and on the image type
    for ref in (server["id"], f"http://cloud/compute/v2.1/servers/{server['id']}"):
        assert [i["id"] for i in cloud.get(client, f"images?server={ref}", version="2.35").json()["images"]] == [snap]
    assert [i["id"] for i in cloud.get(client, "images/detail?type=snapshot", version="2.35").json()["images"]] == [
        snap]
    assert cloud.get(client, "images?server=nope", version="2.35").json()["images"] == []
    # metadata: merge (POST), replace (PUT), one item, delete
    base = f"images/{snap}/metadata"
    assert cloud.get(client, base, version="2.35").json()["metadata"]["a"] == "1"
    merged = cloud.post(client, base, {"metadata": {"b": "2"}}, version="2.35").json()["metadata"]
    assert merged["a"] == "1" and merged["b"] == "2"
    replaced = cloud.put(client, base, {"metadata": {"c": "3"}}, version="2.35").json()["metadata"]
    assert "a" not in replaced and replaced["c"] == "3"
    assert cloud.put(client, f"{base}/d", {"meta": {"d": "4"}}, version="2.35").json() == {"meta": {"d": "4"}}
    assert cloud.get(client, f"{base}/d", version="2.35").json() == {"meta": {"d": "4"}}
    assert cloud.put(client, f"{base}/d", {"meta": {"e": "5"}}, version="2.35").status_code == 400
    assert cloud.put(client, f"{base}/d", {"meta": {"d": "4", "e": "5"}}, version="2.35").status_code == 400
    assert cloud.delete(client, f"{base}/d", version="2.35").status_code == 204
    assert cloud.get(client, f"{base}/d", version="2.35").status_code == 404
    assert cloud.delete(client, f"{base}/d", version="2.35").status_code == 404
    assert cloud.post(client, base, {"metadata": {f"k{n}": "v" for n in range(200)}},
                      version="2.35").status_code == 403
    assert cloud.get(client, base, version="2.36").status_code == 404
