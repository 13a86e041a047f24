"""Server groups: the API per microversion, quotas, and the scheduler honouring each policy on
boot and on a move (the shared cloud: compute1/compute2 in cell1, compute3/compute4 in cell2)."""
from __future__ import annotations

from typing import Any

import pytest

from tests.cloud import Cloud

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])


def make_group(cloud: Cloud, client: Any, policy: str, *, rules: dict[str, Any] | None = None,
               version: str = "2.64", name: str = "g1") -> dict[str, Any]:
    body: dict[str, Any] = {"name": name, "policy": policy}
    if rules:
        body["rules"] = rules
    response = cloud.post(client, "os-server-groups", {"server_group": body}, version=version)
    assert response.status_code == 200, response.content
    return response.json()["server_group"]


def boot_in(cloud: Cloud, client: Any, group_id: str, name: str, **fields: Any) -> dict[str, Any]:
    server = cloud.create_server(client, name, hints={"group": group_id}, **fields)
    return cloud.show(cloud.admin(), server["id"], version="2.71")


def test_the_body_follows_the_microversion(cloud: Cloud) -> None:
    client = cloud.member()
    old = cloud.post(client, "os-server-groups", {"server_group": {"name": "old", "policies": ["affinity"]}},
                     version="2.1")
    assert old.status_code == 200, old.content
    assert set(old.json()["server_group"]) == {"id", "name", "policies", "members", "metadata"}
    owned = cloud.get(client, f"os-server-groups/{old.json()['server_group']['id']}", version="2.13").json()
    assert owned["server_group"]["project_id"] and owned["server_group"]["user_id"]
    new = make_group(cloud, client, "anti-affinity", rules={"max_server_per_host": 2})
    assert set(new) == {"id", "name", "policy", "rules", "members", "project_id", "user_id"}
    assert (new["policy"], new["rules"], new["members"]) == ("anti-affinity", {"max_server_per_host": 2}, [])
    listed = cloud.get(client, "os-server-groups", version="2.64").json()["server_groups"]
    assert {g["id"] for g in listed} == {old.json()["server_group"]["id"], new["id"]}
    assert cloud.delete(client, f"os-server-groups/{new['id']}", version="2.64").status_code == 204
    assert cloud.get(client, f"os-server-groups/{new['id']}", version="2.64").status_code == 404


@pytest.mark.parametrize(("version", "body"), [
    ("2.14", {"name": "g", "policies": ["soft-affinity"]}),          # soft policies come at 2.15
    ("2.1", {"name": "g", "policies": ["affinity", "anti-affinity"]}),
    ("2.64", {"name": "g", "policies": ["affinity"]}),               # the old shape is gone at 2.64
    ("2.64", {"name": "g", "policy": "affinity", "rules": {"max_server_per_host": 2}}),
    ("2.64", {"name": "g", "policy": "anti-affinity", "rules": {"max_server_per_host": 0}}),
    ("2.64", {"name": "g", "policy": "anti-affinity", "rules": {"colour": 1}}),
    ("2.64", {"name": "g", "policy": "spread"}),
    ("2.64", {"name": "", "policy": "affinity"}),
])
def test_bad_groups_are_400(cloud: Cloud, version: str, body: dict[str, Any]) -> None:
    response = cloud.post(cloud.member(), "os-server-groups", {"server_group": body}, version=version)
    assert response.status_code == 400, response.content


def test_other_projects_groups_are_hidden_but_all_projects_shows_them_to_admins(cloud: Cloud) -> None:
    group = make_group(cloud, cloud.member(), "affinity")
    other = cloud.member("demo2", "demo2")
    assert cloud.get(other, f"os-server-groups/{group['id']}", version="2.64").status_code == 404
    assert cloud.get(other, "os-server-groups?all_projects=True", version="2.64").json()["server_groups"] == []
    admin_view = cloud.get(cloud.admin(), "os-server-groups?all_projects=True", version="2.64").json()
    assert [g["id"] for g in admin_view["server_groups"]] == [group["id"]]


def test_group_quota(cloud: Cloud, settings: Any) -> None:
    from servers.services.quotas import built_in_defaults

    client = cloud.member()
    for index in range(built_in_defaults()["server_groups"]):
        make_group(cloud, client, "affinity", name=f"g{index}")
    refused = cloud.post(client, "os-server-groups", {"server_group": {"name": "one-too-many", "policy": "affinity"}},
                         version="2.64")
    assert refused.status_code == 403
    assert refused.json()["forbidden"]["message"] == "Quota exceeded, too many server groups."


def test_anti_affinity_spreads_and_refuses_a_host_already_used(cloud: Cloud) -> None:
    client = cloud.member()
    group = make_group(cloud, client, "anti-affinity")
    first = boot_in(cloud, client, group["id"], "a1", availability_zone="az1")
    second = boot_in(cloud, client, group["id"], "a2", availability_zone="az1")
    assert {first["status"], second["status"]} == {"ACTIVE"}
    assert first["OS-EXT-SRV-ATTR:host"] != second["OS-EXT-SRV-ATTR:host"]
    assert first["server_groups"] == [group["id"]]
    shown = cloud.get(client, f"os-server-groups/{group['id']}", version="2.64").json()["server_group"]
    assert sorted(shown["members"]) == sorted([first["id"], second["id"]])
    # az1 has two hosts, both used by the group: a third member has no valid host
    third = boot_in(cloud, client, group["id"], "a3", availability_zone="az1")
    assert third["status"] == "ERROR"
    assert "There are not enough hosts available" in third["fault"]["message"]
    # and a cold migration cannot put a member next to another one
    assert cloud.action(cloud.admin(), first["id"], {"migrate": None}).status_code == 202
    after = cloud.show(cloud.admin(), first["id"])
    assert after["status"] == "ACTIVE" and after["OS-EXT-SRV-ATTR:host"] == first["OS-EXT-SRV-ATTR:host"]


