"""Identity admin API: projects, users, roles, role assignments (cloud admin only), Keystone errors."""
from __future__ import annotations

from typing import Any

import pytest

from identity.models import Project, User
from identity.services.roles import roles_for

from .conftest import issue, token_client

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin(people: dict[str, Any]) -> Any:
    return token_client(issue("admin", "admin-pw", "admin")["X-Subject-Token"])


def test_project_crud(admin: Any) -> None:
    created = admin.post("/identity/v3/projects", {"project": {"name": "p1", "description": "d"}}, format="json")
    assert created.status_code == 201
    project = created.json()["project"]
    assert project["name"] == "p1" and project["domain_id"] == "default" and project["enabled"] is True
    assert project["links"]["self"] == f"http://testserver/identity/v3/projects/{project['id']}"
    dup = admin.post("/identity/v3/projects", {"project": {"name": "p1"}}, format="json")
    assert dup.status_code == 409 and dup.json()["error"]["title"] == "Conflict"
    listed = admin.get("/identity/v3/projects?name=p1").json()["projects"]
    assert [p["id"] for p in listed] == [project["id"]]
    patched = admin.patch(f"/identity/v3/projects/{project['id']}", {"project": {"enabled": False}}, format="json")
    assert patched.json()["project"]["enabled"] is False
    assert admin.delete(f"/identity/v3/projects/{project['id']}").status_code == 204
    missing = admin.get(f"/identity/v3/projects/{project['id']}")
    assert missing.status_code == 404
    assert missing.json() == {"error": {"code": 404, "message": f"Could not find project: {project['id']}.",
                                        "title": "Not Found"}}


def test_user_crud_and_password(admin: Any, people: dict[str, Any]) -> None:
    demo_project = people["demo_project"]
    created = admin.post("/identity/v3/users", {"user": {"name": "bob", "password": "bob-pw",
                                                         "default_project_id": demo_project.id}}, format="json")
    assert created.status_code == 201
    user = created.json()["user"]
    assert user["default_project_id"] == demo_project.id and "password" not in user
    assert User.objects.get(id=user["id"]).check_password("bob-pw")
    assert admin.post("/identity/v3/users", {"user": {"name": "bob"}}, format="json").status_code == 409
    # a user without a role cannot scope to the project
    assert issue("bob", "bob-pw", "demo").status_code == 401
    assert issue("bob", "bob-pw", None).status_code == 201
    # the user changes their own password
    bob = token_client(issue("bob", "bob-pw", None)["X-Subject-Token"])
    changed = bob.post(f"/identity/v3/users/{user['id']}/password",
                       {"user": {"password": "new", "original_password": "bob-pw"}}, format="json")
    assert changed.status_code == 204
    assert issue("bob", "new", None).status_code == 201
    assert admin.get("/identity/v3/users?name=bob").json()["users"][0]["id"] == user["id"]
    assert admin.delete(f"/identity/v3/users/{user['id']}").status_code == 204
    assert admin.get(f"/identity/v3/users/{user['id']}").status_code == 404


def test_role_assignment_api(admin: Any, people: dict[str, Any]) -> None:
    roles = {r["name"]: r["id"] for r in admin.get("/identity/v3/roles").json()["roles"]}
    assert set(roles) >= {"admin", "member", "reader"}
    project, user = people["demo_project"], people["reader"]
    url = f"/identity/v3/projects/{project.id}/users/{user.id}/roles/{roles['member']}"
    # when member is assigned to the reader user
    assert admin.put(url).status_code == 204
    assert admin.head(url).status_code == 204 and admin.get(url).status_code == 204
    assert roles_for(user=user, project=project) == ["member", "reader"]
    listed = admin.get(f"/identity/v3/projects/{project.id}/users/{user.id}/roles").json()["roles"]
    assert {r["name"] for r in listed} == {"member", "reader"}
    assignments = admin.get(f"/identity/v3/role_assignments?user.id={user.id}&scope.project.id={project.id}"
                            "&include_names").json()["role_assignments"]
    assert {a["role"]["name"] for a in assignments} == {"member", "reader"}
    assert assignments[0]["scope"]["project"]["name"] == "demo"
    effective = admin.get(f"/identity/v3/role_assignments?user.id={people['demo'].id}&effective").json()
    assert {a["role"]["id"] for a in effective["role_assignments"]} == {roles["member"], roles["reader"]}
    by_role = admin.get(f"/identity/v3/role_assignments?role.id={roles['admin']}").json()["role_assignments"]
    assert [a["user"]["id"] for a in by_role] == [people["admin"].id]
    # then removed again; removing twice is 404
    assert admin.delete(url).status_code == 204
    assert admin.delete(url).status_code == 404
    assert admin.head(url).status_code == 404


