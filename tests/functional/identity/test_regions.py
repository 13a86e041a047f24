"""Keystone regions: the cloud's own region (listed, unchangeable), regions created with or
without an id (POST, PUT), parents (404 for an unknown one, 400 for a cycle), the
parent_region_id filter, deletion with the child regions, and admin-only writes."""
from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.django_db


def _create(admin: Any, body: dict[str, Any], region_id: str | None = None) -> Any:
    if region_id is None:
        return admin.post("/identity/v3/regions", {"region": body}, format="json")
    return admin.put(f"/identity/v3/regions/{region_id}", {"region": body}, format="json")


def test_the_cloud_region_is_listed(member: Any) -> None:
    listed = member.get("/identity/v3/regions")
    assert listed.status_code == 200
    assert listed.json()["regions"] == [{
        "id": "RegionOne", "description": "", "parent_region_id": None,
        "links": {"self": "http://testserver/identity/v3/regions/RegionOne"},
    }]
    assert member.get("/identity/v3/regions/RegionOne").json()["region"]["id"] == "RegionOne"


def test_region_crud(admin: Any) -> None:
    # POST without an id: one is made; extra attributes come back as sent
    made = _create(admin, {"description": "east", "email": "ops@example.com"})
    assert made.status_code == 201
    region = made.json()["region"]
    assert len(region["id"]) == 32
    assert (region["description"], region["parent_region_id"], region["email"]) == ("east", None, "ops@example.com")
    assert region["links"]["self"] == f"http://testserver/identity/v3/regions/{region['id']}"
    # POST with an id, PUT with the id in the URL (the body may repeat it)
    assert _create(admin, {"id": "West"}).json()["region"]["id"] == "West"
    put = _create(admin, {"id": "North", "parent_region_id": "RegionOne"}, region_id="North")
    assert put.status_code == 201
    assert put.json()["region"]["parent_region_id"] == "RegionOne"
    assert admin.get("/identity/v3/regions/North").json()["region"]["parent_region_id"] == "RegionOne"
    listed = [r["id"] for r in admin.get("/identity/v3/regions").json()["regions"]]
    assert listed == ["RegionOne", region["id"], "West", "North"]
    # PATCH
    patched = admin.patch(f"/identity/v3/regions/{region['id']}",
                          {"region": {"description": None, "parent_region_id": "West", "email": "x"}}, format="json")
    assert patched.status_code == 200
    assert patched.json()["region"] | {"links": None} == {
        "id": region["id"], "description": "", "parent_region_id": "West", "email": "x", "links": None}
    # DELETE
    assert admin.delete("/identity/v3/regions/North").status_code == 204
    gone = admin.get("/identity/v3/regions/North")
    assert gone.status_code == 404
    assert gone.json() == {"error": {"code": 404, "message": "Could not find region: North.", "title": "Not Found"}}
    assert admin.delete("/identity/v3/regions/North").status_code == 404
    assert admin.patch("/identity/v3/regions/North", {"region": {"description": "x"}}, format="json").status_code == 404


def test_duplicate_and_conflicting_ids(admin: Any) -> None:
    _create(admin, {"id": "West"})
    for region_id, response in (("West", _create(admin, {"id": "West"})),
                                ("West", _create(admin, {}, region_id="West")),
                                ("RegionOne", _create(admin, {}, region_id="RegionOne"))):
        assert response.status_code == 409
        assert response.json()["error"]["message"] == (
            f"Conflict occurred attempting to store region - Duplicate ID, {region_id}.")
    conflicting = _create(admin, {"id": "A"}, region_id="B")
    assert conflicting.status_code == 400
    assert conflicting.json()["error"]["message"] == 'Conflicting region IDs specified: "B" != "A"'
    assert admin.patch("/identity/v3/regions/West", {"region": {"id": "East"}}, format="json").status_code == 400
    assert admin.patch("/identity/v3/regions/West", {"region": {}}, format="json").status_code == 400
    assert _create(admin, {"description": 5}).status_code == 400
    too_long = _create(admin, {}, region_id="r" * 256)
    assert too_long.status_code == 400
    assert too_long.json()["error"]["message"] == (
        "Invalid input for field 'id': a region id has at most 255 characters.")
    assert _create(admin, {"id": "r" * 256}).status_code == 400


def test_parents(admin: Any) -> None:
    unknown = _create(admin, {"id": "A", "parent_region_id": "nowhere"})
    assert unknown.status_code == 404
    assert unknown.json()["error"]["message"] == "Could not find region: nowhere."
    assert admin.get("/identity/v3/regions/A").status_code == 404
    _create(admin, {"id": "A"})
    _create(admin, {"id": "B", "parent_region_id": "A"})
    _create(admin, {"id": "C", "parent_region_id": "B"})
    # the filter
    children = admin.get("/identity/v3/regions?parent_region_id=B").json()["regions"]
    assert [r["id"] for r in children] == ["C"]
    # cycles: A under C (its grandchild), A under itself
    for parent in ("C", "A"):
        cycle = admin.patch("/identity/v3/regions/A", {"region": {"parent_region_id": parent}}, format="json")
        assert cycle.status_code == 400
        assert cycle.json()["error"]["message"] == (
            f"The specified parent region {parent} would create a circular region hierarchy.")
    assert admin.get("/identity/v3/regions/A").json()["region"]["parent_region_id"] is None
    moved = admin.patch("/identity/v3/regions/C", {"region": {"parent_region_id": None}}, format="json")
    assert moved.json()["region"]["parent_region_id"] is None
    assert admin.patch("/identity/v3/regions/C", {"region": {"parent_region_id": "nowhere"}},
                       format="json").status_code == 404


def test_deleting_a_region_deletes_its_children(admin: Any) -> None:
    _create(admin, {"id": "A"})
    _create(admin, {"id": "B", "parent_region_id": "A"})
    _create(admin, {"id": "C", "parent_region_id": "B"})
    _create(admin, {"id": "D"})
    assert admin.delete("/identity/v3/regions/A").status_code == 204
    assert [r["id"] for r in admin.get("/identity/v3/regions").json()["regions"]] == ["RegionOne", "D"]


def test_the_cloud_region_cannot_change(admin: Any) -> None:
    deleted = admin.delete("/identity/v3/regions/RegionOne")
    assert deleted.status_code == 403
    assert deleted.json()["error"] == {
        "code": 403, "title": "Forbidden",
        "message": "Unable to delete region RegionOne because it or its child regions have associated endpoints."}
    patched = admin.patch("/identity/v3/regions/RegionOne", {"region": {"description": "x"}}, format="json")
    assert patched.status_code == 403
    assert patched.json()["error"]["message"] == "Region RegionOne is this cloud's own region; it cannot be changed."
    assert admin.get("/identity/v3/regions/RegionOne").json()["region"]["description"] == ""


def test_writes_are_for_admins(member: Any, admin: Any) -> None:
    _create(admin, {"id": "A"})
    for response in (
        _create(member, {"id": "B"}), _create(member, {}, region_id="B"),
        member.patch("/identity/v3/regions/A", {"region": {"description": "x"}}, format="json"),
        member.delete("/identity/v3/regions/A"),
    ):
        assert response.status_code == 403
        assert response.json()["error"]["title"] == "Forbidden"
    assert [r["id"] for r in member.get("/identity/v3/regions").json()["regions"]] == ["RegionOne", "A"]
    assert member.get("/identity/v3/regions/A").status_code == 200
