"""Neutron's security groups and rules through HTTP: bodies, the default group, validation, codes,
quotas, policy, and the groups and allowed address pairs of ports."""
from __future__ import annotations

from typing import Any

import pytest
from django.test import override_settings
from rest_framework.test import APIClient

from tests.apihelpers import admin_client, auth_client, make_identity

pytestmark = pytest.mark.django_db

SG = "/network/v2.0/security-groups"
RULES = "/network/v2.0/security-group-rules"


def member(name: str = "alice", project: str = "demo", roles: tuple[str, ...] = ("member",)) -> APIClient:
    user, proj = make_identity(name, project=project, roles=list(roles))
    return auth_client(user, proj)


def create_group(client: APIClient, name: str = "web", **extra: Any) -> dict[str, Any]:
    response = client.post(SG, {"security_group": {"name": name, **extra}}, format="json")
    assert response.status_code == 201, response.content
    return response.json()["security_group"]


def add_rule(client: APIClient, group_id: str, **rule: Any) -> Any:
    return client.post(RULES, {"security_group_rule": {"security_group_id": group_id, **rule}}, format="json")


def error(response: Any) -> tuple[int, str, str]:
    body = response.json()["NeutronError"]
    assert body["detail"] == ""
    return response.status_code, body["type"], body["message"]


def shape(rule: dict[str, Any]) -> tuple[Any, ...]:
    return (rule["direction"], rule["ethertype"], rule["protocol"], rule["remote_ip_prefix"],
            rule["remote_group_id"] is not None)


def test_a_new_project_has_its_default_group_before_its_first_use() -> None:
    from identity.models import Project
    from networks.models import SecurityGroup, SecurityGroupRule

    # given a cloud admin
    admin = admin_client()
    # when a project is made through the identity API
    created = admin.post("/identity/v3/projects", {"project": {"name": "fresh"}}, format="json")
    assert created.status_code == 201, created.content
    project_id = created.json()["project"]["id"]
    # then its default group is there already, with Neutron's four rules: its first boots, arriving
    # together, do not each try to make it
    (group,) = SecurityGroup.objects.filter(project_id=project_id)
    assert (group.name, group.is_default) == ("default", True)
    assert SecurityGroupRule.objects.filter(security_group=group).count() == 4
    # and a name taken makes no project and no group
    again = admin.post("/identity/v3/projects", {"project": {"name": "fresh"}}, format="json")
    assert again.status_code == 409
    assert SecurityGroup.objects.filter(project_id=project_id).count() == 1
    # and a project row made in the ORM gets one too, a project loaded from a fixture (raw) none
    assert SecurityGroup.objects.filter(project_id=Project.objects.create(name="orm").id, is_default=True).exists()
    raw = Project(name="fixture")
    raw.save_base(raw=True)  # as loaddata saves it
    assert not SecurityGroup.objects.filter(project_id=raw.id).exists()


def test_default_group_made_on_first_use_with_neutrons_rules() -> None:
    from networks.models import SecurityGroup

    # given a project that never used security groups (made before projects got theirs when made)
    client = member()
    SecurityGroup.objects.all().delete()
    # when it lists its groups
    groups = client.get(SG).json()["security_groups"]
    # then there is exactly one, "default", with Neutron's four rules
    assert [g["name"] for g in groups] == ["default"]
    default = groups[0]
    assert default["description"] == "Default security group" and default["stateful"] is True
    assert default["project_id"] == default["tenant_id"] and default["tags"] == []
    assert default["revision_number"] >= 1 and default["created_at"].endswith("Z")
    assert sorted(shape(r) for r in default["security_group_rules"]) == [
        ("egress", "IPv4", None, None, False), ("egress", "IPv6", None, None, False),
        ("ingress", "IPv4", None, None, True), ("ingress", "IPv6", None, None, True)]
    assert {r["remote_group_id"] for r in default["security_group_rules"] if r["direction"] == "ingress"} == {
        default["id"]}
    # and listing again does not make another
    assert len(client.get(SG).json()["security_groups"]) == 1


