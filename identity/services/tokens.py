"""Tokens: issued for a user scoped to a project, stored so that they can be validated and
revoked, expiring after ``settings.TOKEN_EXPIRATION`` seconds.

Only the SHA-256 of a token string is stored (``Token.id_hash``); every lookup hashes the string
the client presents, so validation stays one indexed query. A token issued for an application
credential carries only the credential's roles (those the user still holds on the project) and
expires no later than the credential.
"""
from __future__ import annotations

import secrets
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import router, transaction
from django.db.models import Q
from django.utils import timezone

from cloudcore.core.context import RequestContext, new_request_id
from cloudcore.core.exceptions import NotFound, Unauthorized
from cloudcore.core.policy import authorize

from ..models import ApplicationCredential, Project, Token, User, token_digest
from . import token_cache
from .roles import roles_for, with_implied


class TokenNotFound(NotFound):
    message = "Could not find token: %(token_id)s."


def token_issue(*, user: User, project: Project | None, methods: list[str] | None = None,
                application_credential: ApplicationCredential | None = None) -> Token:
    """A new token; its string is ``token.value`` (known only now: the database keeps its hash)."""
    now = timezone.now()
    expires_at = now + timedelta(seconds=settings.TOKEN_EXPIRATION)
    if application_credential is not None and application_credential.expires_at is not None:
        expires_at = min(expires_at, application_credential.expires_at)
    value = "gAAAA" + secrets.token_urlsafe(72)  # 101 characters, as long as a Fernet token
    token = Token.objects.create(
        id_hash=token_digest(value),
        user=user,
        project=project,
        methods=methods or ["password"],
        issued_at=now,
        expires_at=expires_at,
        application_credential=application_credential,
    )
    token.value = value
    return token


def token_find(value: str) -> Token | None:
    """The stored token of the string ``value`` (valid or not), or None."""
    token = Token.objects.select_related("user", "project", "application_credential") \
        .filter(id_hash=token_digest(value)).first()
    if token is not None:
        token.value = value
    return token


def token_get_valid(token_id: str) -> Token:
    """The live token of the string ``token_id``; TokenNotFound (404) if unknown, expired or revoked."""
    return _valid(token_find(token_id), token_id)


def _valid(token: Token | None, token_id: str) -> Token:
    if token is None or not token.is_valid() or not token.user.enabled:
        raise TokenNotFound(token_id=token_id)
    if token.project is not None and not token.project.enabled:
        raise TokenNotFound(token_id=token_id)
    return token


def token_roles(token: Token) -> list[str]:
    """The effective roles of a token on its project: the user's, narrowed to its application
    credential's (implied roles included). Raises ``TokenNotFound`` for an application
    credential's token whose user holds none of the credential's roles any more."""
    if token.project is None:
        return []
    names = roles_for(user=token.user, project=token.project)
    credential = token.application_credential
    if credential is None:
        return names
    allowed = with_implied(list(credential.roles.values_list("name", flat=True)))
    names = [name for name in names if name in allowed]
    if not names:
        raise TokenNotFound(token_id=token.value)
    return names


def token_revoke(*, actor: RequestContext, token_id: str) -> None:
    """Revoke a valid token (``DELETE /v3/auth/tokens``). Raises ``TokenNotFound`` (404) for an
    unknown, expired or revoked token, ``PolicyNotAuthorized`` (``identity:revoke_token``: its
    own user or an admin)."""
    token = token_get_valid(token_id)
    authorize(actor, "identity:revoke_token", {"user_id": token.user_id, "project_id": token.project_id})
    with transaction.atomic(using=router.db_for_write(Token)):
        if not Token.objects.filter(id_hash=token.id_hash, revoked=False).update(revoked=True):
            raise TokenNotFound(token_id=token_id)
        token_cache.identity_changed([token.user_id])  # every process's validation of it ends


def is_admin_project(project: Project | None) -> bool:
    return project is not None and project.name == settings.ADMIN_PROJECT_NAME and project.domain_id == "default"


def context_for_token(token_id: str, *, request_id: str | None = None) -> tuple[User, RequestContext]:
    """The acting user and RequestContext of a token; Unauthorized (401) if it is not valid.
    One statement when its roles are remembered (``token_cache``); the context carries the change
    stamps read with the token, so that its policy grants may be remembered too."""
    remembered = token_cache.validated_get(token_id)
    if remembered is not None:
        own = {**remembered.fields, "roles": list(remembered.fields["roles"])}  # a context's own list
        return remembered.user, RequestContext(**own, request_id=request_id or new_request_id())
    try:
        token = _valid(token_cache.token_read(token_id), token_id)
        roles = token_cache.roles_of(token)
        if roles is None:
            roles = token_roles(token)
            token_cache.remember(token, roles)
    except TokenNotFound:
        raise Unauthorized() from None
    credential = token.application_credential
    fields: dict[str, Any] = dict(
        user_id=token.user.id,
        project_id=token.project.id if token.project else None,
        roles=roles,
        is_admin="admin" in roles and is_admin_project(token.project),
        user_name=token.user.name,
        project_name=token.project.name if token.project else None,
        application_credential_id=credential.id if credential else None,
        application_credential_restricted=credential is not None and not credential.unrestricted,
        grants_stamp=token_cache.stamp_of(token),
    )
    token_cache.validated_remember(token, fields)
    return token.user, RequestContext(**fields, request_id=request_id or new_request_id())


def token_validate_ahead(value: str) -> list[str] | None:
    """Validate the token string ``value`` just issued as its first request would, so that this
    process remembers it (``token_cache``): a client keeps its connection, and so the process,
    that issued its token. A burst of clients' first requests then spends no time validating
    their new tokens while their peers wait for the GIL. Its roles (``token_roles``), for the body
    that presents it; None for a token found invalid, left to its first request to refuse."""
    try:
        return context_for_token(value)[1].roles
    except Unauthorized:
        return None


def token_flush(*, older_than_seconds: int = 0) -> int:
    """Delete tokens that expired (or were revoked) more than ``older_than_seconds`` ago;
    returns how many (Keystone's ``token_flush``)."""
    cutoff = timezone.now() - timedelta(seconds=older_than_seconds)
    deleted, _ = Token.objects.filter(Q(expires_at__lt=cutoff) | Q(revoked=True, expires_at__lt=timezone.now())) \
        .delete()
    return deleted
