"""GET /servers/{id}/diagnostics on the in-process cloud: the test driver's guest (a libvirt test
domain) asked through its host; Nova's 2.48 shape, the flat shape below, admin-only policy, 409
without a host."""
from __future__ import annotations

import pytest

from tests.cloud import Cloud

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])

STANDARDIZED = {"state", "driver", "hypervisor", "hypervisor_os", "uptime", "config_drive", "num_cpus", "num_disks",
                "num_nics", "memory_details", "cpu_details", "disk_details", "nic_details"}


def test_diagnostics_from_2_48(cloud: Cloud) -> None:
    # given an active server with 1 vCPU and 512 MiB (m1.tiny)
    client = cloud.member()
    sid = cloud.wait_for_status(client, cloud.create_server(client, "vm1")["id"], "ACTIVE")["id"]
    admin = cloud.admin()
    # when the admin asks for its diagnostics at 2.48
    response = cloud.get(admin, f"servers/{sid}/diagnostics", version="2.48")
    # then Nova's standardized body, from the guest's domain
    assert response.status_code == 200, response.content
    body = response.json()
    assert set(body) == STANDARDIZED
    assert body["state"] == "running" and body["driver"] == "libvirt" and body["hypervisor"] == "test"
    assert body["memory_details"]["maximum"] == 512 and body["num_cpus"] == len(body["cpu_details"]) == 1
    assert set(body["cpu_details"][0]) == {"id", "time", "utilisation"}
    assert body["num_disks"] == len(body["disk_details"]) and body["num_nics"] == len(body["nic_details"])
    assert body["uptime"] >= 0 and body["config_drive"] is False
    # a stopped guest says so
    assert cloud.action(client, sid, {"os-stop": None}).status_code == 202
    assert cloud.get(admin, f"servers/{sid}/diagnostics", version="2.48").json()["state"] == "shutdown"


def test_diagnostics_below_2_48_and_policy(cloud: Cloud) -> None:
    client = cloud.member()
    sid = cloud.wait_for_status(client, cloud.create_server(client, "vm1")["id"], "ACTIVE")["id"]
    admin = cloud.admin()
    body = cloud.get(admin, f"servers/{sid}/diagnostics", version="2.47").json()
    assert body["memory"] == 512 * 1024 and "cpu0_time" in body and "driver" not in body
    # admin only: the owner is refused, another project does not see the server
    denied = cloud.get(client, f"servers/{sid}/diagnostics")
    assert denied.status_code == 403
    assert denied.json()["forbidden"]["message"] == (
        "Policy doesn't allow os_compute_api:os-server-diagnostics to be performed.")
    assert cloud.get(cloud.member("mallory", "demo2"), f"servers/{sid}/diagnostics").status_code == 404
    # no host (shelved and offloaded): 409
    assert cloud.action(client, sid, {"shelve": None}).status_code == 202
    assert cloud.get(admin, f"servers/{sid}/diagnostics").status_code == 409
