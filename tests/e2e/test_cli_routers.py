"""Routers and floating IPs end to end with the real ``openstack`` CLI against the live cloud: a project's
network and subnet, a router with its gateway on the demo's external network ``public`` and the subnet
attached, a server on the network given a floating IP that ``server show`` lists, then the teardown."""
from __future__ import annotations

import pytest

from .cloud import LiveCloud
from .test_cli_security_groups import wait_active

pytestmark = [pytest.mark.slow, pytest.mark.e2e]


def test_router_and_floating_ip_with_the_cli(live_cloud: LiveCloud) -> None:
    cloud = live_cloud
    # the demo's external network is there for every project
    public = cloud.openstack_json("network", "show", "public")
    assert public["router:external"] in (True, "External"), public
    # a project network with a subnet, and a router with its gateway on public and the subnet attached
    cloud.openstack("network", "create", "l3-net")
    subnet = cloud.openstack_json("subnet", "create", "--network", "l3-net", "--subnet-range", "10.60.0.0/24",
                                  "l3-subnet")
    router = cloud.openstack_json("router", "create", "l3-router")
    assert router["name"] == "l3-router" and router["status"] == "ACTIVE"
    cloud.openstack("router", "set", "--external-gateway", "public", "l3-router")
    cloud.openstack("router", "add", "subnet", "l3-router", "l3-subnet")
    shown = cloud.openstack_json("router", "show", "l3-router")
    assert public["id"] in str(shown["external_gateway_info"]), shown
    ports = cloud.openstack_json("port", "list", "--router", "l3-router")
    assert any("10.60.0.1" in str(p["Fixed IP Addresses"]) for p in ports), ports
    assert subnet["gateway_ip"] == "10.60.0.1"

    # a server on the network gets a floating IP from public
    cloud.openstack("server", "create", "--flavor", "m1.tiny", "--image", "tiny", "--network", "l3-net", "l3-vm")
    wait_active(cloud, "l3-vm")
    fip = cloud.openstack_json("floating", "ip", "create", "public")
    address = fip["floating_ip_address"]
    assert address.startswith("172.24.4.") and fip["status"] == "DOWN"
    cloud.openstack("server", "add", "floating", "ip", "l3-vm", address)
    shown = cloud.openstack_json("server", "show", "l3-vm")
    assert address in str(shown["addresses"]) and "10.60.0." in str(shown["addresses"]), shown["addresses"]
    listed = cloud.openstack_json("floating", "ip", "show", address)
    assert listed["status"] == "ACTIVE" and listed["router_id"] == router["id"]

    # the router's interface cannot go while the floating IP needs it
    refused = cloud.openstack("router", "remove", "subnet", "l3-router", "l3-subnet", check=False)
    assert refused.returncode != 0 and "floating IP" in refused.stderr, refused.stderr

    # teardown
    cloud.openstack("server", "remove", "floating", "ip", "l3-vm", address)
    assert address not in str(cloud.openstack_json("server", "show", "l3-vm")["addresses"])
    cloud.openstack("floating", "ip", "delete", address)
    cloud.openstack("server", "delete", "--wait", "l3-vm")
    cloud.openstack("router", "remove", "subnet", "l3-router", "l3-subnet")
    cloud.openstack("router", "unset", "--external-gateway", "l3-router")
    cloud.openstack("router", "delete", "l3-router")
    assert "l3-router" not in {r["Name"] for r in cloud.openstack_json("router", "list")}
    cloud.openstack("network", "delete", "l3-net")


def test_network_quotas_and_ip_availability_with_the_cli(live_cloud: LiveCloud) -> None:
    cloud = live_cloud
    # the demo project's network quotas with their usage (its demo-router is one router in use)
    usage = cloud.openstack_json("quota", "show", "--network", "--usage")
    routers = [row for row in usage if "router" in str(row.get("Resource", "")).lower()]
    assert routers and routers[0]["Limit"] == 10 and routers[0]["In Use"] >= 1, usage
    # the admin sees the addresses of the demo network: its pool, some of it used (the router's gateway
    # address is outside the pool and counted as used)
    listed = cloud.openstack_json("ip", "availability", "list", cloud="cloudcore-admin")
    demo = next(row for row in listed if row["Network Name"] == "demo-net")
    assert demo["Total IPs"] == 253 and demo["Used IPs"] >= 1, listed
