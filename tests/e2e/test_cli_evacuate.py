"""Evacuate on the live cloud: two servers booted on compute1, whose compute service the operator
then forces down (``openstack compute service set --down``); one is evacuated with ``openstack
server evacuate`` (2.94: it stays ACTIVE), the other with openstacksdk's
``evacuate_server`` to a named host; both run on compute2 afterwards with an ``evacuation``
migration each. compute1 keeps running (only forced down), so its copies of the guests are
cleaned when its compute service next starts (the functional tests drive that start-up step)."""
from __future__ import annotations

import time
from typing import Any

import pytest

from .cloud import LiveCloud
from .test_sdk import connect

pytestmark = [pytest.mark.slow, pytest.mark.e2e]

ADMIN = "cloudcore-admin"


def _admin(cloud: LiveCloud, *args: str) -> Any:
    return cloud.openstack_json(*args, cloud=ADMIN)


def _settled(conn: Any, server_id: str, timeout: float = 90) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        server = conn.compute.get_server(server_id)
        if server.status in ("ACTIVE", "SHUTOFF", "ERROR"):
            return server
        time.sleep(0.5)
    raise AssertionError(f"{server_id} did not settle")


def _active(cloud: LiveCloud, name: str, timeout: float = 90) -> dict[str, Any]:
    cloud.server_status(name, "ACTIVE", "ERROR", cloud=ADMIN, timeout=timeout)
    shown: dict[str, Any] = _admin(cloud, "server", "show", name)
    assert shown.get("status") == "ACTIVE", f"{name}: {shown.get('status')} {shown.get('fault')}\n{cloud.tail(30)}"
    return shown


def test_evacuate_with_the_cli_and_the_sdk(live_cloud: LiveCloud) -> None:
    cloud = live_cloud.wait_computes_up()
    for name in ("evac-cli", "evac-sdk"):
        cloud.openstack("--os-compute-api-version", "2.74", "server", "create", "--flavor", "m1.tiny", "--image",
                        "tiny", "--network", "demo-net", "--host", "compute1", name, cloud=ADMIN)
    ids = {name: _active(cloud, name)["id"] for name in ("evac-cli", "evac-sdk")}
    for server_id in ids.values():
        assert _admin(cloud, "server", "show", server_id)["OS-EXT-SRV-ATTR:host"] == "compute1"
    # while compute1's service is up the evacuation is refused
    refused = cloud.openstack("--os-compute-api-version", "2.94", "server", "evacuate", ids["evac-cli"],
                              cloud=ADMIN, check=False)
    assert refused.returncode != 0 and "Compute service of compute1 is still in use." in refused.stderr
    cloud.openstack("--os-compute-api-version", "2.11", "compute", "service", "set", "--down", "compute1",
                    "nova-compute", cloud=ADMIN)
    try:
        # the CLI: the scheduler picks the host (not ``--wait``: this client's wait compares the
        # lower-cased status with "ACTIVE" and never returns)
        cloud.openstack("--os-compute-api-version", "2.94", "server", "evacuate", ids["evac-cli"], cloud=ADMIN)
        conn = connect(cloud, ADMIN)
        server = _settled(conn, ids["evac-cli"])
        assert server.status == "ACTIVE" and server.compute_host == "compute2", server
        # the SDK, to a named host
        conn.compute.evacuate_server(ids["evac-sdk"], host="compute2")
        server = _settled(conn, ids["evac-sdk"])
        assert server.status in ("ACTIVE", "SHUTOFF") and server.compute_host == "compute2", server
        for server_id in ids.values():
            migrations = _admin(cloud, "--os-compute-api-version", "2.80", "server", "migration", "list",
                                "--server", server_id)
            assert [(m["Type"], m["Status"], m["Source Compute"], m["Dest Compute"]) for m in migrations] == [
                ("evacuation", "done", "compute1", "compute2")], migrations
    finally:
        cloud.openstack("--os-compute-api-version", "2.11", "compute", "service", "set", "--up", "compute1",
                        "nova-compute", cloud=ADMIN)
        for name in ("evac-cli", "evac-sdk"):
            cloud.openstack("server", "delete", "--wait", name, cloud=ADMIN, check=False)
