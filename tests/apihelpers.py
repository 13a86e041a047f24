"""Helpers for API tests: identities with roles, and clients carrying their token.

``make_identity("alice", project="demo", roles=["member"])`` creates (or reuses) the project and
user, assigns the roles; ``auth_client(user, project)`` returns a DRF APIClient whose requests
carry a fresh ``X-Auth-Token`` (and, with ``version=``, an ``OpenStack-API-Version`` header).
``admin_client()`` is a cloud admin (``admin`` on the ``admin`` project).
"""
from __future__ import annotations

from typing import Any

from rest_framework.test import APIClient

from identity.models import Project, User
from identity.services.roles import ensure_default_roles, role_assign
from identity.services.tokens import token_issue


def make_identity(
    name: str, *, project: str = "demo", roles: list[str] | tuple[str, ...] = ("member",), password: str = "secret"
) -> tuple[User, Project]:
    ensure_default_roles()
    proj, _ = Project.objects.get_or_create(name=project, domain_id="default")
    user = User.objects.filter(name=name, domain_id="default").first()
    if user is None:
        user = User.objects.create_user(name, password, default_project=proj)
    for role in roles:
        role_assign(user=user, project=proj, role=role)
    return user, proj


def auth_client(user: User, project: Project, *, version: str | None = None, service: str = "compute") -> APIClient:
    client = APIClient()
    token = token_issue(user=user, project=project)
    headers: dict[str, Any] = {"HTTP_X_AUTH_TOKEN": token.value}
    if version:
        headers["HTTP_OPENSTACK_API_VERSION"] = f"{service} {version}"
    client.credentials(**headers)
    client.token = token.value  # type: ignore[attr-defined]
    return client


def admin_client(*, version: str | None = None) -> APIClient:
    user, project = make_identity("admin", project="admin", roles=["admin"])
    return auth_client(user, project, version=version)


def member_client(name: str = "demo", project: str = "demo", *, version: str | None = None) -> APIClient:
    user, proj = make_identity(name, project=project, roles=["member"])
    return auth_client(user, proj, version=version)
