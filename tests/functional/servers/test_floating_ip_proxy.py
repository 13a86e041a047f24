"""Nova's floating IP proxy (/os-floating-ips and /os-floating-ip-pools up to 2.35; the addFloatingIp and
removeFloatingIp actions up to 2.43) over the network service's floating IPs, with nova-network's bodies
and Nova's codes and words."""
from __future__ import annotations

from typing import Any

import pytest

from tests.cloud import Cloud

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])
NET = "/network/v2.0"
FIP_KEYS = {"id", "ip", "pool", "fixed_ip", "instance_id"}


def external(cloud: Cloud, admin: Any, name: str, cidr: str) -> dict[str, Any]:
    network = cloud.post(admin, f"{NET}/networks", {"network": {"name": name, "router:external": True}})
    assert network.status_code == 201, network.content
    ext = network.json()["network"]
    subnet = cloud.post(admin, f"{NET}/subnets", {"subnet": {"network_id": ext["id"], "cidr": cidr, "ip_version": 4}})
    assert subnet.status_code == 201, subnet.content
    return ext


def routed_public(cloud: Cloud, admin: Any, member: Any) -> dict[str, Any]:
    """The external network ``public`` and a router of the member's project from it to the demo subnet."""
    ext = external(cloud, admin, "public", "172.24.4.0/24")
    router = cloud.post(member, f"{NET}/routers", {"router": {"name": "r", "external_gateway_info": {
        "network_id": ext["id"]}}}).json()["router"]
    attached = cloud.put(member, f"{NET}/routers/{router['id']}/add_router_interface", {"subnet_id": cloud.subnet_id})
    assert attached.status_code == 200, attached.content
    return ext


def allocate(cloud: Cloud, client: Any, body: Any = None) -> dict[str, Any]:
    response = cloud.post(client, "os-floating-ips", body)
    assert response.status_code == 200, response.content
    fip: dict[str, Any] = response.json()["floating_ip"]
    assert set(fip) == FIP_KEYS
    return fip


def server_on_demo_net(cloud: Cloud, client: Any, name: str) -> tuple[str, str]:
    """A server with one port on the demo network: its id and its fixed IP."""
    server = cloud.create_server(client, name, networks=[{"uuid": cloud.network_id}])["id"]
    cloud.wait_for_status(client, server, "ACTIVE")
    (port,) = cloud.get(client, f"{NET}/ports?device_id={server}").json()["ports"]
    return server, port["fixed_ips"][0]["ip_address"]


def fault(response: Any, code: int) -> str:
    assert response.status_code == code, (response.status_code, response.content)
    (body,) = response.json().values()
    message: str = body["message"]
    return message


