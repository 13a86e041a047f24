"""``/servers/{id}/ips`` on the in-process cloud: the addresses by network, Nova's basic view."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])


def test_ips_lists_the_servers_addresses_by_network(cloud):
    # given a server on a network
    client = cloud.member()
    server = cloud.create_server(client, "ips1")
    shown = cloud.wait_for_status(client, server["id"], "ACTIVE")
    assert shown["addresses"], shown
    label, entries = next(iter(shown["addresses"].items()))
    basic = [{"version": e["version"], "addr": e["addr"]} for e in entries]
    # when its addresses are listed, and those of one network
    listed = cloud.get(client, f"servers/{server['id']}/ips")
    one = cloud.get(client, f"servers/{server['id']}/ips/{label}")
    # then they are the server body's addresses without the extended attributes
    assert listed.status_code == 200 and listed.json() == {"addresses": {label: basic}}
    assert one.status_code == 200 and one.json() == {label: basic}
    # and an unknown network, an unknown server and another project's server are 404
    missing = cloud.get(client, f"servers/{server['id']}/ips/no-such-net")
    assert missing.status_code == 404
    assert missing.json()["itemNotFound"]["message"] == "Instance is not a member of specified network"
    assert cloud.get(client, "servers/00000000-0000-0000-0000-000000000000/ips").status_code == 404
    other = cloud.member(name="eve", project="other")
    assert cloud.get(other, f"servers/{server['id']}/ips").status_code == 404


def test_access_ipv6_reads_back_in_compact_form(cloud):
    # given a server created with an expanded IPv6 access address (Tempest sends this form)
    client = cloud.member()
    server = cloud.create_server(client, "ip6", accessIPv6="0000:0000:0000:0000:0000:babe:220.12.22.2",
                                 accessIPv4="1.1.1.1")
    # then it reads back as Nova shows it
    shown = cloud.wait_for_status(client, server["id"], "ACTIVE")
    assert shown["accessIPv6"] == "::babe:dc0c:1602" and shown["accessIPv4"] == "1.1.1.1"
