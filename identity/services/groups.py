"""Keystone groups (``/v3/groups``): admin CRUD and membership.

A group is an ``identity.Group`` standing on a Django group (``auth_group``) whose users are its
members; its role assignments (``role_admin.grant_*`` with ``group_id``) are django-guardian
permissions of that Django group, so every member holds them. Every change of members keeps the
projects' members groups in step (``roles.group_members_changed``), so policy grants to a
project reach the users who hold a role there through a group.

Each function checks its Keystone rule first (``identity:create_group``, ...). Domain errors:
``PolicyNotAuthorized`` (403), ``IdentityConflict`` (409), ``GroupNotFound`` / ``UserNotFound``
/ ``NotFound`` (404).
"""
from __future__ import annotations

from typing import Any

from django.contrib.auth.models import Group as AuthGroup
from django.db import transaction

from cloudcore.core import policy
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import NotFound
from cloudcore.core.policy import authorize

from ..models import DEFAULT_DOMAIN_ID, Group, User
from . import accounts, roles


class GroupNotFound(NotFound):
    message = "Could not find group: %(group_id)s."


def group_get(group_id: str) -> Group:
    group = Group.objects.filter(id=group_id).first()
    if group is None:
        raise GroupNotFound(group_id=group_id)
    return group


def group_members(group: Group) -> list[User]:
    """The users of ``group``, by name (no policy: callers have checked theirs)."""
    return list(User.objects.filter(groups=group.auth_group).order_by("name"))


def group_create(*, actor: RequestContext, name: str, domain_id: str = DEFAULT_DOMAIN_ID,
                 description: str = "") -> Group:
    """A new group. Raises ``PolicyNotAuthorized`` (``identity:create_group``),
    ``IdentityConflict`` when the name is taken in the domain."""
    authorize(actor, "identity:create_group")
    if Group.objects.filter(name=name, domain_id=domain_id).exists():
        raise accounts.IdentityConflict(type="group", name=name)
    with transaction.atomic():
        group = Group(name=name, domain_id=domain_id, description=description)
        group.auth_group = AuthGroup.objects.create(name=f"keystone-group:{group.id}")
        group.save()
    return group


def group_update(*, actor: RequestContext, group_id: str, **changes: Any) -> Group:
    """Change a group's ``name`` or ``description``. Raises ``PolicyNotAuthorized``
    (``identity:update_group``), ``GroupNotFound``, ``IdentityConflict``."""
    authorize(actor, "identity:update_group")
    group = group_get(group_id)
    name = changes.get("name")
    if name and name != group.name and Group.objects.filter(name=name, domain_id=group.domain_id).exists():
        raise accounts.IdentityConflict(type="group", name=name)
    for key, value in changes.items():
        setattr(group, key, value)
    group.save()
    return group


def group_delete(*, actor: RequestContext, group_id: str) -> None:
    """Delete a group, its membership and its role assignments. Raises ``PolicyNotAuthorized``
    (``identity:delete_group``), ``GroupNotFound``."""
    authorize(actor, "identity:delete_group")
    group = group_get(group_id)
    projects = roles.group_projects(group)
    members = group_members(group)
    with transaction.atomic():
        group.auth_group.delete()  # the Group, its members and its guardian permissions go with it
    for project in projects:
        for user in members:
            roles.membership_changed(user=user, project=project)


def group_users(*, actor: RequestContext, group_id: str) -> list[User]:
    """The members of a group. Raises ``PolicyNotAuthorized`` (``identity:list_users_in_group``),
    ``GroupNotFound``."""
    authorize(actor, "identity:list_users_in_group")
    return group_members(group_get(group_id))


def user_groups(*, actor: RequestContext, user_id: str) -> list[Group]:
    """The groups of a user. Raises ``PolicyNotAuthorized`` (``identity:list_groups_for_user``:
    the user or an admin), ``UserNotFound``."""
    authorize(actor, "identity:list_groups_for_user", {"user_id": user_id})
    user = accounts.user_get(user_id)
    return list(Group.objects.filter(auth_group__user=user).order_by("name"))


def _member(group_id: str, user_id: str) -> tuple[Group, User]:
    return group_get(group_id), accounts.user_get(user_id)


def group_user_add(*, actor: RequestContext, group_id: str, user_id: str) -> None:
    """Add a user to a group (idempotent). Raises ``PolicyNotAuthorized``
    (``identity:add_user_to_group``), ``GroupNotFound``, ``UserNotFound``."""
    authorize(actor, "identity:add_user_to_group")
    group, user = _member(group_id, user_id)
    user.groups.add(group.auth_group)
    roles.group_members_changed(group=group)
    policy.changed()


def group_user_check(*, actor: RequestContext, group_id: str, user_id: str) -> None:
    """Raises ``NotFound`` unless the user is in the group; ``PolicyNotAuthorized``
    (``identity:check_user_in_group``), ``GroupNotFound``, ``UserNotFound``."""
    authorize(actor, "identity:check_user_in_group")
    group, user = _member(group_id, user_id)
    if not user.groups.filter(id=group.auth_group_id).exists():
        raise NotFound(f"User '{user_id}' not found in group '{group_id}'")


def group_user_remove(*, actor: RequestContext, group_id: str, user_id: str) -> None:
    """Remove a user from a group. Raises ``PolicyNotAuthorized``
    (``identity:remove_user_from_group``), ``GroupNotFound``, ``UserNotFound``, ``NotFound`` when
    the user is not a member."""
    authorize(actor, "identity:remove_user_from_group")
    group, user = _member(group_id, user_id)
    if not user.groups.filter(id=group.auth_group_id).exists():
        raise NotFound(f"User '{user_id}' not found in group '{group_id}'")
    user.groups.remove(group.auth_group)
    for project in roles.group_projects(group):
        roles.membership_changed(user=user, project=project)
    policy.changed()