def test_allocate_show_list_and_release(cloud: Cloud) -> None:
    client, admin = cloud.member(), cloud.admin()
    ext = routed_public(cloud, admin, client)
    external(cloud, admin, "other", "192.0.2.0/24")
    # given the external networks as the pools, which any project lists
    pools = cloud.get(cloud.member("reader", roles=("reader",)), "os-floating-ip-pools")
    assert pools.status_code == 200 and pools.json() == {"floating_ip_pools": [{"name": "public"}, {"name": "other"}]}
    # when floating IPs are allocated from a pool named, by id, and from the default pool (an empty body, no
    # body at all, a null pool)
    named = allocate(cloud, client, {"pool": "public"})
    by_id = allocate(cloud, client, {"pool": ext["id"]})
    default = allocate(cloud, client)
    bodiless = client.post("/compute/v2.1/os-floating-ips")
    assert bodiless.status_code == 200, bodiless.content
    assert bodiless.json()["floating_ip"]["pool"] == "public"
    assert cloud.delete(client, f"os-floating-ips/{bodiless.json()['floating_ip']['id']}").status_code == 202
    null_pool = allocate(cloud, client, {"pool": None})
    other = allocate(cloud, client, {"pool": "other", "ignored": "Nova lets other keys through"})
    # then each is an unassociated address of its pool, in nova-network's shape
    assert named == {"id": named["id"], "ip": "172.24.4.3", "pool": "public", "fixed_ip": None, "instance_id": None}
    assert [f["pool"] for f in (by_id, default, null_pool, other)] == ["public", "public", "public", "other"]
    assert other["ip"].startswith("192.0.2.")
    # and they are the network service's floating IPs, of the caller's project
    neutron = cloud.get(client, f"{NET}/floatingips").json()["floatingips"]
    assert {f["id"]: f["floating_ip_address"] for f in neutron} == {
        f["id"]: f["ip"] for f in (named, by_id, default, null_pool, other)}
    # and they are listed and shown as they were created
    listed = cloud.get(client, "os-floating-ips")
    assert listed.status_code == 200
    assert listed.json() == {"floating_ips": [named, by_id, default, null_pool, other]}
    shown = cloud.get(client, f"os-floating-ips/{named['id']}")
    assert shown.status_code == 200 and shown.json() == {"floating_ip": named}
    # an admin lists its own project's only (Nova's proxy lists the context's project), another project none
    assert cloud.get(admin, "os-floating-ips").json() == {"floating_ips": []}
    stranger = cloud.member("demo2", "demo2")
    assert cloud.get(stranger, "os-floating-ips").json() == {"floating_ips": []}
    assert fault(cloud.get(stranger, f"os-floating-ips/{named['id']}"), 404) == \
        f"Floating IP not found for ID {named['id']}"
    assert cloud.delete(stranger, f"os-floating-ips/{named['id']}").status_code == 404
    # when one is released it is gone, from the network service too
    released = cloud.delete(client, f"os-floating-ips/{named['id']}")
    assert released.status_code == 202 and released.content == b""
    assert fault(cloud.get(client, f"os-floating-ips/{named['id']}"), 404) == \
        f"Floating IP not found for ID {named['id']}"
    assert cloud.get(client, f"{NET}/floatingips/{named['id']}").status_code == 404
    assert fault(cloud.delete(client, f"os-floating-ips/{named['id']}"), 404) == \
        f"Floating IP not found for ID {named['id']}"
    assert fault(cloud.get(client, "os-floating-ips/not-a-uuid"), 404) == "Floating IP not found for ID not-a-uuid"


def test_allocation_refusals(cloud: Cloud, settings: Any) -> None:
    client, admin = cloud.member(), cloud.admin()
    external(cloud, admin, "public", "172.24.4.0/24")
    # a /30 has one address besides its gateway
    external(cloud, admin, "tiny", "198.51.100.0/30")
    # an unknown pool, or a network that is not external, is not a pool
    assert fault(cloud.post(client, "os-floating-ips", {"pool": "nope"}), 404) == "Floating IP pool not found."
    assert fault(cloud.post(client, "os-floating-ips", {"pool": "demo-net"}), 404) == "Floating IP pool not found."
    assert fault(cloud.post(client, "os-floating-ips", {"pool": cloud.network_id}), 404) == \
        "Floating IP pool not found."
    # a pool that is not a string, or a body that is not an object, is a bad request
    assert cloud.post(client, "os-floating-ips", {"pool": 5}).status_code == 400
    assert cloud.post(client, "os-floating-ips", ["public"]).status_code == 400
    # the default pool is the setting's (Nova's default_floating_pool)
    settings.DEFAULT_FLOATING_POOL = "nova"
    assert fault(cloud.post(client, "os-floating-ips"), 404) == "Floating IP pool not found."
    settings.DEFAULT_FLOATING_POOL = "tiny"
    assert allocate(cloud, client)["ip"] == "198.51.100.2"
    # no address left: 404, naming the pool when the request named it
    assert fault(cloud.post(client, "os-floating-ips", {"pool": "tiny"}), 404) == "No more floating IPs in pool tiny."
    assert fault(cloud.post(client, "os-floating-ips"), 404) == "No more floating IPs available."
    # over the project's floating IP quota: 403
    settings.QUOTA_FLOATINGIP = 1
    assert fault(cloud.post(client, "os-floating-ips", {"pool": "public"}), 403) == \
        "IP allocation over quota in pool public."
    settings.DEFAULT_FLOATING_POOL = "public"
    assert fault(cloud.post(client, "os-floating-ips"), 403) == "IP allocation over quota."
    assert len(cloud.get(client, "os-floating-ips").json()["floating_ips"]) == 1


