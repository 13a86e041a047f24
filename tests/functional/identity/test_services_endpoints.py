"""Keystone services and endpoints: the cloud's own (listed, unchangeable: 403), services and
endpoints admins register (CRUD, Keystone's validation and errors) and the catalog of the tokens
issued after (`openstack catalog list`), member 403s."""
from __future__ import annotations

from typing import Any

import pytest

from .conftest import issue, token_client

pytestmark = pytest.mark.django_db


def _service(admin: Any, **body: Any) -> dict[str, Any]:
    created = admin.post("/identity/v3/services", {"service": {"type": "object-store", **body}}, format="json")
    assert created.status_code == 201, created.content
    service: dict[str, Any] = created.json()["service"]
    return service


def _endpoint(admin: Any, service: str, **body: Any) -> Any:
    endpoint = {"service_id": service, "interface": "public", "url": "http://swift.example.com/v1", **body}
    return admin.post("/identity/v3/endpoints", {"endpoint": endpoint}, format="json")


def _catalog_entry(catalog: list[dict[str, Any]], service_id: str) -> dict[str, Any] | None:
    return next((entry for entry in catalog if entry["id"] == service_id), None)


def test_service_crud(admin: Any) -> None:
    service = _service(admin, name="swift", description="objects", owner="ops")
    assert service | {"id": None, "links": None} == {
        "id": None, "type": "object-store", "name": "swift", "description": "objects", "owner": "ops",
        "enabled": True, "links": None}
    assert service["links"]["self"] == f"http://testserver/identity/v3/services/{service['id']}"
    url = f"/identity/v3/services/{service['id']}"
    assert admin.get(url).json()["service"] == service
    listed = admin.get("/identity/v3/services").json()["services"]
    assert listed[-1] == service and {s["type"] for s in listed} >= {"compute", "identity", "object-store"}
    assert [s["id"] for s in admin.get("/identity/v3/services?type=object-store").json()["services"]] == [
        service["id"]]
    assert [s["id"] for s in admin.get("/identity/v3/services?name=swift").json()["services"]] == [service["id"]]
    patched = admin.patch(url, {"service": {"description": "blobs", "enabled": False}}, format="json")
    assert patched.status_code == 200
    assert (patched.json()["service"]["description"], patched.json()["service"]["enabled"]) == ("blobs", False)
    # with no name, the name is empty (Keystone's default)
    assert _service(admin)["name"] == ""
    assert admin.delete(url).status_code == 204
    missing = admin.get(url)
    assert missing.status_code == 404
    assert missing.json() == {"error": {"code": 404, "message": f"Could not find service: {service['id']}.",
                                        "title": "Not Found"}}
    assert admin.delete(url).status_code == 404
    assert admin.patch(url, {"service": {"name": "x"}}, format="json").status_code == 404


def test_service_bad_input(admin: Any) -> None:
    for body in ({}, {"type": ""}, {"type": "x", "enabled": "True"}, {"type": 5}):
        response = admin.post("/identity/v3/services", {"service": body}, format="json")
        assert response.status_code == 400, body
        assert response.json()["error"]["title"] == "Bad Request"
    service = _service(admin)
    assert admin.patch(f"/identity/v3/services/{service['id']}", {"service": {}}, format="json").status_code == 400
    assert admin.patch(f"/identity/v3/services/{service['id']}", {"service": {"id": "other"}},
                       format="json").status_code == 400


def test_endpoint_crud(admin: Any) -> None:
    service = _service(admin, name="swift")
    created = _endpoint(admin, service["id"], region_id="RegionOne", description="d")
    assert created.status_code == 201
    endpoint = created.json()["endpoint"]
    assert endpoint | {"id": None, "links": None} == {
        "id": None, "links": None, "service_id": service["id"], "interface": "public",
        "url": "http://swift.example.com/v1", "region_id": "RegionOne", "region": "RegionOne", "enabled": True,
        "description": "d"}
    url = f"/identity/v3/endpoints/{endpoint['id']}"
    assert admin.get(url).json()["endpoint"] == endpoint
    assert endpoint in admin.get("/identity/v3/endpoints").json()["endpoints"]
    assert [e["id"] for e in admin.get(f"/identity/v3/endpoints?service_id={service['id']}").json()["endpoints"]] == [
        endpoint["id"]]
    internal = admin.get("/identity/v3/endpoints?interface=internal").json()["endpoints"]
    assert internal == []
    patched = admin.patch(url, {"endpoint": {"interface": "internal", "url": "http://10.0.0.1/v1",
                                             "enabled": False}}, format="json")
    assert patched.status_code == 200
    body = patched.json()["endpoint"]
    assert (body["interface"], body["url"], body["enabled"], body["region_id"]) == (
        "internal", "http://10.0.0.1/v1", False, "RegionOne")
    assert admin.delete(url).status_code == 204
    assert admin.get(url).json()["error"]["message"] == f"Could not find endpoint: {endpoint['id']}."
    assert admin.delete(url).status_code == 404


