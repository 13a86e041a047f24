"""Fixtures for the identity API tests: a cloud admin, a project with admin/member/reader users, and
token clients of the cloud admin and of a member."""
from __future__ import annotations

from typing import Any

import pytest
from django.test import override_settings
from rest_framework.test import APIClient

from tests.apihelpers import make_identity


@pytest.fixture(autouse=True)
def _public_url() -> Any:
    with override_settings(PUBLIC_URL="http://testserver"):
        yield


@pytest.fixture
def people(db: None) -> dict[str, Any]:
    admin, admin_project = make_identity("admin", project="admin", roles=["admin"], password="admin-pw")
    demo, demo_project = make_identity("demo", project="demo", roles=["member"], password="demo-pw")
    reader, _ = make_identity("reader", project="demo", roles=["reader"], password="reader-pw")
    return {"admin": admin, "admin_project": admin_project, "demo": demo, "demo_project": demo_project,
            "reader": reader}


@pytest.fixture
def admin(people: dict[str, Any]) -> APIClient:
    """A client with a token of the cloud admin (admin on project admin)."""
    return token_client(issue("admin", "admin-pw", "admin")["X-Subject-Token"])


@pytest.fixture
def member(people: dict[str, Any]) -> APIClient:
    """A client with a token of demo, a member of project demo."""
    return token_client(issue("demo", "demo-pw")["X-Subject-Token"])


def password_auth(user: str, password: str, project: str | None = "demo", *, by_id: dict[str, str] | None = None,
                  domain: dict[str, str] | None = None) -> dict[str, Any]:
    domain = domain or {"name": "Default"}
    user_ref: dict[str, Any] = {"id": by_id["user"]} if by_id else {"name": user, "domain": domain}
    user_ref["password"] = password
    body: dict[str, Any] = {"auth": {"identity": {"methods": ["password"], "password": {"user": user_ref}}}}
    if project is not None:
        body["auth"]["scope"] = {"project": {"id": by_id["project"]} if by_id else {"name": project, "domain": domain}}
    return body


def issue(user: str, password: str, project: str | None = "demo", **kw: Any) -> Any:
    return APIClient().post("/identity/v3/auth/tokens", password_auth(user, password, project, **kw), format="json")


def token_client(token: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_X_AUTH_TOKEN=token)
    return client
