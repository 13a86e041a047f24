"""Neutron's ``/v2.0/quotas`` through HTTP: a project's limits, defaults and details, the admin's
listing, updates and deletes with their policies, and the limits enforced on create."""
from __future__ import annotations

from typing import Any

import pytest
from django.test import override_settings
from rest_framework.test import APIClient

from tests.apihelpers import admin_client, auth_client, make_identity

pytestmark = pytest.mark.django_db

Q = "/network/v2.0/quotas"
NEUTRON_DEFAULTS = {"network": 100, "subnet": 100, "subnetpool": -1, "port": 500, "router": 10, "floatingip": 50,
                    "security_group": 10, "security_group_rule": 100, "rbac_policy": 10}


def member(name: str = "alice", project: str = "demo") -> tuple[APIClient, str]:
    user, proj = make_identity(name, project=project, roles=["member"])
    return auth_client(user, proj), proj.id


def error(response: Any) -> tuple[int, str, str]:
    body = response.json()["NeutronError"]
    return response.status_code, body["type"], body["message"]


def test_a_project_reads_its_own_quota_and_defaults_but_not_anothers() -> None:
    # given a member of a project without quotas of its own
    client, project_id = member()
    _other, other_id = member("bob", project="demo2")
    # when it reads its quota and the defaults
    own = client.get(f"{Q}/{project_id}")
    default = client.get(f"{Q}/{project_id}/default")
    # then both are Neutron's defaults
    assert own.status_code == 200 and own.json() == {"quota": NEUTRON_DEFAULTS}
    assert default.status_code == 200 and default.json() == {"quota": NEUTRON_DEFAULTS}
    # and another project's quota is refused
    assert client.get(f"{Q}/{other_id}").status_code == 403
    # and only an admin lists quotas
    assert error(client.get(Q))[:2] == (403, "AdminRequired")


def test_admin_updates_lists_and_deletes_a_projects_quota() -> None:
    admin = admin_client()
    client, project_id = member()
    # when the admin sets two limits (openstacksdk also sends the project's id)
    response = admin.put(f"{Q}/{project_id}", {"quota": {"network": 7, "port": "-1", "project_id": project_id}},
                         format="json")
    # then the answer carries every resource with the new ones
    assert response.status_code == 200, response.content
    assert response.json() == {"quota": {**NEUTRON_DEFAULTS, "network": 7, "port": -1}}
    # and the project reads them back; the admin's listing names it
    assert client.get(f"{Q}/{project_id}").json()["quota"]["network"] == 7
    listing = admin.get(Q).json()["quotas"]
    assert [(q["project_id"], q["tenant_id"], q["network"]) for q in listing] == [(project_id, project_id, 7)]
    # and the project may not change its own quota
    assert client.put(f"{Q}/{project_id}", {"quota": {"network": 1000}}, format="json").status_code == 403
    assert client.delete(f"{Q}/{project_id}").status_code == 403
    # when the admin deletes it: defaults again, listing empty, a second delete is 404
    assert admin.delete(f"{Q}/{project_id}").status_code == 204
    assert client.get(f"{Q}/{project_id}").json() == {"quota": NEUTRON_DEFAULTS}
    assert admin.get(Q).json() == {"quotas": []}
    assert error(admin.delete(f"{Q}/{project_id}"))[:2] == (404, "TenantQuotaNotFound")


@pytest.mark.parametrize("body", [{"quota": {"networks": 3}}, {"quota": {"network": -2}},
                                  {"quota": {"network": "many"}}, {"quota": {"network": 2**31}}, {"nope": {}}])
def test_bad_updates_are_400(body: dict[str, Any]) -> None:
    _client, project_id = member()
    response = admin_client().put(f"{Q}/{project_id}", body, format="json")
    assert error(response)[:2] == (400, "HTTPBadRequest")


