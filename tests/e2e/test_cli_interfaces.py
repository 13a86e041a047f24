"""Interfaces on the live cloud: ``openstack server add port / add network / remove port / remove network``
and openstacksdk's ``create_server_interface`` / ``server_interfaces`` / ``delete_server_interface``; the
network service's ports follow (bound to the server on attach, unbound or deleted on detach)."""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from .cloud import LiveCloud
from .test_cli_security_groups import wait_active
from .test_sdk import connect

pytestmark = [pytest.mark.slow, pytest.mark.e2e]


def wait_for(check: Callable[[], Any], what: str, timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


def server_port_ids(cloud: LiveCloud, server: str) -> set[str]:
    return {p["ID"] for p in cloud.openstack_json("port", "list", "--server", server)}


def test_interfaces_with_the_cli_and_the_sdk(live_cloud: LiveCloud) -> None:
    cloud = live_cloud
    net = cloud.openstack_json("network", "create", "if-net")
    cloud.openstack("subnet", "create", "--network", "if-net", "--subnet-range", "10.77.0.0/28", "if-subnet")
    port = cloud.openstack_json("port", "create", "--network", "if-net", "if-port")
    cloud.openstack("server", "create", "--flavor", "m1.tiny", "--image", "tiny", "--network", "demo-net", "if-vm")
    server = wait_active(cloud, "if-vm")
    try:
        # server add port: the user's port is bound to the server on its host
        cloud.openstack("server", "add", "port", "if-vm", "if-port")
        bound = cloud.openstack_json("port", "show", port["id"], cloud="cloudcore-admin")
        host = cloud.openstack_json("server", "show", server["id"], cloud="cloudcore-admin")["OS-EXT-SRV-ATTR:host"]
        assert (bound["device_id"], bound["binding_host_id"]) == (server["id"], host)
        # a member does not see the binding's host (Neutron's admin-only binding attributes)
        assert not cloud.openstack_json("port", "show", port["id"]).get("binding_host_id")
        # server add network: a port is made for the server on that network
        cloud.openstack("server", "add", "network", "if-vm", "if-net")
        assert len(server_port_ids(cloud, "if-vm")) == 3
        assert "if-net" in cloud.openstack_json("server", "show", "if-vm")["addresses"]
        # server remove port: the user's port stays, unbound (the detach is asynchronous)
        cloud.openstack("server", "remove", "port", "if-vm", "if-port")
        wait_for(lambda: not cloud.openstack_json("port", "show", port["id"])["device_id"], "if-port unbound")
        # server remove network: the port made for the server on if-net is deleted
        cloud.openstack("server", "remove", "network", "if-vm", "if-net")
        wait_for(lambda: len(server_port_ids(cloud, "if-vm")) == 1, "the if-net port deleted")
        assert not [p for p in cloud.openstack_json("port", "list", "--network", "if-net")
                    if p["ID"] != port["id"]]
        # openstacksdk: create, list, show and delete an interface
        conn = connect(cloud)
        try:
            made = conn.compute.create_server_interface(server["id"], net_id=net["id"],
                                                        fixed_ips=[{"ip_address": "10.77.0.9"}])
            assert made.net_id == net["id"] and [f["ip_address"] for f in made.fixed_ips] == ["10.77.0.9"]
            listed = {i.port_id for i in conn.compute.server_interfaces(server["id"])}
            assert made.port_id in listed and len(listed) == 2
            assert conn.compute.get_server_interface(made.port_id, server=server["id"]).port_state == "ACTIVE"
            conn.compute.delete_server_interface(made.port_id, server=server["id"])
            wait_for(lambda: len(list(conn.compute.server_interfaces(server["id"]))) == 1, "sdk detach")
            actions = {a.action for a in conn.compute.server_actions(server["id"])}
            assert {"attach_interface", "detach_interface"} <= actions
        finally:
            conn.close()
    finally:
        cloud.openstack("server", "delete", "--wait", "if-vm", check=False)
        cloud.openstack("port", "delete", "if-port", check=False)
        cloud.openstack("subnet", "delete", "if-subnet", check=False)
        cloud.openstack("network", "delete", "if-net", check=False)
