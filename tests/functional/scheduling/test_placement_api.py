"""The /placement API: admin only, placement microversions and error bodies."""
from __future__ import annotations

import uuid

import pytest

from tests.apihelpers import auth_client, make_identity

pytestmark = pytest.mark.django_db


def client(version: str | None = "1.39", *, admin: bool = True):
    if admin:
        user, project = make_identity("admin", project="admin", roles=["admin"])
    else:
        user, project = make_identity("demo", project="demo", roles=["member"])
    return auth_client(user, project, version=version, service="placement")


def create_provider(api, name="node1", **inventories):
    rp_uuid = str(uuid.uuid4())
    resp = api.post("/placement/resource_providers", {"name": name, "uuid": rp_uuid}, format="json")
    assert resp.status_code == 200, resp.content
    inv = {rc: {"total": total} for rc, total in (inventories or {"VCPU": 8, "MEMORY_MB": 4096}).items()}
    resp = api.put(f"/placement/resource_providers/{rp_uuid}/inventories",
                   {"resource_provider_generation": 0, "inventories": inv}, format="json")
    assert resp.status_code == 200, resp.content
    return rp_uuid


def test_root_is_public_and_lists_the_version_range():
    from rest_framework.test import APIClient

    resp = APIClient().get("/placement/")
    assert resp.status_code == 200
    assert resp.json()["versions"][0]["max_version"] == "1.39"
    assert resp.json()["versions"][0]["min_version"] == "1.0"


def test_member_is_forbidden_with_placement_error_body():
    resp = client(admin=False).get("/placement/resource_providers")
    assert resp.status_code == 403
    error = resp.json()["errors"][0]
    assert error["status"] == 403 and error["code"] == "placement.undefined_code"
    assert "placement:resource_providers:list" in error["detail"]
    assert resp["OpenStack-API-Version"] == "placement 1.39"


def test_provider_crud_and_microversions():
    api = client()
    rp = create_provider(api)
    # 1.39 shape has parent/root; 1.0 does not, and creation at 1.0 answers 201 with no body
    body = api.get(f"/placement/resource_providers/{rp}").json()
    assert body["root_provider_uuid"] == rp and body["parent_provider_uuid"] is None
    assert body["generation"] == 1
    old = client("1.0")
    assert "root_provider_uuid" not in old.get(f"/placement/resource_providers/{rp}").json()
    resp = old.post("/placement/resource_providers", {"name": "old-style"}, format="json")
    assert resp.status_code == 201 and resp.content == b""
    # clients GET the Location, which is absolute as Placement's WSGI stack makes it
    assert resp["Location"].startswith("http://testserver/placement/resource_providers/")
    # duplicate name: 409 in placement's shape
    resp = api.post("/placement/resource_providers", {"name": "node1"}, format="json")
    assert resp.status_code == 409 and resp.json()["errors"][0]["code"] == "placement.duplicate_name"
    # list filters
    names = [p["name"] for p in api.get("/placement/resource_providers?resources=VCPU:4").json()["resource_providers"]]
    assert names == ["node1"]
    resp = api.get("/placement/resource_providers?bogus=1")
    assert resp.status_code == 400
    # update and delete
    resp = api.put(f"/placement/resource_providers/{rp}", {"name": "renamed"}, format="json")
    assert resp.status_code == 200 and resp.json()["name"] == "renamed"
    assert api.delete(f"/placement/resource_providers/{rp}").status_code == 204
    resp = api.get(f"/placement/resource_providers/{rp}")
    assert resp.status_code == 404 and resp.json()["errors"][0]["title"] == "Not Found"


