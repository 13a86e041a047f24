"""A server's security groups: create with ``security_groups`` (by name or id), the ports get them,
``addSecurityGroup`` / ``removeSecurityGroup``, ``GET /servers/{id}/os-security-groups``, and server show
reading back the real groups."""
from __future__ import annotations

from typing import Any

import pytest

from networks.models import Port

ALL = ["default", "cell0", "cell1", "cell2"]
pytestmark = pytest.mark.django_db(databases=ALL)
SG = "/network/v2.0/security-groups"


def group(client: Any, name: str) -> dict[str, Any]:
    response = client.post(SG, {"security_group": {"name": name}}, format="json")
    assert response.status_code == 201, response.content
    return response.json()["security_group"]


def names(server: dict[str, Any]) -> list[str]:
    return [g["name"] for g in server.get("security_groups", [])]


def port_groups(server_id: str) -> set[str]:
    return {g.name for port in Port.objects.filter(device_id=server_id) for g in port.security_groups.all()}


def test_without_groups_the_server_is_in_default(cloud):
    client = cloud.member()
    created = cloud.create_server(client, "plain")
    assert created["security_groups"] == [{"name": "default"}]
    assert names(cloud.show(client, created["id"])) == ["default"]
    assert port_groups(created["id"]) == {"default"}


def test_create_with_groups_by_name_and_id(cloud):
    # given two groups of the project
    client = cloud.member()
    web, ssh = group(client, "web"), group(client, "ssh")
    # when a server asks for one by name and one by id
    created = cloud.create_server(client, "vm", security_groups=[{"name": "web"}, {"name": ssh["id"]}])
    # then the create answer echoes the request, the ports carry both, and show reads them back
    assert created["security_groups"] == [{"name": "web"}, {"name": ssh["id"]}]
    assert port_groups(created["id"]) == {"web", "ssh"}
    assert sorted(names(cloud.show(client, created["id"]))) == ["ssh", "web"]
    listed = cloud.get(client, "servers/detail").json()["servers"]
    assert sorted(names(next(s for s in listed if s["id"] == created["id"]))) == ["ssh", "web"]
    # and the port API shows the group ids
    port = Port.objects.get(device_id=created["id"])
    shown = client.get(f"/network/v2.0/ports/{port.id}").json()["port"]
    assert sorted(shown["security_groups"]) == sorted([web["id"], ssh["id"]])


def test_unknown_group_on_create_is_400(cloud):
    client = cloud.member()
    response = cloud.post(client, "servers", {"server": {"name": "x", "flavorRef": "1", "imageRef": cloud.image_id,
                                                         "security_groups": [{"name": "nope"}]}})
    assert response.status_code == 400
    assert response.json()["badRequest"]["message"] == "Unable to find security_group with name or id 'nope'"


def test_another_projects_group_is_unknown(cloud):
    theirs = group(cloud.member("demo2", "demo2"), "theirs")
    client = cloud.member()
    response = cloud.post(client, "servers", {"server": {"name": "x", "flavorRef": "1", "imageRef": cloud.image_id,
                                                         "security_groups": [{"name": theirs["id"]}]}})
    assert response.status_code == 400


def test_add_list_remove(cloud):
    client = cloud.member()
    web = group(client, "web")
    client.post("/network/v2.0/security-group-rules", {"security_group_rule": {
        "security_group_id": web["id"], "direction": "ingress", "protocol": "tcp", "port_range_min": 22,
        "port_range_max": 22, "remote_ip_prefix": "10.0.0.0/8"}}, format="json")
    server = cloud.create_server(client, "vm")["id"]
    # add
    assert cloud.action(client, server, {"addSecurityGroup": {"name": "web"}}).status_code == 202
    assert sorted(names(cloud.show(client, server))) == ["default", "web"]
    assert port_groups(server) == {"default", "web"}
    # list in Nova's shape: ingress rules only
    listed = cloud.get(client, f"servers/{server}/os-security-groups").json()["security_groups"]
    by_name = {g["name"]: g for g in listed}
    assert set(by_name) == {"default", "web"}
    assert by_name["web"]["tenant_id"] == web["project_id"] and by_name["web"]["id"] == web["id"]
    assert [(r["ip_protocol"], r["from_port"], r["to_port"], r["ip_range"], r["group"])
            for r in by_name["web"]["rules"]] == [("tcp", 22, 22, {"cidr": "10.0.0.0/8"}, {})]
    assert all(r["group"]["name"] == "default" and r["ip_range"] == {} for r in by_name["default"]["rules"])
    assert all(r["parent_group_id"] == by_name["default"]["id"] for r in by_name["default"]["rules"])
    # remove
    assert cloud.action(client, server, {"removeSecurityGroup": {"name": "web"}}).status_code == 202
    assert names(cloud.show(client, server)) == ["default"]
    # removing again: not associated
    again = cloud.action(client, server, {"removeSecurityGroup": {"name": "web"}})
    assert again.status_code == 400 and "not associated" in again.json()["badRequest"]["message"]
    # unknown groups are 404 for both
    for action in ("addSecurityGroup", "removeSecurityGroup"):
        response = cloud.action(client, server, {action: {"name": "nope"}})
        assert response.status_code == 404, response.content
        assert "nope" in response.json()["itemNotFound"]["message"]


@pytest.mark.parametrize(("inner", "message"), [
    ({}, "Security group not specified"), ({"name": " "}, "Security group name cannot be empty"),
    ("web", "Missing parameter dict")])
def test_action_body_checks(cloud, inner, message):
    client = cloud.member()
    server = cloud.create_server(client, "vm")["id"]
    response = cloud.action(client, server, {"addSecurityGroup": inner})
    assert response.status_code == 400 and response.json()["badRequest"]["message"] == message


