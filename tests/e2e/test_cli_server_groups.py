"""Server groups with the real ``openstack`` CLI against the live cloud: an anti-affinity group, two
servers booted into it with ``--hint group=``, on different hosts, listed as its members."""
from __future__ import annotations

import pytest

from .cloud import LiveCloud
from .test_cli_security_groups import wait_active

pytestmark = [pytest.mark.slow, pytest.mark.e2e]


def test_server_groups_with_the_cli(live_cloud: LiveCloud) -> None:
    cloud = live_cloud
    group = cloud.openstack_json("server", "group", "create", "--policy", "anti-affinity", "sg-spread")
    assert group["name"] == "sg-spread" and group["policy"] == "anti-affinity"
    for name in ("spread-1", "spread-2"):
        cloud.openstack("server", "create", "--flavor", "m1.tiny", "--image", "tiny", "--network", "demo-net",
                        "--hint", f"group={group['id']}", name)
    ids = [wait_active(cloud, name)["id"] for name in ("spread-1", "spread-2")]
    # the hosts, as the cloud admin sees them
    hosts = {cloud.openstack_json("server", "show", server_id, cloud="cloudcore-admin")["OS-EXT-SRV-ATTR:host"]
             for server_id in ids}
    assert len(hosts) == 2 and None not in hosts, hosts
    shown = cloud.openstack_json("server", "group", "show", "sg-spread")
    members = shown["members"] if isinstance(shown["members"], list) else shown["members"].split(", ")
    assert len(members) == 2
    assert "sg-spread" in {g["Name"] for g in cloud.openstack_json("server", "group", "list")}
    # an in-tree hint this cloud does not implement is refused, not ignored
    refused = cloud.openstack("server", "create", "--flavor", "m1.tiny", "--image", "tiny", "--network", "demo-net",
                              "--hint", "query=[\">=\",\"$free_ram_mb\",1]", "hinted", check=False)
    assert refused.returncode != 0 and "query is not supported" in refused.stderr
    for name in ("spread-1", "spread-2"):
        cloud.openstack("server", "delete", "--wait", name)
    cloud.openstack("server", "group", "delete", "sg-spread")
