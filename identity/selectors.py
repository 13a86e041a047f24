"""Reads of projects, users and tokens for the other apps (which never query ``identity.models``
themselves). Each returns None for a missing or empty id instead of raising."""
from __future__ import annotations

from typing import Any

from django.db.models import Count, QuerySet
from guardian.shortcuts import get_objects_for_user

from .models import ROLE_NAMES, Project, ProjectTag, Token, User, token_digest


def project_find(project_id: str | None) -> Project | None:
    return Project.objects.filter(id=project_id).first() if project_id else None


def project_find_by_name(name: str) -> Project | None:
    return Project.objects.filter(name=name).first()


def project_list() -> list[Project]:
    """Every project by name."""
    return list(Project.objects.order_by("name"))


def projects_with_any_role(user: User) -> list[Project]:
    """Projects on which ``user`` holds one of the default roles (direct grants only; a Django
    superuser gets no project from being one)."""
    return list(get_objects_for_user(
        user, [f"identity.role_{name}" for name in ROLE_NAMES], klass=Project,
        any_perm=True, with_superuser=False, accept_global_perms=False,
    ))


def user_find(user_id: str | None) -> User | None:
    return User.objects.filter(id=user_id).first() if user_id else None


def user_list() -> list[User]:
    """Every user by name."""
    return list(User.objects.order_by("name"))


def token_find_unrevoked(token_id: str) -> Token | None:
    """The token of the string ``token_id`` unless revoked (expiry is the caller's business)."""
    token = Token.objects.filter(id_hash=token_digest(token_id), revoked=False).first()
    if token is not None:
        token.value = token_id
    return token


def projects_tagged(projects: QuerySet[Project], /, *, all_of: list[str] | None = None,
                    any_of: list[str] | None = None, not_all_of: list[str] | None = None,
                    not_any_of: list[str] | None = None) -> QuerySet[Project]:
    """``projects`` narrowed by tags as Keystone's list filters: ``tags`` (every one of
    ``all_of``), ``tags-any`` (one of ``any_of`` at least), ``not-tags`` (not every one of
    ``not_all_of``) and ``not-tags-any`` (none of ``not_any_of``)."""
    if all_of:
        projects = projects.filter(id__in=_having_all(all_of))
    if any_of:
        projects = projects.filter(id__in=ProjectTag.objects.filter(name__in=any_of).values("project_id"))
    if not_all_of:
        projects = projects.exclude(id__in=_having_all(not_all_of))
    if not_any_of:
        projects = projects.exclude(id__in=ProjectTag.objects.filter(name__in=not_any_of).values("project_id"))
    return projects


def _having_all(tags: list[str]) -> QuerySet[ProjectTag, dict[str, Any]]:
    wanted = set(tags)
    return (ProjectTag.objects.filter(name__in=wanted).values("project_id")
            .annotate(found=Count("name", distinct=True)).filter(found=len(wanted)).values("project_id"))