def test_custom_role(admin: Any, people: dict[str, Any]) -> None:
    created = admin.post("/identity/v3/roles", {"role": {"name": "auditor"}}, format="json")
    assert created.status_code == 201
    role_id = created.json()["role"]["id"]
    project, user = people["demo_project"], people["demo"]
    assert admin.put(f"/identity/v3/projects/{project.id}/users/{user.id}/roles/{role_id}").status_code == 204
    assert "auditor" in roles_for(user=user, project=project)
    body = issue("demo", "demo-pw").json()["token"]
    assert "auditor" in {r["name"] for r in body["roles"]}
    assert admin.delete(f"/identity/v3/roles/{role_id}").status_code == 204
    default_role = admin.get("/identity/v3/roles?name=admin").json()["roles"][0]["id"]
    assert admin.delete(f"/identity/v3/roles/{default_role}").status_code == 403


def test_user_projects_and_domains(admin: Any, people: dict[str, Any]) -> None:
    demo = token_client(issue("demo", "demo-pw")["X-Subject-Token"])
    own = demo.get(f"/identity/v3/users/{people['demo'].id}/projects").json()["projects"]
    assert [p["name"] for p in own] == ["demo"]
    assert demo.get(f"/identity/v3/users/{people['admin'].id}/projects").status_code == 403
    assert demo.get("/identity/v3/domains/default").json()["domain"]["name"] == "Default"
    assert demo.get("/identity/v3/domains/other").status_code == 404


def test_non_admin_is_refused_with_keystone_body(people: dict[str, Any]) -> None:
    demo = token_client(issue("demo", "demo-pw")["X-Subject-Token"])
    response = demo.post("/identity/v3/projects", {"project": {"name": "x"}}, format="json")
    assert response.status_code == 403
    assert response.json() == {"error": {
        "code": 403, "message": "Policy doesn't allow identity:create_project to be performed.", "title": "Forbidden"}}
    assert not Project.objects.filter(name="x").exists()


def test_anonymous_is_401_with_keystone_body() -> None:
    from rest_framework.test import APIClient

    response = APIClient().get("/identity/v3/projects")
    assert response.status_code == 401
    assert response.json()["error"] == {"code": 401, "message": "The request you have made requires authentication.",
                                        "title": "Unauthorized"}


def test_bad_request_bodies_are_400(admin: Any) -> None:
    assert admin.post("/identity/v3/projects", {"nope": {}}, format="json").status_code == 400
    assert admin.post("/identity/v3/users", {"user": {"name": ""}}, format="json").status_code == 400


def test_services_endpoints_regions_mirror_the_catalog(admin: Any) -> None:
    services = admin.get("/identity/v3/services").json()["services"]
    endpoints = admin.get("/identity/v3/endpoints").json()["endpoints"]
    assert {s["type"] for s in services} >= {"compute", "identity", "network", "placement", "volumev3"}
    compute = next(s for s in services if s["type"] == "compute")
    (endpoint,) = [e for e in endpoints if e["service_id"] == compute["id"]]
    assert endpoint["url"] == "http://testserver/compute/v2.1" and endpoint["interface"] == "public"
    assert admin.get(f"/identity/v3/endpoints/{endpoint['id']}").json()["endpoint"] == endpoint
    assert admin.get("/identity/v3/regions").json()["regions"][0]["id"] == "RegionOne"
    assert admin.get("/identity/v3/services/nope").status_code == 404


def test_the_manager_role_implies_member_and_reader(admin: Any, people: dict[str, Any]) -> None:
    # given the manager role keystone-manage bootstrap makes (admin > manager > member > reader)
    roles = {r["name"]: r["id"] for r in admin.get("/identity/v3/roles").json()["roles"]}
    assert {"admin", "manager", "member", "reader"} <= set(roles)
    project, user = people["demo_project"], people["reader"]
    # when the reader is made manager of the project
    url = f"/identity/v3/projects/{project.id}/users/{user.id}/roles/{roles['manager']}"
    assert admin.put(url).status_code == 204
    # then its token holds manager and the roles it implies, and an effective listing shows them
    token = issue("reader", "reader-pw").json()["token"]
    assert sorted(r["name"] for r in token["roles"]) == ["manager", "member", "reader"]
    effective = admin.get(f"/identity/v3/role_assignments?user.id={user.id}&effective").json()["role_assignments"]
    assert {a["role"]["id"] for a in effective} == {roles["manager"], roles["member"], roles["reader"]}
    # an admin's token holds manager too
    assert "manager" in {r["name"] for r in issue("admin", "admin-pw", "admin").json()["token"]["roles"]}
    # and, a default role, it cannot be deleted
    refused = admin.delete(f"/identity/v3/roles/{roles['manager']}")
    assert refused.status_code == 403 and refused.json()["error"]["message"] == (
        "The default role manager cannot be deleted.")
