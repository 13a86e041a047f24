"""A server's floating IP: associated with its port through the project's router, listed by ``server show``
under ``addresses`` with ``OS-EXT-IPS:type`` ``floating``, and disassociated when the server goes."""
from __future__ import annotations

import pytest

from networks.models import FloatingIP, Port

ALL = ["default", "cell0", "cell1", "cell2"]
pytestmark = pytest.mark.django_db(databases=ALL)
NET = "/network/v2.0"


def test_server_show_lists_its_floating_ip(cloud):
    client, admin = cloud.member(), cloud.admin()
    # given an external network and a router of the member's project with the demo subnet attached
    ext = admin.post(f"{NET}/networks", {"network": {"name": "public", "router:external": True}}, format="json")
    ext_id = ext.json()["network"]["id"]
    admin.post(f"{NET}/subnets", {"subnet": {"network_id": ext_id, "cidr": "172.24.4.0/24", "ip_version": 4}},
               format="json")
    router = client.post(f"{NET}/routers", {"router": {"name": "r", "external_gateway_info": {"network_id": ext_id}}},
                         format="json").json()["router"]
    assert client.put(f"{NET}/routers/{router['id']}/add_router_interface", {"subnet_id": cloud.subnet_id},
                      format="json").status_code == 200
    # and a server on the demo network
    server = cloud.create_server(client, "vm", networks="auto", version="2.37")["id"]
    cloud.wait_for_status(client, server, "ACTIVE")
    port = client.get(f"{NET}/ports", {"device_id": server}).json()["ports"][0]
    # when a floating IP is allocated and associated with the server's port
    fip = client.post(f"{NET}/floatingips", {"floatingip": {"floating_network_id": ext_id}},
                      format="json").json()["floatingip"]
    associated = client.put(f"{NET}/floatingips/{fip['id']}", {"floatingip": {"port_id": port["id"]}}, format="json")
    assert associated.status_code == 200, associated.content
    # then server show lists it after the fixed address, with the port's MAC
    addresses = cloud.show(client, server)["addresses"]["demo-net"]
    assert [(a["addr"], a["OS-EXT-IPS:type"], a["version"]) for a in addresses] == [
        (port["fixed_ips"][0]["ip_address"], "fixed", 4), (fip["floating_ip_address"], "floating", 4)]
    assert {a["OS-EXT-IPS-MAC:mac_addr"] for a in addresses} == {port["mac_address"]}
    # and the server's ips API too
    ips = cloud.get(client, f"servers/{server}/ips").json()["addresses"]["demo-net"]
    assert [a["addr"] for a in ips] == [port["fixed_ips"][0]["ip_address"], fip["floating_ip_address"]]
    # when the server is deleted its port goes and the floating IP is left DOWN, unassociated
    assert cloud.delete(client, f"servers/{server}").status_code == 204
    assert not Port.objects.filter(id=port["id"]).exists()
    left = FloatingIP.objects.get(id=fip["id"])
    assert (left.port_id, left.fixed_ip_address, left.router_id, left.status) == (None, None, None, "DOWN")
