"""End to end: ``openstack server image create`` of a volume-backed server makes volume snapshots
and an image naming them (``block_device_mapping``); booting from that image with the CLI gives a
volume-backed server whose root volume is made from the snapshot."""
from __future__ import annotations

import json
from typing import Any

import pytest

from .cloud import LiveCloud
from .test_cli_volumes import wait_status, wait_volume

pytestmark = [pytest.mark.slow, pytest.mark.e2e]


def image_mapping(image: dict[str, Any]) -> list[dict[str, Any]]:
    props = image.get("properties") or {}
    raw = props.get("block_device_mapping", image.get("block_device_mapping"))
    assert raw, image
    return json.loads(raw) if isinstance(raw, str) else raw


def test_snapshot_of_a_volume_backed_server_and_boot_from_it(live_cloud: LiveCloud) -> None:
    cloud = live_cloud
    # given a server booted from a new 1 GiB volume
    cloud.openstack("server", "create", "--flavor", "m1.tiny", "--image", "tiny", "--boot-from-volume", "1",
                    "--network", "demo-net", "bfvsnap-src")
    source = wait_status(cloud, "bfvsnap-src", "ACTIVE")
    root_volume = source["volumes_attached"][0]["id"]
    # when it is snapshotted with the CLI
    cloud.openstack("server", "image", "create", "--wait", "--name", "bfvsnap-img", "bfvsnap-src")
    # then the image is active, holds no data and names a snapshot of the root volume
    image = cloud.openstack_json("image", "show", "bfvsnap-img")
    assert image["status"] == "active" and image["size"] == 0
    entries = image_mapping(image)
    assert len(entries) == 1 and entries[0]["source_type"] == "snapshot" and entries[0]["boot_index"] == 0
    snapshot_id = entries[0]["snapshot_id"]
    listed = {s["ID"]: s for s in cloud.openstack_json("volume", "snapshot", "list")}
    assert listed[snapshot_id]["Name"] == "snapshot for bfvsnap-img"
    snap = wait_volume(cloud, "snapshot", snapshot_id, "available")
    assert snap["volume_id"] == root_volume and snap["size"] == 1
    # when a server boots from the image (no --boot-from-volume)
    cloud.openstack("server", "create", "--flavor", "m1.tiny", "--image", "bfvsnap-img", "--network", "demo-net",
                    "bfvsnap-copy")
    copy = wait_status(cloud, "bfvsnap-copy", "ACTIVE")
    # then it is volume-backed, on a new volume made from the snapshot
    assert "booted from volume" in str(copy["image"])
    new_volume = copy["volumes_attached"][0]["id"]
    assert new_volume != root_volume
    restored = cloud.openstack_json("volume", "show", new_volume)
    assert restored["snapshot_id"] == snapshot_id and restored["status"] == "in-use"
    # deleting the image leaves the snapshot
    cloud.openstack("image", "delete", "bfvsnap-img")
    assert snapshot_id in {s["ID"] for s in cloud.openstack_json("volume", "snapshot", "list")}
    cloud.openstack("server", "delete", "--wait", "bfvsnap-copy", "bfvsnap-src")
    cloud.openstack("volume", "snapshot", "delete", snapshot_id)
    cloud.volume_status("snapshot", snapshot_id, None)
    assert snapshot_id not in {s["ID"] for s in cloud.openstack_json("volume", "snapshot", "list")}
