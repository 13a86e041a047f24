"""Application credentials (Keystone's ``/v3/users/{user_id}/application_credentials`` and the
``application_credential`` auth method).

A user delegates a subset of the roles of their current (project-scoped) token to a named
secret: the credential is bound to the token's project, its roles must be among the token's
(by id or name; an unknown name is 404, a role the token lacks is 400 as Keystone answers), and
its tokens carry only those roles. The secret is generated when the client gives none, returned
once and stored hashed. A restricted credential (``unrestricted`` false, the default) cannot
create or delete application credentials with its tokens (403).

Side effects: deleting a credential deletes its tokens. Removing a user's role on a project
deletes the user's credentials on that project, and disabling a user deletes all of theirs
(``role_admin.grant_revoke`` and ``accounts``), as Keystone does.
"""
from __future__ import annotations

import base64
import secrets as secretslib
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from django.contrib.auth.hashers import check_password, make_password
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Conflict, Forbidden, Invalid, NotFound, Unauthorized
from cloudcore.core.policy import authorize

from ..models import ApplicationCredential, Role, User
from . import accounts
from .roles import RoleNotFound, roles_for, with_implied


class ApplicationCredentialNotFound(NotFound):
    message = "Could not find Application Credential: %(application_credential_id)s."


class ApplicationCredentialValidationError(Invalid):
    message = "Invalid application credential: %(detail)s"


class ApplicationCredentialAuthError(Unauthorized):
    message = "Error authenticating with application credential: %(detail)s"


class ApplicationCredentialConflict(Conflict):
    message = "Conflict occurred attempting to store application_credential - Duplicate name, %(name)s."


RESTRICTED = ("You are not authorized to perform the requested action: Using method 'application_credential' "
              "is not allowed for managing additional application credentials.")


def cli_safe(draw: Callable[[], str]) -> str:
    """``draw()``, drawn again while it begins with ``-``. URL-safe base64 text does in one draw of
    64, and a command line then reads it as an option: ``openstack
    --os-application-credential-secret -Xy...`` (or ``--os-password``) refuses to run."""
    while True:
        text = draw()
        if not text.startswith("-"):
            return text


def generate_secret() -> str:
    """64 random bytes, URL-safe base64 without padding (86 characters), as Keystone's, but never
    beginning with ``-`` (``cli_safe``)."""
    return cli_safe(lambda: base64.urlsafe_b64encode(secretslib.token_bytes(64)).rstrip(b"=").decode())


def parse_expiration(value: str) -> datetime:
    """An ISO 8601 time (UTC when it has no zone) in the future; Invalid (400) otherwise."""
    try:
        parsed = parse_datetime(value)
    except ValueError:
        parsed = None
    if parsed is None:
        raise Invalid("Timestamp not in expected format.")
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    if parsed <= timezone.now():
        raise Invalid("The 'expires_at' must not be before now.")
    return parsed


def _check_unrestricted(actor: RequestContext) -> None:
    if actor.application_credential_restricted:
        raise Forbidden(RESTRICTED)


def _roles_from(actor: RequestContext, refs: list[dict[str, str]] | None) -> list[Role]:
    if not refs:
        return list(Role.objects.filter(name__in=actor.roles).order_by("name"))
    found: list[Role] = []
    for ref in refs:
        if "id" in ref:
            role = Role.objects.filter(id=ref["id"]).first()
            if role is None:
                raise ApplicationCredentialValidationError(
                    detail="Cannot create an application credential with unassigned role")
        else:
            role = Role.objects.filter(name=ref.get("name")).first()
            if role is None:
                raise RoleNotFound(role=ref.get("name"))
        # Only roles of the token itself: a credential's token cannot widen what it was given.
        if role.name not in actor.roles:
            raise ApplicationCredentialValidationError(
                detail="Cannot create an application credential with unassigned role")
        if role not in found:
            found.append(role)
    return found


def application_credential_create(
    *, actor: RequestContext, user_id: str, name: str, description: str | None = None, secret: str | None = None,
    expires_at: str | None = None, roles: list[dict[str, str]] | None = None, unrestricted: bool = False,
) -> ApplicationCredential:
    """A new credential of the actor's user on the actor's project; its secret is
    ``credential.secret`` (known only now).

    Raises ``PolicyNotAuthorized`` (``identity:create_application_credential``: one's own only),
    ``Forbidden`` for a restricted credential's token, ``Invalid`` for an unscoped token, a bad
    ``expires_at`` or a role the token lacks, ``RoleNotFound`` for an unknown role name,
    ``ApplicationCredentialConflict`` when the user has one of that name."""
    authorize(actor, "identity:create_application_credential", {"user_id": user_id})
    _check_unrestricted(actor)
    user = accounts.user_get(user_id)
    if actor.project_id is None:
        raise ApplicationCredentialValidationError(detail="a project-scoped token is required")
    project = accounts.project_get(actor.project_id)
    expiry = parse_expiration(expires_at) if expires_at else None
    role_list = _roles_from(actor, roles)
    secret = secret or generate_secret()
    if ApplicationCredential.objects.filter(user=user, name=name).exists():
        raise ApplicationCredentialConflict(name=name)
    try:
        with transaction.atomic():
            credential = ApplicationCredential.objects.create(
                name=name, description=description, secret_hash=make_password(secret), user=user, project=project,
                expires_at=expiry, unrestricted=unrestricted,
            )
            credential.roles.set(role_list)
    except IntegrityError:
        raise ApplicationCredentialConflict(name=name) from None
    credential.secret = secret
    return credential


