"""A port's security groups as a libvirt ``nwfilter`` (the mechanism Nova's libvirt driver used
before Neutron's agents took filtering over).

Each port with port security gets one filter of its own, ``cloudcore-port-<port id>``, that its NIC
references with ``<filterref>``. The filter is self-contained (it needs none of libvirt's shipped
filters, so the test driver's model and a bare daemon read the same XML):

- the port's security group rules, accepted: ingress rules as ``direction='in'`` (towards the
  guest, the remote is the source address), egress rules as ``direction='out'`` (the remote is the
  destination); TCP/UDP/SCTP/UDP-Lite port ranges as destination ports, ICMP type and code,
  ``remote_ip_prefix`` as an address and mask, ``remote_group_id`` already expanded by the caller to
  the fixed IPs of that group's ports (one rule each; a group with no member allows nothing);
  rules of stateless groups with ``statematch='false'`` (libvirt's rules are stateful otherwise:
  replies to an accepted connection pass);
- what a guest needs whatever its groups say: DHCP as a client and IPv6 neighbour discovery
  (ARP is layer 2 and never dropped);
- no frame from the guest with another MAC than the port's;
- everything else over IPv4 and IPv6 dropped, in both directions (Neutron: what no rule allows is
  denied).

A protocol libvirt's filters cannot name (GRE, VRRP, ...) has no rule here: its traffic stays denied.
The port's ``firewall`` entry of ``network_info`` (``compute.clients.networks``) is the input.
"""
from __future__ import annotations

import ipaddress
import uuid
from typing import Any
from xml.sax.saxutils import quoteattr

PREFIX = "cloudcore-port-"
_NAMESPACE = uuid.UUID("6f1c2b1e-4d0a-4f57-9a43-6c6f7564636f")

#: nwfilter's protocol elements for (ethertype, IP protocol number); None: every protocol.
_ELEMENTS: dict[tuple[str, int | None], str] = {
    ("IPv4", None): "all", ("IPv4", 1): "icmp", ("IPv4", 2): "igmp", ("IPv4", 6): "tcp", ("IPv4", 17): "udp",
    ("IPv4", 50): "esp", ("IPv4", 51): "ah", ("IPv4", 132): "sctp", ("IPv4", 136): "udplite",
    ("IPv6", None): "all-ipv6", ("IPv6", 58): "icmpv6", ("IPv6", 6): "tcp-ipv6", ("IPv6", 17): "udp-ipv6",
    ("IPv6", 50): "esp-ipv6", ("IPv6", 51): "ah-ipv6", ("IPv6", 132): "sctp-ipv6", ("IPv6", 136): "udplite-ipv6",
}
_NUMBERS = {"icmp": 1, "igmp": 2, "tcp": 6, "udp": 17, "esp": 50, "ah": 51, "icmpv6": 58, "ipv6-icmp": 58,
            "sctp": 132, "udplite": 136}
_PORT_PROTOCOLS = {6, 17, 132, 136}
_ICMP_PROTOCOLS = {1, 58}
#: priorities (lower first): the anti-spoofing drop, the always-allowed, the rules, the final drops
_SPOOF, _BASE, _RULE, _DROP = -800, 100, 500, 1000


def filter_name(port_id: str) -> str:
    """The nwfilter of a port."""
    return f"{PREFIX}{port_id}"


def filter_uuid(port_id: str) -> str:
    """A filter's UUID, the same at every definition (libvirt refuses to redefine a filter under its
    name with another UUID)."""
    return str(uuid.uuid5(_NAMESPACE, filter_name(port_id)))


def has_filter(vif: dict[str, Any]) -> bool:
    """Whether the port is filtered: port security on (``network_info`` then carries ``firewall``)."""
    return vif.get("firewall") is not None


def _number(protocol: Any) -> int | None:
    if protocol in (None, "", "any"):
        return None
    text = str(protocol).lower()
    return int(text) if text.isdigit() else _NUMBERS.get(text, -1)


def _remotes(rule: dict[str, Any]) -> list[str | None]:
    """The remote addresses (``addr/len``) one rule becomes; ``[None]``: anywhere; ``[]``: none."""
    if rule.get("remote_ips") is not None:
        return [str(ipaddress.ip_network(ip, strict=False)) for ip in rule["remote_ips"]
                if ipaddress.ip_address(ip).version == (6 if rule["ethertype"] == "IPv6" else 4)]
    prefix = rule.get("remote_ip_prefix")
    if prefix and ipaddress.ip_network(prefix, strict=False).prefixlen:
        return [str(ipaddress.ip_network(prefix, strict=False))]
    return [None]


def _rule_xml(rule: dict[str, Any]) -> list[str]:
    number = _number(rule.get("protocol"))
    element = _ELEMENTS.get((str(rule.get("ethertype") or "IPv4"), number))
    if element is None:
        return []
    direction = "in" if rule["direction"] == "ingress" else "out"
    side = "src" if direction == "in" else "dst"
    low, high = rule.get("port_range_min"), rule.get("port_range_max")
    match: dict[str, Any] = {}
    if number in _PORT_PROTOCOLS and low is not None:
        match.update(dstportstart=low, dstportend=high if high is not None else low)
    elif number in _ICMP_PROTOCOLS and low is not None:
        match["type"] = low
        if high is not None:
            match["code"] = high
    if rule.get("stateful") is False:
        match["statematch"] = "false"
    out = []
    for remote in _remotes(rule):
        attributes = dict(match)
        if remote is not None:
            address, length = remote.split("/")
            attributes.update({f"{side}ipaddr": address, f"{side}ipmask": length})
        attrs = "".join(f" {k}={quoteattr(str(v))}" for k, v in attributes.items())
        out.append(f"<rule action='accept' direction='{direction}' priority='{_RULE}'><{element}{attrs}/></rule>")
    return out


def _base_xml(mac: str) -> list[str]:
    rules = [f"<rule action='drop' direction='out' priority='{_SPOOF}'>"
             f"<mac match='no' srcmacaddr={quoteattr(mac)}/></rule>",
             f"<rule action='accept' direction='out' priority='{_BASE}'>"
             "<udp srcportstart='68' dstportstart='67'/></rule>",
             f"<rule action='accept' direction='in' priority='{_BASE}'>"
             "<udp srcportstart='67' dstportstart='68'/></rule>"]
    rules += [f"<rule action='accept' direction='inout' priority='{_BASE}'><icmpv6 type='{t}'/></rule>"
              for t in (133, 134, 135, 136)]
    return rules


def port_filter_xml(vif: dict[str, Any]) -> str:
    """The nwfilter XML of a port (``vif`` from ``network_info`` with its ``firewall``)."""
    rules = _base_xml(str(vif["address"]))
    for rule in (vif.get("firewall") or {}).get("rules") or []:
        rules += _rule_xml(rule)
    rules += [f"<rule action='drop' direction='inout' priority='{_DROP}'><all/></rule>",
              f"<rule action='drop' direction='inout' priority='{_DROP}'><all-ipv6/></rule>"]
    port_id = str(vif["id"])
    return (f"<filter name={quoteattr(filter_name(port_id))} chain='root'><uuid>{filter_uuid(port_id)}</uuid>"
            + "".join(rules) + "</filter>")


def filterref_xml(vif: dict[str, Any]) -> str:
    """The ``<filterref>`` of the port's NIC, or nothing for a port without port security."""
    return f"<filterref filter={quoteattr(filter_name(str(vif['id'])))}/>" if has_filter(vif) else ""
