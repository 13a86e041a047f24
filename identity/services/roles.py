"""Role assignments: Keystone's roles per project, stored as django-guardian object permissions
(``identity.role_<name>`` on the Project).

Roles imply each other as Keystone's defaults do: ``admin`` implies ``member`` implies
``reader``; ``roles_for`` returns the effective (implied-expanded) list.
"""
from __future__ import annotations

from guardian.shortcuts import assign_perm, get_perms, remove_perm

from cloudcore.core.exceptions import NotFound

from ..models import ROLE_NAMES, Project, Role, User

IMPLIED = {"admin": ("admin", "member", "reader"), "member": ("member", "reader"), "reader": ("reader",)}


class RoleNotFound(NotFound):
    message = "Could not find role: %(role)s."


def _codename(role: str) -> str:
    if role not in ROLE_NAMES:
        raise RoleNotFound(role=role)
    return f"role_{role}"


def ensure_default_roles() -> list[Role]:
    """The three default roles exist (idempotent)."""
    return [Role.objects.get_or_create(name=name)[0] for name in ROLE_NAMES]


def role_assign(*, user: User, project: Project, role: str) -> None:
    assign_perm(f"identity.{_codename(role)}", user, project)
    from cloudcore.core import policy

    policy.project_membership_changed(user=user, project=project)


def role_unassign(*, user: User, project: Project, role: str) -> None:
    remove_perm(f"identity.{_codename(role)}", user, project)
    from cloudcore.core import policy

    policy.project_membership_changed(user=user, project=project)


def assigned_roles(*, user: User, project: Project) -> list[str]:
    """Roles directly assigned (no implication)."""
    perms = set(get_perms(user, project))
    return [name for name in ROLE_NAMES if f"role_{name}" in perms]


def roles_for(*, user: User, project: Project) -> list[str]:
    """Effective roles of ``user`` on ``project`` (implied roles included), in a stable order."""
    effective: set[str] = set()
    for role in assigned_roles(user=user, project=project):
        effective.update(IMPLIED[role])
    return [name for name in ROLE_NAMES if name in effective]
