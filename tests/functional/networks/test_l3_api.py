"""Neutron's L3 through HTTP: external networks, routers with a gateway and interfaces, extra routes,
floating IPs associated through a router, their policy, and the server's addresses that show them."""
from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from networks import services
from networks.models import FloatingIP
from tests.apihelpers import admin_client, auth_client, make_identity

pytestmark = pytest.mark.django_db

NET = "/network/v2.0"
ROUTERS = f"{NET}/routers"
FIPS = f"{NET}/floatingips"


def member(name: str = "alice", project: str = "demo") -> APIClient:
    user, proj = make_identity(name, project=project, roles=["member"])
    return auth_client(user, proj)


def created(response: Any, key: str) -> dict[str, Any]:
    assert response.status_code == 201, response.content
    return response.json()[key]


def error(response: Any) -> tuple[int, str, str]:
    body = response.json()["NeutronError"]
    return response.status_code, body["type"], body["message"]


def make_net(client: APIClient, name: str, cidr: str, **extra: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    net = created(client.post(f"{NET}/networks", {"network": {"name": name, **extra}}, format="json"), "network")
    sub = created(client.post(f"{NET}/subnets", {"subnet": {"network_id": net["id"], "cidr": cidr, "ip_version": 4}},
                              format="json"), "subnet")
    return net, sub


def public() -> tuple[dict[str, Any], dict[str, Any]]:
    return make_net(admin_client(), "public", "172.24.4.0/24", **{"router:external": True})


def add_interface(client: APIClient, router_id: str, **body: Any) -> Any:
    return client.put(f"{ROUTERS}/{router_id}/add_router_interface", body, format="json")


def remove_interface(client: APIClient, router_id: str, **body: Any) -> Any:
    return client.put(f"{ROUTERS}/{router_id}/remove_router_interface", body, format="json")


def routed_port(client: APIClient) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The external network ``public``, ``client``'s router with its gateway there and an interface on
    its network ``private``, and a port on ``private`` (one a floating IP can be associated with)."""
    ext, _ = public()
    net, sub = make_net(client, "private", "10.1.0.0/24")
    router = created(client.post(ROUTERS, {"router": {"name": "r", "external_gateway_info": {
        "network_id": ext["id"]}}}, format="json"), "router")
    add_interface(client, router["id"], subnet_id=sub["id"])
    port = created(client.post(f"{NET}/ports", {"port": {"network_id": net["id"]}}, format="json"), "port")
    return ext, router, port


def test_external_networks_are_admins_to_make_and_visible_to_every_project() -> None:
    client = member()
    # given a member: it may not make an external network, nor turn its own into one
    refused = client.post(f"{NET}/networks", {"network": {"name": "x", "router:external": True}}, format="json")
    assert refused.status_code == 403
    own, _ = make_net(client, "mine", "10.1.0.0/24")
    assert client.put(f"{NET}/networks/{own['id']}", {"network": {"router:external": True}},
                      format="json").status_code == 403
    # when an admin makes one
    ext, ext_sub = public()
    assert ext["router:external"] is True and ext["shared"] is False
    # then every project sees it (not its subnets: Neutron's rule, Tempest checks it) and finds it
    # by the router:external filter
    assert client.get(f"{NET}/networks/{ext['id']}").status_code == 200
    assert client.get(f"{NET}/subnets/{ext_sub['id']}").status_code == 404
    assert client.get(f"{NET}/subnets", {"network_id": ext["id"]}).json()["subnets"] == []
    listed = client.get(f"{NET}/networks", {"router:external": "true"}).json()["networks"]
    assert [n["id"] for n in listed] == [ext["id"]]
    # but makes no port on it
    assert client.post(f"{NET}/ports", {"port": {"network_id": ext["id"]}}, format="json").status_code == 404
    # and the admin can turn the flag off again
    off = admin_client().put(f"{NET}/networks/{ext['id']}", {"network": {"router:external": False}}, format="json")
    assert off.status_code == 200 and off.json()["network"]["router:external"] is False
    assert client.get(f"{NET}/networks/{ext['id']}").status_code == 404


def test_router_crud_gateway_bodies_filters_and_policy() -> None:
    client = member()
    ext, ext_sub = public()
    internal, _ = make_net(client, "private", "10.1.0.0/24")
    # a router without gateway
    router = created(client.post(ROUTERS, {"router": {"name": "r1", "description": "d"}}, format="json"), "router")
    assert router["external_gateway_info"] is None and router["routes"] == []
    assert (router["status"], router["admin_state_up"], router["name"]) == ("ACTIVE", True, "r1")
    assert router["project_id"] == router["tenant_id"] and router["created_at"].endswith("Z")
    # a gateway on an internal network is refused, on the external one it gets an address of its subnet
    bad = client.put(f"{ROUTERS}/{router['id']}", {"router": {"external_gateway_info": {"network_id": internal["id"]}}},
                     format="json")
    assert error(bad) == (400, "HTTPBadRequest",
                          f"Bad router request: Network {internal['id']} is not a valid external network.")
    updated = client.put(f"{ROUTERS}/{router['id']}", {"router": {"external_gateway_info": {"network_id": ext["id"]}}},
                         format="json")
    assert updated.status_code == 200, updated.content
    gateway = updated.json()["router"]["external_gateway_info"]
    assert gateway == {"network_id": ext["id"], "enable_snat": True,
                       "external_fixed_ips": [{"subnet_id": ext_sub["id"], "ip_address": "172.24.4.2"}]}
    # enable_snat and external_fixed_ips are the admin's
    snat = client.put(f"{ROUTERS}/{router['id']}", {"router": {"external_gateway_info": {
        "network_id": ext["id"], "enable_snat": False}}}, format="json")
    assert snat.status_code == 403
    admin_set = admin_client().put(f"{ROUTERS}/{router['id']}", {"router": {"external_gateway_info": {
        "network_id": ext["id"], "enable_snat": False}}}, format="json")
    assert admin_set.json()["router"]["external_gateway_info"]["enable_snat"] is False
    # the gateway port is nobody's to delete through the port API
    gw_port = services.Port.objects.get(device_id=router["id"], device_owner="network:router_gateway")
    deleted = admin_client().delete(f"{NET}/ports/{gw_port.id}")
    assert error(deleted)[:2] == (409, "ServicePortInUse")
    # filters and fields=
    created(client.post(ROUTERS, {"router": {"name": "r2"}}, format="json"), "router")
    assert [r["name"] for r in client.get(ROUTERS, {"name": "r1"}).json()["routers"]] == ["r1"]
    only = client.get(f"{ROUTERS}?fields=id&fields=name").json()["routers"]
    assert sorted(r["name"] for r in only) == ["r1", "r2"] and all(set(r) == {"id", "name"} for r in only)
    # another project neither lists nor sees it
    other = member("bob", "demo2")
    assert other.get(ROUTERS).json()["routers"] == []
    assert error(other.get(f"{ROUTERS}/{router['id']}")) == (404, "RouterNotFound",
                                                            f"Router {router['id']} could not be found")
    assert other.delete(f"{ROUTERS}/{router['id']}").status_code == 404
    # clearing the gateway frees its port; delete answers 204
    cleared = client.put(f"{ROUTERS}/{router['id']}", {"router": {"external_gateway_info": {}}}, format="json")
    assert cleared.json()["router"]["external_gateway_info"] is None
    assert not services.Port.objects.filter(id=gw_port.id).exists()
    assert client.delete(f"{ROUTERS}/{router['id']}").status_code == 204
    assert client.get(f"{ROUTERS}/{router['id']}").status_code == 404


def test_interfaces_by_subnet_and_by_port() -> None:
    client = member()
    net, sub = make_net(client, "private", "10.1.0.0/24")
    net2, sub2 = make_net(client, "private2", "10.2.0.0/24")
    router = created(client.post(ROUTERS, {"router": {"name": "r"}}, format="json"), "router")
    # neither or both is a 400
    assert error(add_interface(client, router["id"]))[0] == 400
    assert error(add_interface(client, router["id"], subnet_id=sub["id"], port_id="x"))[0] == 400
    # by subnet: a port of the router's project holding the subnet's gateway address
    info = add_interface(client, router["id"], subnet_id=sub["id"])
    assert info.status_code == 200, info.content
    body = info.json()
    assert (body["id"], body["subnet_id"], body["subnet_ids"], body["network_id"]) == (
        router["id"], sub["id"], [sub["id"]], net["id"])
    port = client.get(f"{NET}/ports/{body['port_id']}").json()["port"]
    assert (port["device_owner"], port["device_id"], port["fixed_ips"]) == (
        "network:router_interface", router["id"], [{"subnet_id": sub["id"], "ip_address": "10.1.0.1"}])
    assert port["security_groups"] == []
    # the same subnet again is refused
    again = add_interface(client, router["id"], subnet_id=sub["id"])
    assert error(again) == (400, "HTTPBadRequest", f"Bad router request: Router already has a port on subnet "
                                                   f"{sub['id']}.")
    # by port: the user's port is taken over
    user_port = created(client.post(f"{NET}/ports", {"port": {"network_id": net2["id"]}}, format="json"), "port")
    by_port = add_interface(client, router["id"], port_id=user_port["id"])
    assert by_port.status_code == 200 and by_port.json()["subnet_ids"] == [sub2["id"]]
    # `port list --router` lists both
    listed = client.get(f"{NET}/ports", {"device_id": router["id"]}).json()["ports"]
    assert sorted(p["id"] for p in listed) == sorted([body["port_id"], user_port["id"]])
    # a router with interfaces cannot go, nor its interface ports through the port API
    assert error(client.delete(f"{ROUTERS}/{router['id']}")) == (409, "RouterInUse",
                                                                f"Router {router['id']} still has ports")
    assert client.delete(f"{NET}/ports/{body['port_id']}").status_code == 409
    # removing: an unknown subnet is a 404, by subnet and by port delete the ports
    missing = remove_interface(client, router["id"], subnet_id="nope")
    assert error(missing) == (404, "RouterInterfaceNotFoundForSubnet",
                              f"Router {router['id']} has no interface on subnet nope")
    assert remove_interface(client, router["id"], subnet_id=sub["id"]).json()["port_id"] == body["port_id"]
    assert remove_interface(client, router["id"], port_id=user_port["id"]).status_code == 200
    assert client.get(f"{NET}/ports", {"device_id": router["id"]}).json()["ports"] == []
    assert client.delete(f"{ROUTERS}/{router['id']}").status_code == 204


def test_extra_routes_need_a_connected_nexthop() -> None:
    client = member()
    _, sub = make_net(client, "private", "10.1.0.0/24")
    router = created(client.post(ROUTERS, {"router": {"name": "r"}}, format="json"), "router")
    route = {"destination": "192.168.50.0/24", "nexthop": "10.1.0.20"}
    refused = client.put(f"{ROUTERS}/{router['id']}", {"router": {"routes": [route]}}, format="json")
    assert error(refused)[:2] == (400, "InvalidRoutes") and "not connected with router" in error(refused)[2]
    add_interface(client, router["id"], subnet_id=sub["id"])
    ok = client.put(f"{ROUTERS}/{router['id']}", {"router": {"routes": [route]}}, format="json")
    assert ok.status_code == 200 and ok.json()["router"]["routes"] == [route]
    # the interface the route needs stays
    assert error(remove_interface(client, router["id"], subnet_id=sub["id"]))[:2] == (409,
                                                                                      "RouterInterfaceInUseByRoute")


def test_floating_ip_lifecycle_through_a_router() -> None:
    client = member()
    ext, ext_sub = public()
    net, sub = make_net(client, "private", "10.1.0.0/24")
    port = created(client.post(f"{NET}/ports", {"port": {"network_id": net["id"], "device_id": "server-1",
                                                          "device_owner": "compute:nova"}}, format="json"), "port")
    # a floating IP on an internal network is refused
    bad = client.post(FIPS, {"floatingip": {"floating_network_id": net["id"]}}, format="json")
    assert error(bad)[0] == 400
    # allocated from the external network, DOWN, unassociated
    fip = created(client.post(FIPS, {"floatingip": {"floating_network_id": ext["id"], "description": "web"}},
                              format="json"), "floatingip")
    assert (fip["floating_network_id"], fip["status"], fip["port_id"], fip["router_id"], fip["description"]) == (
        ext["id"], "DOWN", None, None, "web")
    assert fip["floating_ip_address"] == "172.24.4.2" and fip["project_id"] == port["project_id"]
    # a given address is the admin's
    assert client.post(FIPS, {"floatingip": {"floating_network_id": ext["id"],
                                             "floating_ip_address": "172.24.4.50"}}, format="json").status_code == 403
    # no router reaches the port's subnet yet: Neutron's 404
    associate = client.put(f"{FIPS}/{fip['id']}", {"floatingip": {"port_id": port["id"]}}, format="json")
    assert error(associate) == (404, "ExternalGatewayForFloatingIPNotFound", (
        f"External network {ext['id']} is not reachable from subnet {sub['id']}.  Therefore, cannot associate "
        f"Port {port['id']} with a Floating IP."))
    # with a router whose gateway is on the external network and the subnet attached, it associates
    router = created(client.post(ROUTERS, {"router": {"name": "r", "external_gateway_info": {
        "network_id": ext["id"]}}}, format="json"), "router")
    add_interface(client, router["id"], subnet_id=sub["id"])
    associated = client.put(f"{FIPS}/{fip['id']}", {"floatingip": {"port_id": port["id"]}}, format="json")
    assert associated.status_code == 200, associated.content
    shown = associated.json()["floatingip"]
    assert (shown["port_id"], shown["fixed_ip_address"], shown["router_id"], shown["status"]) == (
        port["id"], port["fixed_ips"][0]["ip_address"], router["id"], "ACTIVE")
    assert [f["id"] for f in client.get(FIPS, {"port_id": port["id"]}).json()["floatingips"]] == [fip["id"]]
    # the server's addresses list it after the fixed IP
    addresses = services.addresses_for_instance("server-1")["private"]
    assert [(a["addr"], a["OS-EXT-IPS:type"]) for a in addresses] == [
        (port["fixed_ips"][0]["ip_address"], "fixed"), (fip["floating_ip_address"], "floating")]
    assert services.network_info("server-1")[0]["ips"][0]["floating_ips"] == [
        {"address": fip["floating_ip_address"], "type": "floating", "version": 4}]
    # the interface and the gateway it goes through cannot go
    assert error(remove_interface(client, router["id"], subnet_id=sub["id"]))[:2] == (
        409, "RouterInterfaceInUseByFloatingIP")
    assert error(client.put(f"{ROUTERS}/{router['id']}", {"router": {"external_gateway_info": None}},
                            format="json"))[:2] == (409, "RouterExternalGatewayInUseByFloatingIp")
    # another project sees none of it
    other = member("bob", "demo2")
    assert other.get(FIPS).json()["floatingips"] == []
    assert error(other.get(f"{FIPS}/{fip['id']}")) == (404, "FloatingIPNotFound",
                                                      f"Floating IP {fip['id']} could not be found")
    # disassociate, associate again, then deleting the port disassociates
    down = client.put(f"{FIPS}/{fip['id']}", {"floatingip": {"port_id": None}}, format="json").json()["floatingip"]
    assert (down["port_id"], down["fixed_ip_address"], down["router_id"], down["status"]) == (None, None, None, "DOWN")
    client.put(f"{FIPS}/{fip['id']}", {"floatingip": {"port_id": port["id"]}}, format="json")
    assert client.delete(f"{NET}/ports/{port['id']}").status_code == 204
    after = client.get(f"{FIPS}/{fip['id']}").json()["floatingip"]
    assert (after["port_id"], after["router_id"], after["status"]) == (None, None, "DOWN")
    # release: the address and its port go
    assert client.delete(f"{FIPS}/{fip['id']}").status_code == 204
    assert not FloatingIP.objects.exists()
    assert not services.Port.objects.filter(device_owner="network:floatingip").exists()


def test_floating_ip_created_with_a_port_and_extensions_listed() -> None:
    client = member()
    ext, router, port = routed_port(client)
    fip = created(client.post(FIPS, {"floatingip": {"floating_network_id": ext["id"], "port_id": port["id"]}},
                              format="json"), "floatingip")
    assert (fip["status"], fip["router_id"]) == ("ACTIVE", router["id"])
    # one floating IP per fixed IP and external network
    second = client.post(FIPS, {"floatingip": {"floating_network_id": ext["id"], "port_id": port["id"]}},
                         format="json")
    assert error(second)[:2] == (409, "FloatingIPPortAlreadyAssociated")
    aliases = {e["alias"] for e in client.get(f"{NET}/extensions").json()["extensions"]}
    assert {"router", "external-net", "extraroute", "ext-gw-mode"} <= aliases


def test_deleting_an_external_network_releases_its_unassociated_floating_ips() -> None:
    client = member()
    ext, ext_sub = public()
    # given an admin's and a member's floating IP on the external network, neither associated
    admins = created(admin_client().post(FIPS, {"floatingip": {"floating_network_id": ext["id"]}}, format="json"),
                     "floatingip")
    members = created(client.post(FIPS, {"floatingip": {"floating_network_id": ext["id"]}}, format="json"),
                      "floatingip")
    # when the admin deletes the network
    assert admin_client().delete(f"{NET}/networks/{ext['id']}").status_code == 204
    # then both floating IPs, their ports and the subnet went with it
    listed = {f["id"] for f in admin_client().get(FIPS).json()["floatingips"]}
    assert admins["id"] not in listed and members["id"] not in listed
    assert not services.Port.objects.filter(network_id=ext["id"]).exists()
    assert admin_client().get(f"{NET}/subnets/{ext_sub['id']}").status_code == 404


def test_an_external_network_a_router_or_an_associated_floating_ip_uses_is_kept_whole() -> None:
    client = member()
    ext, _router, port = routed_port(client)
    associated = created(client.post(FIPS, {"floatingip": {"floating_network_id": ext["id"], "port_id": port["id"]}},
                                      format="json"), "floatingip")
    spare = created(client.post(FIPS, {"floatingip": {"floating_network_id": ext["id"]}}, format="json"),
                    "floatingip")
    # when the admin deletes the network the router's gateway and an associated floating IP are on
    refused = admin_client().delete(f"{NET}/networks/{ext['id']}")
    # then Neutron's 409, and nothing was released: not even the unassociated floating IP
    assert error(refused) == (409, "Conflict", f"Unable to complete operation on network {ext['id']}. There are one "
                                               "or more ports still in use on the network.")
    listed = {f["id"] for f in client.get(FIPS).json()["floatingips"]}
    assert {associated["id"], spare["id"]} <= listed
