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
