"""Application credentials: the ``/v3/users/{user_id}/application_credentials`` API and the
``application_credential`` auth method (roles subset, expiry, restriction), with Keystone's
bodies, codes and error documents."""
from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.hashers import check_password
from django.utils import timezone
from rest_framework.test import APIClient

from identity.models import ApplicationCredential, Role
from identity.services import app_credentials

from .conftest import issue, token_client

pytestmark = pytest.mark.django_db
FORBIDDEN_RESTRICTED = ("You are not authorized to perform the requested action: Using method "
                        "'application_credential' is not allowed for managing additional application credentials.")


@pytest.fixture
def demo(people: dict[str, Any]) -> Any:
    return token_client(issue("demo", "demo-pw")["X-Subject-Token"])


def _path(people: dict[str, Any], user: str = "demo", suffix: str = "") -> str:
    return f"/identity/v3/users/{people[user].id}/application_credentials{suffix}"


def _create(client: Any, people: dict[str, Any], user: str = "demo", **fields: Any) -> Any:
    return client.post(_path(people, user), {"application_credential": {"name": "app", **fields}}, format="json")


def _auth(credential: dict[str, Any], **extra: Any) -> Any:
    body = {"auth": {"identity": {"methods": ["application_credential"],
                                  "application_credential": credential}, **extra}}
    return APIClient().post("/identity/v3/auth/tokens", body, format="json")


