"""Security groups end to end with the real ``openstack`` CLI against the live cloud: a group with a rule,
a server booted into it, a group added and removed, and a group in use refused deletion."""
from __future__ import annotations

from typing import Any

import pytest

from .cloud import LiveCloud

pytestmark = [pytest.mark.slow, pytest.mark.e2e]


def wait_active(cloud: LiveCloud, name: str, timeout: float = 90) -> dict[str, Any]:
    cloud.server_status(name, "ACTIVE", "ERROR", timeout=timeout)
    shown: dict[str, Any] = cloud.openstack_json("server", "show", name)
    assert shown.get("status") == "ACTIVE", f"{name}: {shown.get('status')} {shown.get('fault')}\n{cloud.tail(30)}"
    return shown


def group_names(shown: dict[str, Any]) -> list[str]:
    groups = shown.get("security_groups") or []
    return sorted(g["name"] if isinstance(g, dict) else str(g) for g in groups)


def test_security_groups_with_the_cli(live_cloud: LiveCloud) -> None:
    cloud = live_cloud
    # a group with an ssh rule
    created = cloud.openstack_json("security", "group", "create", "--description", "ssh in", "sg-ssh")
    assert created["name"] == "sg-ssh" and created["description"] == "ssh in"
    rule = cloud.openstack_json("security", "group", "rule", "create", "--protocol", "tcp", "--dst-port", "22",
                                "sg-ssh")
    assert (rule["protocol"], rule["port_range_min"], rule["port_range_max"]) == ("tcp", 22, 22)
    assert rule["direction"] == "ingress" and rule["security_group_id"] == created["id"]
    rules = cloud.openstack_json("security", "group", "rule", "list", "sg-ssh")
    assert any(r.get("Port Range") == "22:22" for r in rules), rules
    # the same rule again is refused
    again = cloud.openstack("security", "group", "rule", "create", "--protocol", "tcp", "--dst-port", "22", "sg-ssh",
                            check=False)
    assert again.returncode != 0 and "already exists" in again.stderr
    groups = {g["Name"] for g in cloud.openstack_json("security", "group", "list")}
    assert {"default", "sg-ssh"} <= groups
    cloud.openstack("security", "group", "create", "sg-web")

    # a server booted into the group reads it back
    cloud.openstack("server", "create", "--flavor", "m1.tiny", "--image", "tiny", "--network", "demo-net",
                    "--security-group", "sg-ssh", "sg-vm")
    shown = wait_active(cloud, "sg-vm")
    assert group_names(shown) == ["sg-ssh"]
    ports = cloud.openstack_json("port", "list", "--server", "sg-vm", "--long")
    assert len(ports) == 1 and created["id"] in str(ports[0]["Security Groups"])

    # add a second group: show lists both
    cloud.openstack("server", "add", "security", "group", "sg-vm", "sg-web")
    assert group_names(cloud.openstack_json("server", "show", "sg-vm")) == ["sg-ssh", "sg-web"]

    # a group in use cannot be deleted
    refused = cloud.openstack("security", "group", "delete", "sg-web", check=False)
    assert refused.returncode != 0 and "in use" in refused.stderr, refused.stderr

    # remove it: show lists the one left, and the group can go
    cloud.openstack("server", "remove", "security", "group", "sg-vm", "sg-web")
    assert group_names(cloud.openstack_json("server", "show", "sg-vm")) == ["sg-ssh"]
    cloud.openstack("security", "group", "delete", "sg-web")
    assert "sg-web" not in {g["Name"] for g in cloud.openstack_json("security", "group", "list")}

    # an unknown group on create is refused
    unknown = cloud.openstack("server", "create", "--flavor", "m1.tiny", "--image", "tiny", "--network", "demo-net",
                              "--security-group", "no-such-group", "sg-vm2", check=False)
    assert unknown.returncode != 0

    cloud.openstack("server", "delete", "--wait", "sg-vm")
    cloud.openstack("security", "group", "delete", "sg-ssh")
