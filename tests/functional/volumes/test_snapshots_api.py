"""Volume snapshots through Cinder's API: bytes copied by the volume worker, a volume made from a
snapshot carries them, in-use needs force before 3.66, a volume with snapshots cannot go."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from tests.functional.volumes.test_volume_api import V, call

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])


def _volume(client: Any, **extra: Any) -> dict[str, Any]:
    created = call(client, "post", "/volume/v3/volumes", {"volume": {"size": 1, **extra}})
    assert created.status_code == 202, created.content
    return call(client, "get", f"/volume/v3/volumes/{created.json()['volume']['id']}").json()["volume"]


def _pool_file(kind: str, ident: str) -> Path:
    return Path(settings.VOLUME_POOL_DIR) / f"{kind}-{ident}"


def test_snapshot_lifecycle_and_a_volume_from_it(bfv: Any) -> None:
    client = bfv.member()
    vol = _volume(client, name="source")
    _pool_file("volume", vol["id"]).write_bytes(b"MARKER" + b"\0" * 10)
    created = call(client, "post", "/volume/v3/snapshots",
                   {"snapshot": {"volume_id": vol["id"], "name": "snap1", "metadata": {"k": "v"}}})
    assert created.status_code == 202, created.content
    snap = created.json()["snapshot"]
    assert (snap["name"], snap["volume_id"], snap["size"], snap["metadata"]) == ("snap1", vol["id"], 1, {"k": "v"})
    shown = call(client, "get", f"/volume/v3/snapshots/{snap['id']}").json()["snapshot"]
    assert shown["status"] == "available" and shown["os-extended-snapshot-attributes:progress"] == "100%"
    assert _pool_file("snapshot", snap["id"]).read_bytes().startswith(b"MARKER")
    assert [s["id"] for s in call(client, "get", "/volume/v3/snapshots/detail").json()["snapshots"]] == [snap["id"]]
    assert call(client, "get", f"/volume/v3/snapshots?volume_id={vol['id']}").json()["snapshots"][0]["id"] == snap["id"]
    renamed = call(client, "put", f"/volume/v3/snapshots/{snap['id']}", {"snapshot": {"name": "snap-renamed"}})
    assert renamed.json()["snapshot"]["name"] == "snap-renamed"

    # a volume from the snapshot starts with its bytes; it may be bigger, never smaller
    restored = _volume(client, snapshot_id=snap["id"], size=2)
    assert restored["status"] == "available" and restored["snapshot_id"] == snap["id"] and restored["size"] == 2
    assert _pool_file("volume", restored["id"]).read_bytes().startswith(b"MARKER")
    too_small = call(client, "post", "/volume/v3/volumes", {"volume": {"snapshot_id": snap["id"], "size": 0}})
    assert too_small.status_code == 400

    # the source volume cannot go while it has snapshots; once the snapshot is gone it can
    refused = call(client, "delete", f"/volume/v3/volumes/{vol['id']}")
    assert refused.status_code == 400 and "have snapshots" in refused.json()["badRequest"]["message"]
    assert call(client, "delete", f"/volume/v3/snapshots/{snap['id']}").status_code == 202
    assert call(client, "get", f"/volume/v3/snapshots/{snap['id']}").status_code == 404
    assert not _pool_file("snapshot", snap["id"]).exists()
    assert call(client, "delete", f"/volume/v3/volumes/{vol['id']}").status_code == 202


def test_in_use_needs_force_before_3_66_and_other_projects_see_nothing(bfv: Any) -> None:
    client = bfv.member()
    vol = _volume(client)
    server = bfv.create_server(client, "holder")
    attached = bfv.post(client, f"servers/{server['id']}/os-volume_attachments",
                        {"volumeAttachment": {"volumeId": vol["id"]}})
    assert attached.status_code == 200, attached.content
    assert call(client, "get", f"/volume/v3/volumes/{vol['id']}").json()["volume"]["status"] == "in-use"
    body = {"snapshot": {"volume_id": vol["id"]}}
    refused = call(client, "post", "/volume/v3/snapshots", body, version="volume 3.65")
    assert refused.status_code == 400 and "status must be available" in refused.json()["badRequest"]["message"]
    assert call(client, "post", "/volume/v3/snapshots", {"snapshot": {**body["snapshot"], "force": True}},
                version="volume 3.65").status_code == 202
    assert call(client, "post", "/volume/v3/snapshots", body, version=V).status_code == 202
    other = bfv.member("demo2", "demo2")
    assert call(other, "get", "/volume/v3/snapshots").json()["snapshots"] == []
    snap_id = call(client, "get", "/volume/v3/snapshots").json()["snapshots"][0]["id"]
    assert call(other, "get", f"/volume/v3/snapshots/{snap_id}").status_code == 404
    assert call(other, "delete", f"/volume/v3/snapshots/{snap_id}").status_code == 404


def test_snapshot_metadata_items_and_a_missing_volume(bfv: Any) -> None:
    client = bfv.member()
    vol = _volume(client)
    snap = call(client, "post", "/volume/v3/snapshots", {"snapshot": {"volume_id": vol["id"]}}).json()["snapshot"]
    base = f"/volume/v3/snapshots/{snap['id']}/metadata"
    assert call(client, "put", base, {"metadata": {"a": "1", "b": "2"}}).json()["metadata"] == {"a": "1", "b": "2"}
    assert call(client, "get", f"{base}/a").json() == {"meta": {"a": "1"}}
    assert call(client, "put", f"{base}/a", {"meta": {"a": "3"}}).json() == {"meta": {"a": "3"}}
    assert call(client, "put", f"{base}/a", {"meta": {"b": "3"}}).status_code == 400
    assert call(client, "delete", f"{base}/b").status_code == 200
    assert call(client, "get", base).json()["metadata"] == {"a": "3"}
    assert call(client, "get", f"{base}/b").status_code == 404
    # Cinder answers a snapshot of no volume (volume_id null or unknown) with 404
    for volume_id in (None, "00000000-0000-0000-0000-000000000000"):
        missing = call(client, "post", "/volume/v3/snapshots", {"snapshot": {"volume_id": volume_id}})
        assert missing.status_code == 404, missing.content


def test_snapshot_and_backup_lists_sort_and_page_as_cinder_does(bfv: Any) -> None:
    client = bfv.member()
    vol = _volume(client, name="source")
    ids = []
    for name in ("b-snap", "a-snap", "c-snap"):
        created = call(client, "post", "/volume/v3/snapshots", {"snapshot": {"volume_id": vol["id"], "name": name}})
        ids.append(created.json()["snapshot"]["id"])

    def listed(query: str) -> list[str]:
        response = call(client, "get", f"/volume/v3/snapshots/detail?{query}")
        assert response.status_code == 200, response.content
        return [s["name"] for s in response.json()["snapshots"]]

    # newest first by default; sort=key:dir and the older sort_key/sort_dir
    assert listed("") == ["c-snap", "a-snap", "b-snap"]
    assert listed("sort=name:asc") == ["a-snap", "b-snap", "c-snap"]
    assert listed("sort_key=name&sort_dir=desc") == ["c-snap", "b-snap", "a-snap"]
    assert listed("sort=created_at:asc") == ["b-snap", "a-snap", "c-snap"]
    # display_name is Cinder's alias of name, in both forms
    assert listed("sort_key=display_name&sort_dir=asc") == ["a-snap", "b-snap", "c-snap"]
    assert listed("sort=display_name:desc") == ["c-snap", "b-snap", "a-snap"]
    # a marker starts after the named snapshot, in the list's order; limit and offset page
    assert listed(f"marker={ids[2]}") == ["a-snap", "b-snap"]
    assert listed(f"sort=name:asc&marker={ids[1]}&limit=1") == ["b-snap"]
    assert listed("limit=2&offset=1") == ["a-snap", "b-snap"]
    # an unknown marker is 404, an unknown sort key or direction 400 (Cinder's)
    assert call(client, "get", "/volume/v3/snapshots?marker=nonexistent").status_code == 404
    assert call(client, "get", "/volume/v3/snapshots?sort=bogus:asc").status_code == 400
    assert call(client, "get", "/volume/v3/snapshots?sort=name:sideways").status_code == 400
    assert call(client, "get", "/volume/v3/backups?sort=bogus:asc").status_code == 400