def test_inventories_generation_conflict():
    api = client()
    rp = create_provider(api)
    resp = api.put(f"/placement/resource_providers/{rp}/inventories",
                   {"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 2}}}, format="json")
    assert resp.status_code == 409
    assert resp.json()["errors"][0]["code"] == "placement.concurrent_update"
    resp = api.get(f"/placement/resource_providers/{rp}/inventories/VCPU")
    assert resp.json()["total"] == 8 and resp.json()["resource_provider_generation"] == 1
    resp = api.put(f"/placement/resource_providers/{rp}/inventories/VCPU",
                   {"resource_provider_generation": 1, "total": 16, "allocation_ratio": 2.0}, format="json")
    assert resp.status_code == 200 and resp.json()["total"] == 16
    resp = api.put(f"/placement/resource_providers/{rp}/inventories",
                   {"resource_provider_generation": 2, "inventories": {"VCPU": {"total": 0}}}, format="json")
    assert resp.status_code == 400 and "JSON does not validate" in resp.json()["errors"][0]["detail"]


def test_allocations_usages_and_candidates():
    api = client()
    rp = create_provider(api, VCPU=4, MEMORY_MB=2048)
    consumer = str(uuid.uuid4())
    body = {"allocations": {rp: {"resources": {"VCPU": 2, "MEMORY_MB": 1024}}},
            "project_id": "p1", "user_id": "u1", "consumer_generation": None, "consumer_type": "INSTANCE"}
    assert api.put(f"/placement/allocations/{consumer}", body, format="json").status_code == 204
    got = api.get(f"/placement/allocations/{consumer}").json()
    assert got["allocations"][rp]["resources"] == {"VCPU": 2, "MEMORY_MB": 1024}
    assert got["consumer_generation"] == 1 and got["project_id"] == "p1"
    # a stale consumer generation conflicts
    resp = api.put(f"/placement/allocations/{consumer}", body, format="json")
    assert resp.status_code == 409 and resp.json()["errors"][0]["code"] == "placement.concurrent_update"
    # over capacity
    other = {**body, "allocations": {rp: {"resources": {"VCPU": 3}}}}
    resp = api.put(f"/placement/allocations/{uuid.uuid4()}", other, format="json")
    assert resp.status_code == 409 and "exceed the capacity" in resp.json()["errors"][0]["detail"]
    # usages
    assert api.get(f"/placement/resource_providers/{rp}/usages").json()["usages"] == {"VCPU": 2, "MEMORY_MB": 1024}
    usages = client("1.9").get("/placement/usages?project_id=p1").json()["usages"]
    assert usages == {"VCPU": 2, "MEMORY_MB": 1024}
    assert api.get("/placement/usages?project_id=p1").json()["usages"]["all"]["consumer_count"] == 1
    # candidates: 2 VCPU still fit, 3 do not
    found = api.get("/placement/allocation_candidates?resources=VCPU:2").json()
    assert found["allocation_requests"] == [{"allocations": {rp: {"resources": {"VCPU": 2}}}, "mappings": {"": [rp]}}]
    assert found["provider_summaries"][rp]["resources"]["VCPU"] == {"capacity": 4, "used": 2}
    assert api.get("/placement/allocation_candidates?resources=VCPU:3").json()["allocation_requests"] == []
    old = client("1.10").get("/placement/allocation_candidates?resources=VCPU:1").json()
    assert old["allocation_requests"][0]["allocations"] == [{"resource_provider": {"uuid": rp},
                                                            "resources": {"VCPU": 1}}]
    # 1.0 allocation list format, then delete
    api10 = client("1.0")
    resp = api10.put(f"/placement/allocations/{consumer}",
                     {"allocations": [{"resource_provider": {"uuid": rp}, "resources": {"VCPU": 1}}]}, format="json")
    assert resp.status_code == 204
    assert api.delete(f"/placement/allocations/{consumer}").status_code == 204
    assert api.delete(f"/placement/allocations/{consumer}").status_code == 404


def test_traits_and_aggregates():
    api = client()
    rp = create_provider(api)
    assert api.put("/placement/traits/CUSTOM_GOLD").status_code == 201
    assert api.put("/placement/traits/CUSTOM_GOLD").status_code == 204
    assert api.get("/placement/traits/CUSTOM_GOLD").status_code == 204
    assert api.put("/placement/traits/GOLD").status_code == 400
    assert "CUSTOM_GOLD" in api.get("/placement/traits?name=startswith:CUSTOM").json()["traits"]
    resp = api.put(f"/placement/resource_providers/{rp}/traits",
                   {"traits": ["CUSTOM_GOLD", "HW_CPU_X86_AVX2"], "resource_provider_generation": 1}, format="json")
    assert resp.status_code == 200 and resp.json()["resource_provider_generation"] == 2
    found = api.get("/placement/allocation_candidates?resources=VCPU:1&required=CUSTOM_GOLD").json()
    assert list(found["provider_summaries"]) == [rp]
    assert api.get("/placement/allocation_candidates?resources=VCPU:1&required=!CUSTOM_GOLD").json()[
        "allocation_requests"] == []
    agg = str(uuid.uuid4())
    resp = api.put(f"/placement/resource_providers/{rp}/aggregates",
                   {"aggregates": [agg], "resource_provider_generation": 2}, format="json")
    assert resp.status_code == 200 and resp.json()["aggregates"] == [agg]
    old = client("1.1").put(f"/placement/resource_providers/{rp}/aggregates", [agg], format="json")
    assert old.status_code == 200 and old.json() == {"aggregates": [agg]}
    listed = api.get(f"/placement/resource_providers?member_of=in:{agg}").json()["resource_providers"]
    assert [p["uuid"] for p in listed] == [rp]
    # traits below 1.6 do not exist
    assert client("1.5").get("/placement/traits").status_code == 404


def test_version_out_of_range_and_unknown_path():
    resp = client("1.40").get("/placement/resource_providers")
    assert resp.status_code == 406 and resp.json()["errors"][0]["status"] == 406
    resp = client().get("/placement/nothing-here")
    assert resp.status_code == 404 and "errors" in resp.json()


def test_post_allocations_moves_between_consumers_atomically():
    # given a provider full with an instance's allocations
    api = client()
    rp = create_provider(api, VCPU=2)
    instance, migration = str(uuid.uuid4()), str(uuid.uuid4())
    put = {"allocations": {rp: {"resources": {"VCPU": 2}}}, "project_id": "p", "user_id": "u",
           "consumer_generation": None, "consumer_type": "INSTANCE"}
    assert api.put(f"/placement/allocations/{instance}", put, format="json").status_code == 204
    # when POST /allocations moves them to the migration consumer (Nova's resize swap)
    body = {
        instance: {"allocations": {}, "project_id": "p", "user_id": "u", "consumer_generation": 1,
                   "consumer_type": "INSTANCE"},
        migration: {"allocations": {rp: {"resources": {"VCPU": 2}}}, "project_id": "p", "user_id": "u",
                    "consumer_generation": None, "consumer_type": "MIGRATION"},
    }
    assert api.post("/placement/allocations", body, format="json").status_code == 204
    # then the migration holds them, the provider is not double-counted
    assert api.get(f"/placement/allocations/{migration}").json()["consumer_type"] == "MIGRATION"
    assert api.get(f"/placement/allocations/{instance}").json()["allocations"] == {}
    assert api.get(f"/placement/resource_providers/{rp}/usages").json()["usages"]["VCPU"] == 2
    # when one consumer of a batch does not fit, then nothing of the batch is written
    other = str(uuid.uuid4())
    body = {other: {"allocations": {rp: {"resources": {"VCPU": 1}}}, "project_id": "p", "user_id": "u",
                    "consumer_generation": None, "consumer_type": "INSTANCE"}}
    assert api.post("/placement/allocations", body, format="json").status_code == 409
    assert api.get(f"/placement/allocations/{other}").json()["allocations"] == {}


def test_forbidden_aggregates_and_any_of_traits():
    api = client()
    a = create_provider(api, name="a")
    b = create_provider(api, name="b")
    agg = str(uuid.uuid4())
    api.put(f"/placement/resource_providers/{a}/aggregates", {"aggregates": [agg], "resource_provider_generation": 1},
            format="json")
    api.put(f"/placement/resource_providers/{b}/traits", {"traits": ["HW_CPU_X86_AVX2"],
                                                          "resource_provider_generation": 1}, format="json")
    found = api.get(f"/placement/allocation_candidates?resources=VCPU:1&member_of=!{agg}").json()
    assert list(found["provider_summaries"]) == [b]
    found = api.get("/placement/allocation_candidates?resources=VCPU:1&required=in:HW_CPU_X86_AVX2,HW_CPU_X86_SVM")
    assert list(found.json()["provider_summaries"]) == [b]
    assert client("1.31").get(f"/placement/allocation_candidates?resources=VCPU:1&member_of=!{agg}").status_code \
        == 400
