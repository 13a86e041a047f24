"""Demo identities of DESIGN.md section 9 and ``var/clouds.yaml`` (idempotent).

Users: ``admin`` (admin on project ``admin``: the cloud admin), ``demo`` (member of ``demo``),
``demo-admin`` (admin of ``demo`` only), ``demo2`` (member of ``demo2``). Passwords come from
``CLOUDCORE_ADMIN_PASSWORD`` (admin) and ``CLOUDCORE_DEMO_PASSWORD`` (the others); when unset
they are generated once and kept in ``var/credentials.txt``, which later runs read back.
"""
from __future__ import annotations

import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from django.conf import settings

from cloudcore.core.env import env_str

from .models import Project, User
from .services.app_credentials import cli_safe
from .services.roles import assigned_roles, ensure_bootstrap_roles, role_assign
from .services.service_user import service_user_ensure

#: (user, project, role)
DEMO_USERS = (
    ("admin", "admin", "admin"),
    ("demo", "demo", "member"),
    ("demo-admin", "demo", "admin"),
    ("demo2", "demo2", "member"),
)
#: clouds.yaml entries: (cloud, user, project)
CLOUDS = (
    ("cloudcore-admin", "admin", "admin"),
    ("cloudcore-demo", "demo", "demo"),
    ("cloudcore-demo-admin", "demo-admin", "demo"),
    ("cloudcore-demo2", "demo2", "demo2"),
)


def credentials_path() -> Path:
    return Path(settings.VAR_DIR) / "credentials.txt"


def _stored_passwords() -> dict[str, str]:
    path = credentials_path()
    found: dict[str, str] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            key, sep, value = line.partition("=")
            if sep and key.strip() in ("admin_password", "demo_password"):
                found[key.strip()] = value.strip()
    return found


def demo_passwords() -> dict[str, str]:
    """``{"admin_password": ..., "demo_password": ...}``: environment, else var/credentials.txt,
    else newly generated."""
    stored = _stored_passwords()
    return {
        "admin_password": env_str("ADMIN_PASSWORD", "") or stored.get("admin_password")
        or cli_safe(lambda: secrets.token_urlsafe(12)),
        "demo_password": env_str("DEMO_PASSWORD", "") or stored.get("demo_password")
        or cli_safe(lambda: secrets.token_urlsafe(12)),
    }


def _password_for(user: str, passwords: dict[str, str]) -> str:
    return passwords["admin_password"] if user == "admin" else passwords["demo_password"]


def write_credentials(passwords: dict[str, str]) -> None:
    lines = [
        "# cloudcore demo credentials (CLOUDCORE_ADMIN_PASSWORD / CLOUDCORE_DEMO_PASSWORD override them)",
        f"admin_password={passwords['admin_password']}",
        f"demo_password={passwords['demo_password']}",
        "# users: admin (admin of project admin: cloud admin), demo (member of demo),",
        "#        demo-admin (admin of demo), demo2 (member of demo2); the demo password is theirs",
        f"# clouds.yaml: {Path(settings.VAR_DIR) / 'clouds.yaml'}",
        "",
    ]
    path = credentials_path()
    path.write_text("\n".join(lines))
    path.chmod(0o600)


def clouds_yaml(passwords: dict[str, str]) -> dict[str, Any]:
    auth_url = str(settings.PUBLIC_URL).rstrip("/") + "/identity/v3"
    clouds = {}
    for cloud, user, project in CLOUDS:
        clouds[cloud] = {
            "auth": {
                "auth_url": auth_url, "username": user, "password": _password_for(user, passwords),
                "project_name": project, "user_domain_name": "Default", "project_domain_name": "Default",
            },
            "identity_api_version": 3,
            "region_name": "RegionOne",
            "interface": "public",
        }
    return {"clouds": clouds}


def setup(out: Callable[[str], None]) -> None:
    ensure_bootstrap_roles()
    service_user_ensure()  # the compute agents' identity (compute.clients)
    passwords = demo_passwords()
    for name, project_name, role in DEMO_USERS:
        project, _ = Project.objects.get_or_create(name=project_name, domain_id="default")
        password = _password_for(name, passwords)
        user = User.objects.filter(name=name, domain_id="default").first()
        if user is None:
            user = User.objects.create_user(name, password, default_project=project)
            out(f"identity: created user {name}")
        elif not user.check_password(password):
            user.set_password(password)
            user.save(update_fields=["password"])
        if name == "admin" and not (user.is_staff and user.is_superuser):
            # The cloud admin may also use Django admin.
            user.is_staff = user.is_superuser = True
            user.save(update_fields=["is_staff", "is_superuser"])
        if role not in assigned_roles(user=user, project=project):
            role_assign(user=user, project=project, role=role)
    write_credentials(passwords)
    path = Path(settings.VAR_DIR) / "clouds.yaml"
    path.write_text(yaml.safe_dump(clouds_yaml(passwords), sort_keys=False))
    path.chmod(0o600)
    out(f"identity: demo users ready; clouds.yaml at {path}")
