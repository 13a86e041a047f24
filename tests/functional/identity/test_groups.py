"""Keystone groups: CRUD, membership, role assignments of a group on a project (its members hold
them: token roles, project scope, policy), role assignment listings, with Keystone's bodies."""
from __future__ import annotations

from typing import Any

import pytest

from identity.models import Role, User

from .conftest import issue, token_client

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin(people: dict[str, Any]) -> Any:
    return token_client(issue("admin", "admin-pw", "admin")["X-Subject-Token"])


@pytest.fixture
def outsider(people: dict[str, Any]) -> User:
    return User.objects.create_user("outsider", "out-pw")


def test_group_crud(admin: Any) -> None:
    created = admin.post("/identity/v3/groups", {"group": {"name": "ops", "description": "d"}}, format="json")
    assert created.status_code == 201
    group = created.json()["group"]
    assert (group["name"], group["domain_id"], group["description"]) == ("ops", "default", "d")
    assert group["links"]["self"] == f"http://testserver/identity/v3/groups/{group['id']}"
    duplicate = admin.post("/identity/v3/groups", {"group": {"name": "ops"}}, format="json")
    assert duplicate.status_code == 409
    assert duplicate.json()["error"]["message"] == (
        "Conflict occurred attempting to store group - Duplicate entry found with name ops.")
    assert [g["id"] for g in admin.get("/identity/v3/groups?name=ops").json()["groups"]] == [group["id"]]
    patched = admin.patch(f"/identity/v3/groups/{group['id']}", {"group": {"name": "ops2"}}, format="json")
    assert patched.json()["group"]["name"] == "ops2"
    assert admin.delete(f"/identity/v3/groups/{group['id']}").status_code == 204
    missing = admin.get(f"/identity/v3/groups/{group['id']}")
    assert missing.status_code == 404
    assert missing.json()["error"]["message"] == f"Could not find group: {group['id']}."


def test_groups_are_for_admins(people: dict[str, Any]) -> None:
    demo = token_client(issue("demo", "demo-pw")["X-Subject-Token"])
    assert demo.get("/identity/v3/groups").status_code == 403
    assert demo.post("/identity/v3/groups", {"group": {"name": "x"}}, format="json").status_code == 403
    # one's own groups are readable
    assert demo.get(f"/identity/v3/users/{people['demo'].id}/groups").json()["groups"] == []
    assert demo.get(f"/identity/v3/users/{people['admin'].id}/groups").status_code == 403


def test_membership(admin: Any, outsider: User) -> None:
    group = admin.post("/identity/v3/groups", {"group": {"name": "ops"}}, format="json").json()["group"]
    member = f"/identity/v3/groups/{group['id']}/users/{outsider.id}"
    assert admin.head(member).status_code == 404
    assert admin.put(member).status_code == 204
    assert admin.head(member).status_code == 204
    assert [u["name"] for u in admin.get(f"/identity/v3/groups/{group['id']}/users").json()["users"]] == ["outsider"]
    assert [g["name"] for g in admin.get(f"/identity/v3/users/{outsider.id}/groups").json()["groups"]] == ["ops"]
    assert admin.delete(member).status_code == 204
    assert admin.delete(member).status_code == 404
    assert admin.put(f"/identity/v3/groups/{group['id']}/users/nobody").status_code == 404


def test_group_role_gives_members_the_role(admin: Any, people: dict[str, Any], outsider: User) -> None:
    # given outsider with no role, in a group
    project = people["demo_project"]
    member_role = Role.objects.get(name="member")
    group = admin.post("/identity/v3/groups", {"group": {"name": "ops"}}, format="json").json()["group"]
    admin.put(f"/identity/v3/groups/{group['id']}/users/{outsider.id}")
    assert issue("outsider", "out-pw", "demo").status_code == 401
    # when the group gets the member role on demo
    grant = f"/identity/v3/projects/{project.id}/groups/{group['id']}/roles/{member_role.id}"
    assert admin.put(grant).status_code == 204
    assert admin.head(grant).status_code == 204
    listed = admin.get(f"/identity/v3/projects/{project.id}/groups/{group['id']}/roles").json()["roles"]
    assert [r["name"] for r in listed] == ["member"]
    # then outsider scopes to demo with member (and reader), and acts as a member there
    response = issue("outsider", "out-pw", "demo")
    assert response.status_code == 201
    assert sorted(r["name"] for r in response.json()["token"]["roles"]) == ["member", "reader"]
    outsider_client = token_client(response["X-Subject-Token"])
    assert outsider_client.post("/compute/v2.1/os-server-groups",
                                {"server_group": {"name": "g", "policy": "affinity"}}, format="json",
                                HTTP_OPENSTACK_API_VERSION="compute 2.64").status_code == 200
    assert [p["name"] for p in outsider_client.get("/identity/v3/auth/projects").json()["projects"]] == ["demo"]
    # the assignment listings: the group's own, and the effective one expanded to its member
    assignments = admin.get(f"/identity/v3/role_assignments?group.id={group['id']}").json()["role_assignments"]
    assert assignments == [{
        "role": {"id": member_role.id}, "group": {"id": group["id"]}, "scope": {"project": {"id": project.id}},
        "links": {"assignment": f"http://testserver{grant}"},
    }]
    effective = admin.get(f"/identity/v3/role_assignments?user.id={outsider.id}&effective").json()
    assert sorted(a["role"]["id"] for a in effective["role_assignments"]) == sorted(
        [member_role.id, Role.objects.get(name="reader").id])
    expanded = admin.get(f"/identity/v3/role_assignments?group.id={group['id']}&effective").json()
    assert {a["user"]["id"] for a in expanded["role_assignments"]} == {outsider.id}
    assert expanded["role_assignments"][0]["links"]["membership"] == (
        f"http://testserver/identity/v3/groups/{group['id']}/users/{outsider.id}")
    # when outsider leaves the group, the role goes
    admin.delete(f"/identity/v3/groups/{group['id']}/users/{outsider.id}")
    assert outsider_client.get("/identity/v3/auth/projects").json()["projects"] == []
    assert issue("outsider", "out-pw", "demo").status_code == 401
    # and an unassigned group role: 404
    admin.put(f"/identity/v3/groups/{group['id']}/users/{outsider.id}")
    assert admin.delete(grant).status_code == 204
    assert admin.delete(grant).status_code == 404
    assert issue("outsider", "out-pw", "demo").status_code == 401


def test_deleting_a_group_removes_its_roles(admin: Any, people: dict[str, Any], outsider: User) -> None:
    project = people["demo_project"]
    group = admin.post("/identity/v3/groups", {"group": {"name": "ops"}}, format="json").json()["group"]
    admin.put(f"/identity/v3/groups/{group['id']}/users/{outsider.id}")
    admin.put(f"/identity/v3/projects/{project.id}/groups/{group['id']}/roles/{Role.objects.get(name='reader').id}")
    assert issue("outsider", "out-pw", "demo").status_code == 201
    # the group's role made outsider one of the project's members (policy grants to the project reach them)
    assert outsider.groups.filter(name__startswith="project-members:").count() == 1
    assert admin.delete(f"/identity/v3/groups/{group['id']}").status_code == 204
    assert issue("outsider", "out-pw", "demo").status_code == 401
    assert outsider.groups.filter(name__startswith="project-members:").count() == 0
