"""The compute agent's way to Neutron: ``/v2.0`` over HTTP as the service user (an admin), as
nova-compute's network API does. Ports made for a server are created in the server's project
(``project_id`` in the body, which Neutron lets admins set), owned by it (``device_id``,
``device_owner`` ``compute:<zone>``) and bound to the host (``binding:host_id``).

The functions return plain dicts (Neutron's bodies) and ``network_info`` (Nova's VIF list); they
never touch ``networks.models``.
"""
from __future__ import annotations

from typing import Any

from cloudcore.core.exceptions import Conflict, NotFound

from .session import expect, service_adapter

SERVICE = "network"


class PortNotFound(NotFound):
    message = "Port %(port_id)s could not be found."


class PortInUse(Conflict):
    message = ("Unable to complete operation on port %(port_id)s for network %(net_id)s. Port already has an "
               "attached device %(device_id)s.")


def _get(path: str, **params: Any) -> Any:
    resp = service_adapter(SERVICE).get(f"/v2.0{path}", params=params or None)
    return expect(resp, 200, service=SERVICE).json()


def _put_port(port_id: str, body: dict[str, Any]) -> dict[str, Any]:
    resp = service_adapter(SERVICE).put(f"/v2.0/ports/{port_id}", json={"port": body})
    if resp.status_code == 404:
        raise PortNotFound(port_id=port_id)
    port: dict[str, Any] = expect(resp, 200, service=SERVICE).json()["port"]
    return port


# --- networks ---------------------------------------------------------------------------------


def networks_available(*, project_id: str) -> list[dict[str, Any]]:
    """The networks a server of ``project_id`` may be put on: its own first, then shared ones
    (external networks never), each in creation order."""
    own = _get("/networks", project_id=project_id)["networks"]
    shared = [n for n in _get("/networks", shared="true")["networks"] if n["project_id"] != project_id]
    return [n for n in own + shared if not n.get("router:external")]


# --- ports of an instance -----------------------------------------------------------------------


def ports_of_instance(*, instance_uuid: str) -> list[dict[str, Any]]:
    """The ports whose ``device_id`` is the server, in creation order."""
    ports: list[dict[str, Any]] = _get("/ports", device_id=instance_uuid)["ports"]
    return ports


def port_create(*, network_id: str, project_id: str, instance_uuid: str, host: str | None, zone: str | None,
                fixed_ip: str | None = None, security_groups: list[str] | None = None) -> dict[str, Any]:
    """A port for the server on ``network_id``, in its project, bound to ``host``; ``security_groups``
    (ids) as the server asked, or Neutron's default group when None."""
    body: dict[str, Any] = {
        "network_id": network_id, "project_id": project_id, "device_id": instance_uuid,
        "device_owner": f"compute:{zone or 'nova'}", "binding:host_id": host or "",
    }
    if fixed_ip:
        body["fixed_ips"] = [{"ip_address": fixed_ip}]
    if security_groups is not None:
        body["security_groups"] = list(security_groups)
    resp = service_adapter(SERVICE).post("/v2.0/ports", json={"port": body})
    port: dict[str, Any] = expect(resp, 201, service=SERVICE).json()["port"]
    return port


def port_bind(*, port_id: str, instance_uuid: str, host: str | None, zone: str | None) -> dict[str, Any]:
    """Attach a port the user brought to the server on ``host`` (PortInUse if another device has it);
    as Nova, the port is then owned by the server's zone (``compute:<zone>``) whatever owner it had."""
    resp = service_adapter(SERVICE).get(f"/v2.0/ports/{port_id}")
    if resp.status_code == 404:
        raise PortNotFound(port_id=port_id)
    port = expect(resp, 200, service=SERVICE).json()["port"]
    if port["device_id"] and port["device_id"] != instance_uuid:
        raise PortInUse(port_id=port_id, net_id=port["network_id"], device_id=port["device_id"])
    return _put_port(port_id, {"device_id": instance_uuid, "device_owner": f"compute:{zone or 'nova'}",
                               "binding:host_id": host or ""})


def port_unbind(*, port_id: str) -> None:
    """Give a user's port back: no device, no host (a port already gone is fine)."""
    try:
        _put_port(port_id, {"device_id": "", "device_owner": "", "binding:host_id": ""})
    except PortNotFound:
        pass


def port_delete(*, port_id: str) -> None:
    resp = service_adapter(SERVICE).delete(f"/v2.0/ports/{port_id}")
    expect(resp, 204, 404, service=SERVICE)


def ports_rebind_host(*, instance_uuid: str, host: str | None) -> None:
    """Bind every port of the server to ``host`` (None: unbound, e.g. shelved offloaded)."""
    for port in ports_of_instance(instance_uuid=instance_uuid):
        if port["binding:host_id"] != (host or ""):
            _put_port(port["id"], {"binding:host_id": host or ""})


def ports_release(*, instance_uuid: str, preserve: set[str]) -> None:
    """Free the server's ports: those in ``preserve`` (the user brought them) are unbound, the ones
    made for the server are deleted."""
    for port_id in sorted(preserve):
        port_unbind(port_id=port_id)
    for port in ports_of_instance(instance_uuid=instance_uuid):
        if port["id"] not in preserve:
            port_delete(port_id=port["id"])


# --- network_info -----------------------------------------------------------------------------