def test_policy(cloud: Cloud) -> None:
    client, admin = cloud.member(), cloud.admin()
    external(cloud, admin, "public", "172.24.4.0/24")
    fip = allocate(cloud, client)
    # a reader of the project lists and shows but neither allocates nor releases
    reader = cloud.member("reader", roles=("reader",))
    assert cloud.get(reader, "os-floating-ips").json() == {"floating_ips": [fip]}
    assert cloud.get(reader, f"os-floating-ips/{fip['id']}").json() == {"floating_ip": fip}
    assert fault(cloud.post(reader, "os-floating-ips"), 403) == \
        "Policy doesn't allow os_compute_api:os-floating-ips:create to be performed."
    assert fault(cloud.delete(reader, f"os-floating-ips/{fip['id']}"), 403) == \
        "Policy doesn't allow os_compute_api:os-floating-ips:delete to be performed."


def test_gone_from_2_36_and_the_actions_from_2_44(cloud: Cloud) -> None:
    client, admin = cloud.member(), cloud.admin()
    routed_public(cloud, admin, client)
    fip = allocate(cloud, client)
    server, _fixed = server_on_demo_net(cloud, client, "vm")
    for path in ("os-floating-ips", f"os-floating-ips/{fip['id']}", "os-floating-ip-pools"):
        assert cloud.get(client, path, version="2.35").status_code == 200
        assert cloud.get(client, path, version="2.36").status_code == 404
    assert cloud.post(client, "os-floating-ips", version="2.36").status_code == 404
    assert cloud.delete(client, f"os-floating-ips/{fip['id']}", version="2.36").status_code == 404
    add = {"addFloatingIp": {"address": fip["ip"]}}
    remove = {"removeFloatingIp": {"address": fip["ip"]}}
    assert fault(cloud.action(client, server, add, version="2.44"), 404) == "There is no such action: addFloatingIp"
    assert fault(cloud.action(client, server, remove, version="2.44"), 404) == \
        "There is no such action: removeFloatingIp"
    assert cloud.action(client, server, add, version="2.43").status_code == 202
    assert cloud.action(client, server, remove, version="2.43").status_code == 202


def test_associate_and_disassociate(cloud: Cloud) -> None:
    client, admin = cloud.member(), cloud.admin()
    routed_public(cloud, admin, client)
    fip = allocate(cloud, client)
    server, fixed = server_on_demo_net(cloud, client, "vm")
    # when the floating IP is added to the server (its first IPv4 address)
    added = cloud.action(client, server, {"addFloatingIp": {"address": fip["ip"]}}, version="2.43")
    # then 202 with no body, and the floating IP names the server and its fixed IP
    assert added.status_code == 202 and added.content == b""
    assert cloud.get(client, f"os-floating-ips/{fip['id']}").json()["floating_ip"] == {
        **fip, "fixed_ip": fixed, "instance_id": server}
    assert cloud.get(client, "os-floating-ips").json()["floating_ips"] == [
        {**fip, "fixed_ip": fixed, "instance_id": server}]
    neutron = cloud.get(client, f"{NET}/floatingips/{fip['id']}").json()["floatingip"]
    assert (neutron["fixed_ip_address"], neutron["status"]) == (fixed, "ACTIVE")
    # and the server's addresses show it after its fixed IP
    addresses = cloud.show(client, server)["addresses"]["demo-net"]
    assert [(a["addr"], a["OS-EXT-IPS:type"]) for a in addresses] == [(fixed, "fixed"), (fip["ip"], "floating")]
    # when it is removed it is unassociated again, and the server shows its fixed IP only
    removed = cloud.action(client, server, {"removeFloatingIp": {"address": fip["ip"]}}, version="2.43")
    assert removed.status_code == 202 and removed.content == b""
    assert cloud.get(client, f"os-floating-ips/{fip['id']}").json()["floating_ip"] == fip
    assert [a["addr"] for a in cloud.show(client, server)["addresses"]["demo-net"]] == [fixed]
    # removing it again is a conflict
    assert fault(cloud.action(client, server, {"removeFloatingIp": {"address": fip["ip"]}}, version="2.43"),
                 409) == f"Floating IP {fip['ip']} is not associated with instance {server}."
    # the fixed address may be named
    named = cloud.action(client, server, {"addFloatingIp": {"address": fip["ip"], "fixed_address": fixed}},
                         version="2.1")
    assert named.status_code == 202
    assert cloud.get(client, f"os-floating-ips/{fip['id']}").json()["floating_ip"]["fixed_ip"] == fixed