def test_group_crud_bodies_filters_and_fields() -> None:
    client = member()
    group = create_group(client, "web", description="web servers", stateful=False)
    # a new group has the two egress rules only
    assert sorted(shape(r) for r in group["security_group_rules"]) == [
        ("egress", "IPv4", None, None, False), ("egress", "IPv6", None, None, False)]
    assert group["stateful"] is False and group["description"] == "web servers"
    shown = client.get(f"{SG}/{group['id']}").json()["security_group"]
    assert shown["id"] == group["id"] and shown["revision_number"] == group["revision_number"]
    # filters and fields=
    assert [g["name"] for g in client.get(SG, {"name": "web"}).json()["security_groups"]] == ["web"]
    assert client.get(SG, {"name": "nope"}).json()["security_groups"] == []
    only = client.get(f"{SG}?fields=id&fields=name").json()["security_groups"]
    assert all(set(g) == {"id", "name"} for g in only)
    # update bumps the revision
    updated = client.put(f"{SG}/{group['id']}", {"security_group": {"name": "web2", "description": "d"}},
                         format="json")
    assert updated.status_code == 200
    assert updated.json()["security_group"]["name"] == "web2"
    assert updated.json()["security_group"]["revision_number"] == group["revision_number"] + 1
    # unknown attributes are refused, not dropped
    assert client.put(f"{SG}/{group['id']}", {"security_group": {"color": "red"}}, format="json").status_code == 400
    # delete
    assert client.delete(f"{SG}/{group['id']}").status_code == 204
    code, kind, message = error(client.get(f"{SG}/{group['id']}"))
    assert (code, kind) == (404, "SecurityGroupNotFound") and group["id"] in message


def test_tags_on_a_group() -> None:
    client = member()
    group = create_group(client)
    assert client.put(f"{SG}/{group['id']}/tags/blue").status_code == 201
    assert client.put(f"{SG}/{group['id']}/tags", {"tags": ["a", "b"]}, format="json").json() == {"tags": ["a", "b"]}
    assert client.get(f"{SG}/{group['id']}").json()["security_group"]["tags"] == ["a", "b"]
    assert [g["id"] for g in client.get(SG, {"tags": "a"}).json()["security_groups"]] == [group["id"]]
    assert client.get(f"{SG}/{group['id']}/tags/blue").status_code == 404
    assert client.delete(f"{SG}/{group['id']}/tags/a").status_code == 204
    assert client.get(f"{SG}/{group['id']}/tags").json() == {"tags": ["b"]}


def test_default_group_rules() -> None:
    client = member()
    default = client.get(SG).json()["security_groups"][0]
    # it cannot be renamed, nor deleted by its project; nobody may create another "default"
    code, kind, _ = error(client.put(f"{SG}/{default['id']}", {"security_group": {"name": "x"}}, format="json"))
    assert (code, kind) == (409, "SecurityGroupCannotUpdateDefault")
    code, kind, _ = error(client.delete(f"{SG}/{default['id']}"))
    assert (code, kind) == (409, "SecurityGroupCannotRemoveDefault")
    code, kind, _ = error(client.post(SG, {"security_group": {"name": "default"}}, format="json"))
    assert (code, kind) == (409, "SecurityGroupDefaultAlreadyExists")


def test_other_projects_groups_are_404_and_admin_sees_all() -> None:
    alice, bob = member("alice", "demo"), member("bob", "demo2")
    group = create_group(alice)
    assert bob.get(f"{SG}/{group['id']}").status_code == 404
    assert group["id"] not in [g["id"] for g in bob.get(SG).json()["security_groups"]]
    assert add_rule(bob, group["id"], direction="ingress").status_code == 404
    assert group["id"] in [g["id"] for g in admin_client().get(SG).json()["security_groups"]]


def test_a_reader_cannot_create() -> None:
    reader = member("rita", "demo", roles=("reader",))
    assert reader.get(SG).status_code == 200
    response = reader.post(SG, {"security_group": {"name": "x"}}, format="json")
    assert response.status_code == 403 and "create_security_group" in response.json()["NeutronError"]["message"]


