"""Neutron v2.0 subset through HTTP and the compute service's port calls."""
from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from cloudcore.core.context import RequestContext
from networks import services
from tests.apihelpers import admin_client, auth_client, make_identity

pytestmark = pytest.mark.django_db


def member(name: str = "alice", project: str = "demo") -> APIClient:
    user, proj = make_identity(name, project=project, roles=["member"])
    return auth_client(user, proj)


def make_net(client: APIClient, name: str = "net1", cidr: str = "192.168.10.0/29") -> tuple[dict, dict]:
    net = client.post("/network/v2.0/networks", {"network": {"name": name}}, format="json")
    assert net.status_code == 201, net.content
    sub = client.post("/network/v2.0/subnets", {"subnet": {"network_id": net.json()["network"]["id"], "cidr": cidr,
                                                          "ip_version": 4}}, format="json")
    assert sub.status_code == 201, sub.content
    return net.json()["network"], sub.json()["subnet"]


def test_versions_and_extensions() -> None:
    assert APIClient().get("/network/").json()["versions"][0]["id"] == "v2.0"
    listed = member().get("/network/v2.0/extensions").json()["extensions"]
    assert "binding-extended" in [e["alias"] for e in listed]
    # each one listed is shown by its alias, the same body
    for extension in listed:
        assert member().get(f"/network/v2.0/extensions/{extension['alias']}").json() == {"extension": extension}
    missing = member().get("/network/v2.0/extensions/dvr")
    assert missing.status_code == 404 and missing.json()["NeutronError"]["type"] == "HTTPNotFound"


def test_ports_get_lowest_free_ip_never_gateway_until_exhausted() -> None:
    client = member()
    net, sub = make_net(client)
    assert sub["gateway_ip"] == "192.168.10.1" and sub["allocation_pools"] == [
        {"start": "192.168.10.2", "end": "192.168.10.6"}]
    ips = []
    for _ in range(5):
        port = client.post("/network/v2.0/ports", {"port": {"network_id": net["id"]}}, format="json")
        assert port.status_code == 201
        ips.append(port.json()["port"]["fixed_ips"][0]["ip_address"])
        assert port.json()["port"]["mac_address"].startswith("fa:16:3e:")
    assert ips == [f"192.168.10.{n}" for n in range(2, 7)]
    full = client.post("/network/v2.0/ports", {"port": {"network_id": net["id"]}}, format="json")
    assert full.status_code == 409 and full.json()["NeutronError"]["type"] == "Conflict"


def test_an_ipv6_64_subnet_has_its_pool_and_gives_ports_addresses() -> None:
    # a /64 is 2**64 addresses: its pool is worked out from its bounds, and a port's address is the
    # lowest free one of it (the allocation walked every address of the subnet and never ended)
    client = member()
    net = client.post("/network/v2.0/networks", {"network": {"name": "v6"}}, format="json").json()["network"]
    sub = client.post("/network/v2.0/subnets", {"subnet": {"network_id": net["id"], "cidr": "2001:db8:1:2::/64",
                                                           "ip_version": 6}}, format="json")
    assert sub.status_code == 201, sub.content
    assert sub.json()["subnet"]["gateway_ip"] == "2001:db8:1:2::1"
    assert sub.json()["subnet"]["allocation_pools"] == [
        {"start": "2001:db8:1:2::2", "end": "2001:db8:1:2:ffff:ffff:ffff:ffff"}]
    ips = []
    for _ in range(3):
        port = client.post("/network/v2.0/ports", {"port": {"network_id": net["id"]}}, format="json")
        assert port.status_code == 201, port.content
        ips.append(port.json()["port"]["fixed_ips"][0]["ip_address"])
    assert ips == ["2001:db8:1:2::2", "2001:db8:1:2::3", "2001:db8:1:2::4"]


def test_default_pools_of_small_subnets_as_neutron() -> None:
    # the pool left by the network (and IPv4 broadcast) address and a gateway at either end
    assert services._pools("10.0.0.0/30", "10.0.0.1") == [{"start": "10.0.0.2", "end": "10.0.0.2"}]
    assert services._pools("10.0.0.0/29", "10.0.0.6") == [{"start": "10.0.0.1", "end": "10.0.0.5"}]
    assert services._pools("10.0.0.0/29", None) == [{"start": "10.0.0.1", "end": "10.0.0.6"}]
    assert services._pools("10.0.0.8/31", None) == [{"start": "10.0.0.8", "end": "10.0.0.9"}]
    assert services._pools("10.0.0.9/32", "10.0.0.9") == []
    assert services._pools("2001:db8::/126", "2001:db8::1") == [{"start": "2001:db8::2", "end": "2001:db8::3"}]


