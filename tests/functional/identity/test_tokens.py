"""Keystone v3 subset: discovery, token issue/validate/revoke/expiry, catalog, error bodies."""
from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.test import override_settings
from django.utils import timezone
from rest_framework.test import APIClient

from identity.models import Token, token_digest

from .conftest import issue, token_client

pytestmark = pytest.mark.django_db
TIME_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


@pytest.mark.parametrize("path", ["/identity", "/identity/"])
def test_version_discovery_lists_v3(path: str) -> None:
    # when the identity root is read without a token
    response = APIClient().get(path)
    # then Keystone's 300 document lists v3 with media types and a self link
    assert response.status_code == 300
    (version,) = response.json()["versions"]["values"]
    assert version["id"].startswith("v3.") and version["status"] == "stable"
    assert version["links"][0]["href"] == "http://testserver/identity/v3/"
    assert version["media-types"][0]["type"] == "application/vnd.openstack.identity-v3+json"


@pytest.mark.parametrize("path", ["/identity/v3", "/identity/v3/"])
def test_v3_document(path: str) -> None:
    response = APIClient().get(path)
    assert response.status_code == 200
    assert response.json()["version"]["links"] == [{"rel": "self", "href": "http://testserver/identity/v3/"}]


def test_password_token_by_names_scoped_to_project(people: dict[str, Any]) -> None:
    # when demo authenticates with names and domain name "Default"
    response = issue("demo", "demo-pw", "demo")
    # then a 201 with the token in X-Subject-Token and Keystone's body
    assert response.status_code == 201
    token_id = response["X-Subject-Token"]
    body = response.json()["token"]
    assert body["methods"] == ["password"]
    assert body["user"]["name"] == "demo" and body["user"]["domain"] == {"id": "default", "name": "Default"}
    assert body["project"] == {"id": people["demo_project"].id, "name": "demo",
                               "domain": {"id": "default", "name": "Default"}}
    assert sorted(r["name"] for r in body["roles"]) == ["member", "reader"]
    assert TIME_RE.match(body["expires_at"]) and TIME_RE.match(body["issued_at"])
    assert body["is_domain"] is False and body["audit_ids"]
    assert Token.objects.filter(id_hash=token_digest(token_id)).exists()
    # only the hash is stored, never the token itself
    assert not Token.objects.filter(id_hash=token_id).exists()


def test_catalog_lists_every_service(people: dict[str, Any]) -> None:
    body = issue("demo", "demo-pw").json()["token"]
    urls = {entry["type"]: entry["endpoints"][0] for entry in body["catalog"]}
    assert set(urls) == {"identity", "compute", "image", "volumev3", "block-storage", "network", "placement"}
    assert urls["compute"]["url"] == "http://testserver/compute/v2.1"
    assert urls["network"]["url"] == "http://testserver/network"
    assert urls["volumev3"]["url"] == urls["block-storage"]["url"] == "http://testserver/volume/v3"
    assert all(e["interface"] == "public" and e["region_id"] == "RegionOne" for e in urls.values())


def test_token_by_ids_and_domain_id(people: dict[str, Any]) -> None:
    ids = {"user": people["demo"].id, "project": people["demo_project"].id}
    assert issue("demo", "demo-pw", by_id=ids).status_code == 201
    assert issue("demo", "demo-pw", domain={"id": "default"}).status_code == 201


def test_unscoped_token_has_no_project_nor_catalog(people: dict[str, Any]) -> None:
    response = issue("demo", "demo-pw", None)
    assert response.status_code == 201
    body = response.json()["token"]
    assert "project" not in body and "catalog" not in body


@pytest.mark.parametrize(
    ("user", "password", "project"),
    [("demo", "wrong", "demo"), ("nobody", "x", "demo"), ("demo", "demo-pw", "admin"), ("demo", "demo-pw", "nope")],
)
def test_bad_credentials_or_scope_is_keystone_401(people: dict[str, Any], user: str, password: str,
                                                  project: str) -> None:
    response = issue(user, password, project)
    assert response.status_code == 401
    error = response.json()["error"]
    assert error["code"] == 401 and error["title"] == "Unauthorized" and error["message"]


