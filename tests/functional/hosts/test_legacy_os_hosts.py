"""The deprecated ``/os-hosts`` API (up to 2.42) through HTTP, across both cells."""
from __future__ import annotations

import pytest

from tests.cloud import Cloud

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])


def test_list_filters_by_zone_and_is_gone_from_243(cloud: Cloud) -> None:
    admin = cloud.admin()
    hosts = cloud.get(admin, "os-hosts").json()["hosts"]
    computes = sorted((h["host_name"], h["zone"]) for h in hosts if h["service"] == "compute")
    assert computes == [("compute1", "az1"), ("compute2", "az1"), ("compute3", "az2"), ("compute4", "az2")]
    assert sorted(h["host_name"] for h in cloud.get(admin, "os-hosts?zone=az2").json()["hosts"]) == [
        "compute3", "compute4"]
    assert cloud.get(admin, "os-hosts?zone=").json()["hosts"] == hosts
    assert cloud.get(admin, "os-hosts?zone=nowhere").json()["hosts"] == []
    assert cloud.get(admin, "os-hosts", version="2.43").status_code == 404
    assert cloud.get(cloud.member(), "os-hosts").status_code == 403


def test_show_sums_the_servers_per_project(cloud: Cloud) -> None:
    admin = cloud.admin()
    server = cloud.create_server(admin, "vm1", availability_zone="az1:compute1")
    assert cloud.show(admin, server["id"])["OS-EXT-SRV-ATTR:host"] == "compute1"
    rows = [r["resource"] for r in cloud.get(admin, "os-hosts/compute1").json()["host"]]
    assert [r["project"] for r in rows[:3]] == ["(total)", "(used_now)", "(used_max)"]
    flavor = cloud.show(admin, server["id"])["flavor"]
    project = rows[3]
    assert (project["cpu"], project["memory_mb"], project["disk_gb"]) == (
        flavor["vcpus"], flavor["ram"], flavor["disk"] + flavor["ephemeral"])
    assert rows[2]["cpu"] == project["cpu"] and rows[0]["cpu"] > 0
    assert {r["host"] for r in rows} == {"compute1"}
    missing = cloud.get(admin, "os-hosts/nowhere")
    assert missing.status_code == 404 and "nowhere" in missing.json()["itemNotFound"]["message"]


def test_update_status_and_the_host_actions(cloud: Cloud) -> None:
    admin = cloud.admin()
    assert cloud.put(admin, "os-hosts/compute2", {"status": "disable"}).json() == {
        "host": "compute2", "status": "disabled"}
    assert cloud.get(admin, "os-services?host=compute2").json()["services"][0]["status"] == "disabled"
    assert cloud.put(admin, "os-hosts/compute2", {"status": "enable"}).json()["status"] == "enabled"
    for body in ({}, {"status": "bogus"}, {"maintenance_mode": "bogus"}, {"status": "enable", "extra": 1}):
        assert cloud.put(admin, "os-hosts/compute2", body).status_code == 400, body
    assert cloud.put(admin, "os-hosts/compute2", {"maintenance_mode": "enable"}).status_code == 501
    assert cloud.put(admin, "os-hosts/nowhere", {"status": "enable"}).status_code == 404
    for action in ("reboot", "shutdown", "startup"):
        assert cloud.get(admin, f"os-hosts/compute2/{action}").status_code == 501
        assert cloud.get(admin, f"os-hosts/nowhere/{action}").status_code == 404
        assert cloud.get(cloud.member(), f"os-hosts/compute2/{action}").status_code == 403