def test_fixed_ip_taken_is_409() -> None:
    client = member()
    net, sub = make_net(client)
    body = {"port": {"network_id": net["id"], "fixed_ips": [{"subnet_id": sub["id"], "ip_address": "192.168.10.4"}]}}
    assert client.post("/network/v2.0/ports", body, format="json").status_code == 201
    assert client.post("/network/v2.0/ports", body, format="json").status_code == 409


def test_other_projects_network_is_404_shared_is_visible() -> None:
    owner = member("alice", "demo")
    other = member("bob", "demo2")
    net, _ = make_net(owner)
    missing = other.get(f"/network/v2.0/networks/{net['id']}")
    assert missing.status_code == 404 and missing.json()["NeutronError"]["type"] == "HTTPNotFound"
    shared = admin_client().post("/network/v2.0/networks", {"network": {"name": "pub", "shared": True}}, format="json")
    assert shared.status_code == 201
    names = [n["name"] for n in other.get("/network/v2.0/networks").json()["networks"]]
    assert "pub" in names and "net1" not in names
    assert other.get("/network/v2.0/networks?name=pub").json()["networks"][0]["shared"] is True
    assert owner.post("/network/v2.0/networks", {"network": {"name": "x", "shared": True}},
                      format="json").status_code == 400


def test_network_in_use_cannot_be_deleted() -> None:
    client = member()
    net, _ = make_net(client)
    port = client.post("/network/v2.0/ports", {"port": {"network_id": net["id"], "device_id": "vm"}}, format="json")
    assert client.delete(f"/network/v2.0/networks/{net['id']}").status_code == 409
    client.delete(f"/network/v2.0/ports/{port.json()['port']['id']}")
    # once the port is gone the network (and its subnet) can go
    assert client.delete(f"/network/v2.0/networks/{net['id']}").status_code == 204


def test_compute_port_calls_bind_unbind_and_cleanup() -> None:
    user, project = make_identity("alice", project="demo", roles=["member"])
    ctx = RequestContext(user_id=user.id, project_id=project.id, roles=["member", "reader"])
    net = services.network_create(ctx, name="n")
    services.subnet_create(ctx, network_id=net.id, cidr="10.9.0.0/24")
    created = services.port_create_for_instance(ctx, network_id=net.id, instance_uuid="vm1", host="compute1",
                                                fixed_ip=None, project_id=project.id)
    brought = services.port_create(ctx, network_id=net.id)
    services.port_bind(brought.id, "compute1", device_id="vm1")
    with pytest.raises(services.PortInUse):
        services.port_bind(brought.id, "compute2", device_id="vm2")
    info = services.network_info("vm1")
    assert {vif["id"] for vif in info} == {created.id, brought.id}
    assert services.addresses_for_instance("vm1")["n"][0]["addr"] == "10.9.0.2"
    services.ports_unbind_and_delete_for_instance("vm1")
    from networks.models import Port

    assert not Port.objects.filter(id=created.id).exists()
    assert Port.objects.get(id=brought.id).device_id == ""


def test_extended_bindings_activate_one_host() -> None:
    user, project = make_identity("alice", project="demo", roles=["member"])
    ctx = RequestContext(user_id=user.id, project_id=project.id, roles=["member", "reader"])
    net = services.network_create(ctx, name="n")
    services.subnet_create(ctx, network_id=net.id, cidr="10.8.0.0/24")
    port = services.port_create_for_instance(ctx, network_id=net.id, instance_uuid="vm", host="src", fixed_ip=None,
                                             project_id=project.id)
    services.port_binding_create(port.id, "src")
    services.port_binding_create(port.id, "dst")
    services.port_binding_activate(port.id, "dst")
    from networks.models import Port, PortBinding

    assert dict(PortBinding.objects.filter(port=port).values_list("host", "status")) == {"src": "INACTIVE",
                                                                                         "dst": "ACTIVE"}
    assert Port.objects.get(id=port.id).binding_host_id == "dst"
    with pytest.raises(Exception, match="already exists"):
        services.port_binding_create(port.id, "dst")


