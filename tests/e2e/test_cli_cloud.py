"""End to end against ``manage.py run_cloud`` (every process real: web, conductor, beat, four
compute workers on libvirt's test driver) with the real ``openstack`` CLI only.

The "done when" checks of the compute-host, build and server-action issues: four hosts up,
a server ACTIVE on one of them, an impossible flavor ERROR (PENDING only with the option on),
stop/start/reboot, shelve, offload, unshelve to a host at 2.91 (403 for a member), resize with
confirm and revert, rebuild.
"""
from __future__ import annotations

import json
import time
from typing import Any

import pytest

from .cloud import LiveCloud

pytestmark = [pytest.mark.slow, pytest.mark.e2e]


def wait_status(cloud: LiveCloud, name: str, wanted: str, *, cloud_name: str = "cloudcore-demo",
                timeout: float = 60) -> dict[str, Any]:
    cloud.server_status(name, wanted, cloud=cloud_name, timeout=timeout)
    shown: dict[str, Any] = cloud.openstack_json("server", "show", name, cloud=cloud_name)
    assert shown["status"] == wanted, f"{name} is {shown['status']}, not {wanted}: {shown.get('fault')}"
    return shown


@pytest.fixture(scope="module")
def cloud(live_cloud: LiveCloud) -> LiveCloud:
    return live_cloud.wait_computes_up()


def test_four_hosts_and_hypervisors(cloud: LiveCloud) -> None:
    services = cloud.openstack_json("compute", "service", "list", cloud="cloudcore-admin")
    assert sorted((s["Host"], s["Zone"]) for s in services) == [
        ("compute1", "az1"), ("compute2", "az1"), ("compute3", "az2"), ("compute4", "az2")]
    hypervisors = cloud.openstack_json("hypervisor", "list", cloud="cloudcore-admin")
    assert sorted(h["Hypervisor Hostname"] for h in hypervisors) == ["compute1", "compute2", "compute3", "compute4"]


def test_aggregate_cache_image(cloud: LiveCloud) -> None:
    # the compute workers of az1's hosts fetch the image into their caches, through the conductor
    image_id = cloud.openstack_json("image", "show", "tiny-alt", cloud="cloudcore-admin")["id"]
    cloud.openstack("--os-compute-api-version", "2.81", "aggregate", "cache", "image", "az1", "tiny-alt",
                    cloud="cloudcore-admin")
    cached = [cloud.var_dir / "state" / host / "_base" / image_id for host in ("compute1", "compute2")]
    deadline = time.monotonic() + 60
    while not all(path.exists() for path in cached) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert all(path.exists() for path in cached), cloud.tail(40)
    assert not (cloud.var_dir / "state" / "compute3" / "_base" / image_id).exists()


def test_boot_list_and_impossible_flavor(cloud: LiveCloud) -> None:
    created = cloud.openstack_json("server", "create", "--flavor", "m1.tiny", "--image", "tiny", "--network",
                                   "demo-net", "--wait", "vm1")
    assert created["status"] == "ACTIVE"
    cloud.openstack("flavor", "create", "--vcpus", "1", "--ram", "512", "--disk", "5000", "m1.impossible",
                    cloud="cloudcore-admin")
    cloud.openstack("server", "create", "--flavor", "m1.impossible", "--image", "tiny", "--network", "demo-net",
                    "nohost")
    failed = wait_status(cloud, "nohost", "ERROR")
    assert "No valid host was found" in json.dumps(failed.get("fault"))
    listed = {s["Name"]: s["Status"] for s in cloud.openstack_json("server", "list")}
    assert listed["vm1"] == "ACTIVE" and listed["nohost"] == "ERROR"
    admin_view = cloud.openstack_json("server", "show", "vm1", "--os-compute-api-version", "2.53",
                                      cloud="cloudcore-demo-admin")
    assert admin_view["status"] == "ACTIVE"
    cloud.openstack("server", "delete", "--wait", "nohost")


def test_power_actions_and_rebuild(cloud: LiveCloud) -> None:
    cloud.openstack("server", "create", "--flavor", "m1.tiny", "--image", "tiny", "--network", "demo-net",
                    "--wait", "pwr")
    cloud.openstack("server", "stop", "pwr")
    wait_status(cloud, "pwr", "SHUTOFF")
    cloud.openstack("server", "start", "pwr")
    wait_status(cloud, "pwr", "ACTIVE")
    cloud.openstack("server", "reboot", "--hard", "pwr")
    wait_status(cloud, "pwr", "ACTIVE")
    cloud.openstack("server", "rebuild", "--image", "tiny", "pwr")
    wait_status(cloud, "pwr", "ACTIVE")


def test_shelve_offload_unshelve_to_host(cloud: LiveCloud) -> None:
    cloud.openstack("server", "create", "--flavor", "m1.tiny", "--image", "tiny", "--network", "demo-net",
                    "--availability-zone", "az2", "--wait", "shelvy")
    cloud.openstack("server", "shelve", "shelvy")
    wait_status(cloud, "shelvy", "SHELVED_OFFLOADED")  # SHELVED_OFFLOAD_TIME 0: offloaded at once
    denied = cloud.openstack("--os-compute-api-version", "2.91", "server", "unshelve", "--host", "compute3",
                             "shelvy", check=False)
    assert denied.returncode != 0 and "os_compute_api:os-shelve:unshelve_to_host" in denied.stderr
    cloud.openstack("--os-compute-api-version", "2.91", "server", "unshelve", "--host", "compute3", "shelvy",
                    cloud="cloudcore-demo-admin")
    wait_status(cloud, "shelvy", "ACTIVE")
    hosts = {s["Name"]: s for s in cloud.openstack_json("server", "list", "--all-projects", "--long",
                                                      cloud="cloudcore-admin")}
    assert hosts["shelvy"]["Host"] == "compute3"