def test_rule_create_show_delete_and_duplicates() -> None:
    client = member()
    group = create_group(client)
    response = add_rule(client, group["id"], direction="ingress", protocol="tcp", port_range_min=22,
                        port_range_max=22, remote_ip_prefix="10.0.0.0/8", description="ssh")
    assert response.status_code == 201, response.content
    rule = response.json()["security_group_rule"]
    assert (rule["protocol"], rule["port_range_min"], rule["port_range_max"]) == ("tcp", 22, 22)
    assert rule["ethertype"] == "IPv4" and rule["normalized_cidr"] == "10.0.0.0/8"
    assert rule["project_id"] == group["project_id"] and rule["description"] == "ssh"
    assert client.get(f"{RULES}/{rule['id']}").json()["security_group_rule"]["id"] == rule["id"]
    # the group shows it and its revision moved on
    shown = client.get(f"{SG}/{group['id']}").json()["security_group"]
    assert rule["id"] in [r["id"] for r in shown["security_group_rules"]]
    assert shown["revision_number"] > group["revision_number"]
    # the same rule again, even with the protocol as a number, is a 409 naming the existing rule
    again = add_rule(client, group["id"], direction="ingress", protocol="6", port_range_min=22, port_range_max=22,
                     remote_ip_prefix="10.0.0.0/8")
    code, kind, message = error(again)
    assert (code, kind) == (409, "SecurityGroupRuleExists") and rule["id"] in message
    # "anywhere" is the same as no prefix for duplicates
    assert add_rule(client, group["id"], direction="ingress", protocol="udp").status_code == 201
    code, kind, _ = error(add_rule(client, group["id"], direction="ingress", protocol="udp",
                                   remote_ip_prefix="0.0.0.0/0"))
    assert (code, kind) == (409, "SecurityGroupRuleExists")
    # filters
    listed = client.get(RULES, {"security_group_id": group["id"], "protocol": "tcp"}).json()["security_group_rules"]
    assert [r["id"] for r in listed] == [rule["id"]]
    # delete
    assert client.delete(f"{RULES}/{rule['id']}").status_code == 204
    code, kind, _ = error(client.get(f"{RULES}/{rule['id']}"))
    assert (code, kind) == (404, "SecurityGroupRuleNotFound")


@pytest.mark.parametrize(("rule", "kind"), [
    ({"direction": "sideways"}, "HTTPBadRequest"),
    ({"direction": "ingress", "ethertype": "IPv5"}, "SecurityGroupRuleInvalidEtherType"),
    ({"direction": "ingress", "protocol": "carrier-pigeon"}, "SecurityGroupRuleInvalidProtocol"),
    ({"direction": "ingress", "protocol": "256"}, "SecurityGroupRuleInvalidProtocol"),
    ({"direction": "ingress", "port_range_min": 22, "port_range_max": 22}, "SecurityGroupProtocolRequiredWithPorts"),
    ({"direction": "ingress", "protocol": "tcp", "port_range_min": 90, "port_range_max": 80},
     "SecurityGroupInvalidPortRange"),
    ({"direction": "ingress", "protocol": "tcp", "port_range_min": 0, "port_range_max": 80},
     "SecurityGroupInvalidPortValue"),
    ({"direction": "ingress", "protocol": "tcp", "port_range_min": 1, "port_range_max": 70000},
     "SecurityGroupInvalidPortValue"),
    ({"direction": "ingress", "protocol": "icmp", "port_range_min": 300}, "SecurityGroupInvalidIcmpValue"),
    ({"direction": "ingress", "protocol": "icmp", "port_range_max": 0}, "SecurityGroupMissingIcmpType"),
    ({"direction": "ingress", "protocol": "gre", "port_range_min": 1, "port_range_max": 2},
     "SecurityGroupInvalidProtocolForPortRange"),
    ({"direction": "ingress", "remote_ip_prefix": "10.0.0.0/8", "remote_group_id": "GROUP"},
     "SecurityGroupRemoteGroupAndRemoteIpPrefix"),
    ({"direction": "ingress", "ethertype": "IPv6", "remote_ip_prefix": "10.0.0.0/8"},
     "SecurityGroupRuleParameterConflict"),
    ({"direction": "ingress", "remote_ip_prefix": "2001:db8::/32"}, "SecurityGroupRuleParameterConflict"),
    ({"direction": "ingress", "protocol": "ipv6-icmp"}, "SecurityGroupEthertypeConflictWithProtocol"),
    ({"direction": "ingress", "remote_ip_prefix": "not-a-cidr"}, "HTTPBadRequest"),
    ({"direction": "ingress", "colour": "red"}, "HTTPBadRequest"),
])
def test_invalid_rules_are_400(rule: dict[str, Any], kind: str) -> None:
    client = member()
    group = create_group(client)
    rule = {k: (group["id"] if v == "GROUP" else v) for k, v in rule.items()}
    code, got, _ = error(add_rule(client, group["id"], **rule))
    assert (code, got) == (400, kind)


