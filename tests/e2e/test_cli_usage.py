"""Usage, the server password and the extension listing with the real ``openstack`` CLI against the
live cloud: ``usage show`` for the demo project counts a server it booted, ``usage list`` is the
admin's, and ``extension list --compute`` reads the v2 listing."""
from __future__ import annotations

import pytest

from .cloud import LiveCloud
from .test_cli_security_groups import wait_active

pytestmark = [pytest.mark.slow, pytest.mark.e2e]


def test_usage_with_the_cli(live_cloud: LiveCloud) -> None:
    cloud = live_cloud
    cloud.openstack("server", "create", "--flavor", "m1.tiny", "--image", "tiny", "--network", "demo-net",
                    "usage-vm")
    server = wait_active(cloud, "usage-vm")
    project_id = server["project_id"]
    mine = cloud.openstack_json("usage", "show", "--project", project_id)
    servers = mine["Servers"]  # the per-server rows in newer clients, their count in older ones
    assert (server["id"] in {s["instance_id"] for s in servers} if isinstance(servers, list)
            else int(servers) >= 1), mine
    assert float(mine["CPU Hours"]) > 0, mine
    listed = cloud.openstack_json("usage", "list", cloud="cloudcore-admin")
    assert project_id in {row["Project"] for row in listed} or any(
        row["Project"] == cloud.openstack_json("project", "show", project_id, cloud="cloudcore-admin")["name"]
        for row in listed), listed
    refused = cloud.openstack("usage", "list", check=False)
    assert refused.returncode != 0 and "403" in refused.stderr
    extensions = cloud.openstack_json("extension", "list", "--compute")
    assert "os-simple-tenant-usage" in {row["Alias"] for row in extensions}
    cloud.openstack("server", "delete", "--wait", "usage-vm")