def test_a_generated_secret_never_begins_with_a_dash(demo: Any, people: dict[str, Any],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # given random bytes whose encoding begins with "-" (0xf8: the six bits 111110), then others
    draws = [b"\xf8" + bytes(63), bytes(64)]
    monkeypatch.setattr(app_credentials.secretslib, "token_bytes", lambda n: draws.pop(0))
    # when demo creates a credential without a secret
    body = _create(demo, people).json()["application_credential"]
    # then the dash-led draw was thrown away: the CLI could not take it as an argument's value
    assert body["secret"] == "A" * 86 and draws == []
    monkeypatch.undo()
    assert _auth({"id": body["id"], "secret": body["secret"]}).status_code == 201


def test_create_show_list_delete(demo: Any, people: dict[str, Any]) -> None:
    # when demo (member on demo) creates a credential with no secret nor roles
    created = _create(demo, people, description="ci")
    # then a 201 with a generated secret, the token's project and roles, restricted by default
    assert created.status_code == 201
    body = created.json()["application_credential"]
    assert len(body["secret"]) == 86
    assert body["project_id"] == people["demo_project"].id
    assert sorted(r["name"] for r in body["roles"]) == ["member", "reader"]
    assert body["unrestricted"] is False and body["expires_at"] is None and body["access_rules"] == []
    assert body["description"] == "ci"
    assert body["links"]["self"] == f"http://testserver{_path(people, suffix='/' + body['id'])}"
    # and the secret is stored hashed only
    stored = ApplicationCredential.objects.get(id=body["id"])
    assert body["secret"] not in stored.secret_hash and check_password(body["secret"], stored.secret_hash)
    # show and list never show the secret again; list filters by name
    shown = demo.get(_path(people, suffix=f"/{body['id']}")).json()["application_credential"]
    assert "secret" not in shown and shown["id"] == body["id"]
    assert [c["id"] for c in demo.get(_path(people)).json()["application_credentials"]] == [body["id"]]
    assert demo.get(_path(people) + "?name=other").json()["application_credentials"] == []
    assert len(demo.get(_path(people) + "?name=app").json()["application_credentials"]) == 1
    # a second credential of the same name is a conflict
    duplicate = _create(demo, people)
    assert duplicate.status_code == 409
    assert duplicate.json()["error"]["message"] == (
        "Conflict occurred attempting to store application_credential - Duplicate name, app.")
    # delete, then 404 with Keystone's message
    assert demo.delete(_path(people, suffix=f"/{body['id']}")).status_code == 204
    missing = demo.get(_path(people, suffix=f"/{body['id']}"))
    assert missing.status_code == 404
    assert missing.json() == {"error": {"code": 404, "title": "Not Found",
                                        "message": f"Could not find Application Credential: {body['id']}."}}
    assert demo.delete(_path(people, suffix=f"/{body['id']}")).status_code == 404


def test_roles_must_be_a_subset_of_the_tokens(demo: Any, people: dict[str, Any]) -> None:
    reader_id = Role.objects.get(name="reader").id
    # by name or id: only the named roles
    by_name = _create(demo, people, roles=[{"name": "reader"}], secret="s3cret")
    assert by_name.status_code == 201
    assert by_name.json()["application_credential"]["secret"] == "s3cret"
    assert [r["id"] for r in by_name.json()["application_credential"]["roles"]] == [reader_id]
    by_id = _create(demo, people, name="app2", roles=[{"id": reader_id}])
    assert [r["name"] for r in by_id.json()["application_credential"]["roles"]] == ["reader"]
    # a role the token does not carry: 400
    admin_role = _create(demo, people, name="app3", roles=[{"name": "admin"}])
    assert admin_role.status_code == 400
    assert admin_role.json()["error"]["message"] == (
        "Invalid application credential: Cannot create an application credential with unassigned role")
    # an unknown role name: 404
    unknown = _create(demo, people, name="app4", roles=[{"name": "nope"}])
    assert unknown.status_code == 404 and unknown.json()["error"]["message"] == "Could not find role: nope."


def test_only_for_oneself_and_owner_or_admin_reads(demo: Any, people: dict[str, Any]) -> None:
    # a credential for another user: 403
    assert _create(demo, people, user="reader").status_code == 403
    created = _create(demo, people).json()["application_credential"]
    # the reader cannot list or show demo's; the cloud admin can
    reader = token_client(issue("reader", "reader-pw")["X-Subject-Token"])
    assert reader.get(_path(people)).status_code == 403
    assert reader.get(_path(people, suffix=f"/{created['id']}")).status_code == 403
    admin = token_client(issue("admin", "admin-pw", "admin")["X-Subject-Token"])
    assert [c["id"] for c in admin.get(_path(people)).json()["application_credentials"]] == [created["id"]]
    # an unscoped token cannot create one (no project to bind it to)
    unscoped = token_client(issue("demo", "demo-pw", None)["X-Subject-Token"])
    assert _create(unscoped, people).status_code == 400


def test_invalid_bodies_and_expiry(demo: Any, people: dict[str, Any]) -> None:
    assert demo.post(_path(people), {"application_credential": {}}, format="json").status_code == 400
    past = (timezone.now() - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%S")
    assert _create(demo, people, expires_at=past).status_code == 400
    assert _create(demo, people, expires_at="tomorrow").status_code == 400
    assert _create(demo, people, roles=[{"id": "x", "name": "y"}]).status_code == 400
    future = _create(demo, people, expires_at="2099-01-02T03:04:05")
    assert future.json()["application_credential"]["expires_at"] == "2099-01-02T03:04:05.000000"


def test_authenticate_by_id_gives_the_credentials_project_and_roles_only(demo: Any, people: dict[str, Any]) -> None:
    # given a reader-only credential of demo (a member)
    credential = _create(demo, people, roles=[{"name": "reader"}]).json()["application_credential"]
    # when it authenticates by id and secret
    response = _auth({"id": credential["id"], "secret": credential["secret"]})
    # then a token of demo scoped to the credential's project with the reader role only
    assert response.status_code == 201
    token = response.json()["token"]
    assert token["methods"] == ["application_credential"]
    assert token["user"]["id"] == people["demo"].id
    assert token["project"]["id"] == people["demo_project"].id
    assert [r["name"] for r in token["roles"]] == ["reader"]
    assert token["application_credential"] == {"id": credential["id"], "name": "app", "restricted": True}
    assert token["catalog"]
    # and the compute API sees a reader: reads pass, a member's write is refused
    client = token_client(response["X-Subject-Token"])
    assert client.get("/compute/v2.1/flavors").status_code == 200
    refused = client.post("/compute/v2.1/os-server-groups",
                          {"server_group": {"name": "g", "policy": "affinity"}}, format="json",
                          HTTP_OPENSTACK_API_VERSION="compute 2.64")
    assert refused.status_code == 403
    # while demo's own password token (member) may
    allowed = demo.post("/compute/v2.1/os-server-groups", {"server_group": {"name": "g", "policy": "affinity"}},
                        format="json", HTTP_OPENSTACK_API_VERSION="compute 2.64")
    assert allowed.status_code == 200
    # the token validates with the same roles
    validated = demo.get("/identity/v3/auth/tokens", HTTP_X_SUBJECT_TOKEN=response["X-Subject-Token"])
    assert [r["name"] for r in validated.json()["token"]["roles"]] == ["reader"]


@pytest.mark.parametrize("user_ref", [{"name": "demo", "domain": {"name": "Default"}}, "by-id"])
def test_authenticate_by_name_and_user(demo: Any, people: dict[str, Any], user_ref: Any) -> None:
    credential = _create(demo, people).json()["application_credential"]
    user = {"id": people["demo"].id} if user_ref == "by-id" else user_ref
    response = _auth({"name": "app", "user": user, "secret": credential["secret"]})
    assert response.status_code == 201
    assert response.json()["token"]["application_credential"]["id"] == credential["id"]
    # a name without a user is a bad request
    assert _auth({"name": "app", "secret": credential["secret"]}).status_code == 400


def test_authentication_failures(demo: Any, people: dict[str, Any]) -> None:
    credential = _create(demo, people).json()["application_credential"]
    wrong = _auth({"id": credential["id"], "secret": "wrong"})
    assert wrong.status_code == 401 and wrong.json()["error"]["title"] == "Unauthorized"
    assert _auth({"id": "unknown", "secret": credential["secret"]}).status_code == 401
    assert _auth({"name": "app", "user": {"name": "reader"}, "secret": credential["secret"]}).status_code == 401
    # a scope other than the credential's project is refused
    other = _auth({"id": credential["id"], "secret": credential["secret"]},
                  scope={"project": {"id": people["admin_project"].id}})
    assert other.status_code == 401
    assert "Application credentials cannot request a scope." in other.json()["error"]["message"]
    same = _auth({"id": credential["id"], "secret": credential["secret"]},
                 scope={"project": {"id": people["demo_project"].id}})
    assert same.status_code == 201


def test_expired_credential_is_refused_and_tokens_expire_with_it(demo: Any, people: dict[str, Any]) -> None:
    # given a credential expiring in 10 minutes: its token expires then too, not after the lifetime
    expires = (timezone.now() + timedelta(minutes=10)).strftime("%Y-%m-%dT%H:%M:%S")
    credential = _create(demo, people, expires_at=expires).json()["application_credential"]
    response = _auth({"id": credential["id"], "secret": credential["secret"]})
    assert response.json()["token"]["expires_at"].startswith(expires)
    # when the credential has expired
    ApplicationCredential.objects.filter(id=credential["id"]).update(expires_at=timezone.now() - timedelta(seconds=1))
    # then it authenticates no more (401)
    refused = _auth({"id": credential["id"], "secret": credential["secret"]})
    assert refused.status_code == 401


def test_restricted_credential_cannot_manage_credentials(demo: Any, people: dict[str, Any]) -> None:
    restricted = _create(demo, people).json()["application_credential"]
    unrestricted = _create(demo, people, name="boss", unrestricted=True).json()["application_credential"]
    client = token_client(_auth({"id": restricted["id"], "secret": restricted["secret"]})["X-Subject-Token"])
    # a restricted credential's token may read but not create nor delete
    assert client.get(_path(people)).status_code == 200
    refused = _create(client, people, name="child")
    assert refused.status_code == 403 and refused.json()["error"]["message"] == FORBIDDEN_RESTRICTED
    deleting = client.delete(_path(people, suffix=f"/{unrestricted['id']}"))
    assert deleting.status_code == 403 and deleting.json()["error"]["message"] == FORBIDDEN_RESTRICTED
    # an unrestricted one may, within its own roles
    boss = token_client(_auth({"id": unrestricted["id"], "secret": unrestricted["secret"]})["X-Subject-Token"])
    assert _create(boss, people, name="child").status_code == 201
    assert boss.delete(_path(people, suffix=f"/{restricted['id']}")).status_code == 204


def test_deleting_a_credential_ends_its_tokens(demo: Any, people: dict[str, Any]) -> None:
    credential = _create(demo, people).json()["application_credential"]
    client = token_client(_auth({"id": credential["id"], "secret": credential["secret"]})["X-Subject-Token"])
    assert client.get("/identity/v3/auth/catalog").status_code == 200
    assert demo.delete(_path(people, suffix=f"/{credential['id']}")).status_code == 204
    assert client.get("/identity/v3/auth/catalog").status_code == 401


def test_losing_the_role_or_being_disabled_deletes_credentials(demo: Any, people: dict[str, Any]) -> None:
    admin = token_client(issue("admin", "admin-pw", "admin")["X-Subject-Token"])
    member = Role.objects.get(name="member")
    credential = _create(demo, people).json()["application_credential"]
    # when the admin removes demo's member role on demo
    project, user = people["demo_project"].id, people["demo"].id
    assert admin.delete(f"/identity/v3/projects/{project}/users/{user}/roles/{member.id}").status_code == 204
    # then demo's credentials on the project are gone
    assert not ApplicationCredential.objects.filter(id=credential["id"]).exists()
    assert _auth({"id": credential["id"], "secret": credential["secret"]}).status_code == 401
    # and disabling the user deletes the rest
    admin.put(f"/identity/v3/projects/{project}/users/{user}/roles/{member.id}")
    _create(token_client(issue("demo", "demo-pw")["X-Subject-Token"]), people)
    assert admin.patch(f"/identity/v3/users/{user}", {"user": {"enabled": False}}, format="json").status_code == 200
    assert not ApplicationCredential.objects.filter(user_id=user).exists()
