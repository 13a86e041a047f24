"""Per-project quotas: /os-quota-sets, /os-quota-class-sets, GET /limits, and their enforcement
on boot, resize, unshelve, key pairs and server metadata (servers/services/quotas.py)."""
from __future__ import annotations

from typing import Any

import pytest

from identity.models import Project
from servers.models import QuotaClass, QuotaLimit
from tests.cloud import Cloud

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])
PUBLIC_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFSDIj1b61Zm/8oFq6rs4ssESlCX1P4s9wZtQhv5zI05 t@example"


def demo_id(cloud: Cloud) -> str:
    cloud.member()
    return Project.objects.get(name="demo").id


def set_quota(cloud: Cloud, project_id: str, version: str = "2.1", **limits: Any) -> Any:
    return cloud.put(cloud.admin(), f"os-quota-sets/{project_id}", {"quota_set": limits}, version=version)


def test_show_defaults_and_resources_per_microversion(cloud: Cloud) -> None:
    member, project = cloud.member(), demo_id(cloud)
    # given no project row: the default class (settings, Nova's defaults) answers
    shown = cloud.get(member, f"os-quota-sets/{project}").json()["quota_set"]
    assert shown["id"] == project and shown["instances"] == 10 and shown["cores"] == 20
    assert shown["ram"] == 51200 and shown["key_pairs"] == 100 and shown["server_groups"] == 10
    assert shown["server_group_members"] == 10 and shown["metadata_items"] == 128
    # the nova-network proxies carry Nova's defaults
    assert (shown["fixed_ips"], shown["floating_ips"], shown["security_groups"], shown["security_group_rules"]) == (
        -1, 10, 10, 20)
    assert shown["injected_files"] == 5
    assert "networks" not in shown
    at_236 = cloud.get(member, f"os-quota-sets/{project}", version="2.36").json()["quota_set"]
    assert "fixed_ips" not in at_236 and "security_group_rules" not in at_236 and "injected_files" in at_236
    at_257 = cloud.get(member, f"os-quota-sets/{project}", version="2.57").json()["quota_set"]
    assert "injected_files" not in at_257 and "injected_file_path_bytes" not in at_257
    assert sorted(at_257) == sorted(["id", "instances", "cores", "ram", "metadata_items", "key_pairs",
                                     "server_groups", "server_group_members"])
    defaults = cloud.get(member, f"os-quota-sets/{project}/defaults", version="2.57").json()["quota_set"]
    assert defaults == at_257


def test_member_sees_own_project_not_another_and_cannot_update(cloud: Cloud) -> None:
    member, project = cloud.member(), demo_id(cloud)
    other = cloud.member("alt", project="alt")
    assert cloud.get(other, f"os-quota-sets/{project}").status_code == 403
    assert cloud.get(other, f"os-quota-sets/{project}/detail").status_code == 403
    assert cloud.get(other, f"os-quota-sets/{project}/defaults").status_code == 200
    assert cloud.put(member, f"os-quota-sets/{project}", {"quota_set": {"instances": 3}}).status_code == 403
    assert cloud.delete(member, f"os-quota-sets/{project}").status_code == 403
    assert cloud.get(member, "os-quota-class-sets/default").status_code == 403
    assert not QuotaLimit.objects.exists()


def test_update_delete_and_validation(cloud: Cloud) -> None:
    project = demo_id(cloud)
    # when an admin sets instances (a string integer is accepted as Nova does) and key pairs
    response = set_quota(cloud, project, instances="3", key_pairs=-1)
    assert response.status_code == 200
    body = response.json()["quota_set"]
    assert "id" not in body and body["instances"] == 3 and body["key_pairs"] == -1 and body["cores"] == 20
    assert QuotaLimit.objects.get(project_id=project, resource="instances").hard_limit == 3
    assert cloud.get(cloud.member(), f"os-quota-sets/{project}").json()["quota_set"]["instances"] == 3
    # bad values are 400
    for bad in ({"instances": "x"}, {"instances": -2}, {"instances": 1.5}, {"bogus": 1}):
        assert set_quota(cloud, project, **bad).status_code == 400, bad
    # the network proxies are gone at 2.36
    assert set_quota(cloud, project, version="2.36", floating_ips=3).status_code == 400
    assert set_quota(cloud, project, version="2.35", floating_ips=3).status_code == 200
    # per-user writes are refused, a per-user read answers the project's limits
    assert cloud.put(cloud.admin(), f"os-quota-sets/{project}?user_id=u1",
                     {"quota_set": {"instances": 1}}).status_code == 400
    assert cloud.get(cloud.member(), f"os-quota-sets/{project}?user_id=u1").json()["quota_set"]["instances"] == 3
    # delete reverts to the default class
    assert cloud.delete(cloud.admin(), f"os-quota-sets/{project}").status_code == 202
    assert cloud.get(cloud.member(), f"os-quota-sets/{project}").json()["quota_set"]["instances"] == 10


