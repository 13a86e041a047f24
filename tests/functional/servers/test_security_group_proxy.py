"""Nova's security group proxy (/os-security-groups, /os-security-group-rules, up to 2.35) over the
network service's groups, with nova-network's bodies and Nova's codes."""
from __future__ import annotations

import pytest

from tests.cloud import Cloud

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])


def test_group_crud_and_rules(cloud: Cloud) -> None:
    client = cloud.member()
    created = cloud.post(client, "os-security-groups", {"security_group": {"name": "web", "description": "w"}})
    assert created.status_code == 200, created.content
    group = created.json()["security_group"]
    assert group["name"] == "web" and group["rules"] == [] and group["tenant_id"]  # egress rules are not shown
    rule = cloud.post(client, "os-security-group-rules", {"security_group_rule": {
        "parent_group_id": group["id"], "ip_protocol": "tcp", "from_port": 22, "to_port": 22}})
    assert rule.status_code == 200, rule.content
    shown_rule = rule.json()["security_group_rule"]
    assert (shown_rule["ip_protocol"], shown_rule["from_port"], shown_rule["to_port"],
            shown_rule["ip_range"]) == ("tcp", 22, 22, {"cidr": "0.0.0.0/0"})
    icmp = cloud.post(client, "os-security-group-rules", {"security_group_rule": {
        "parent_group_id": group["id"], "ip_protocol": "icmp", "from_port": -1, "to_port": -1,
        "group_id": group["id"]}}).json()["security_group_rule"]
    assert icmp["group"] == {"name": "web", "tenant_id": group["tenant_id"]} and icmp["from_port"] == -1
    shown = cloud.get(client, f"os-security-groups/{group['id']}").json()["security_group"]
    assert sorted(r["ip_protocol"] for r in shown["rules"]) == ["icmp", "tcp"]
    # the network service sees the same group and rule
    neutron = cloud.get(client, f"/network/v2.0/security-groups/{group['id']}").json()["security_group"]
    assert any(r["port_range_min"] == 22 and r["direction"] == "ingress" for r in neutron["security_group_rules"])
    listed = cloud.get(client, "os-security-groups").json()["security_groups"]
    assert group["id"] in [g["id"] for g in listed]
    # offset/limit paging (the old APIs' paging); a bad value is 400
    assert [g["id"] for g in cloud.get(client, "os-security-groups?offset=1&limit=1").json()["security_groups"]] == [
        listed[1]["id"]]
    assert cloud.get(client, "os-security-groups?limit=x").status_code == 400
    updated = cloud.put(client, f"os-security-groups/{group['id']}",
                        {"security_group": {"name": "web2", "description": "x"}}).json()["security_group"]
    assert updated["name"] == "web2"
    assert cloud.delete(client, f"os-security-group-rules/{shown_rule['id']}").status_code == 202
    assert cloud.delete(client, f"os-security-group-rules/{shown_rule['id']}").status_code == 404
    assert cloud.delete(client, f"os-security-groups/{group['id']}").status_code == 202
    assert cloud.get(client, f"os-security-groups/{group['id']}").status_code == 404
    assert cloud.get(client, "os-security-groups", version="2.36").status_code == 404


@pytest.mark.parametrize("rule, code", [
    ({"ip_protocol": "tcp", "from_port": 22, "to_port": 22, "parent_group_id": "nope"}, 400),  # not a uuid
    ({"ip_protocol": "tcp", "from_port": 22, "to_port": 22,
      "parent_group_id": "5a2c3f0e-0000-4000-8000-000000000000"}, 404),
    ({"ip_protocol": "foo", "from_port": 22, "to_port": 22}, 400),
    ({"ip_protocol": "tcp", "from_port": "abc", "to_port": 22}, 400),
    ({"ip_protocol": "tcp", "from_port": 22, "to_port": 99999}, 400),
    ({"ip_protocol": "tcp", "from_port": 30, "to_port": 22}, 400),
    ({"ip_protocol": "icmp", "from_port": 256, "to_port": 0}, 400),
    ({"ip_protocol": "tcp", "from_port": 22, "to_port": 22, "cidr": "not-a-cidr"}, 400),
])
def test_bad_rules(cloud: Cloud, rule: dict[str, object], code: int) -> None:
    client = cloud.member()
    group = cloud.post(client, "os-security-groups", {"security_group": {"name": "g", "description": "d"}}).json()
    body = {"parent_group_id": group["security_group"]["id"], **rule}
    assert cloud.post(client, "os-security-group-rules", {"security_group_rule": body}).status_code == code


def test_bad_groups_duplicate_rule_and_default(cloud: Cloud) -> None:
    client = cloud.member()
    for sg in ({"name": "", "description": "d"}, {"name": "n", "description": "  "}, {"name": "x" * 256,
               "description": "d"}, {"description": "d"}):
        assert cloud.post(client, "os-security-groups", {"security_group": sg}).status_code == 400, sg
    group = cloud.post(client, "os-security-groups", {"security_group": {"name": "g", "description": "d"}}).json()
    rule = {"parent_group_id": group["security_group"]["id"], "ip_protocol": "udp", "from_port": 53, "to_port": 53}
    assert cloud.post(client, "os-security-group-rules", {"security_group_rule": rule}).status_code == 200
    assert cloud.post(client, "os-security-group-rules", {"security_group_rule": rule}).status_code == 400
    default = [g for g in cloud.get(client, "os-security-groups").json()["security_groups"] if g["name"] == "default"]
    assert cloud.delete(client, f"os-security-groups/{default[0]['id']}").status_code == 400