def test_malformed_auth_body_is_400() -> None:
    response = APIClient().post("/identity/v3/auth/tokens", {"auth": {}}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["title"] == "Bad Request"


def test_validate_check_and_revoke(people: dict[str, Any]) -> None:
    # given a token for demo
    token = issue("demo", "demo-pw")["X-Subject-Token"]
    client = token_client(token)
    # when validated with itself as subject
    shown = client.get("/identity/v3/auth/tokens", HTTP_X_SUBJECT_TOKEN=token)
    assert shown.status_code == 200 and shown["X-Subject-Token"] == token
    assert client.head("/identity/v3/auth/tokens", HTTP_X_SUBJECT_TOKEN=token).status_code == 200
    # an unknown subject is 404
    missing = client.get("/identity/v3/auth/tokens", HTTP_X_SUBJECT_TOKEN="nope")
    assert missing.status_code == 404 and missing.json()["error"]["title"] == "Not Found"
    # when revoked
    assert client.delete("/identity/v3/auth/tokens", HTTP_X_SUBJECT_TOKEN=token).status_code == 204
    # then it is no longer valid anywhere
    admin_token = issue("admin", "admin-pw", "admin")["X-Subject-Token"]
    assert token_client(admin_token).get(
        "/identity/v3/auth/tokens", HTTP_X_SUBJECT_TOKEN=token).status_code == 404
    assert client.get("/compute/v2.1/flavors").status_code == 401


def test_user_cannot_validate_someone_elses_token(people: dict[str, Any]) -> None:
    admin_token = issue("admin", "admin-pw", "admin")["X-Subject-Token"]
    demo_token = issue("demo", "demo-pw")["X-Subject-Token"]
    response = token_client(demo_token).get("/identity/v3/auth/tokens", HTTP_X_SUBJECT_TOKEN=admin_token)
    assert response.status_code == 403
    # while the cloud admin can validate anyone's
    assert token_client(admin_token).get(
        "/identity/v3/auth/tokens", HTTP_X_SUBJECT_TOKEN=demo_token).status_code == 200


def test_token_expires_after_configured_lifetime(people: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    # given a token lifetime of 60 s
    with override_settings(TOKEN_EXPIRATION=60):
        response = issue("demo", "demo-pw")
    token = Token.objects.get(id_hash=token_digest(response["X-Subject-Token"]))
    assert abs((token.expires_at - token.issued_at) - timedelta(seconds=60)) < timedelta(seconds=1)
    client = token_client(response["X-Subject-Token"])
    assert client.get("/identity/v3/auth/catalog").status_code == 200
    # when the clock passes the expiry (the token's validation is remembered: its expiry with it)
    later = timezone.now() + timedelta(seconds=61)
    monkeypatch.setattr(timezone, "now", lambda: later)
    # then the token is refused
    response = client.get("/identity/v3/auth/catalog")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == 401


def test_token_method_rescopes(people: dict[str, Any]) -> None:
    unscoped = issue("demo", "demo-pw", None)["X-Subject-Token"]
    body = {"auth": {"identity": {"methods": ["token"], "token": {"id": unscoped}},
                     "scope": {"project": {"name": "demo", "domain": {"id": "default"}}}}}
    response = APIClient().post("/identity/v3/auth/tokens", body, format="json")
    assert response.status_code == 201
    assert response.json()["token"]["project"]["name"] == "demo"


def test_password_change_revokes_tokens(people: dict[str, Any]) -> None:
    demo_token = issue("demo", "demo-pw")["X-Subject-Token"]
    admin = token_client(issue("admin", "admin-pw", "admin")["X-Subject-Token"])
    response = admin.patch(f"/identity/v3/users/{people['demo'].id}", {"user": {"password": "new-pw"}}, format="json")
    assert response.status_code == 200
    assert token_client(demo_token).get("/identity/v3/auth/catalog").status_code == 401
    assert issue("demo", "new-pw").status_code == 201


def test_auth_catalog_and_projects(people: dict[str, Any]) -> None:
    client = token_client(issue("demo", "demo-pw")["X-Subject-Token"])
    catalog = client.get("/identity/v3/auth/catalog").json()["catalog"]
    assert any(e["type"] == "compute" for e in catalog)
    projects = client.get("/identity/v3/auth/projects").json()["projects"]
    assert [p["name"] for p in projects] == ["demo"]


def test_401_names_the_identity_endpoint() -> None:
    response = APIClient().get("/compute/v2.1/flavors")
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Keystone uri="http://testserver/identity"'


@pytest.mark.parametrize(
    "scope",
    [{"project": "demo"}, {"project": {"domain": {"id": "default"}}}, {"project": {"id": 7}}, 42],
)
def test_malformed_scope_is_400(people: dict[str, Any], scope: Any) -> None:
    body = {"auth": {"identity": {"methods": ["password"], "password": {
        "user": {"name": "demo", "domain": {"id": "default"}, "password": "demo-pw"}}}, "scope": scope}}
    response = APIClient().post("/identity/v3/auth/tokens", body, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == 400


def test_domain_or_system_scope_is_401(people: dict[str, Any]) -> None:
    body = {"auth": {"identity": {"methods": ["password"], "password": {
        "user": {"name": "demo", "domain": {"id": "default"}, "password": "demo-pw"}}},
        "scope": {"system": {"all": True}}}}
    assert APIClient().post("/identity/v3/auth/tokens", body, format="json").status_code == 401
