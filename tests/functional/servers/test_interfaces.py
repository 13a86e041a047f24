"""``/servers/{id}/os-interface`` on the in-process cloud: attach by port and by network (with a fixed IP),
list/show per microversion, detach, the ports kept consistent in the network service, instance actions
and notifications, and Nova's codes for bad input, ports in use and servers in the wrong state."""
from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])


def _net(cloud: Any, client: Any, name: str = "net-b", cidr: str = "10.9.0.0/28") -> str:
    net = client.post("/network/v2.0/networks", {"network": {"name": name}}, format="json").json()["network"]
    made = client.post("/network/v2.0/subnets", {"subnet": {"network_id": net["id"], "cidr": cidr, "ip_version": 4}},
                       format="json")
    assert made.status_code == 201, made.content
    return str(net["id"])


def _port(client: Any, net_id: str) -> dict[str, Any]:
    made = client.post("/network/v2.0/ports", {"port": {"network_id": net_id}}, format="json")
    assert made.status_code == 201, made.content
    return dict(made.json()["port"])


def _active_server(cloud: Any, client: Any, name: str) -> dict[str, Any]:
    server = cloud.create_server(client, name)
    cloud.wait_for_status(client, server["id"], "ACTIVE")
    return dict(server)


def _server_with_a_free_port(cloud: Any, name: str) -> tuple[Any, dict[str, Any], str, dict[str, Any]]:
    """A member's client, an active server, a network of the member's own and a free port on it."""
    client = cloud.member()
    server = _active_server(cloud, client, name)
    net_id = _net(cloud, client)
    return client, server, net_id, _port(client, net_id)


def _actions(cloud: Any, client: Any, server_id: str) -> list[str]:
    listed = cloud.get(client, f"servers/{server_id}/os-instance-actions").json()["instanceActions"]
    return [a["action"] for a in listed]


def test_attach_a_port_list_show_and_detach_it(cloud: Any) -> None:
    from networks.models import Port

    # given an active server and a port of the user's own
    client, server, net_id, port = _server_with_a_free_port(cloud, "if1")
    path = f"servers/{server['id']}/os-interface"
    # when the port is attached with a tag (2.70: the tag is shown)
    attached = cloud.post(client, path, {"interfaceAttachment": {"port_id": port["id"], "tag": "nic2"}},
                          version="2.70")
    # then the answer is the interface, and the port is bound to the server on its host
    assert attached.status_code == 200, attached.content
    body = attached.json()["interfaceAttachment"]
    assert body == {"port_id": port["id"], "net_id": net_id, "mac_addr": port["mac_address"], "port_state": "ACTIVE",
                    "fixed_ips": port["fixed_ips"], "tag": "nic2"}
    row = Port.objects.get(id=port["id"])
    instance = cloud.instance(server["id"])
    host = instance.host
    # owned, as Nova, by the server's zone
    assert instance.availability_zone
    assert (row.device_id, row.device_owner, row.binding_host_id) == (
        server["id"], f"compute:{instance.availability_zone}", host)
    assert port["id"] in cloud.driver(host).plugged[server["id"]]
    # and it is listed with the build's port; below 2.70 without the tag
    listed = cloud.get(client, path, version="2.69").json()["interfaceAttachments"]
    assert len(listed) == 2 and all("tag" not in i for i in listed)
    assert port["id"] in [i["port_id"] for i in listed]
    shown = cloud.get(client, f"{path}/{port['id']}", version="2.70").json()["interfaceAttachment"]
    assert shown["tag"] == "nic2" and shown["net_id"] == net_id
    # and the server's addresses include the new network
    assert "net-b" in cloud.get(client, f"servers/{server['id']}/ips").json()["addresses"]
    # with an action and the interface_attach notifications
    assert "attach_interface" in _actions(cloud, client, server["id"])
    assert cloud.notifications("instance.interface_attach.start")
    assert cloud.notifications("instance.interface_attach.end")
    # when it is detached
    detached = cloud.delete(client, f"{path}/{port['id']}")
    # then the user's port stays, unbound, and the server no longer lists it
    assert detached.status_code == 202, detached.content
    row = Port.objects.get(id=port["id"])
    assert (row.device_id, row.device_owner, row.binding_host_id, row.status) == ("", "", "", "DOWN")
    assert port["id"] not in [i["port_id"] for i in cloud.get(client, path).json()["interfaceAttachments"]]
    assert cloud.get(client, f"{path}/{port['id']}").status_code == 404
    assert "detach_interface" in _actions(cloud, client, server["id"])
    assert cloud.notifications("instance.interface_detach.end")
    assert port["id"] not in cloud.driver(host).plugged[server["id"]]


