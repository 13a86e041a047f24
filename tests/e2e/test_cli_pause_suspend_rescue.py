"""Pause, suspend, rescue and crash dump with the real ``openstack`` CLI against the live cloud: a
server is paused and unpaused, suspended and resumed, rescued (with the image named) and unrescued,
sent a crash dump at 2.17, and a wrong-state request is refused with Nova's message."""
from __future__ import annotations

from typing import Any

import pytest

from .cloud import LiveCloud
from .test_cli_security_groups import wait_active

pytestmark = [pytest.mark.slow, pytest.mark.e2e]


def wait_status(cloud: LiveCloud, name: str, status: str, timeout: float = 90) -> dict[str, Any]:
    """The server once its status is ``status`` and it has no task left."""
    cloud.poll(lambda conn: conn.compute.find_server(name), lambda server: server.status == "ERROR" or (
        server.status == status and not server.task_state), f"server {name} to be {status}", timeout=timeout)
    shown: dict[str, Any] = cloud.openstack_json("server", "show", name)
    if shown["status"] == status and not shown.get("OS-EXT-STS:task_state"):
        return shown
    raise AssertionError(f"{name}: {shown.get('status')} (wanted {status}) {shown.get('fault')}\n{cloud.tail(30)}")


def test_pause_suspend_rescue_with_the_cli(live_cloud: LiveCloud) -> None:
    cloud = live_cloud
    cloud.openstack("server", "create", "--flavor", "m1.tiny", "--image", "tiny", "--network", "demo-net", "psr-vm")
    wait_active(cloud, "psr-vm")

    cloud.openstack("server", "pause", "psr-vm")
    assert wait_status(cloud, "psr-vm", "PAUSED")["OS-EXT-STS:vm_state"] == "paused"
    refused = cloud.openstack("server", "pause", "psr-vm", check=False)
    assert refused.returncode != 0 and "while it is in vm_state paused" in refused.stderr, refused.stderr
    cloud.openstack("server", "unpause", "psr-vm")
    wait_status(cloud, "psr-vm", "ACTIVE")

    cloud.openstack("server", "suspend", "psr-vm")
    assert wait_status(cloud, "psr-vm", "SUSPENDED")["OS-EXT-STS:vm_state"] == "suspended"
    cloud.openstack("server", "resume", "psr-vm")
    wait_status(cloud, "psr-vm", "ACTIVE")

    cloud.openstack("server", "rescue", "--image", "tiny", "--password", "rescue-pw", "psr-vm")
    assert wait_status(cloud, "psr-vm", "RESCUE")["OS-EXT-STS:vm_state"] == "rescued"
    cloud.openstack("server", "unrescue", "psr-vm")
    wait_status(cloud, "psr-vm", "ACTIVE")

    cloud.openstack("--os-compute-api-version", "2.17", "server", "dump", "create", "psr-vm")
    actions = cloud.openstack_json("server", "event", "list", "psr-vm")
    names = [a["Action"] for a in actions]
    for action in ("pause", "unpause", "suspend", "resume", "rescue", "unrescue", "trigger_crash_dump"):
        assert action in names, names
    wait_status(cloud, "psr-vm", "ACTIVE")

    cloud.openstack("server", "delete", "--wait", "psr-vm")
