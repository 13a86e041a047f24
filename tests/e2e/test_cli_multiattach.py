"""End to end with the openstack CLI: an admin's multiattach volume type, a member's volume of it
attached at 2.60 to two servers (real compute workers connect it), two attachments shown by
``openstack volume show``, and after ``server remove volume`` from one it stays in-use."""
from __future__ import annotations

from typing import Any

import pytest

from .cloud import LiveCloud
from .test_cli_volumes import wait_status, wait_volume

pytestmark = [pytest.mark.slow, pytest.mark.e2e]


def wait_attachments(cloud: LiveCloud, name: str, count: int, timeout: float = 90) -> dict[str, Any]:
    cloud.poll(lambda conn: conn.block_storage.find_volume(name),
               lambda vol: len(vol.attachments or []) == count and vol.status == "in-use",
               f"volume {name} to have {count} attachments", timeout=timeout)
    shown: dict[str, Any] = cloud.openstack_json("volume", "show", name)
    if len(shown.get("attachments") or []) == count and shown["status"] == "in-use":
        return shown
    raise AssertionError(f"volume {name}: {shown.get('status')} {shown.get('attachments')}\n{cloud.tail(40)}")


def test_a_multiattach_volume_shared_by_two_servers(live_cloud: LiveCloud) -> None:
    cloud, admin = live_cloud, "cloudcore-admin"
    # given an admin's multiattach type and a member's volume of it
    cloud.openstack("volume", "type", "create", "--property", "multiattach=<is> True", "e2e-multiattach",
                    cloud=admin)
    cloud.openstack("volume", "create", "--type", "e2e-multiattach", "--size", "1", "shared")
    assert wait_volume(cloud, "volume", "shared", "available")["multiattach"] is True
    # and two servers
    for name in ("ma-1", "ma-2"):
        cloud.openstack("server", "create", "--flavor", "m1.tiny", "--image", "tiny", "--network", "demo-net", name)
    servers = {name: wait_status(cloud, name, "ACTIVE")["id"] for name in ("ma-1", "ma-2")}
    # below 2.60 the attach is refused
    refused = cloud.openstack("--os-compute-api-version", "2.59", "server", "add", "volume", "ma-1", "shared",
                              check=False)
    assert refused.returncode != 0 and "2.60" in refused.stderr
    # when it is attached to both at 2.60
    cloud.openstack("--os-compute-api-version", "2.60", "server", "add", "volume", "ma-1", "shared")
    wait_attachments(cloud, "shared", 1)
    cloud.openstack("--os-compute-api-version", "2.60", "server", "add", "volume", "ma-2", "shared")
    # then the volume shows two attachments, one per server, and is in-use
    shown = wait_attachments(cloud, "shared", 2)
    assert sorted(a["server_id"] for a in shown["attachments"]) == sorted(servers.values())
    # and it cannot be deleted while attached
    assert cloud.openstack("volume", "delete", "shared", check=False).returncode != 0
    # when it is removed from the first server, it stays in-use, attached to the second
    cloud.openstack("server", "remove", "volume", "ma-1", "shared")
    shown = wait_attachments(cloud, "shared", 1)
    assert [a["server_id"] for a in shown["attachments"]] == [servers["ma-2"]]
    # and once the second server is deleted the volume is free and goes, then the type
    cloud.openstack("server", "delete", "--wait", "ma-1", "ma-2")
    wait_volume(cloud, "volume", "shared", "available")
    cloud.openstack("volume", "delete", "shared")
    cloud.volume_status("volume", "shared", None)
    assert "shared" not in {v["Name"] for v in cloud.openstack_json("volume", "list")}
    cloud.openstack("volume", "type", "delete", "e2e-multiattach", cloud=admin)