def test_endpoint_validation(admin: Any) -> None:
    service = _service(admin)
    for body, message in (
        ({"interface": "private"}, None),
        ({"url": "no-scheme"}, None),
        ({"url": "http://x/" + "a" * 230}, None),
        ({"enabled": "False"}, None),
        ({"region_id": "nowhere"}, "Expecting to find endpoint region_id in region table."),
        ({"service_id": "nope"}, "Expecting to find endpoint service_id in service table."),
        ({"url": "http://x/$(tenant_name)s"},
         "Cannot create an endpoint with an invalid URL: http://x/$(tenant_name)s."),
    ):
        response = _endpoint(admin, service["id"], **body)
        assert response.status_code == 400, body
        if message:
            assert response.json()["error"]["message"].startswith(message)
    missing = admin.post("/identity/v3/endpoints", {"endpoint": {"service_id": service["id"], "interface": "public"}},
                         format="json")
    assert missing.status_code == 400
    assert admin.get(f"/identity/v3/endpoints?service_id={service['id']}").json()["endpoints"] == []
    endpoint = _endpoint(admin, service["id"]).json()["endpoint"]
    url = f"/identity/v3/endpoints/{endpoint['id']}"
    for body in ({"region_id": "nowhere"}, {"service_id": "nope"}, {"enabled": "True"}, {"interface": "x"}, {}):
        assert admin.patch(url, {"endpoint": body}, format="json").status_code == 400, body
    assert admin.get(url).json()["endpoint"] == endpoint


def test_legacy_region_is_created(admin: Any) -> None:
    # Keystone's compatibility with v2 clients (Tempest's endpoint tests): ``region`` alone
    service = _service(admin)
    created = _endpoint(admin, service["id"], region="Moon")
    assert created.status_code == 201
    assert (created.json()["endpoint"]["region_id"], created.json()["endpoint"]["region"]) == ("Moon", "Moon")
    assert admin.get("/identity/v3/regions/Moon").status_code == 200
    # and a region with an endpoint cannot be deleted, nor its parent
    admin.patch("/identity/v3/regions/Moon", {"region": {"parent_region_id": "RegionOne"}}, format="json")
    admin.put("/identity/v3/regions/Sky", {"region": {}}, format="json")
    admin.patch("/identity/v3/regions/Moon", {"region": {"parent_region_id": "Sky"}}, format="json")
    for region in ("Moon", "Sky"):
        refused = admin.delete(f"/identity/v3/regions/{region}")
        assert refused.status_code == 403
        assert refused.json()["error"]["message"] == (
            f"Unable to delete region {region} because it or its child regions have associated endpoints.")
    admin.delete(f"/identity/v3/endpoints/{created.json()['endpoint']['id']}")
    assert admin.delete("/identity/v3/regions/Sky").status_code == 204
    assert admin.get("/identity/v3/regions/Moon").status_code == 404


def test_deleting_a_service_deletes_its_endpoints(admin: Any) -> None:
    service = _service(admin)
    endpoint = _endpoint(admin, service["id"]).json()["endpoint"]
    assert admin.delete(f"/identity/v3/services/{service['id']}").status_code == 204
    assert admin.get(f"/identity/v3/endpoints/{endpoint['id']}").status_code == 404


