"""Role assignments: Keystone's roles per project, stored as django-guardian object permissions
(``identity.role_<name>`` on the Project) of a user, or of a Keystone group's Django group (every
member of the group holds the group's roles).

Roles imply each other as Keystone's defaults do: ``admin`` implies ``manager`` implies ``member``
implies ``reader``; ``roles_for`` returns the effective (implied-expanded) list.
"""
from __future__ import annotations

from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from guardian.models import GroupObjectPermission, UserObjectPermission
from guardian.shortcuts import assign_perm, remove_perm

from cloudcore.core import policy
from cloudcore.core.exceptions import NotFound

from ..models import ROLE_NAMES, Group, Project, Role, User

IMPLIED = {"admin": ("admin", "manager", "member", "reader"), "manager": ("manager", "member", "reader"),
           "member": ("member", "reader"), "reader": ("reader",)}


class RoleNotFound(NotFound):
    message = "Could not find role: %(role)s."


def _codename(role: str) -> str:
    if role not in ROLE_NAMES:
        if not Role.objects.filter(name=role).exists():
            raise RoleNotFound(role=role)
        ensure_role_permission(role)
    return f"role_{role}"


def ensure_role_permission(role: str) -> None:
    """A role created through the API gets its ``role_<name>`` permission on Project."""

    Permission.objects.get_or_create(
        codename=f"role_{role}", content_type=ContentType.objects.get_for_model(Project),
        defaults={"name": f"Has the {role} role on the project"[:255]},
    )


def role_names() -> list[str]:
    """Default roles first, then the ones created through the API."""
    custom = sorted(set(Role.objects.values_list("name", flat=True)) - set(ROLE_NAMES))
    return [*ROLE_NAMES, *custom]


def ensure_default_roles() -> list[Role]:
    """The default roles exist (idempotent)."""
    return [Role.objects.get_or_create(name=name)[0] for name in ROLE_NAMES]


#: the roles a cloud is set up with besides the defaults, as ``keystone-manage bootstrap``
#: creates them (``service``: the role of the other services' users, which Nova's service rules
#: ask for: external events, volume swap, assisted snapshots); ordinary roles once created
BOOTSTRAP_ROLES = ("service",)


def ensure_bootstrap_roles() -> None:
    """The default roles and ``BOOTSTRAP_ROLES`` exist (idempotent; a bootstrap role an operator
    deleted is created again, as re-running ``keystone-manage bootstrap`` does)."""
    ensure_default_roles()
    for name in BOOTSTRAP_ROLES:
        Role.objects.get_or_create(name=name)
        ensure_role_permission(name)


def role_assign(*, user: User, project: Project, role: str) -> None:
    assign_perm(f"identity.{_codename(role)}", user, project)
    membership_changed(user=user, project=project)


def role_unassign(*, user: User, project: Project, role: str) -> None:
    remove_perm(f"identity.{_codename(role)}", user, project)
    membership_changed(user=user, project=project)


def group_role_assign(*, group: Group, project: Project, role: str) -> None:
    assign_perm(f"identity.{_codename(role)}", group.auth_group, project)
    group_members_changed(group=group, projects=[project])


def group_role_unassign(*, group: Group, project: Project, role: str) -> None:
    remove_perm(f"identity.{_codename(role)}", group.auth_group, project)
    group_members_changed(group=group, projects=[project])


def group_assigned_roles(*, group: Group, project: Project) -> list[str]:
    """Roles assigned to ``group`` on ``project`` (no implication)."""
    perms = set(
        GroupObjectPermission.objects.filter(
            group=group.auth_group, object_pk=str(project.pk), content_type=ContentType.objects.get_for_model(Project)
        ).values_list("permission__codename", flat=True)
    )
    return [name for name in role_names() if f"role_{name}" in perms]


def group_projects(group: Group) -> list[Project]:
    """Projects on which ``group`` holds a role."""
    pks = GroupObjectPermission.objects.filter(
        group=group.auth_group, content_type=ContentType.objects.get_for_model(Project),
        permission__codename__startswith="role_",
    ).values_list("object_pk", flat=True)
    return list(Project.objects.filter(pk__in=set(pks)).order_by("name"))


def group_members_changed(*, group: Group, projects: list[Project] | None = None) -> None:
    """Keep the members groups of ``projects`` (default: every project the group has a role
    on) in step after the group's members or roles changed."""
    for project in group_projects(group) if projects is None else projects:
        for user in User.objects.filter(groups=group.auth_group):
            membership_changed(user=user, project=project)


def _group_role_codenames(*, user: User, project: Project) -> set[str]:
    return set(
        GroupObjectPermission.objects.filter(
            group__user=user, group__keystone_group__isnull=False, object_pk=str(project.pk),
            content_type=ContentType.objects.get_for_model(Project),
        ).values_list("permission__codename", flat=True)
    )


def _user_role_codenames(*, user: User, project: Project) -> set[str]:
    # Direct user object permissions only: guardian's get_perms would give a Django superuser
    # every role on every project.
    return set(
        UserObjectPermission.objects.filter(
            user=user, object_pk=str(project.pk), content_type=ContentType.objects.get_for_model(Project)
        ).values_list("permission__codename", flat=True)
    )


def inherited_roles(*, user: User, project: Project) -> list[str]:
    """Roles ``user`` holds on ``project`` through the Keystone groups it is a member of."""
    perms = _group_role_codenames(user=user, project=project)
    return [name for name in role_names() if f"role_{name}" in perms]


def assigned_roles(*, user: User, project: Project) -> list[str]:
    """Roles directly assigned (no implication, no group)."""
    perms = _user_role_codenames(user=user, project=project)
    return [name for name in role_names() if f"role_{name}" in perms]


def with_implied(names: list[str]) -> set[str]:
    """``names`` and every role they imply."""
    effective: set[str] = set()
    for role in names:
        effective.update(IMPLIED.get(role, (role,)))
    return effective


def roles_for(*, user: User, project: Project) -> list[str]:
    """Effective roles of ``user`` on ``project`` (through groups and implied roles included), in
    a stable order."""
    # Checked on every request: one read of the role table, not one per source of roles.
    names = role_names()
    perms = _user_role_codenames(user=user, project=project) | _group_role_codenames(user=user, project=project)
    effective = with_implied([name for name in names if f"role_{name}" in perms])
    return [name for name in names if name in effective]


def membership_changed(*, user: User, project: Project) -> None:
    """Keep ``project-members:<id>`` equal to the users holding any role on the project (a grant
    to the project alone is a grant to that group)."""
    group = policy.project_members_group(project.id)
    if roles_for(user=user, project=project):
        user.groups.add(group)
    else:
        user.groups.remove(group)
    policy.changed()
