"""Nova's volume proxy (/os-volumes, /os-snapshots, up to 2.35) over the block storage service."""
from __future__ import annotations

import pytest

from tests.cloud import Cloud

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])


def test_volume_and_snapshot_through_the_proxy(cloud: Cloud) -> None:
    client = cloud.member()
    created = cloud.post(client, "os-volumes", {"volume": {"size": "1", "display_name": "pv",
                                                           "display_description": "d", "metadata": {"k": "v"}}})
    assert created.status_code == 200, created.content
    volume = created.json()["volume"]
    assert (volume["displayName"], volume["size"], volume["attachments"], volume["metadata"]) == (
        "pv", 1, [{}], {"k": "v"})
    shown = cloud.get(client, f"os-volumes/{volume['id']}").json()["volume"]
    assert shown["status"] == "available" and shown["availabilityZone"]
    # the block storage API sees the same volume
    assert cloud.get(client, f"/volume/v3/volumes/{volume['id']}").status_code == 200
    for path in ("os-volumes", "os-volumes/detail"):
        assert volume["id"] in [v["id"] for v in cloud.get(client, path).json()["volumes"]]
    snap = cloud.post(client, "os-snapshots", {"snapshot": {"volume_id": volume["id"], "display_name": "ps"}})
    assert snap.status_code == 200, snap.content
    snapshot = snap.json()["snapshot"]
    assert snapshot["volumeId"] == volume["id"] and snapshot["displayName"] == "ps"
    assert cloud.get(client, f"os-snapshots/{snapshot['id']}").json()["snapshot"]["status"] == "available"
    assert snapshot["id"] in [s["id"] for s in cloud.get(client, "os-snapshots/detail").json()["snapshots"]]
    assert cloud.delete(client, f"os-snapshots/{snapshot['id']}").status_code == 202
    assert cloud.delete(client, f"os-volumes/{volume['id']}").status_code == 202
    assert cloud.get(client, "os-volumes/nope").status_code == 404
    assert cloud.get(client, "os-volumes", version="2.36").status_code == 404


@pytest.mark.parametrize("volume", [{"size": "#$%"}, {"size": 0}, {"display_name": "no size"}, {"size": 1, "x": 1}])
def test_bad_volume_bodies_are_400(cloud: Cloud, volume: dict[str, object]) -> None:
    assert cloud.post(cloud.member(), "os-volumes", {"volume": volume}).status_code == 400