def test_registered_endpoints_are_in_the_catalog(admin: Any, people: dict[str, Any]) -> None:
    # given a registered service with a public endpoint (URL with the project), a disabled one,
    # and an internal endpoint of the cloud's own compute service
    service = _service(admin, name="swift")
    public = _endpoint(admin, service["id"], region_id="RegionOne",
                       url="http://swift.example.com/v1/AUTH_$(project_id)s").json()["endpoint"]
    _endpoint(admin, service["id"], interface="admin", enabled=False)
    compute = next(s for s in admin.get("/identity/v3/services?type=compute").json()["services"])
    internal = _endpoint(admin, compute["id"], interface="internal", url="http://10.0.0.1:8000/compute/v2.1",
                         region_id="RegionOne").json()["endpoint"]
    # when a token is issued afterwards
    issued = issue("demo", "demo-pw")
    demo_project = people["demo_project"].id
    # then its catalog has them (substituted, the disabled one left out), and so has /auth/catalog
    for catalog in (issued.json()["token"]["catalog"],
                    token_client(issued["X-Subject-Token"]).get("/identity/v3/auth/catalog").json()["catalog"]):
        entry = _catalog_entry(catalog, service["id"])
        assert entry == {"id": service["id"], "type": "object-store", "name": "swift", "endpoints": [{
            "id": public["id"], "interface": "public", "region": "RegionOne", "region_id": "RegionOne",
            "url": f"http://swift.example.com/v1/AUTH_{demo_project}"}]}
        compute_entry = _catalog_entry(catalog, compute["id"])
        assert compute_entry is not None
        assert [e["interface"] for e in compute_entry["endpoints"]] == ["public", "internal"]
        assert compute_entry["endpoints"][1]["id"] == internal["id"]
    # a disabled service leaves the catalog with its endpoints
    admin.patch(f"/identity/v3/services/{service['id']}", {"service": {"enabled": False}}, format="json")
    assert _catalog_entry(issue("demo", "demo-pw").json()["token"]["catalog"], service["id"]) is None
    # a deleted endpoint leaves it too
    admin.delete(f"/identity/v3/endpoints/{internal['id']}")
    compute_entry = _catalog_entry(issue("demo", "demo-pw").json()["token"]["catalog"], compute["id"])
    assert compute_entry is not None and len(compute_entry["endpoints"]) == 1


def test_the_cloud_entries_cannot_change(admin: Any) -> None:
    compute = admin.get("/identity/v3/services?type=compute").json()["services"][0]
    (endpoint,) = admin.get(f"/identity/v3/endpoints?service_id={compute['id']}").json()["endpoints"]
    for response, kind, entry_id in (
        (admin.patch(f"/identity/v3/services/{compute['id']}", {"service": {"name": "x"}}, format="json"),
         "service", compute["id"]),
        (admin.delete(f"/identity/v3/services/{compute['id']}"), "service", compute["id"]),
        (admin.patch(f"/identity/v3/endpoints/{endpoint['id']}", {"endpoint": {"url": "http://x/"}}, format="json"),
         "endpoint", endpoint["id"]),
        (admin.delete(f"/identity/v3/endpoints/{endpoint['id']}"), "endpoint", endpoint["id"]),
    ):
        assert response.status_code == 403
        assert response.json()["error"] == {
            "code": 403, "title": "Forbidden",
            "message": f"The {kind} {entry_id} is one of this cloud's own; it cannot be changed or deleted."}
    assert admin.get(f"/identity/v3/services/{compute['id']}").json()["service"] == compute
    assert admin.get(f"/identity/v3/endpoints/{endpoint['id']}").json()["endpoint"] == endpoint


def test_services_and_endpoints_are_for_admins(admin: Any, member: Any) -> None:
    service = _service(admin)
    endpoint = _endpoint(admin, service["id"]).json()["endpoint"]
    for response in (
        member.get("/identity/v3/services"), member.get(f"/identity/v3/services/{service['id']}"),
        member.post("/identity/v3/services", {"service": {"type": "x"}}, format="json"),
        member.patch(f"/identity/v3/services/{service['id']}", {"service": {"name": "x"}}, format="json"),
        member.delete(f"/identity/v3/services/{service['id']}"),
        member.get("/identity/v3/endpoints"), member.get(f"/identity/v3/endpoints/{endpoint['id']}"),
        _endpoint(member, service["id"]),
        member.patch(f"/identity/v3/endpoints/{endpoint['id']}", {"endpoint": {"url": "http://x/"}}, format="json"),
        member.delete(f"/identity/v3/endpoints/{endpoint['id']}"),
    ):
        assert response.status_code == 403
        assert response.json()["error"]["title"] == "Forbidden"
    assert admin.get(f"/identity/v3/endpoints/{endpoint['id']}").json()["endpoint"] == endpoint
