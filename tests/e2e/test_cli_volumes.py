"""End to end (issue 7's "done when"): boot from volume with the openstack CLI, rebuild it with
``--reimage-boot-volume`` at 2.93 (a real volume worker does the reimage and posts
``volume-reimaged``), and the documented 400 without 2.93."""
from __future__ import annotations

import time
from typing import Any

import pytest

from .cloud import LiveCloud

pytestmark = [pytest.mark.slow, pytest.mark.e2e]


def wait_status(cloud: LiveCloud, name: str, wanted: str, timeout: float = 90) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    shown: dict[str, Any] = {}
    while time.monotonic() < deadline:
        shown = cloud.openstack_json("server", "show", name, "--os-compute-api-version", "2.93")
        if shown["status"] == wanted:
            return shown
        time.sleep(0.5)
    raise AssertionError(f"{name} is {shown.get('status')}, not {wanted}: {shown.get('fault')}\n{cloud.tail(40)}")


def test_boot_from_volume_and_reimage(live_cloud: LiveCloud) -> None:
    cloud = live_cloud
    # given a server booted from a new 1 GiB volume made from the tiny image
    cloud.openstack("server", "create", "--flavor", "m1.tiny", "--image", "tiny", "--boot-from-volume", "1",
                    "--network", "demo-net", "bfv1")
    wait_status(cloud, "bfv1", "ACTIVE")
    # when it is rebuilt without 2.93, the CLI's request fails with the documented 400
    refused = cloud.openstack("server", "rebuild", "--image", "tiny", "--reimage-boot-volume", "bfv1",
                              "--os-compute-api-version", "2.92", check=False)
    assert refused.returncode != 0
    # when it is rebuilt at 2.93 with --reimage-boot-volume, it ends ACTIVE again
    cloud.openstack("server", "rebuild", "--image", "tiny", "--reimage-boot-volume", "bfv1",
                    "--os-compute-api-version", "2.93")
    shown = wait_status(cloud, "bfv1", "ACTIVE")
    assert "booted from volume" in str(shown["image"])  # the CLI's text for image ""
    volumes = cloud.openstack_json("volume", "list", "--long")
    assert any(v["Status"] == "in-use" for v in volumes)


def wait_volume(cloud: LiveCloud, kind: str, name: str, wanted: str, timeout: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    shown: dict[str, Any] = {}
    while time.monotonic() < deadline:
        shown = cloud.openstack_json("volume", *([] if kind == "volume" else [kind]), "show", name)
        if shown["status"] == wanted:
            return shown
        time.sleep(0.5)
    raise AssertionError(f"{kind} {name} is {shown.get('status')}, not {wanted}\n{cloud.tail(40)}")


def test_volume_snapshots_with_the_cli(live_cloud: LiveCloud) -> None:
    cloud = live_cloud
    cloud.openstack("volume", "create", "--size", "1", "snap-src")
    wait_volume(cloud, "volume", "snap-src", "available")
    cloud.openstack("volume", "snapshot", "create", "--volume", "snap-src", "--property", "why=backup", "snap-1")
    snap = wait_volume(cloud, "snapshot", "snap-1", "available")
    assert snap["size"] == 1 and "why" in str(snap["properties"])
    assert "snap-1" in {s["Name"] for s in cloud.openstack_json("volume", "snapshot", "list")}
    cloud.openstack("volume", "create", "--snapshot", "snap-1", "--size", "2", "from-snap")
    restored = wait_volume(cloud, "volume", "from-snap", "available")
    assert restored["snapshot_id"] == snap["id"] and restored["size"] == 2
    # the source cannot go while the snapshot exists
    refused = cloud.openstack("volume", "delete", "snap-src", check=False)
    assert refused.returncode != 0 and "have snapshots" in refused.stderr
    cloud.openstack("volume", "snapshot", "delete", "snap-1")
    deadline = time.monotonic() + 60
    while "snap-1" in {s["Name"] for s in cloud.openstack_json("volume", "snapshot", "list")}:
        assert time.monotonic() < deadline, cloud.tail(40)
        time.sleep(0.5)
    cloud.openstack("volume", "delete", "snap-src", "from-snap")
