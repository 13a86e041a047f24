"""Operator side of the policy registry: one Permission per rule (so grants can be made in Django
admin), grants and revocations on behalf of an operator (the web console), and lookups of users,
groups and projects by name or id for ``manage.py policy``."""
from __future__ import annotations

from typing import Any

from cloudcore.core import policy
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Invalid, NotFound

from ..models import Project, User


def sync_rule_permissions(**_: Any) -> int:
    """Create the Permission of every registered rule (idempotent); returns how many exist."""
    from django.contrib.auth.models import Permission
    from django.contrib.contenttypes.models import ContentType

    content_type = ContentType.objects.get_for_model(Project)
    existing = set(Permission.objects.filter(content_type=content_type).values_list("codename", flat=True))
    missing = [
        Permission(codename=rule.name, content_type=content_type, name=f"Policy rule {rule.name}"[:255])
        for rule in policy.rules() if rule.name not in existing
    ]
    Permission.objects.bulk_create(missing)
    return len(existing) + len(missing)


def find_user(ref: str) -> User:
    user = User.objects.filter(id=ref).first() or User.objects.filter(name=ref).first()
    if user is None:
        raise NotFound(f"User {ref} could not be found.")
    return user


def find_group(ref: str) -> Any:
    from django.contrib.auth.models import Group

    group = Group.objects.filter(name=ref).first()
    if group is None and ref.isdigit():
        group = Group.objects.filter(id=int(ref)).first()
    if group is None:
        raise NotFound(f"Group {ref} could not be found.")
    return group


def find_project(ref: str) -> Project:
    project = Project.objects.filter(id=ref).first() or Project.objects.filter(name=ref).first()
    if project is None:
        raise NotFound(f"Project {ref} could not be found.")
    return project


def describe_grant(grant: dict[str, Any]) -> str:
    holder = f"user {grant['user']}" if "user" in grant else f"group {grant['group']}"
    if grant.get("project"):
        project = Project.objects.filter(id=grant["project"]).first()
        return f"{holder} on project {project.name if project else grant['project']}"
    return f"{holder} (global)"


def policy_rule_grant_change(*, actor: RequestContext, rule: str, grant: bool, user_id: str | None = None,
                             group_id: int | str | None = None, project_id: str | None = None) -> dict[str, Any]:
    """Grant (``grant=True``) or revoke ``rule`` for a user or group, globally or on a project; with
    only a project, for every member of that project. Ids that match nothing count as not given.

    Returns ``{"user": User|None, "group": Group|None, "project": Project|None}`` as resolved.
    Side effects: django-guardian permission rows (API DB); the policy cache is invalidated.
    Raises: ``PolicyNotAuthorized`` (``identity:grant_policy_rule`` / ``identity:revoke_policy_rule``),
    ``Invalid`` for an unknown rule or when no user, group or project is given.
    """
    from django.contrib.auth.models import Group

    policy.authorize(actor, "identity:grant_policy_rule" if grant else "identity:revoke_policy_rule")
    try:
        policy.get_rule(rule)
    except policy.UnknownRule as exc:
        raise Invalid(str(exc)) from None
    user = User.objects.filter(id=user_id).first() if user_id else None
    group = Group.objects.filter(id=group_id).first() if group_id else None
    project = Project.objects.filter(id=project_id).first() if project_id else None
    if user is None and group is None and project is None:
        raise Invalid("Choose a user, a group or a project.")
    (policy.grant if grant else policy.revoke)(rule, user=user, group=group, project=project)
    return {"user": user, "group": group, "project": project}