def test_reassociation_and_release_of_an_associated_floating_ip(cloud: Cloud) -> None:
    client, admin = cloud.member(), cloud.admin()
    routed_public(cloud, admin, client)
    fip = allocate(cloud, client)
    first, _first_fixed = server_on_demo_net(cloud, client, "vm1")
    second, second_fixed = server_on_demo_net(cloud, client, "vm2")
    assert cloud.action(client, first, {"addFloatingIp": {"address": fip["ip"]}}, version="2.43").status_code == 202
    # when the floating IP is added to another server it moves there
    moved = cloud.action(client, second, {"addFloatingIp": {"address": fip["ip"]}}, version="2.43")
    assert moved.status_code == 202, moved.content
    assert cloud.get(client, f"os-floating-ips/{fip['id']}").json()["floating_ip"] == {
        **fip, "fixed_ip": second_fixed, "instance_id": second}
    assert [a["OS-EXT-IPS:type"] for a in cloud.show(client, first)["addresses"]["demo-net"]] == ["fixed"]
    # and removing it from the first server is a conflict (it is not associated with that one)
    assert fault(cloud.action(client, first, {"removeFloatingIp": {"address": fip["ip"]}}, version="2.43"), 409) == \
        f"Floating IP {fip['ip']} is not associated with instance {first}."
    # when the associated floating IP is released it goes, and the server keeps its fixed IP only
    assert cloud.delete(client, f"os-floating-ips/{fip['id']}").status_code == 202
    assert cloud.get(client, f"{NET}/floatingips").json()["floatingips"] == []
    assert [a["addr"] for a in cloud.show(client, second)["addresses"]["demo-net"]] == [second_fixed]


def test_association_refusals(cloud: Cloud) -> None:
    client, admin = cloud.member(), cloud.admin()
    routed_public(cloud, admin, client)
    unrouted_network = external(cloud, admin, "unrouted", "192.0.2.0/24")
    fip, second = allocate(cloud, client), allocate(cloud, client)
    unrouted = allocate(cloud, client, {"pool": "unrouted"})
    server, fixed = server_on_demo_net(cloud, client, "vm")

    def add(body: dict[str, Any]) -> Any:
        return cloud.action(client, server, {"addFloatingIp": body}, version="2.43")

    # the body's schema: an address is required, and addresses are IP addresses
    for body in ({}, {"address": ""}, {"address": "not-an-ip"}, {"address": fip["ip"], "fixed_address": "x"},
                 {"address": fip["ip"], "extra": 1}):
        assert add(body).status_code == 400, body
    assert cloud.action(client, server, {"removeFloatingIp": {}}, version="2.43").status_code == 400
    # no floating IP with the address
    assert fault(add({"address": "0.0.0.0"}), 404) == "floating IP not found"
    assert fault(cloud.action(client, server, {"removeFloatingIp": {"address": "0.0.0.0"}}, version="2.43"),
                 404) == "Floating IP not found for address 0.0.0.0."
    # another project's floating IP is not found either
    stranger = cloud.member("demo2", "demo2")
    theirs = allocate(cloud, stranger)
    assert fault(add({"address": theirs["ip"]}), 404) == "floating IP not found"
    # a fixed address that is not the server's
    assert fault(add({"address": fip["ip"], "fixed_address": "10.0.0.250"}), 400) == \
        "Specified fixed address not assigned to instance"
    # no router from the floating IP's network to the server's subnet: the network service's reason is quoted
    assert fault(add({"address": unrouted["ip"]}), 400) == (
        f"Unable to associate floating IP {unrouted['ip']} to fixed IP {fixed} for instance {server}. Error: "
        f"External network {unrouted_network['id']} is not reachable from subnet "
        f"{cloud.subnet_id}.  Therefore, cannot associate Port {port_of(cloud, client, server)} with a Floating IP.")
    # a second floating IP of the same network on the same fixed IP: the network service's conflict, as a 400
    assert add({"address": fip["ip"]}).status_code == 202
    assert fault(add({"address": second["ip"]}), 400).startswith(f"Cannot associate floating IP {second['ip']}")
    # nothing changed in the refusals
    assert cloud.get(client, f"os-floating-ips/{second['id']}").json()["floating_ip"]["instance_id"] is None
    assert cloud.get(client, f"os-floating-ips/{unrouted['id']}").json()["floating_ip"]["instance_id"] is None
    # a reader may do neither
    reader = cloud.member("reader", roles=("reader",))
    assert fault(cloud.action(reader, server, {"removeFloatingIp": {"address": fip["ip"]}}, version="2.43"),
                 403) == "Policy doesn't allow os_compute_api:os-floating-ips:remove to be performed."
    assert fault(cloud.action(reader, server, {"addFloatingIp": {"address": second["ip"]}}, version="2.43"),
                 403) == "Policy doesn't allow os_compute_api:os-floating-ips:add to be performed."