def application_credential_list(*, actor: RequestContext, user_id: str,
                                name: str | None = None) -> list[ApplicationCredential]:
    """A user's credentials, optionally those named ``name``. Raises ``PolicyNotAuthorized``
    (``identity:list_application_credentials``), ``UserNotFound``."""
    authorize(actor, "identity:list_application_credentials", {"user_id": user_id})
    user = accounts.user_get(user_id)
    qs = ApplicationCredential.objects.filter(user=user).prefetch_related("roles").order_by("name")
    if name is not None:
        qs = qs.filter(name=name)
    return list(qs)


def application_credential_get(*, actor: RequestContext, user_id: str,
                               application_credential_id: str) -> ApplicationCredential:
    """One of a user's credentials. Raises ``PolicyNotAuthorized``
    (``identity:get_application_credential``), ``ApplicationCredentialNotFound``."""
    authorize(actor, "identity:get_application_credential", {"user_id": user_id})
    credential = ApplicationCredential.objects.filter(id=application_credential_id, user_id=user_id).first()
    if credential is None:
        raise ApplicationCredentialNotFound(application_credential_id=application_credential_id)
    return credential


def application_credential_delete(*, actor: RequestContext, user_id: str, application_credential_id: str) -> None:
    """Delete a credential and its tokens. Raises ``PolicyNotAuthorized``
    (``identity:delete_application_credential``), ``Forbidden`` for a restricted credential's
    token, ``ApplicationCredentialNotFound``."""
    authorize(actor, "identity:delete_application_credential", {"user_id": user_id})
    _check_unrestricted(actor)
    deleted, _ = ApplicationCredential.objects.filter(id=application_credential_id, user_id=user_id).delete()
    if not deleted:
        raise ApplicationCredentialNotFound(application_credential_id=application_credential_id)


def application_credential_authenticate(ref: dict[str, Any]) -> ApplicationCredential:
    """The credential of an ``application_credential`` auth method object: ``{"id", "secret"}``
    or ``{"name", "user": {"id"} | {"name", "domain"}, "secret"}``. Raises ``Invalid`` (400) when
    neither id nor name (or a name without user) is given, ``AuthFailed`` (401) for an unknown
    credential or user, a wrong secret, an expired credential, a disabled user or project, or a
    user who holds none of the credential's roles any more."""
    if "id" in ref:
        credential = ApplicationCredential.objects.select_related("user", "project").filter(id=ref["id"]).first()
    elif "name" in ref:
        user = _auth_user(ref.get("user"))
        credential = ApplicationCredential.objects.select_related("user", "project") \
            .filter(user=user, name=ref["name"]).first()
    else:
        raise Invalid("Expecting to find id or name in application credential - the server could not comply "
                      "with the request since it is either malformed or otherwise incorrect. "
                      "The client is assumed to be in error.")
    secret = ref.get("secret")
    if credential is None or not isinstance(secret, str) or not check_password(secret, credential.secret_hash):
        raise accounts.AuthFailed()
    if credential.is_expired() or not credential.user.enabled or not credential.project.enabled:
        raise accounts.AuthFailed()
    held = roles_for(user=credential.user, project=credential.project)
    if not with_implied(list(credential.roles.values_list("name", flat=True))) & set(held):
        raise accounts.AuthFailed()
    return credential


def _auth_user(ref: Any) -> User:
    if not isinstance(ref, dict) or not ({"id", "name"} & set(ref)):
        raise Invalid("Expecting to find user in application credential - the server could not comply with the "
                      "request since it is either malformed or otherwise incorrect. The client is assumed to be "
                      "in error.")
    if "id" in ref:
        user = User.objects.filter(id=ref["id"]).first()
    else:
        try:
            domain_id = accounts.domain_id_from(ref.get("domain"))
        except accounts.DomainNotFound:
            raise accounts.AuthFailed() from None
        user = User.objects.filter(name=ref["name"], domain_id=domain_id).first()
    if user is None:
        raise accounts.AuthFailed()
    return user
