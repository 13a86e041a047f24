"""Neutron's ``/v2.0/quotas`` (limits, defaults, details with usage, admin overrides enforced) and
``/v2.0/network-ip-availabilities`` through HTTP."""
from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from identity.models import Project
from tests.apihelpers import admin_client, auth_client, make_identity

pytestmark = pytest.mark.django_db

NET = "/network/v2.0"
NEUTRON_DEFAULTS = {"network": 100, "subnet": 100, "port": 500, "router": 10, "floatingip": 50,
                    "security_group": 10, "security_group_rule": 100, "subnetpool": -1, "rbac_policy": 10}


def member(name: str = "alice", project: str = "demo") -> APIClient:
    user, proj = make_identity(name, project=project, roles=["member"])
    return auth_client(user, proj)


def error(response: Any) -> tuple[int, str, str]:
    body = response.json()["NeutronError"]
    return response.status_code, body["type"], body["message"]


def test_quotas_show_defaults_details_and_admin_overrides() -> None:
    client = member()
    project = Project.objects.get(name="demo").id
    admin = admin_client()
    # a project reads its limits (Neutron's defaults), the defaults, and its usage (.json as openstacksdk asks)
    assert client.get(f"{NET}/quotas/{project}").json()["quota"] == NEUTRON_DEFAULTS
    assert client.get(f"{NET}/quotas/{project}/default").json()["quota"] == NEUTRON_DEFAULTS
    client.post(f"{NET}/routers", {"router": {"name": "r"}}, format="json")
    details = client.get(f"{NET}/quotas/{project}/details.json").json()["quota"]
    assert details["router"] == {"limit": 10, "used": 1, "reserved": 0}
    # but not another project's, nor the list, nor a change
    other = Project.objects.create(name="elsewhere", domain_id="default").id
    assert client.get(f"{NET}/quotas/{other}").status_code == 403
    assert client.get(f"{NET}/quotas").status_code == 403
    assert client.put(f"{NET}/quotas/{project}", {"quota": {"router": 1}}, format="json").status_code == 403
    # an admin lowers the routers quota: the list shows the project, and the next router is refused
    updated = admin.put(f"{NET}/quotas/{project}", {"quota": {"router": 1, "network": -1}}, format="json")
    assert updated.status_code == 200, updated.content
    assert updated.json()["quota"] == {**NEUTRON_DEFAULTS, "router": 1, "network": -1}
    listed = admin.get(f"{NET}/quotas").json()["quotas"]
    assert [(q["project_id"], q["router"]) for q in listed] == [(project, 1)]
    assert error(client.post(f"{NET}/routers", {"router": {"name": "r2"}}, format="json")) == (
        409, "OverQuota", "Quota exceeded for resources: ['router'].")
    # bad values and unknown resources are 400
    assert admin.put(f"{NET}/quotas/{project}", {"quota": {"router": -5}}, format="json").status_code == 400
    assert admin.put(f"{NET}/quotas/{project}", {"quota": {"pools": 1}}, format="json").status_code == 400
    # delete: back to the defaults
    assert admin.delete(f"{NET}/quotas/{project}").status_code == 204
    assert client.get(f"{NET}/quotas/{project}").json()["quota"] == NEUTRON_DEFAULTS
    assert client.post(f"{NET}/routers", {"router": {"name": "r2"}}, format="json").status_code == 201


def test_network_ip_availability_counts_pools_and_allocations() -> None:
    client, admin = member(), admin_client()
    net = client.post(f"{NET}/networks", {"network": {"name": "n"}}, format="json").json()["network"]
    sub = client.post(f"{NET}/subnets", {"subnet": {"network_id": net["id"], "cidr": "10.9.0.0/29", "ip_version": 4}},
                      format="json").json()["subnet"]
    for _ in range(2):
        client.post(f"{NET}/ports", {"port": {"network_id": net["id"]}}, format="json")
    # a member may not look
    assert client.get(f"{NET}/network-ip-availabilities").status_code == 403
    # an admin sees the pool's 5 addresses (the gateway left out), 2 of them used
    shown = admin.get(f"{NET}/network-ip-availabilities/{net['id']}")
    assert shown.status_code == 200, shown.content
    body = shown.json()["network_ip_availability"]
    assert (body["network_id"], body["network_name"], body["total_ips"], body["used_ips"]) == (
        net["id"], "n", 5, 2)
    assert body["project_id"] == net["project_id"]
    assert body["subnet_ip_availability"] == [{"subnet_id": sub["id"], "subnet_name": "", "cidr": "10.9.0.0/29",
                                               "ip_version": 4, "total_ips": 5, "used_ips": 2}]
    listed = admin.get(f"{NET}/network-ip-availabilities", {"network_name": "n"}).json()
    assert [a["network_id"] for a in listed["network_ip_availabilities"]] == [net["id"]]
    assert admin.get(f"{NET}/network-ip-availabilities", {"ip_version": 6}).json()["network_ip_availabilities"] == []
    assert admin.get(f"{NET}/network-ip-availabilities/nope").status_code == 404
