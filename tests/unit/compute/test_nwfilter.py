"""A port's security group rules as its libvirt nwfilter (compute.virt.nwfilter)."""
from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

from compute.virt.nwfilter import filter_name, filter_uuid, filterref_xml, port_filter_xml

PORT = "0b7c5a52-3f4e-4c3e-9d7a-1f6c2a1d0e01"


def _vif(*rules: dict[str, Any], firewall: bool = True) -> dict[str, Any]:
    return {"id": PORT, "address": "fa:16:3e:00:00:01",
            "firewall": {"security_groups": ["g"], "rules": list(rules)} if firewall else None}


def _rules(vif: dict[str, Any]) -> list[tuple[str | None, str | None, str | None, str, dict[str, str]]]:
    root = ET.fromstring(port_filter_xml(vif))
    return [(r.get("action"), r.get("direction"), r.get("priority"), r[0].tag, dict(r[0].attrib))
            for r in root.findall("rule")]


def test_the_filter_is_named_after_the_port_with_a_stable_uuid() -> None:
    root = ET.fromstring(port_filter_xml(_vif()))
    assert root.get("name") == filter_name(PORT) == f"cloudcore-port-{PORT}"
    assert root.findtext("uuid") == filter_uuid(PORT) == filter_uuid(PORT)
    assert filterref_xml(_vif()) == f'<filterref filter="cloudcore-port-{PORT}"/>'
    assert filterref_xml(_vif(firewall=False)) == ""


def test_without_rules_only_dhcp_and_neighbour_discovery_pass_and_the_rest_is_dropped() -> None:
    rules = _rules(_vif())
    assert rules[0] == ("drop", "out", "-800", "mac", {"match": "no", "srcmacaddr": "fa:16:3e:00:00:01"})
    assert ("accept", "out", "100", "udp", {"srcportstart": "68", "dstportstart": "67"}) in rules
    assert ("accept", "in", "100", "udp", {"srcportstart": "67", "dstportstart": "68"}) in rules
    assert {r[4]["type"] for r in rules if r[3] == "icmpv6"} == {"133", "134", "135", "136"}
    assert rules[-2:] == [("drop", "inout", "1000", "all", {}), ("drop", "inout", "1000", "all-ipv6", {})]
    assert not [r for r in rules if r[2] == "500"]


def test_each_kind_of_rule() -> None:
    vif = _vif(
        {"direction": "egress", "ethertype": "IPv4", "protocol": None},
        {"direction": "ingress", "ethertype": "IPv4", "protocol": "tcp", "port_range_min": 22, "port_range_max": 22,
         "remote_ip_prefix": "10.0.0.0/8"},
        {"direction": "ingress", "ethertype": "IPv4", "protocol": "17", "port_range_min": 5000,
         "port_range_max": 5010},
        {"direction": "ingress", "ethertype": "IPv4", "protocol": "icmp", "port_range_min": 8, "port_range_max": 0,
         "remote_ip_prefix": "0.0.0.0/0"},
        {"direction": "egress", "ethertype": "IPv6", "protocol": "tcp", "port_range_min": 443,
         "port_range_max": 443, "remote_ip_prefix": "2001:db8::/32"},
        {"direction": "ingress", "ethertype": "IPv4", "protocol": None, "remote_group_id": "g",
         "remote_ips": ["10.0.0.5", "10.0.0.6", "2001:db8::5"]},
        {"direction": "ingress", "ethertype": "IPv4", "protocol": "gre"},
        {"direction": "ingress", "ethertype": "IPv4", "protocol": "icmp", "stateful": False},
    )
    assert [(r[1], r[3], r[4]) for r in _rules(vif) if r[2] == "500"] == [
        ("out", "all", {}),
        ("in", "tcp", {"dstportstart": "22", "dstportend": "22", "srcipaddr": "10.0.0.0", "srcipmask": "8"}),
        ("in", "udp", {"dstportstart": "5000", "dstportend": "5010"}),
        ("in", "icmp", {"type": "8", "code": "0"}),
        ("out", "tcp-ipv6", {"dstportstart": "443", "dstportend": "443", "dstipaddr": "2001:db8::",
                             "dstipmask": "32"}),
        ("in", "all", {"srcipaddr": "10.0.0.5", "srcipmask": "32"}),
        ("in", "all", {"srcipaddr": "10.0.0.6", "srcipmask": "32"}),
        ("in", "icmp", {"statematch": "false"}),
    ]


def test_a_remote_group_without_members_allows_nothing() -> None:
    vif = _vif({"direction": "ingress", "ethertype": "IPv4", "protocol": "tcp", "remote_group_id": "g",
                "remote_ips": []})
    assert [r for r in _rules(vif) if r[2] == "500"] == []