def test_anti_affinity_rule_allows_that_many_per_host(cloud: Cloud) -> None:
    client = cloud.member()
    group = make_group(cloud, client, "anti-affinity", rules={"max_server_per_host": 2})
    hosts = [boot_in(cloud, client, group["id"], f"r{i}", availability_zone="az1")["OS-EXT-SRV-ATTR:host"]
             for i in range(4)]
    assert sorted(hosts.count(h) for h in set(hosts)) == [2, 2]


def test_affinity_keeps_members_together(cloud: Cloud) -> None:
    client = cloud.member()
    group = make_group(cloud, client, "affinity")
    hosts = {boot_in(cloud, client, group["id"], f"t{i}")["OS-EXT-SRV-ATTR:host"] for i in range(3)}
    assert len(hosts) == 1


def test_soft_anti_affinity_spreads_without_failing(cloud: Cloud) -> None:
    client = cloud.member()
    group = make_group(cloud, client, "soft-anti-affinity")
    shown = [boot_in(cloud, client, group["id"], f"s{i}", availability_zone="az1") for i in range(3)]
    assert all(s["status"] == "ACTIVE" for s in shown)
    assert len({s["OS-EXT-SRV-ATTR:host"] for s in shown}) == 2


def test_group_hints_are_checked_and_unsupported_hints_refused(cloud: Cloud) -> None:
    client = cloud.member()
    for hints, fragment in (({"group": "not-a-uuid"}, "is not a 'uuid'"),
                            ({"group": "5a0c8f57-4bd1-4a4b-bdd7-0a6c20e0b2bb"}, "could not be found"),
                            ({"query": '[">=", "$free_ram_mb", 1024]'}, "query is not supported"),
                            ({"target_cell": "cell1"}, "target_cell is not supported")):
        refused = cloud.create_server(client, "hinted", hints=hints, expect=400)
        assert fragment in refused["badRequest"]["message"], (hints, refused)


def test_members_quota_and_deleted_members_leave(cloud: Cloud, settings: Any) -> None:
    client, admin = cloud.member(), cloud.admin()
    group = make_group(cloud, client, "soft-affinity")
    project_id = cloud.show(admin, boot_in(cloud, client, group["id"], "m0")["id"])["tenant_id"]
    response = cloud.put(admin, f"os-quota-sets/{project_id}", {"quota_set": {"server_group_members": 1}})
    assert response.status_code == 200, response.content
    refused = cloud.create_server(client, "m1", hints={"group": group["id"]}, expect=403)
    assert refused["forbidden"]["message"] == "Quota exceeded, too many servers in group"
    member = cloud.get(client, f"os-server-groups/{group['id']}", version="2.64").json()["server_group"]["members"][0]
    assert cloud.delete(client, f"servers/{member}").status_code == 204
    assert cloud.get(client, f"os-server-groups/{group['id']}", version="2.64").json()["server_group"]["members"] == []


def test_same_host_and_different_host_hints(cloud: Cloud) -> None:
    client = cloud.member()
    anchor = cloud.create_server(client, "anchor", availability_zone="az1")
    anchor_host = cloud.show(cloud.admin(), anchor["id"])["OS-EXT-SRV-ATTR:host"]
    near = cloud.create_server(client, "near", hints={"same_host": anchor["id"]})
    far = cloud.create_server(client, "far", availability_zone="az1", hints={"different_host": [anchor["id"]]})
    assert cloud.show(cloud.admin(), near["id"])["OS-EXT-SRV-ATTR:host"] == anchor_host
    assert cloud.show(cloud.admin(), far["id"])["OS-EXT-SRV-ATTR:host"] != anchor_host


def test_create_member_and_delete_are_notified_as_nova_does(cloud: Cloud) -> None:
    client = cloud.member()
    group = make_group(cloud, client, "anti-affinity", rules={"max_server_per_host": 2})
    servers = cloud.create_server(client, "pair", hints={"group": group["id"]}, min_count=2)
    assert servers  # two servers joined the group, one by one
    assert cloud.delete(client, f"os-server-groups/{group['id']}", version="2.64").status_code == 204
    sent = [(n["event_type"], n["publisher_id"].split(":")[0], n["payload"]["nova_object.data"])
            for n in cloud.notifications() if n["event_type"].startswith("server_group.")]
    assert [(event, publisher) for event, publisher, _ in sent] == [
        ("server_group.create", "nova-api"), ("server_group.add_member", "nova-api"),
        ("server_group.add_member", "nova-api"), ("server_group.delete", "nova-api")]
    created, first, second, deleted = (data for _, _, data in sent)
    assert (created["uuid"], created["policy"], created["policies"], created["members"]) == (
        group["id"], "anti-affinity", ["anti-affinity"], [])
    assert created["rules"] == {"max_server_per_host": "2"} and created["hosts"] is None
    assert len(first["members"]) == 1 and len(second["members"]) == 2 and second["members"][0] == first["members"][0]
    assert deleted["members"] == second["members"]