def test_valid_protocol_forms() -> None:
    client = member()
    group = create_group(client)
    for rule in ({"protocol": "icmp", "port_range_min": 8, "port_range_max": 0},
                 {"protocol": "ICMP"}, {"protocol": "17", "port_range_min": 53, "port_range_max": 53},
                 {"protocol": "ipv6-icmp", "ethertype": "IPv6"}, {"protocol": "any", "remote_ip_prefix": "10.1.0.0/16"},
                 {"protocol": "tcp", "remote_group_id": group["id"]}):
        response = add_rule(client, group["id"], direction="ingress", **rule)
        assert response.status_code == 201, (rule, response.content)
    assert error(add_rule(client, group["id"], direction="ingress", remote_group_id="nope"))[:2] == (
        404, "SecurityGroupNotFound")
    assert error(add_rule(client, "nope", direction="ingress"))[:2] == (404, "SecurityGroupNotFound")


@override_settings(QUOTA_SECURITY_GROUP=3, QUOTA_SECURITY_GROUP_RULE=9)
def test_quotas_on_groups_and_rules() -> None:
    client = member()
    # default (made on first use) + 2 more reach the quota of 3 groups
    first, _second = create_group(client, "a"), create_group(client, "b")
    code, kind, message = error(client.post(SG, {"security_group": {"name": "c"}}, format="json"))
    assert (code, kind) == (409, "OverQuota") and "security_group" in message
    # 4 default rules + 2 + 2 egress rules = 8; one more fits, then 409
    assert add_rule(client, first["id"], direction="ingress", protocol="tcp", port_range_min=1,
                    port_range_max=1).status_code == 201
    code, kind, message = error(add_rule(client, first["id"], direction="ingress", protocol="tcp",
                                         port_range_min=2, port_range_max=2))
    assert (code, kind) == (409, "OverQuota") and "security_group_rule" in message


def test_default_quotas_are_neutrons() -> None:
    from django.conf import settings

    assert (settings.QUOTA_SECURITY_GROUP, settings.QUOTA_SECURITY_GROUP_RULE) == (10, 100)


# --- ports -------------------------------------------------------------------------------------------


def make_net(client: APIClient) -> str:
    net = client.post("/network/v2.0/networks", {"network": {"name": "n"}}, format="json").json()["network"]
    assert client.post("/network/v2.0/subnets", {"subnet": {"network_id": net["id"], "cidr": "192.168.7.0/24",
                                                            "ip_version": 4}}, format="json").status_code == 201
    return net["id"]