def test_a_server_without_a_port_has_no_address_to_associate(cloud: Cloud) -> None:
    client, admin = cloud.member(), cloud.admin()
    routed_public(cloud, admin, client)
    fip = allocate(cloud, client)
    server = cloud.create_server(client, "portless", networks="none")["id"]
    cloud.wait_for_status(client, server, "ACTIVE")
    assert fault(cloud.action(client, server, {"addFloatingIp": {"address": fip["ip"]}}, version="2.43"), 400) == \
        "Instance network is not ready yet"


def port_of(cloud: Cloud, client: Any, server: str) -> str:
    (port,) = cloud.get(client, f"{NET}/ports?device_id={server}").json()["ports"]
    port_id: str = port["id"]
    return port_id


def test_a_server_whose_port_has_no_fixed_ip_has_no_address_to_associate(cloud: Cloud) -> None:
    client, admin = cloud.member(), cloud.admin()
    routed_public(cloud, admin, client)
    fip = allocate(cloud, client)
    # given a server whose only port is on a network without a subnet
    bare = cloud.post(client, f"{NET}/networks", {"network": {"name": "bare"}}).json()["network"]
    port = cloud.post(client, f"{NET}/ports", {"port": {"network_id": bare["id"]}}).json()["port"]
    assert port["fixed_ips"] == []
    server = cloud.create_server(client, "ipless", networks=[{"port": port["id"]}])["id"]
    cloud.wait_for_status(client, server, "ACTIVE")
    # then it has no fixed IP to associate a floating IP with
    assert fault(cloud.action(client, server, {"addFloatingIp": {"address": fip["ip"]}}, version="2.43"), 400) == \
        "No fixed IPs associated to instance"


def test_a_server_with_ipv6_addresses_only_has_no_address_to_associate(cloud: Cloud) -> None:
    client, admin = cloud.member(), cloud.admin()
    routed_public(cloud, admin, client)
    fip = allocate(cloud, client)
    v6 = cloud.post(client, f"{NET}/networks", {"network": {"name": "v6"}}).json()["network"]
    subnet = cloud.post(client, f"{NET}/subnets", {"subnet": {"network_id": v6["id"], "cidr": "fd00:1::/120",
                                                             "ip_version": 6}})
    assert subnet.status_code == 201, subnet.content
    server = cloud.create_server(client, "v6only", networks=[{"uuid": v6["id"]}])["id"]
    cloud.wait_for_status(client, server, "ACTIVE")
    assert fault(cloud.action(client, server, {"addFloatingIp": {"address": fip["ip"]}}, version="2.43"), 400) == (
        f"Unable to associate floating IP {fip['ip']} to any fixed IPs for instance {server}. Instance has no fixed "
        "IPv4 addresses to associate.")
