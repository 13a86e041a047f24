"""Live migration on the live cloud through the CLI, as an operator does for host maintenance: a
server booted on compute1 is moved with ``openstack --os-compute-api-version 2.30 server migrate
--live-migration --host compute2`` (the compute workers of both hosts move the guest: the
destination's libvirt connection starts it, the source's destroys its own), then ``openstack
server show`` has it ACTIVE on compute2 and ``openstack server migration list`` has its
``live-migration`` ``completed``. A second move without a host lets the scheduler pick (the only
other host of cell1: compute1 again)."""
from __future__ import annotations

import time
from typing import Any

import pytest

from .cloud import LiveCloud

pytestmark = [pytest.mark.slow, pytest.mark.e2e]

ADMIN = "cloudcore-admin"


def _admin(cloud: LiveCloud, *args: str) -> Any:
    return cloud.openstack_json(*args, cloud=ADMIN)


def _moved(cloud: LiveCloud, name: str, host: str, timeout: float = 90) -> dict[str, Any]:
    """``openstack server show`` once the server is ACTIVE on ``host`` with no task (or the last
    answer when the time is up, for the assertion's message)."""
    deadline = time.monotonic() + timeout
    while True:
        shown: dict[str, Any] = _admin(cloud, "server", "show", name)
        settled = shown.get("status") in ("ACTIVE", "ERROR") and not shown.get("OS-EXT-STS:task_state")
        if (settled and shown.get("OS-EXT-SRV-ATTR:host") == host) or time.monotonic() > deadline:
            return shown
        time.sleep(1)


def test_live_migrate_with_the_cli(live_cloud: LiveCloud) -> None:
    cloud = live_cloud.wait_computes_up()
    cloud.openstack("--os-compute-api-version", "2.74", "server", "create", "--flavor", "m1.tiny", "--image",
                    "tiny", "--network", "demo-net", "--host", "compute1", "live-vm", cloud=ADMIN)
    try:
        cloud.server_status("live-vm", "ACTIVE", "ERROR", cloud=ADMIN, timeout=90)
        assert _admin(cloud, "server", "show", "live-vm")["OS-EXT-SRV-ATTR:host"] == "compute1"
        # the source host itself is refused (2.30 < 2.34: the pre-check answers 400)
        refused = cloud.openstack("--os-compute-api-version", "2.30", "server", "migrate", "--live-migration",
                                  "--host", "compute1", "live-vm", cloud=ADMIN, check=False)
        assert refused.returncode != 0 and "to current host (compute1)" in refused.stderr, refused.stderr
        # when the operator live-migrates it to compute2
        cloud.openstack("--os-compute-api-version", "2.30", "server", "migrate", "--live-migration", "--host",
                        "compute2", "live-vm", cloud=ADMIN)
        shown = _moved(cloud, "live-vm", "compute2")
        assert (shown["status"], shown["OS-EXT-SRV-ATTR:host"]) == ("ACTIVE", "compute2"), (
            f"{shown.get('status')} {shown.get('fault')}\n{cloud.tail(40)}")
        server_id = shown["id"]
        migrations = _admin(cloud, "--os-compute-api-version", "2.80", "server", "migration", "list", "--server",
                            server_id)
        assert [(m["Type"], m["Status"], m["Source Compute"], m["Dest Compute"]) for m in migrations] == [
            ("live-migration", "completed", "compute1", "compute2")], migrations
        # nothing is in progress any more
        assert _admin(cloud, "--os-compute-api-version", "2.23", "server", "migration", "list", "--server",
                      server_id, "--status", "running") == []
        # and the scheduler picks the way back (2.68: no force)
        cloud.openstack("--os-compute-api-version", "2.68", "server", "migrate", "--live-migration", "live-vm",
                        cloud=ADMIN)
        shown = _moved(cloud, "live-vm", "compute1")
        assert (shown["status"], shown["OS-EXT-SRV-ATTR:host"]) == ("ACTIVE", "compute1"), (
            f"{shown.get('status')} {shown.get('fault')}\n{cloud.tail(40)}")
    finally:
        cloud.openstack("server", "delete", "--wait", "live-vm", cloud=ADMIN, check=False)


def test_a_project_manager_live_migrates_with_the_cli(live_cloud: LiveCloud) -> None:
    # given demo2 made manager of project demo (Keystone's manager role) and a server of demo's
    cloud = live_cloud.wait_computes_up()
    manager = ("--os-project-name", "demo")
    cloud.openstack("role", "add", "--project", "demo", "--user", "demo2", "manager", cloud=ADMIN)
    try:
        cloud.openstack("server", "create", "--flavor", "m1.tiny", "--image", "tiny", "--network", "demo-net",
                        "mgr-vm")
        cloud.server_status("mgr-vm", "ACTIVE", "ERROR", timeout=90)
        server_id = cloud.openstack_json("server", "show", "mgr-vm")["id"]
        source = _admin(cloud, "server", "show", server_id)["OS-EXT-SRV-ATTR:host"]
        # naming a host is the admin's
        refused = cloud.openstack(*manager, "--os-compute-api-version", "2.30", "server", "migrate",
                                  "--live-migration", "--host", source, "mgr-vm", cloud="cloudcore-demo2",
                                  check=False)
        assert refused.returncode != 0 and "os-migrate-server:migrate_live:host" in refused.stderr, refused.stderr
        # when the manager live-migrates it, the scheduler choosing the host
        cloud.openstack(*manager, "server", "migrate", "--live-migration", "mgr-vm", cloud="cloudcore-demo2")
        deadline = time.monotonic() + 90
        while True:
            shown = _admin(cloud, "server", "show", server_id)
            if (shown["OS-EXT-SRV-ATTR:host"] != source and not shown.get("OS-EXT-STS:task_state")) \
                    or time.monotonic() > deadline:
                break
            time.sleep(1)
        assert shown["status"] == "ACTIVE" and shown["OS-EXT-SRV-ATTR:host"] != source, (
            f"{shown.get('status')} {shown.get('fault')}\n{cloud.tail(40)}")
        # then it lists its project's migrations (by the project's id), the hosts hidden
        project_id = shown["project_id"]
        listed = cloud.openstack_json(*manager, "--os-compute-api-version", "2.80", "server", "migration", "list",
                                      "--project", project_id, cloud="cloudcore-demo2")
        # (the live cloud is shared: the project's other servers may have moved before; all hide their hosts)
        mine = [(m["Type"], m["Status"], m["Source Compute"], m["Dest Compute"])
                for m in listed if m["Server UUID"] == server_id]
        assert mine == [("live-migration", "completed", None, None)], listed
        assert all(m["Project"] == project_id and m["Source Compute"] is None for m in listed), listed
        # every project's are the admin's
        everyone = cloud.openstack(*manager, "--os-compute-api-version", "2.80", "server", "migration", "list",
                                   cloud="cloudcore-demo2", check=False)
        assert everyone.returncode != 0 and "os-migrations:index:all_projects" in everyone.stderr, everyone.stderr
    finally:
        cloud.openstack("server", "delete", "--wait", "mgr-vm", check=False)
        cloud.openstack("role", "remove", "--project", "demo", "--user", "demo2", "manager", cloud=ADMIN, check=False)