def test_limit_below_usage_needs_force_and_detail_counts(cloud: Cloud) -> None:
    member, project = cloud.member(), demo_id(cloud)
    server = cloud.create_server(member, "one")
    cloud.wait_for_status(member, server["id"], "ACTIVE")
    assert cloud.post(member, "os-keypairs", {"keypair": {"name": "k", "public_key": PUBLIC_KEY}}).status_code == 200
    # the detail view counts the server (m1.tiny: 1 vCPU, 512 MB), key pairs only for a user
    detail = cloud.get(member, f"os-quota-sets/{project}/detail").json()["quota_set"]
    assert detail["instances"] == {"in_use": 1, "limit": 10, "reserved": 0}
    assert detail["cores"]["in_use"] == 1 and detail["ram"]["in_use"] == 512
    assert detail["key_pairs"]["in_use"] == 0 and detail["server_groups"] == {"in_use": 0, "limit": 10,
                                                                                "reserved": 0}
    user_id = cloud.get(member, "os-keypairs/k", version="2.10").json()["keypair"]["user_id"]
    by_user = cloud.get(member, f"os-quota-sets/{project}/detail?user_id={user_id}").json()["quota_set"]
    assert by_user["key_pairs"]["in_use"] == 1
    # a limit below usage is refused unless forced
    refused = set_quota(cloud, project, instances=0)
    assert refused.status_code == 400
    assert refused.json()["badRequest"]["message"] == (
        "Quota limit 0 for instances must be greater than or equal to already used and reserved 1.")
    assert set_quota(cloud, project, instances=0, force=True).status_code == 200
    assert cloud.get(member, f"os-quota-sets/{project}").json()["quota_set"]["instances"] == 0


def test_class_default_applies_to_projects_without_their_own(cloud: Cloud) -> None:
    admin, project = cloud.admin(), demo_id(cloud)
    shown = cloud.get(admin, "os-quota-class-sets/default").json()["quota_class_set"]
    assert shown["id"] == "default" and "floating_ips" in shown and "server_groups" not in shown
    at_250 = cloud.get(admin, "os-quota-class-sets/default", version="2.50").json()["quota_class_set"]
    assert "floating_ips" not in at_250 and at_250["server_groups"] == 10
    updated = cloud.put(admin, "os-quota-class-sets/default", {"quota_class_set": {"cores": 7}})
    assert updated.status_code == 200 and updated.json()["quota_class_set"]["cores"] == 7
    assert "id" not in updated.json()["quota_class_set"]
    assert QuotaClass.objects.get(class_name="default", resource="cores").hard_limit == 7
    assert cloud.put(admin, "os-quota-class-sets/default", {"quota_class_set": {"cores": "x"}}).status_code == 400
    member = cloud.member()
    assert cloud.get(member, f"os-quota-sets/{project}").json()["quota_set"]["cores"] == 7
    assert cloud.get(member, f"os-quota-sets/{project}/defaults").json()["quota_set"]["cores"] == 7
    absolute = cloud.get(member, "limits").json()["limits"]["absolute"]
    assert absolute["maxTotalCores"] == 7


def test_network_proxies_are_kept_where_old_microversions_set_them(cloud: Cloud) -> None:
    # Tempest's test_update_default_quotas sets every key of the 2.1 body and reads each back
    admin, project = cloud.admin(), demo_id(cloud)
    proxies = {"fixed_ips": 7, "floating_ips": 8, "security_groups": 9, "security_group_rules": 11}
    updated = cloud.put(admin, "os-quota-class-sets/default", {"quota_class_set": proxies})
    assert updated.status_code == 200
    assert {k: updated.json()["quota_class_set"][k] for k in proxies} == proxies
    shown = cloud.get(admin, "os-quota-class-sets/default").json()["quota_class_set"]
    assert {k: shown[k] for k in proxies} == proxies
    # a project without its own limits takes them (2.35), and sets its own there
    assert cloud.get(admin, f"os-quota-sets/{project}", version="2.35").json()["quota_set"]["floating_ips"] == 8
    assert set_quota(cloud, project, version="2.35", floating_ips=3).json()["quota_set"]["floating_ips"] == 3
    absolute = cloud.get(cloud.member(), "limits", version="2.35").json()["limits"]["absolute"]
    assert (absolute["maxTotalFloatingIps"], absolute["maxSecurityGroups"], absolute["maxSecurityGroupRules"]) == (
        3, 9, 11)
    # from 2.36 (2.50 for classes) they are neither shown nor accepted
    assert "floating_ips" not in cloud.get(admin, f"os-quota-sets/{project}", version="2.36").json()["quota_set"]
    assert "maxTotalFloatingIps" not in cloud.get(admin, "limits", version="2.36").json()["limits"]["absolute"]
    assert set_quota(cloud, project, version="2.36", floating_ips=3).status_code == 400
    refused = cloud.put(admin, "os-quota-class-sets/default", {"quota_class_set": {"fixed_ips": 1}}, version="2.50")
    assert refused.status_code == 400