def test_port_security_groups_default_given_updated_and_in_use() -> None:
    client = member()
    net = make_net(client)
    default = client.get(SG).json()["security_groups"][0]["id"]
    # a port without security_groups is in the project's default group
    port = client.post("/network/v2.0/ports", {"port": {"network_id": net}}, format="json").json()["port"]
    assert port["security_groups"] == [default] and port["port_security_enabled"] is True
    # given groups are used as given
    web = create_group(client, "web")
    port2 = client.post("/network/v2.0/ports", {"port": {"network_id": net, "security_groups": [web["id"]]}},
                        format="json").json()["port"]
    assert port2["security_groups"] == [web["id"]]
    # and can be replaced; the filter on ports finds them
    updated = client.put(f"/network/v2.0/ports/{port['id']}", {"port": {"security_groups": [web["id"], default]}},
                         format="json").json()["port"]
    assert sorted(updated["security_groups"]) == sorted([web["id"], default])
    assert {p["id"] for p in client.get("/network/v2.0/ports", {"security_groups": web["id"]}).json()["ports"]} == {
        port["id"], port2["id"]}
    # a group in use cannot be deleted
    code, kind, message = error(client.delete(f"{SG}/{web['id']}"))
    assert (code, kind) == (409, "SecurityGroupInUse") and web["id"] in message
    # unknown or foreign groups are 404
    other = create_group(member("bob", "demo2"), "theirs")
    for bad in ("nope", other["id"]):
        response = client.post("/network/v2.0/ports", {"port": {"network_id": net, "security_groups": [bad]}},
                               format="json")
        assert error(response)[:2] == (404, "SecurityGroupNotFound")
    # no groups at all
    bare = client.post("/network/v2.0/ports", {"port": {"network_id": net, "security_groups": []}}, format="json")
    assert bare.json()["port"]["security_groups"] == []
    # once no port uses it, it can go
    client.put(f"/network/v2.0/ports/{port['id']}", {"port": {"security_groups": []}}, format="json")
    client.delete(f"/network/v2.0/ports/{port2['id']}")
    assert client.delete(f"{SG}/{web['id']}").status_code == 204


def test_port_security_disabled() -> None:
    client = member()
    net = make_net(client)
    port = client.post("/network/v2.0/ports", {"port": {"network_id": net, "port_security_enabled": False}},
                       format="json").json()["port"]
    assert port["port_security_enabled"] is False and port["security_groups"] == []
    web = create_group(client, "web")
    response = client.put(f"/network/v2.0/ports/{port['id']}", {"port": {"security_groups": [web["id"]]}},
                          format="json")
    assert response.status_code == 409
    grouped = client.post("/network/v2.0/ports", {"port": {"network_id": net}}, format="json").json()["port"]
    response = client.put(f"/network/v2.0/ports/{grouped['id']}", {"port": {"port_security_enabled": False}},
                          format="json")
    assert response.status_code == 409


def test_allowed_address_pairs() -> None:
    client = member()
    net = make_net(client)
    pairs = [{"ip_address": "10.9.0.0/24"}, {"ip_address": "192.168.7.200", "mac_address": "fa:16:3e:aa:bb:cc"}]
    port = client.post("/network/v2.0/ports", {"port": {"network_id": net, "allowed_address_pairs": pairs}},
                       format="json").json()["port"]
    assert port["allowed_address_pairs"] == [
        {"ip_address": "10.9.0.0/24", "mac_address": port["mac_address"]},
        {"ip_address": "192.168.7.200", "mac_address": "fa:16:3e:aa:bb:cc"}]
    assert client.get(f"/network/v2.0/ports/{port['id']}").json()["port"]["allowed_address_pairs"] == \
        port["allowed_address_pairs"]
    updated = client.put(f"/network/v2.0/ports/{port['id']}", {"port": {"allowed_address_pairs": []}},
                         format="json").json()["port"]
    assert updated["allowed_address_pairs"] == []
    for bad in ([{"mac_address": "fa:16:3e:00:00:01"}], [{"ip_address": "nope"}],
                [{"ip_address": "10.0.0.1"}, {"ip_address": "10.0.0.1"}], "10.0.0.1",
                [{"ip_address": "10.0.0.1", "mac_address": "zz"}],
                [{"ip_address": f"10.0.0.{n}"} for n in range(11)]):
        response = client.post("/network/v2.0/ports", {"port": {"network_id": net, "allowed_address_pairs": bad}},
                               format="json")
        assert response.status_code == 400, bad


def test_allowed_address_pairs_on_a_shared_network_need_its_owner() -> None:
    # Neutron's default: admin, or a member of the network's project
    admin = admin_client()
    shared = admin.post("/network/v2.0/networks", {"network": {"name": "s", "shared": True}}, format="json")
    net = shared.json()["network"]["id"]
    admin.post("/network/v2.0/subnets", {"subnet": {"network_id": net, "cidr": "10.3.0.0/24", "ip_version": 4}},
               format="json")
    client = member()
    assert client.post("/network/v2.0/ports", {"port": {"network_id": net}}, format="json").status_code == 201
    response = client.post("/network/v2.0/ports", {"port": {"network_id": net, "allowed_address_pairs": [
        {"ip_address": "10.3.0.99"}]}}, format="json")
    assert response.status_code == 403