def test_server_without_ports(cloud):
    client = cloud.member()
    server = cloud.create_server(client, "vm", networks="none", version="2.37")["id"]
    # as in Nova, a server in no group (it has no port) shows no security_groups at all
    assert "security_groups" not in cloud.show(client, server)
    assert cloud.get(client, f"servers/{server}/os-security-groups").json() == {"security_groups": []}
    response = cloud.action(client, server, {"addSecurityGroup": {"name": "default"}})
    assert response.status_code == 404
    assert "could not be found as device id on any ports" in response.json()["itemNotFound"]["message"]


def test_a_group_in_use_by_a_server_cannot_be_deleted(cloud):
    client = cloud.member()
    web = group(client, "web")
    server = cloud.create_server(client, "vm", security_groups=[{"name": "web"}])["id"]
    response = client.delete(f"{SG}/{web['id']}")
    assert response.status_code == 409 and response.json()["NeutronError"]["type"] == "SecurityGroupInUse"
    # once the server is gone, the group can go
    assert cloud.delete(client, f"servers/{server}").status_code == 204
    assert client.delete(f"{SG}/{web['id']}").status_code == 204


def test_policies(cloud):
    owner = cloud.member()
    server = cloud.create_server(owner, "vm")["id"]
    # another project does not see the server at all
    stranger = cloud.member("demo2", "demo2")
    assert cloud.action(stranger, server, {"addSecurityGroup": {"name": "default"}}).status_code == 404
    assert cloud.get(stranger, f"servers/{server}/os-security-groups").status_code == 404
    # a reader of the project may list but not change
    reader = cloud.member("rita", "demo", roles=("reader",))
    assert cloud.get(reader, f"servers/{server}/os-security-groups").status_code == 200
    response = cloud.action(reader, server, {"addSecurityGroup": {"name": "default"}})
    assert response.status_code == 403
    assert response.json()["forbidden"]["message"] == (
        "Policy doesn't allow os_compute_api:os-security-groups:add to be performed.")



def test_a_server_without_ports_yet_shows_the_groups_it_asked_for_while_building(cloud):
    # given groups asked for by a server whose ports are not made yet
    from networks import secgroups

    web = group(cloud.member(), "web")
    uuid = "0f5c4d4e-0000-4000-8000-000000000001"
    secgroups.instance_security_groups_request(uuid, [web["id"]])
    # then while it builds they are its groups; once built, only its ports count
    assert [g.name for g in secgroups.security_groups_of_instances([uuid], building=[uuid])[uuid]] == ["web"]
    assert secgroups.security_groups_of_instances([uuid]) == {}


def test_the_requested_groups_are_read_back_outside_a_request_as_stored(cloud):
    # given groups asked for by two servers, the second's asked again with others (the upsert)
    from django.db import connections

    from cloudcore.core import prepared
    from networks import secgroups

    first, second = "0f5c4d4e-0000-4000-8000-000000000002", "0f5c4d4e-0000-4000-8000-000000000003"
    secgroups.instances_security_groups_request([first, second], ["g1", "g2"])
    secgroups.instances_security_groups_request([second], ["g3"])
    statements: list[str] = []

    def record(execute, sql, params, many, context):
        statements.append(sql)
        return execute(sql, params, many, context)

    # when the conductor reads them (no request scope: from the database)
    with connections["default"].execute_wrapper(record):
        read = [secgroups.requested_groups_for_instance(uuid) for uuid in (first, second, "not-a-server")]
    # then each server's are those it asked for last, none for a server that asked for none
    assert read == [["g1", "g2"], ["g3"], None]
    # one statement each, its SQL prepared once per process
    assert len(statements) == 3 and prepared._object_statements["networks.requested_groups"] is not None


def test_a_show_reads_the_fixed_ips_and_the_ports_groups_together_as_apart(cloud):
    # given servers with ports on two networks, groups on them, one building with no port
    from networks import secgroups
    from networks.models import Network, Subnet
    from networks.services import addresses_and_group_names, addresses_for_instances

    client = cloud.member()
    web, ssh = group(client, "web"), group(client, "ssh")
    second = Network.objects.create(name="second-net", project_id="admin", shared=True)
    Subnet.objects.create(network=second, name="second-subnet", project_id="admin", ip_version=4,
                          cidr="10.1.0.0/24", gateway_ip="10.1.0.1")
    both = cloud.create_server(client, "both", networks=[{"uuid": cloud.network_id}, {"uuid": second.id}],
                               security_groups=[{"name": "web"}, {"name": ssh["id"]}, {"name": "default"}])
    one = cloud.create_server(client, "one", networks="demo-net")
    building = "0f5c4d4e-0000-4000-8000-000000000002"
    secgroups.instance_security_groups_request(building, [web["id"]])
    uuids = [both["id"], one["id"], building]
    # when their addresses and group names are read together, for a page and for each one
    expected_groups = {uuid: [g.name for g in groups] for uuid, groups in
                       secgroups.security_groups_of_instances(uuids, building=[building]).items()}
    together = addresses_and_group_names(uuids, building=[building])
    # then they are what the two reads apart give, in the same order
    assert together == (addresses_for_instances(uuids), expected_groups)
    for uuid in uuids:
        alone = addresses_and_group_names([uuid], building=[building])
        assert alone == ({k: v for k, v in together[0].items() if k == uuid},
                         {k: v for k, v in together[1].items() if k == uuid})
    assert sorted(together[1][both["id"]]) == ["default", "ssh", "web"] and together[1][building] == ["web"]
    assert sorted(together[0][both["id"]]) == ["demo-net", "second-net"]
    assert list(together[0][one["id"]]) == ["demo-net"]
