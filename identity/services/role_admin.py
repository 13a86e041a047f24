"""Roles and role assignments on behalf of an actor (Keystone's ``/v3/roles`` and
``/v3/projects/{p}/users/{u}/roles/{r}`` and ``/v3/projects/{p}/groups/{g}/roles/{r}``).

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

from ..models import ROLE_NAMES, ApplicationCredential, Group, Project, Role, User
from . import accounts, groups, roles


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


def _grantee(user_id: str | None, group_id: str | None) -> User | Group:
    return groups.group_get(group_id) if group_id is not None else accounts.user_get(user_id or "")


def _assigned(grantee: User | Group, project: Project) -> list[str]:
    if isinstance(grantee, Group):
        return roles.group_assigned_roles(group=grantee, project=project)
    return roles.assigned_roles(user=grantee, project=project)


def grant_list(*, actor: RequestContext, project_id: str, user_id: str | None = None,
               group_id: str | None = None) -> list[Role]:
    """The roles assigned to a user (or a group) on a project, by name. Raises
    ``PolicyNotAuthorized`` (``identity:list_grants``), ``ProjectNotFound``, ``UserNotFound``,
    ``GroupNotFound``."""
    authorize(actor, "identity:list_grants", {"project_id": project_id})
    project, grantee = accounts.project_get(project_id), _grantee(user_id, group_id)
    return list(Role.objects.filter(name__in=_assigned(grantee, project)).order_by("name"))


def grant_create(*, actor: RequestContext, project_id: str, role_id: str, user_id: str | None = None,
                 group_id: str | None = None) -> None:
    """Assign a role to a user (or a group: every member holds it) on a project (idempotent).
    Raises ``PolicyNotAuthorized`` (``identity:create_grant``), ``ProjectNotFound``,
    ``UserNotFound``, ``GroupNotFound``, ``RoleNotFound``."""
    authorize(actor, "identity:create_grant", {"project_id": project_id})
    project, grantee = accounts.project_get(project_id), _grantee(user_id, group_id)
    role = accounts.role_get(role_id)
    if isinstance(grantee, Group):
        roles.group_role_assign(group=grantee, project=project, role=role.name)
    else:
        roles.role_assign(user=grantee, project=project, role=role.name)


def grant_check(*, actor: RequestContext, project_id: str, role_id: str, user_id: str | None = None,
                group_id: str | None = None) -> None:
    """Raises ``RoleNotFound`` (Keystone's role assignment message) unless the role is assigned;
    ``PolicyNotAuthorized`` (``identity:check_grant``), ``ProjectNotFound``, ``UserNotFound``,
    ``GroupNotFound``."""
    authorize(actor, "identity:check_grant", {"project_id": project_id})
    project, grantee = accounts.project_get(project_id), _grantee(user_id, group_id)
    role = accounts.role_get(role_id)
    if role.name not in _assigned(grantee, project):
        raise roles.RoleNotFound(message=f"Could not find role assignment with role: {role.id}, "
                                         f"user or group: {grantee.id}, project, domain, or system: {project.id}.")


def grant_revoke(*, actor: RequestContext, project_id: str, role_id: str, user_id: str | None = None,
                 group_id: str | None = None) -> None:
    """Unassign a role. A user's application credentials on the project are deleted (as
    Keystone: they were made of the user's roles there). Raises ``PolicyNotAuthorized``
    (``identity:revoke_grant``), ``ProjectNotFound``, ``UserNotFound``, ``GroupNotFound``,
    ``RoleNotFound`` (also when the role is not assigned)."""
    authorize(actor, "identity:revoke_grant", {"project_id": project_id})
    project, grantee = accounts.project_get(project_id), _grantee(user_id, group_id)
    role = accounts.role_get(role_id)
    if role.name not in _assigned(grantee, project):
        raise roles.RoleNotFound(role=role.id)
    if isinstance(grantee, Group):
        roles.group_role_unassign(group=grantee, project=project, role=role.name)
    else:
        roles.role_unassign(user=grantee, project=project, role=role.name)
        ApplicationCredential.objects.filter(user=grantee, project=project).delete()
