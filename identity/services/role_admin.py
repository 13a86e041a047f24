"""Roles and role assignments on behalf of an actor (Keystone's ``/v3/roles`` and
``/v3/projects/{p}/users/{u}/roles/{r}``).

Each function checks its Keystone rule first, then resolves the ids (404 for an unknown
project, user or role) and calls the storage primitives of ``roles`` (django-guardian object
permissions on the Project). A role created here gets its ``role_<name>`` permission; deleting it
removes that permission and, with it, every assignment of the role.
"""
from __future__ import annotations

from django.contrib.auth.models import Permission

from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Forbidden
from cloudcore.core.policy import authorize

from ..models import ROLE_NAMES, ApplicationCredential, Role
from . import accounts, roles


def role_create(*, actor: RequestContext, name: str, description: str = "") -> Role:
    """A new role. Raises ``PolicyNotAuthorized`` (``identity:create_role``),
    ``IdentityConflict`` when the name is taken."""
    authorize(actor, "identity:create_role")
    if Role.objects.filter(name=name).exists():
        raise accounts.IdentityConflict(type="role", name=name)
    role = Role.objects.create(name=name, description=description)
    roles.ensure_role_permission(role.name)
    return role


def role_delete(*, actor: RequestContext, role_id: str) -> None:
    """Delete a role created through the API (its assignments go with its permission).
    Raises ``PolicyNotAuthorized`` (``identity:delete_role``), ``RoleNotFound``, ``Forbidden`` for
    one of the default roles."""
    authorize(actor, "identity:delete_role")
    role = accounts.role_get(role_id)
    if role.name in ROLE_NAMES:
        raise Forbidden(f"The default role {role.name} cannot be deleted.")
    Permission.objects.filter(codename=role.codename, content_type__app_label="identity").delete()
    role.delete()


def grant_create(*, actor: RequestContext, project_id: str, user_id: str, role_id: str) -> None:
    """Assign a role to a user on a project (idempotent). Raises ``PolicyNotAuthorized``
    (``identity:create_grant``), ``ProjectNotFound``, ``UserNotFound``, ``RoleNotFound``."""
    authorize(actor, "identity:create_grant", {"project_id": project_id})
    project, user = accounts.project_get(project_id), accounts.user_get(user_id)
    role = accounts.role_get(role_id)
    roles.role_assign(user=user, project=project, role=role.name)


def grant_revoke(*, actor: RequestContext, project_id: str, user_id: str, role_id: str) -> None:
    """Unassign a role; the user's application credentials on the project are deleted (as
    Keystone: they were made of the user's roles there). Raises ``PolicyNotAuthorized``
    (``identity:revoke_grant``), ``ProjectNotFound``, ``UserNotFound``, ``RoleNotFound`` (also
    when the role is not assigned)."""
    authorize(actor, "identity:revoke_grant", {"project_id": project_id})
    project, user = accounts.project_get(project_id), accounts.user_get(user_id)
    role = accounts.role_get(role_id)
    if role.name not in roles.assigned_roles(user=user, project=project):
        raise roles.RoleNotFound(role=role.id)
    roles.role_unassign(user=user, project=project, role=role.name)
    ApplicationCredential.objects.filter(user=user, project=project).delete()
