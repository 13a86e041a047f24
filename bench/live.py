"""Helpers shared by the scenarios that drive a live ``manage.py run_cloud`` over HTTP."""
from __future__ import annotations

from typing import Any


def password_auth_body(user: str, password: str, project: str) -> dict[str, Any]:
    """The ``POST /identity/v3/auth/tokens`` body of a password login scoped to a Default-domain project."""
    return {"auth": {
        "identity": {"methods": ["password"], "password": {"user": {
            "name": user, "password": password, "domain": {"name": "Default"}}}},
        "scope": {"project": {"name": project, "domain": {"name": "Default"}}}}}
