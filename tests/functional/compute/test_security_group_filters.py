"""Security groups enforced on guests through libvirt nwfilters, on the test driver (cloudcore's own
libvirt driver keeps the filters it defines where a test can read them): each port's NIC references
its filter, the filter holds its groups' rules (a remote group expanded to its members' fixed IPs),
and rule or membership changes through the APIs redefine the filters on the hosts concerned."""
from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

import pytest

from compute.virt.libvirt import LibvirtDriver
from compute.virt.nwfilter import filter_name
from networks.models import Port
from tests.cloud import Cloud

pytestmark = pytest.mark.django_db(databases="__all__")
SG = "/network/v2.0/security-groups"
RULES = "/network/v2.0/security-group-rules"


def _port(server_id: str) -> Port:
    return Port.objects.prefetch_related("fixed_ips").get(device_id=server_id)


def _ip(server_id: str) -> str:
    return str(_port(server_id).fixed_ips.get().ip_address)


def _driver(cloud: Cloud, server_id: str) -> LibvirtDriver:
    driver: LibvirtDriver = cloud.driver(cloud.instance(server_id).host)
    return driver


def _filter(cloud: Cloud, server_id: str) -> ET.Element:
    """The server's port filter as its host defined it."""
    xml = _driver(cloud, server_id).nwfilter_xml(filter_name(_port(server_id).id))
    assert xml is not None, "no filter defined for the port"
    return ET.fromstring(xml)


def _accepts(root: ET.Element) -> set[tuple[str, str, tuple[tuple[str, str], ...]]]:
    """The filter's group rules: (direction, element, attributes) of each accept at the rules' priority."""
    return {(r.get("direction", ""), r[0].tag, tuple(sorted(r[0].attrib.items())))
            for r in root.findall("rule") if r.get("action") == "accept" and r.get("priority") == "500"}


def _group(cloud: Cloud, client: Any, name: str) -> dict[str, Any]:
    response = cloud.post(client, SG, {"security_group": {"name": name}})
    assert response.status_code == 201, response.content
    return dict(response.json()["security_group"])


def _add_rule(cloud: Cloud, client: Any, group_id: str, **rule: Any) -> str:
    response = cloud.post(client, RULES, {"security_group_rule": {"security_group_id": group_id, **rule}})
    assert response.status_code == 201, response.content
    return str(response.json()["security_group_rule"]["id"])


def test_a_port_in_the_default_group_gets_neutrons_default_filter(libvirt_cloud: Cloud) -> None:
    # given a server in its project's default group
    cloud, member = libvirt_cloud, libvirt_cloud.member()
    server = cloud.create_server(member, "sg-1", networks="demo-net")
    cloud.wait_for_status(member, server["id"], "ACTIVE")
    port = _port(server["id"])
    # then its NIC references the port's filter
    dom = ET.fromstring(_driver(cloud, server["id"])._domain(cloud.instance(server["id"])).XMLDesc(0))
    (nic,) = dom.findall("./devices/interface")
    assert nic.find("filterref").get("filter") == filter_name(port.id)  # type: ignore[union-attr]
    # and the filter: egress anywhere, ingress from the group's members (the server itself), the rest dropped
    root = _filter(cloud, server["id"])
    assert root.get("name") == filter_name(port.id) and root.get("chain") == "root"
    ip = _ip(server["id"])
    assert _accepts(root) == {("out", "all", ()), ("out", "all-ipv6", ()),
                              ("in", "all", (("srcipaddr", ip), ("srcipmask", "32")))}
    drops = [(r.get("direction"), r[0].tag) for r in root.findall("rule") if r.get("action") == "drop"]
    assert drops == [("out", "mac"), ("inout", "all"), ("inout", "all-ipv6")]
    assert root.find("rule/mac").get("srcmacaddr") == port.mac_address  # type: ignore[union-attr]


def test_a_new_member_of_the_group_is_let_in_by_the_others_and_a_deleted_one_taken_out(libvirt_cloud: Cloud) -> None:
    # given a server in the default group
    cloud, member = libvirt_cloud, libvirt_cloud.member()
    first = cloud.create_server(member, "sg-a", networks="demo-net")["id"]
    cloud.wait_for_status(member, first, "ACTIVE")
    # when a second server joins the group
    second = cloud.create_server(member, "sg-b", networks="demo-net")["id"]
    cloud.wait_for_status(member, second, "ACTIVE")
    # then the first's filter lets both members in
    members = {_ip(first), _ip(second)}
    assert {dict(a[2]).get("srcipaddr") for a in _accepts(_filter(cloud, first)) if a[0] == "in"} == members
    assert {dict(a[2]).get("srcipaddr") for a in _accepts(_filter(cloud, second)) if a[0] == "in"} == members
    # when the second is deleted
    second_ip, second_host = _ip(second), cloud.instance(second).host
    second_port = _port(second).id
    assert cloud.delete(member, f"servers/{second}").status_code == 204
    # then the first's filter lets only itself in, and the second's filter is gone from its host
    assert {dict(a[2]).get("srcipaddr") for a in _accepts(_filter(cloud, first)) if a[0] == "in"} == {_ip(first)}
    assert second_ip not in {_ip(first)}
    assert cloud.driver(second_host).nwfilter_xml(filter_name(second_port)) is None