def test_resize_confirm_and_revert(cloud: LiveCloud) -> None:
    cloud.openstack("server", "create", "--flavor", "m1.tiny", "--image", "tiny", "--network", "demo-net",
                    "--wait", "rsz")
    cloud.openstack("server", "resize", "--flavor", "m1.small", "rsz")
    wait_status(cloud, "rsz", "VERIFY_RESIZE")
    cloud.openstack("server", "resize", "confirm", "rsz")
    shown = wait_status(cloud, "rsz", "ACTIVE")
    assert "m1.small" in json.dumps(shown["flavor"])
    cloud.openstack("server", "resize", "--flavor", "m1.medium", "rsz")
    wait_status(cloud, "rsz", "VERIFY_RESIZE")
    cloud.openstack("server", "resize", "revert", "rsz")
    shown = wait_status(cloud, "rsz", "ACTIVE")
    assert "m1.small" in json.dumps(shown["flavor"])


def test_cross_cell_resize_confirm_then_back_and_revert(cloud: LiveCloud) -> None:
    """Seed 5 with real processes: with the rule granted to the demo project, a server in cell1
    (its hosts disabled) is resized into cell2, listed once, confirmed (cell1 copy gone), moved
    back into cell1 (no duplicate keys) and reverted."""
    import subprocess
    import sys

    from .cloud import ROOT

    def services(action: str, *hosts: str) -> None:
        for host in hosts:
            cloud.openstack("compute", "service", "set", f"--{action}", host, "nova-compute", cloud="cloudcore-admin")

    granted = subprocess.run([sys.executable, "manage.py", "policy", "grant", "compute:servers:resize:cross_cell",
                              "--project", "demo"], cwd=ROOT, env=cloud.env, capture_output=True, text=True)
    assert granted.returncode == 0, granted.stderr
    services("disable", "compute3", "compute4")
    try:
        cloud.openstack("server", "create", "--flavor", "m1.tiny", "--image", "tiny", "--network", "demo-net",
                        "--wait", "xc")
        services("enable", "compute3", "compute4")
        services("disable", "compute1", "compute2")
        cloud.openstack("server", "resize", "--flavor", "m1.small", "xc", cloud="cloudcore-demo-admin")
        wait_status(cloud, "xc", "VERIFY_RESIZE")
        admin_rows = {s["Name"]: s for s in cloud.openstack_json("server", "list", "--all-projects", "--long",
                                                               cloud="cloudcore-admin")}
        assert admin_rows["xc"]["Host"] in ("compute3", "compute4")
        assert [s["Name"] for s in cloud.openstack_json("server", "list")].count("xc") == 1
        cloud.openstack("server", "resize", "confirm", "xc", cloud="cloudcore-demo-admin")
        wait_status(cloud, "xc", "ACTIVE")
        # back into cell1 after the confirm, then revert
        services("enable", "compute1", "compute2")
        services("disable", "compute3", "compute4")
        cloud.openstack("server", "resize", "--flavor", "m1.medium", "xc", cloud="cloudcore-demo-admin")
        wait_status(cloud, "xc", "VERIFY_RESIZE")
        cloud.openstack("server", "resize", "revert", "xc", cloud="cloudcore-demo-admin")
        shown = wait_status(cloud, "xc", "ACTIVE")
        assert "m1.small" in json.dumps(shown["flavor"])
    finally:
        services("enable", "compute1", "compute2", "compute3", "compute4")


def test_project_quota_set_enforced_and_reset(cloud: LiveCloud) -> None:
    # given demo's own usage (other tests of this module may leave servers), room for two more
    def absolute() -> dict[str, Any]:
        rows = cloud.openstack_json("limits", "show", "--absolute")
        return {row["Name"]: row["Value"] for row in rows}

    def quota(*args: str, cloud_name: str = "cloudcore-demo") -> dict[str, Any]:
        rows = cloud.openstack_json("quota", "show", "--compute", *args, cloud=cloud_name)
        return {row["Resource"]: row["Limit"] for row in rows}

    shown = quota()
    assert shown["instances"] == 10 and shown["cores"] == 20 and shown["ram"] == 51200
    used = absolute()["total_instances_used"]
    cloud.openstack("quota", "set", "--instances", str(used + 2), "demo", cloud="cloudcore-admin")
    try:
        assert quota("demo", cloud_name="cloudcore-admin")["instances"] == used + 2
        assert quota()["instances"] == used + 2
        for name in ("q1", "q2"):
            cloud.openstack("server", "create", "--flavor", "m1.tiny", "--image", "tiny", "--network", "demo-net",
                            name)
        # when a third is asked for, then Nova's quota message
        third = cloud.openstack("server", "create", "--flavor", "m1.tiny", "--image", "tiny", "--network",
                                "demo-net", "q3", check=False)
        assert third.returncode != 0
        assert (f"Quota exceeded for instances: Requested 1, but already used {used + 2} of {used + 2} instances"
                in third.stderr)
        limits = absolute()
        assert limits["max_total_instances"] == used + 2 and limits["total_instances_used"] == used + 2
        # the defaults are untouched
        assert quota("--default")["instances"] == 10
    finally:
        cloud.openstack("quota", "delete", "--compute", "demo", cloud="cloudcore-admin")
        cloud.openstack("server", "delete", "--wait", "q1", "q2", check=False)
    assert quota("demo", cloud_name="cloudcore-admin")["instances"] == 10
    assert [s["Name"] for s in cloud.openstack_json("server", "list") if s["Name"] in ("q1", "q2", "q3")] == []