def test_subnet_host_routes_and_update_as_neutron() -> None:
    client = member()
    net = client.post("/network/v2.0/networks", {"network": {"name": "routed"}}, format="json").json()["network"]
    routes = [{"destination": "10.20.0.0/24", "nexthop": "192.168.30.5"}]
    created = client.post("/network/v2.0/subnets", {"subnet": {
        "network_id": net["id"], "cidr": "192.168.30.0/24", "ip_version": 4, "host_routes": routes,
        "dns_nameservers": ["192.168.30.2"], "description": "with routes"}}, format="json")
    assert created.status_code == 201, created.content
    subnet = created.json()["subnet"]
    assert subnet["host_routes"] == routes and subnet["description"] == "with routes"
    assert client.get(f"/network/v2.0/subnets/{subnet['id']}").json()["subnet"]["host_routes"] == routes

    new_routes = [{"destination": "10.30.0.0/16", "nexthop": "192.168.30.6"}]
    updated = client.put(f"/network/v2.0/subnets/{subnet['id']}", {"subnet": {
        "name": "renamed", "gateway_ip": "192.168.30.254", "enable_dhcp": False,
        "dns_nameservers": ["192.168.30.3"], "host_routes": new_routes}}, format="json")
    assert updated.status_code == 200, updated.content
    shown = client.get(f"/network/v2.0/subnets/{subnet['id']}").json()["subnet"]
    assert (shown["name"], shown["gateway_ip"], shown["enable_dhcp"]) == ("renamed", "192.168.30.254", False)
    assert shown["dns_nameservers"] == ["192.168.30.3"] and shown["host_routes"] == new_routes

    # what Neutron refuses: read-only attributes, unknown ones, routes outside the schema, a gateway outside the cidr
    for body, fragment in (({"cidr": "10.0.0.0/24"}, "read-only attribute cidr"),
                           ({"colour": "blue"}, "Unrecognized attribute(s) 'colour'"),
                           ({"host_routes": [{"destination": "10.0.0.0/8"}]}, "host_routes"),
                           ({"host_routes": [{"destination": "nowhere", "nexthop": "1.2.3.4"}]}, "host_routes"),
                           ({"gateway_ip": "10.9.9.9"}, "not within subnet")):
        refused = client.put(f"/network/v2.0/subnets/{subnet['id']}", {"subnet": body}, format="json")
        assert refused.status_code == 400, (body, refused.content)
        assert fragment in refused.json()["NeutronError"]["message"], refused.json()
    unknown_on_create = client.post("/network/v2.0/subnets", {"subnet": {
        "network_id": net["id"], "cidr": "192.168.31.0/24", "flavour": "x"}}, format="json")
    assert unknown_on_create.status_code == 400


def test_port_binding_attributes_are_shown_to_admins_only_and_set_by_admins_only() -> None:
    # given a member's port on the member's network
    client = member()
    net, _ = make_net(client)
    created = client.post("/network/v2.0/ports", {"port": {"network_id": net["id"]}}, format="json")
    assert created.status_code == 201, created.content
    port = created.json()["port"]
    # then the member sees binding:vnic_type but none of the admin-only binding attributes
    assert port["binding:vnic_type"] == "normal"
    hidden = {"binding:host_id", "binding:vif_type", "binding:vif_details", "binding:profile"}
    assert not hidden & set(port)
    assert not hidden & set(client.get(f"/network/v2.0/ports/{port['id']}").json()["port"])
    assert not hidden & set(client.get("/network/v2.0/ports").json()["ports"][0])
    # when the member tries to bind it to a host: 403, on create as on update
    denied = client.put(f"/network/v2.0/ports/{port['id']}", {"port": {"binding:host_id": "h1"}}, format="json")
    assert denied.status_code == 403, denied.content
    denied = client.post("/network/v2.0/ports", {"port": {"network_id": net["id"], "binding:host_id": "h1"}},
                         format="json")
    assert denied.status_code == 403, denied.content
    # the member may choose a valid vnic type, not an unknown one
    ok = client.put(f"/network/v2.0/ports/{port['id']}", {"port": {"binding:vnic_type": "direct"}}, format="json")
    assert ok.status_code == 200 and ok.json()["port"]["binding:vnic_type"] == "direct"
    bad = client.put(f"/network/v2.0/ports/{port['id']}", {"port": {"binding:vnic_type": "bogus"}}, format="json")
    assert bad.status_code == 400, bad.content
    # when an admin binds it, the admin sees every binding attribute
    admin = admin_client()
    bound = admin.put(f"/network/v2.0/ports/{port['id']}", {"port": {"binding:host_id": "h1"}}, format="json")
    assert bound.status_code == 200, bound.content
    shown = admin.get(f"/network/v2.0/ports/{port['id']}").json()["port"]
    assert (shown["binding:host_id"], shown["binding:vif_type"], shown["binding:vif_details"],
            shown["binding:profile"]) == ("h1", "ovs", {}, {})