def test_boot_refused_at_the_project_limit_and_limits_agree(cloud: Cloud) -> None:
    member, project = cloud.member(), demo_id(cloud)
    set_quota(cloud, project, instances=1, metadata_items=2, key_pairs=5)
    cloud.create_server(member, "one")
    response = cloud.post(member, "servers", {"server": {"name": "two", "flavorRef": "1",
                                                         "imageRef": cloud.image_id, "networks": "auto"}},
                          version="2.37")
    assert response.status_code == 403
    assert response.json()["forbidden"]["message"] == (
        "Quota exceeded for instances: Requested 1, but already used 1 of 1 instances")
    absolute = cloud.get(member, "limits").json()["limits"]["absolute"]
    assert absolute["maxTotalInstances"] == 1 and absolute["totalInstancesUsed"] == 1
    assert absolute["maxServerMeta"] == 2 and absolute["maxTotalKeypairs"] == 5
    # another project is not limited by demo's row
    other = cloud.member("alt", project="alt")
    cloud.create_server(other, "alt-one")
    cloud.create_server(other, "alt-two")


def test_metadata_items_on_boot_and_on_the_metadata_api(cloud: Cloud) -> None:
    member, project = cloud.member(), demo_id(cloud)
    set_quota(cloud, project, metadata_items=2)
    three = {"a": "1", "b": "2", "c": "3"}
    refused = cloud.post(member, "servers", {"server": {"name": "m", "flavorRef": "1", "imageRef": cloud.image_id,
                                                        "networks": "none", "metadata": three}}, version="2.37")
    assert refused.status_code == 403
    assert refused.json()["forbidden"]["message"] == (
        "Quota exceeded for metadata_items: Requested 3, but already used 0 of 2 metadata_items")
    server = cloud.create_server(member, "m", metadata={"a": "1"})
    cloud.wait_for_status(member, server["id"], "ACTIVE")
    assert cloud.post(member, f"servers/{server['id']}/metadata", {"metadata": {"b": "2"}}).status_code == 200
    over = cloud.post(member, f"servers/{server['id']}/metadata", {"metadata": {"c": "3"}})
    assert over.status_code == 403
    assert cloud.put(member, f"servers/{server['id']}/metadata", {"metadata": three}).status_code == 403


def test_key_pairs_per_user_follow_the_project_limit(cloud: Cloud) -> None:
    member, project = cloud.member(), demo_id(cloud)
    set_quota(cloud, project, key_pairs=1)
    assert cloud.post(member, "os-keypairs", {"keypair": {"name": "k1", "public_key": PUBLIC_KEY}}).status_code == 200
    refused = cloud.post(member, "os-keypairs", {"keypair": {"name": "k2", "public_key": PUBLIC_KEY}})
    assert refused.status_code == 403
    assert refused.json()["forbidden"]["message"] == "Quota exceeded, too many key pairs."
    set_quota(cloud, project, key_pairs=-1)
    assert cloud.post(member, "os-keypairs", {"keypair": {"name": "k2", "public_key": PUBLIC_KEY}}).status_code == 200


def test_resize_counts_the_new_flavors_delta(cloud: Cloud) -> None:
    member, project = cloud.member(), demo_id(cloud)
    bigger = cloud.flavor("q.big", vcpus=3, ram=512)
    server = cloud.create_server(member, "r")
    cloud.wait_for_status(member, server["id"], "ACTIVE")
    # given 1 core used of 2: the 2 more cores of q.big do not fit
    set_quota(cloud, project, cores=2)
    refused = cloud.action(member, server["id"], {"resize": {"flavorRef": bigger.flavorid}})
    assert refused.status_code == 403
    assert refused.json()["forbidden"]["message"] == (
        "Quota exceeded for cores: Requested 2, but already used 1 of 2 cores")
    # with room for the delta (1 used + 2 more = 3) it is accepted
    set_quota(cloud, project, cores=3)
    assert cloud.action(member, server["id"], {"resize": {"flavorRef": bigger.flavorid}}).status_code == 202


def test_unshelve_of_an_offloaded_server_needs_its_cores_back(cloud: Cloud) -> None:
    member, project = cloud.member(), demo_id(cloud)
    server = cloud.create_server(member, "s")
    cloud.wait_for_status(member, server["id"], "ACTIVE")
    assert cloud.action(member, server["id"], {"shelve": None}).status_code == 202
    cloud.wait_for_status(member, server["id"], "SHELVED_OFFLOADED")
    # an offloaded server holds its instance but no cores: another server took them
    detail = cloud.get(member, f"os-quota-sets/{project}/detail").json()["quota_set"]
    assert detail["instances"]["in_use"] == 1 and detail["cores"]["in_use"] == 0
    set_quota(cloud, project, cores=1)
    other = cloud.create_server(member, "t")
    refused = cloud.action(member, server["id"], {"unshelve": None})
    assert refused.status_code == 403
    assert refused.json()["forbidden"]["message"] == (
        "Quota exceeded for cores: Requested 1, but already used 1 of 1 cores")
    assert cloud.show(member, server["id"])["status"] == "SHELVED_OFFLOADED"
    assert cloud.delete(member, f"servers/{other['id']}").status_code == 204
    assert cloud.action(member, server["id"], {"unshelve": None}).status_code == 202
    cloud.wait_for_status(member, server["id"], "ACTIVE")