def test_rule_create_and_delete_redefine_the_filter(libvirt_cloud: Cloud) -> None:
    # given a server in a group of its own (egress only)
    cloud, member = libvirt_cloud, libvirt_cloud.member()
    web = _group(cloud, member, "web")
    server = cloud.create_server(member, "web-1", networks="demo-net", security_groups=[{"name": "web"}])["id"]
    cloud.wait_for_status(member, server, "ACTIVE")
    assert {a[0] for a in _accepts(_filter(cloud, server))} == {"out"}
    # when rules are added: TCP 22-23 from a prefix, ICMP echo from anywhere, UDP 53 out to a host
    ssh = _add_rule(cloud, member, web["id"], direction="ingress", protocol="tcp", port_range_min=22,
                    port_range_max=23, remote_ip_prefix="192.168.7.0/24")
    _add_rule(cloud, member, web["id"], direction="ingress", protocol="icmp", port_range_min=8, port_range_max=0)
    _add_rule(cloud, member, web["id"], direction="egress", protocol="udp", port_range_min=53, port_range_max=53,
              remote_ip_prefix="10.9.9.9/32")
    # then the server's filter has them
    accepts = _accepts(_filter(cloud, server))
    assert ("in", "tcp", (("dstportend", "23"), ("dstportstart", "22"), ("srcipaddr", "192.168.7.0"),
                          ("srcipmask", "24"))) in accepts
    assert ("in", "icmp", (("code", "0"), ("type", "8"))) in accepts
    assert ("out", "udp", (("dstipaddr", "10.9.9.9"), ("dstipmask", "32"), ("dstportend", "53"),
                           ("dstportstart", "53"))) in accepts
    # when the SSH rule is deleted
    assert cloud.delete(member, f"{RULES}/{ssh}").status_code == 204
    # then it is gone from the filter, the others stay
    assert {a[1] for a in _accepts(_filter(cloud, server)) if a[0] == "in"} == {"icmp"}


def test_add_and_remove_security_group_and_a_port_update_redefine_the_filter(libvirt_cloud: Cloud) -> None:
    # given a server in the default group and a group that lets HTTP in
    cloud, member = libvirt_cloud, libvirt_cloud.member()
    http = _group(cloud, member, "http")
    _add_rule(cloud, member, http["id"], direction="ingress", protocol="tcp", port_range_min=80, port_range_max=80)
    server = cloud.create_server(member, "web-2", networks="demo-net")["id"]
    cloud.wait_for_status(member, server, "ACTIVE")
    http_rule = ("in", "tcp", (("dstportend", "80"), ("dstportstart", "80")))
    assert http_rule not in _accepts(_filter(cloud, server))
    # when the server is added to the group
    assert cloud.action(member, server, {"addSecurityGroup": {"name": "http"}}).status_code == 202
    # then its filter lets HTTP in
    assert http_rule in _accepts(_filter(cloud, server))
    # when it is removed from the group
    assert cloud.action(member, server, {"removeSecurityGroup": {"name": "http"}}).status_code == 202
    assert http_rule not in _accepts(_filter(cloud, server))
    # when the port is put in the group alone through the network API (default group gone)
    port = _port(server)
    response = cloud.put(member, f"/network/v2.0/ports/{port.id}", {"port": {"security_groups": [http["id"]]}})
    assert response.status_code == 200, response.content
    # then the filter has HTTP in and nothing from the default group
    assert {a for a in _accepts(_filter(cloud, server)) if a[0] == "in"} == {http_rule}


def test_a_port_without_port_security_is_not_filtered(libvirt_cloud: Cloud) -> None:
    # given a port without port security, brought by the user
    cloud, member = libvirt_cloud, libvirt_cloud.member()
    response = cloud.post(member, "/network/v2.0/ports", {"port": {
        "network_id": cloud.network_id, "port_security_enabled": False}})
    assert response.status_code == 201, response.content
    port_id = response.json()["port"]["id"]
    # when a server boots on it
    server = cloud.create_server(member, "open", networks=[{"port": port_id}])["id"]
    cloud.wait_for_status(member, server, "ACTIVE")
    # then its NIC has no filter and none is defined
    driver = _driver(cloud, server)
    dom = ET.fromstring(driver._domain(cloud.instance(server)).XMLDesc(0))
    assert dom.find("./devices/interface/filterref") is None
    assert driver.nwfilter_xml(filter_name(port_id)) is None


def test_the_libvirt_network_goes_with_the_last_guest_of_the_host_on_it(libvirt_cloud: Cloud) -> None:
    # given two servers on demo-net, on one host (an admin chooses it)
    cloud, member = libvirt_cloud, libvirt_cloud.admin()
    first = cloud.create_server(member, "n-1", networks="demo-net",
                                availability_zone="az1:compute1")["id"]
    second = cloud.create_server(member, "n-2", networks="demo-net", availability_zone="az1:compute1")["id"]
    for server in (first, second):
        cloud.wait_for_status(member, server, "ACTIVE")
    driver = cloud.driver("compute1")
    network = f"cloudcore-{cloud.network_id}"

    def networks() -> list[str]:
        return [n.name() for n in driver.conn.listAllNetworks()]
    assert network in networks()
    # when one is deleted, the network stays for the other
    assert cloud.delete(member, f"servers/{first}").status_code == 204
    assert network in networks()
    # when the last is deleted, the network goes
    assert cloud.delete(member, f"servers/{second}").status_code == 204
    assert network not in networks()
    assert driver.nwfilter_names() == []