def test_bulk_create_networks_all_or_none() -> None:
    client = member()
    # given two networks in one request, when created, then both are answered in order and listed
    bulk = client.post("/network/v2.0/networks", {"networks": [{"name": "n1"}, {"name": "n2", "description": "d"}]},
                       format="json")
    assert bulk.status_code == 201, bulk.content
    made = bulk.json()["networks"]
    assert [(n["name"], n["description"]) for n in made] == [("n1", ""), ("n2", "d")]
    listed = {n["id"] for n in client.get("/network/v2.0/networks").json()["networks"]}
    assert {n["id"] for n in made} <= listed
    # given a request whose second network a member may not make (shared), then nothing is made and
    # that network's error is answered
    refused = client.post("/network/v2.0/networks", {"networks": [{"name": "n3"}, {"name": "n4", "shared": True}]},
                          format="json")
    assert refused.status_code == 400
    assert refused.json()["NeutronError"]["message"] == "Only admins may create shared or external networks."
    names = [n["name"] for n in client.get("/network/v2.0/networks").json()["networks"]]
    assert "n3" not in names and "n4" not in names
    # an empty or malformed collection is a 400, not a 500
    for body in ({"networks": []}, {"networks": ["n5"]}, {"networks": {"name": "n5"}}):
        answer = client.post("/network/v2.0/networks", body, format="json")
        assert answer.status_code == 400 and answer.json()["NeutronError"]["type"] == "HTTPBadRequest"


def test_bulk_create_subnets_all_or_none() -> None:
    client = member()
    net1 = client.post("/network/v2.0/networks", {"network": {"name": "a"}}, format="json").json()["network"]
    net2 = client.post("/network/v2.0/networks", {"network": {"name": "b"}}, format="json").json()["network"]
    # given a subnet on each network, the second unnamed (as Tempest sends them), then both are made
    bulk = client.post("/network/v2.0/subnets", {"subnets": [
        {"network_id": net1["id"], "cidr": "10.100.0.0/28", "name": "s1", "ip_version": 4},
        {"network_id": net2["id"], "cidr": "10.100.0.16/28", "ip_version": 4}]}, format="json")
    assert bulk.status_code == 201, bulk.content
    made = bulk.json()["subnets"]
    assert [(s["name"], s["network_id"], s["cidr"]) for s in made] == [
        ("s1", net1["id"], "10.100.0.0/28"), ("", net2["id"], "10.100.0.16/28")]
    listed = {s["id"] for s in client.get("/network/v2.0/subnets").json()["subnets"]}
    assert {s["id"] for s in made} <= listed
    # given a request whose second subnet has a bad CIDR, then the first is not made either
    refused = client.post("/network/v2.0/subnets", {"subnets": [
        {"network_id": net1["id"], "cidr": "10.100.0.32/28", "name": "s3", "ip_version": 4},
        {"network_id": net2["id"], "cidr": "not-a-cidr", "name": "s4", "ip_version": 4}]}, format="json")
    assert refused.status_code == 400
    assert refused.json()["NeutronError"]["message"] == ("Invalid input for cidr. Reason: 'not-a-cidr' is not a "
                                                         "valid IP subnet.")
    names = [s["name"] for s in client.get("/network/v2.0/subnets").json()["subnets"]]
    assert "s3" not in names and "s4" not in names
    # a single subnet is still made from {"subnet": {...}}
    single = client.post("/network/v2.0/subnets", {"subnet": {"network_id": net1["id"], "cidr": "10.100.0.48/28",
                                                              "ip_version": 4}}, format="json")
    assert single.status_code == 201 and single.json()["subnet"]["cidr"] == "10.100.0.48/28"


def test_agents_are_listed_empty_and_unknown_by_id() -> None:
    # this cloud runs no Neutron agent: every project lists none (a member's list is filtered, not
    # refused, as Neutron's), an id is Neutron's 404, and the extension says the resource is there
    for client in (member(), admin_client()):
        listed = client.get("/network/v2.0/agents")
        assert listed.status_code == 200 and listed.json() == {"agents": []}
        assert client.get("/network/v2.0/agents?agent_type=L3%20agent").json() == {"agents": []}
        missing = client.get("/network/v2.0/agents/some-agent")
        assert missing.status_code == 404 and missing.json() == {"NeutronError": {
            "type": "AgentNotFound", "message": "Agent some-agent could not be found.", "detail": ""}}
    assert member().get("/network/v2.0/extensions/agent").status_code == 200