def test_details_count_what_the_project_holds() -> None:
    # given a project with a network, a subnet and a port
    client, project_id = member()
    net = client.post("/network/v2.0/networks", {"network": {"name": "n"}}, format="json").json()["network"]
    assert client.post("/network/v2.0/subnets", {"subnet": {"network_id": net["id"], "cidr": "10.9.0.0/24",
                                                            "ip_version": 4}}, format="json").status_code == 201
    assert client.post("/network/v2.0/ports", {"port": {"network_id": net["id"]}}, format="json").status_code == 201
    # when it reads the details
    details = client.get(f"{Q}/{project_id}/details").json()["quota"]
    # then each resource has its limit, what is used and nothing reserved
    assert set(details) == set(NEUTRON_DEFAULTS)
    assert details["network"] == {"limit": 100, "used": 1, "reserved": 0}
    assert details["subnet"] == {"limit": 100, "used": 1, "reserved": 0}
    assert details["port"] == {"limit": 500, "used": 1, "reserved": 0}
    # the port made the default security group with its four rules
    assert details["security_group"]["used"] == 1 and details["security_group_rule"]["used"] == 4


def test_check_limit_refuses_a_limit_below_usage() -> None:
    client, project_id = member()
    assert client.post("/network/v2.0/networks", {"network": {"name": "n"}}, format="json").status_code == 201
    admin = admin_client()
    response = admin.put(f"{Q}/{project_id}", {"quota": {"network": 0, "check_limit": True}}, format="json")
    assert error(response)[:2] == (400, "HTTPBadRequest")
    # without check_limit Neutron stores it
    assert admin.put(f"{Q}/{project_id}", {"quota": {"network": 0}}, format="json").status_code == 200


def test_network_subnet_and_port_creates_are_held_to_the_projects_limits() -> None:
    # given a project allowed one network, one subnet and one port
    client, project_id = member()
    admin = admin_client()
    assert admin.put(f"{Q}/{project_id}", {"quota": {"network": 1, "subnet": 1, "port": 1}},
                     format="json").status_code == 200
    net = client.post("/network/v2.0/networks", {"network": {"name": "n"}}, format="json").json()["network"]
    subnet = {"subnet": {"network_id": net["id"], "cidr": "10.8.0.0/24", "ip_version": 4}}
    assert client.post("/network/v2.0/subnets", subnet, format="json").status_code == 201
    assert client.post("/network/v2.0/ports", {"port": {"network_id": net["id"]}}, format="json").status_code == 201
    # when it creates one more of each, then each is 409 OverQuota in Neutron's words
    over = client.post("/network/v2.0/networks", {"network": {"name": "m"}}, format="json")
    assert error(over) == (409, "OverQuota", "Quota exceeded for resources: ['network'].")
    subnet["subnet"]["cidr"] = "10.8.1.0/24"
    assert error(client.post("/network/v2.0/subnets", subnet, format="json")) == (
        409, "OverQuota", "Quota exceeded for resources: ['subnet'].")
    assert error(client.post("/network/v2.0/ports", {"port": {"network_id": net["id"]}}, format="json")) == (
        409, "OverQuota", "Quota exceeded for resources: ['port'].")
    # and nothing was made
    assert client.get(f"{Q}/{project_id}/details").json()["quota"]["network"]["used"] == 1


@override_settings(QUOTA_SECURITY_GROUP=2)
def test_security_group_limit_is_the_projects_own_over_the_setting() -> None:
    # given the setting's default of 2 groups (default + one) and a project raised to 3
    client, project_id = member()
    other, _ = member("bob", project="demo2")
    assert client.get(f"{Q}/{project_id}").json()["quota"]["security_group"] == 2
    admin_client().put(f"{Q}/{project_id}", {"quota": {"security_group": 3}}, format="json")
    sg = "/network/v2.0/security-groups"
    # then it makes two groups besides default and is refused the third
    for name in ("a", "b"):
        assert client.post(sg, {"security_group": {"name": name}}, format="json").status_code == 201
    assert error(client.post(sg, {"security_group": {"name": "c"}}, format="json"))[:2] == (409, "OverQuota")
    # while another project keeps the setting's 2
    assert other.post(sg, {"security_group": {"name": "a"}}, format="json").status_code == 201
    assert error(other.post(sg, {"security_group": {"name": "b"}}, format="json"))[:2] == (409, "OverQuota")


def test_extensions_list_quotas() -> None:
    client, _ = member()
    aliases = {e["alias"] for e in client.get("/network/v2.0/extensions").json()["extensions"]}
    assert {"quotas", "quota_details"} <= aliases