def network_info(*, instance_uuid: str) -> list[dict[str, Any]]:
    """Nova's network_info for a server, from Neutron: one VIF per port with its network and fixed IPs, each
    fixed IP with the floating IPs associated with it, and the port's security group rules as its
    ``firewall`` (None when the port has no port security; see ``_Firewall``)."""
    ports = ports_of_instance(instance_uuid=instance_uuid)
    networks: dict[str, dict[str, Any]] = {}
    subnets: dict[str, dict[str, Any]] = {}
    for net_id in dict.fromkeys(p["network_id"] for p in ports):
        networks[net_id] = _get(f"/networks/{net_id}")["network"]
        subnets.update((s["id"], s) for s in _get("/subnets", network_id=net_id)["subnets"])
    out = []
    firewall = _Firewall()
    for port in ports:
        floating: dict[str, list[str]] = {}
        for fip in _get("/floatingips", port_id=port["id"])["floatingips"]:
            if fip["fixed_ip_address"]:
                floating.setdefault(fip["fixed_ip_address"], []).append(fip["floating_ip_address"])
        network = networks[port["network_id"]]
        by_subnet: dict[str, dict[str, Any]] = {}
        for fixed in port["fixed_ips"]:
            subnet = subnets.get(fixed["subnet_id"], {})
            entry = by_subnet.setdefault(fixed["subnet_id"], {"cidr": subnet.get("cidr"),
                                                              "gateway": subnet.get("gateway_ip"), "ips": []})
            entry["ips"].append({"address": fixed["ip_address"], "type": "fixed", "version": subnet.get("ip_version"),
                                 "floating_ips": [{"address": f, "type": "floating", "version": 4}
                                                  for f in floating.get(fixed["ip_address"], [])]})
        out.append({
            "id": port["id"], "address": port["mac_address"], "type": port["binding:vif_type"] or "ovs",
            "vnic_type": port["binding:vnic_type"], "active": port["status"] == "ACTIVE",
            "network": {"id": network["id"], "label": network["name"], "subnets": list(by_subnet.values()),
                        "mtu": network["mtu"]},
            "ips": [ip for s in by_subnet.values() for ip in s["ips"]],
            "firewall": firewall.port_firewall(port),
        })
    return out


class _Firewall:
    """The security groups of a server's ports as the compute host filters them (``vif["firewall"]``):
    each group and each remote group's members read once per ``network_info``."""

    def __init__(self) -> None:
        self.groups: dict[str, dict[str, Any]] = {}
        self.members: dict[str, list[str]] = {}

    def _group(self, group_id: str) -> dict[str, Any] | None:
        if group_id not in self.groups:
            resp = service_adapter(SERVICE).get(f"/v2.0/security-groups/{group_id}")
            self.groups[group_id] = {} if resp.status_code == 404 else expect(resp, 200, service=SERVICE).json()[
                "security_group"]
        return self.groups[group_id] or None

    def _member_ips(self, group_id: str) -> list[str]:
        """The fixed IPs of the ports in the group (Neutron's remote group: the port itself too)."""
        if group_id not in self.members:
            ports = _get("/ports", security_groups=group_id)["ports"]
            self.members[group_id] = sorted({f["ip_address"] for p in ports for f in p["fixed_ips"]})
        return self.members[group_id]

    def port_firewall(self, port: dict[str, Any]) -> dict[str, Any] | None:
        """``{"rules": [...]}`` for a port with port security (None without): the rules of its groups,
        each with ``stateful`` (its group's) and, for a rule naming a remote group, ``remote_ips``
        (that group's members' fixed IPs)."""
        if not port.get("port_security_enabled", True):
            return None
        rules = []
        for group_id in port.get("security_groups") or []:
            group = self._group(group_id)
            for rule in (group or {}).get("security_group_rules") or []:
                entry = {k: rule.get(k) for k in ("id", "direction", "ethertype", "protocol", "port_range_min",
                                                  "port_range_max", "remote_ip_prefix", "remote_group_id")}
                entry["stateful"] = bool((group or {}).get("stateful", True))
                if rule.get("remote_group_id"):
                    entry["remote_ips"] = self._member_ips(str(rule["remote_group_id"]))
                rules.append(entry)
        return {"security_groups": list(port.get("security_groups") or []), "rules": rules}


# --- extended bindings (moves) -----------------------------------------------------------------


def port_bindings(*, port_id: str) -> list[dict[str, Any]]:
    bindings: list[dict[str, Any]] = _get(f"/ports/{port_id}/bindings")["bindings"]
    return bindings


def port_binding_create(*, port_id: str, host: str, vnic_type: str = "normal",
                        profile: dict[str, Any] | None = None) -> dict[str, Any]:
    """An inactive binding of the (bound) port on ``host``."""
    resp = service_adapter(SERVICE).post(f"/v2.0/ports/{port_id}/bindings", json={
        "binding": {"host": host, "vnic_type": vnic_type, **({"profile": profile} if profile else {})}})
    binding: dict[str, Any] = expect(resp, 201, service=SERVICE).json()["binding"]
    return binding


def port_binding_activate(*, port_id: str, host: str) -> None:
    """Make ``host``'s binding the port's active one (already active is fine)."""
    resp = service_adapter(SERVICE).put(f"/v2.0/ports/{port_id}/bindings/{host}/activate")
    expect(resp, 200, 409, service=SERVICE)


def port_binding_delete(*, port_id: str, host: str) -> None:
    """Drop ``host``'s binding of the port (none is fine)."""
    resp = service_adapter(SERVICE).delete(f"/v2.0/ports/{port_id}/bindings/{host}")
    expect(resp, 204, 404, service=SERVICE)