def test_attach_by_network_with_a_fixed_ip_and_the_port_goes_on_detach(cloud: Any) -> None:
    from networks.models import Port

    client = cloud.member()
    server = _active_server(cloud, client, "if2")
    net_id = _net(cloud, client)
    path = f"servers/{server['id']}/os-interface"
    # when a network and a fixed IP are named
    attached = cloud.post(client, path, {"interfaceAttachment": {"net_id": net_id,
                                                                  "fixed_ips": [{"ip_address": "10.9.0.7"}]}})
    # then a port is made for the server with that address
    assert attached.status_code == 200, attached.content
    body = attached.json()["interfaceAttachment"]
    assert [f["ip_address"] for f in body["fixed_ips"]] == ["10.9.0.7"] and "tag" not in body
    port = Port.objects.get(id=body["port_id"])
    assert (port.device_id, port.project_id) == (server["id"], cloud.instance(server["id"]).project_id)
    # the same address again is a conflict
    again = cloud.post(client, path, {"interfaceAttachment": {"net_id": net_id,
                                                               "fixed_ips": [{"ip_address": "10.9.0.7"}]}})
    assert again.status_code == 409, again.content
    # when it is detached, the port made for the server is deleted
    assert cloud.delete(client, f"{path}/{body['port_id']}").status_code == 202
    assert not Port.objects.filter(id=body["port_id"]).exists()


def test_attach_refusals(cloud: Any) -> None:
    client = cloud.member()
    server = _active_server(cloud, client, "if3")
    other = _active_server(cloud, client, "if3b")
    net_id = _net(cloud, client)
    path = f"servers/{server['id']}/os-interface"
    missing = "00000000-0000-4000-8000-000000000000"
    # unknown port or network: 404
    assert cloud.post(client, path, {"interfaceAttachment": {"port_id": missing}}).status_code == 404
    assert cloud.post(client, path, {"interfaceAttachment": {"net_id": missing}}).status_code == 404
    # both, a fixed IP without a network, an unknown key, a tag below 2.49: 400
    port = _port(client, net_id)
    assert cloud.post(client, path, {"interfaceAttachment": {"port_id": port["id"], "net_id": net_id}}
                      ).status_code == 400
    assert cloud.post(client, path, {"interfaceAttachment": {"fixed_ips": [{"ip_address": "10.9.0.9"}]}}
                      ).status_code == 400
    assert cloud.post(client, path, {"interfaceAttachment": {"bogus": 1}}).status_code == 400
    assert cloud.post(client, path, {"interfaceAttachment": {"port_id": port["id"], "tag": "t"}},
                      version="2.48").status_code == 400
    # a port another server holds: 409
    assert cloud.post(client, f"servers/{other['id']}/os-interface",
                      {"interfaceAttachment": {"port_id": port["id"]}}).status_code == 200
    in_use = cloud.post(client, path, {"interfaceAttachment": {"port_id": port["id"]}})
    assert in_use.status_code == 409, in_use.content
    # detaching a port that is not the server's: 404
    assert cloud.delete(client, f"{path}/{port['id']}").status_code == 404
    # a server in the wrong state: 409; another project's server: 404
    assert cloud.action(client, server["id"], {"shelve": None}).status_code == 202
    shelved = cloud.post(client, path, {"interfaceAttachment": {"net_id": net_id}})
    assert shelved.status_code == 409, shelved.content
    eve = cloud.member(name="eve", project="other")
    assert cloud.get(eve, f"servers/{other['id']}/os-interface").status_code == 404


def test_a_failed_plug_gives_the_port_back(cloud: Any) -> None:
    from networks.models import Port

    client, server, net_id, port = _server_with_a_free_port(cloud, "if4")
    host = cloud.instance(server["id"]).host
    # given the hypervisor fails the next hot-plug
    cloud.driver(host).fail_interface_attaches = 1
    failed = cloud.post(client, f"servers/{server['id']}/os-interface",
                        {"interfaceAttachment": {"port_id": port["id"]}})
    # then the attach fails (500), the port is free again and the server stays ACTIVE
    assert failed.status_code == 500, failed.content
    assert Port.objects.get(id=port["id"]).device_id == ""
    assert cloud.show(client, server["id"])["status"] == "ACTIVE"
    assert cloud.notifications("instance.interface_attach.error")
    # a network's port made for the attach is deleted
    before = Port.objects.filter(network_id=net_id).count()
    cloud.driver(host).fail_interface_attaches = 1
    assert cloud.post(client, f"servers/{server['id']}/os-interface",
                      {"interfaceAttachment": {"net_id": net_id}}).status_code == 500
    assert Port.objects.filter(network_id=net_id).count() == before


def test_deleting_the_server_keeps_the_users_attached_port_and_deletes_the_one_made_for_it(cloud: Any) -> None:
    from networks.models import Port

    # given a server with the user's port and a network's port attached
    client, server, net_id, port = _server_with_a_free_port(cloud, "if5")
    path = f"servers/{server['id']}/os-interface"
    assert cloud.post(client, path, {"interfaceAttachment": {"port_id": port["id"]}}).status_code == 200
    made = cloud.post(client, path, {"interfaceAttachment": {"net_id": net_id}}).json()["interfaceAttachment"]
    # when the server is deleted
    assert cloud.delete(client, f"servers/{server['id']}").status_code == 204
    # then the user's port stays, free, and the port made by the attach is gone
    row = Port.objects.get(id=port["id"])
    assert (row.device_id, row.binding_host_id) == ("", "")
    assert not Port.objects.filter(id=made["port_id"]).exists()
