"""Tokens: issued for a user scoped to a project, stored so that they can be validated and
revoked, expiring after ``settings.TOKEN_EXPIRATION`` seconds."""
from __future__ import annotations

import secrets
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import NotFound, Unauthorized
from cloudcore.core.policy import authorize

from ..models import Project, Token, User
from .roles import roles_for


class TokenNotFound(NotFound):
    message = "Could not find token: %(token_id)s."


def token_issue(*, user: User, project: Project | None, methods: list[str] | None = None) -> Token:
    now = timezone.now()
    return Token.objects.create(
        id="gAAAA" + secrets.token_urlsafe(72),  # 101 characters: fits Token.id (128)
        user=user,
        project=project,
        methods=methods or ["password"],
        issued_at=now,
        expires_at=now + timedelta(seconds=settings.TOKEN_EXPIRATION),
    )


def token_get_valid(token_id: str) -> Token:
    """The live token ``token_id``; TokenNotFound (404) if unknown, expired or revoked."""
    token = Token.objects.select_related("user", "project").filter(id=token_id).first()
    if token is None or not token.is_valid() or not token.user.enabled:
        raise TokenNotFound(token_id=token_id)
    if token.project is not None and not token.project.enabled:
        raise TokenNotFound(token_id=token_id)
    return token


def token_revoke(*, actor: RequestContext, token_id: str) -> None:
    """Revoke a valid token (``DELETE /v3/auth/tokens``). Raises ``TokenNotFound`` (404) for an
    unknown, expired or revoked token, ``PolicyNotAuthorized`` (``identity:revoke_token``: its
    own user or an admin)."""
    token = token_get_valid(token_id)
    authorize(actor, "identity:revoke_token", {"user_id": token.user_id, "project_id": token.project_id})
    if not Token.objects.filter(id=token.id, revoked=False).update(revoked=True):
        raise TokenNotFound(token_id=token_id)


def is_admin_project(project: Project | None) -> bool:
    return project is not None and project.name == settings.ADMIN_PROJECT_NAME and project.domain_id == "default"


def context_for_token(token_id: str, *, request_id: str | None = None) -> tuple[User, RequestContext]:
    """The acting user and RequestContext of a token; Unauthorized (401) if it is not valid."""
    try:
        token = token_get_valid(token_id)
    except TokenNotFound:
        raise Unauthorized() from None
    roles = roles_for(user=token.user, project=token.project) if token.project else []
    ctx = RequestContext(
        user_id=token.user.id,
        project_id=token.project.id if token.project else None,
        roles=roles,
        is_admin="admin" in roles and is_admin_project(token.project),
        user_name=token.user.name,
        project_name=token.project.name if token.project else None,
    )
    if request_id:
        ctx.request_id = request_id
    return token.user, ctx


def token_flush(*, older_than_seconds: int = 0) -> int:
    """Delete tokens that expired (or were revoked) more than ``older_than_seconds`` ago;
    returns how many (Keystone's ``token_flush``)."""
    from django.db.models import Q

    cutoff = timezone.now() - timedelta(seconds=older_than_seconds)
    deleted, _ = Token.objects.filter(Q(expires_at__lt=cutoff) | Q(revoked=True, expires_at__lt=timezone.now())) \
        .delete()
    return deleted