def test_unknown_port_attributes_are_refused() -> None:
    client = member()
    net = make_net(client)
    response = client.post("/network/v2.0/ports", {"port": {"network_id": net, "dns_name": "x"}}, format="json")
    code, _, message = error(response)
    assert code == 400 and "dns_name" in message
    port = client.post("/network/v2.0/ports", {"port": {"network_id": net, "description": "d"}},
                       format="json").json()["port"]
    assert port["description"] == "d"
    response = client.put(f"/network/v2.0/ports/{port['id']}", {"port": {"qos_policy_id": "x"}}, format="json")
    assert response.status_code == 400


def test_extensions_list_security_groups() -> None:
    aliases = {e["alias"] for e in member().get("/network/v2.0/extensions").json()["extensions"]}
    assert {"security-group", "allowed-address-pairs", "port-security", "stateful-security-group"} <= aliases


def test_malformed_values_are_400_not_500() -> None:
    client = member()
    net = make_net(client)
    assert client.get(SG, {"revision_number": "abc"}).status_code == 400
    assert client.get(RULES, {"port_range_min": "abc"}).status_code == 400
    assert client.post(SG, {"security_group": {"name": "x", "stateful": "maybe"}}, format="json").status_code == 400
    assert client.post(SG, {"security_group": {"name": "x", "description": "d" * 256}},
                       format="json").status_code == 400
    response = admin_client().post("/network/v2.0/ports", {"port": {"network_id": net, "binding:profile": "x"}},
                                   format="json")
    assert response.status_code == 400


def test_an_admin_may_delete_a_projects_default_group() -> None:
    default = member().get(SG).json()["security_groups"][0]
    assert admin_client().delete(f"{SG}/{default['id']}").status_code == 204


def test_port_fixed_ips_update_fields_filter_and_bulk_create() -> None:
    client = member()
    net = make_net(client)
    second = client.post("/network/v2.0/subnets", {"subnet": {"network_id": net, "cidr": "192.168.8.0/24",
                                                              "ip_version": 4}}, format="json").json()["subnet"]
    port = client.post("/network/v2.0/ports", {"port": {"network_id": net}}, format="json").json()["port"]
    assert len(port["fixed_ips"]) == 2
    kept = next(f for f in port["fixed_ips"] if f["subnet_id"] != second["id"])
    # update to one address kept and one chosen on the second subnet
    body = {"port": {"fixed_ips": [kept, {"subnet_id": second["id"], "ip_address": "192.168.8.77"}]}}
    updated = client.put(f"/network/v2.0/ports/{port['id']}", body, format="json")
    assert updated.status_code == 200, updated.content
    assert sorted(f["ip_address"] for f in updated.json()["port"]["fixed_ips"]) == sorted(
        [kept["ip_address"], "192.168.8.77"])
    # filter by address, select fields
    found = client.get("/network/v2.0/ports?fixed_ips=ip_address%3D192.168.8.77&fields=id&fields=mac_address")
    assert found.json()["ports"] == [{"id": port["id"], "mac_address": port["mac_address"]}]
    assert set(client.get(f"/network/v2.0/ports/{port['id']}?fields=name").json()["port"]) == {"name"}
    # bulk: both or none
    bulk = client.post("/network/v2.0/ports", {"ports": [{"network_id": net, "name": "a"},
                                                         {"network_id": net, "name": "b"}]}, format="json")
    assert bulk.status_code == 201 and [p["name"] for p in bulk.json()["ports"]] == ["a", "b"]
    bad = client.post("/network/v2.0/ports", {"ports": [{"network_id": net, "name": "c"},
                                                        {"network_id": "nope", "name": "d"}]}, format="json")
    assert bad.status_code == 404
    assert not [p for p in client.get("/network/v2.0/ports").json()["ports"] if p["name"] == "c"]
