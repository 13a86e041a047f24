"""Projects and users: admin CRUD (Keystone's rules: names unique per domain) and password checks.

Every write takes the acting user (``actor``) and checks its Keystone rule first
(``identity:create_project``, ...), before any lookup, so a caller without the right learns
nothing about what exists.

Domain errors: ``PolicyNotAuthorized`` (403), ``Conflict`` (409) for duplicates, ``NotFound``
(404) for unknown ids, ``Unauthorized`` (401) for failed authentication (one message whatever
failed, as Keystone).
"""
from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction

from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Conflict, Forbidden, Invalid, NotFound, Unauthorized
from cloudcore.core.policy import authorize, members_group_name

from ..models import (
    DEFAULT_DOMAIN_ID,
    MAX_PROJECT_TAGS,
    MAX_TAG_LENGTH,
    ROLE_NAMES,
    ApplicationCredential,
    Project,
    ProjectTag,
    Role,
    Token,
    User,
)
from . import token_cache
from .roles import RoleNotFound, roles_for

DEFAULT_DOMAIN_NAME = "Default"
UNSET: Any = object()


class ProjectNotFound(NotFound):
    message = "Could not find project: %(project_id)s."


class ParentUnchangeable(Forbidden):
    """Keystone's 403 for a change of a project's ``parent_id``."""

    message = "A project's parent_id cannot be changed (it is %(parent_id)s)."


class ProjectImmutable(Forbidden):
    """Keystone's 403 for a change or delete of a project whose ``immutable`` option is set."""

    message = ("Project %(project_id)s is immutable: set its option 'immutable' to false before changing or "
               "deleting it.")


class UserNotFound(NotFound):
    message = "Could not find user: %(user_id)s."


class DomainNotFound(NotFound):
    message = "Could not find domain: %(domain_id)s."


class IdentityConflict(Conflict):
    message = "Conflict occurred attempting to store %(type)s - Duplicate entry found with name %(name)s."


class AuthFailed(Unauthorized):
    message = "The request you have made requires authentication."


def domain_id_from(ref: dict[str, Any] | None) -> str:
    """``{"id": "default"}`` or ``{"name": "Default"}`` (keystoneauth sends either) -> ``default``."""
    if not ref:
        return DEFAULT_DOMAIN_ID
    if "id" in ref:
        if str(ref["id"]).lower() != DEFAULT_DOMAIN_ID:
            raise DomainNotFound(domain_id=ref["id"])
        return DEFAULT_DOMAIN_ID
    if "name" in ref:
        if str(ref["name"]).lower() != DEFAULT_DOMAIN_NAME.lower():
            raise DomainNotFound(domain_id=ref["name"])
        return DEFAULT_DOMAIN_ID
    return DEFAULT_DOMAIN_ID


def domain_ref(domain_id: str) -> dict[str, str]:
    return {"id": domain_id, "name": DEFAULT_DOMAIN_NAME if domain_id == DEFAULT_DOMAIN_ID else domain_id}


# --- projects ---------------------------------------------------------------------------------


def project_get(project_id: str) -> Project:
    project = Project.objects.filter(id=project_id).first()
    if project is None:
        raise ProjectNotFound(project_id=project_id)
    return project


def project_find(ref: dict[str, Any]) -> Project:
    """A project from an auth scope: ``{"id": ...}`` or ``{"name": ..., "domain": {...}}``."""
    if "id" in ref:
        return project_get(str(ref["id"]))
    if "name" not in ref:
        raise Invalid("Project scope needs an id or a name.")
    domain_id = domain_id_from(ref.get("domain"))
    project = Project.objects.filter(name=ref["name"], domain_id=domain_id).first()
    if project is None:
        raise ProjectNotFound(project_id=ref["name"])
    return project


def project_create(*, actor: RequestContext, name: str, domain_id: str = DEFAULT_DOMAIN_ID, description: str = "",
                   enabled: bool = True, tags: list[str] | None = None, is_domain: bool = False,
                   parent_id: str | None = None, extra: dict[str, Any] | None = None,
                   options: dict[str, Any] | None = None) -> Project:
    """A new project, with ``tags`` (Keystone's limits: ``project_tags_checked``), ``extra``
    attributes (kept as they came) and ``options`` (Keystone's, ``PROJECT_OPTIONS``; null ones
    are not set). ``is_domain``
    and ``parent_id`` are checked by ``project_place_checked``: every project here is a regular
    project directly under its domain. Raises ``PolicyNotAuthorized``
    (``identity:create_project``), ``Invalid`` for a bad tag, a project acting as a domain or a
    parent other than the domain, ``ProjectNotFound`` for an unknown parent, ``IdentityConflict``
    when the name is taken in the domain."""
    authorize(actor, "identity:create_project")
    tags = project_tags_checked(tags or [])
    project_place_checked(domain_id=domain_id, is_domain=is_domain, parent_id=parent_id)
    if Project.objects.filter(name=name, domain_id=domain_id).exists():
        raise IdentityConflict(type="project", name=name)
    try:
        with transaction.atomic():
            project = Project.objects.create(name=name, domain_id=domain_id, description=description,
                                             enabled=enabled, extra=extra or {},
                                             options=project_options_merged({}, options or {}))
            project_tags_write(project, tags)
            return project
    except IntegrityError:
        raise IdentityConflict(type="project", name=name) from None


def project_place_checked(*, domain_id: str, is_domain: bool, parent_id: str | None) -> None:
    """Where a new project would go, if this cloud can put it there: it has one domain (Default,
    no project acts as a domain) and no project hierarchy, so a project is a regular one whose
    parent is its domain (``parent_id`` absent, null, empty or the domain's id, as Keystone
    stores it). Raises ``Invalid`` (400) for ``is_domain`` true or a parent that is a project,
    ``ProjectNotFound`` (404, Keystone's answer) for a parent that is neither."""
    if is_domain:
        raise Invalid("Invalid input for field 'is_domain': this cloud has only the Default domain; "
                      "a project cannot act as a domain.")
    if not parent_id or parent_id == domain_id:
        return
    if not Project.objects.filter(id=parent_id).exists():
        raise ProjectNotFound(project_id=parent_id)
    raise Invalid(f"Invalid input for field 'parent_id': hierarchical projects are not supported; a project's "
                  f"parent is its domain ({domain_id!r}), not project {parent_id!r}.")


def project_update(*, actor: RequestContext, project_id: str, tags: list[str] | None = None,
                   domain_id: str | None = UNSET, is_domain: bool | None = None, parent_id: str | None = UNSET,
                   extra: dict[str, Any] | None = None, options: dict[str, Any] | None = None,
                   **changes: Any) -> Project:
    """Change a project's ``name``, ``description`` or ``enabled``; ``tags`` (not None) replaces
    its tags; ``extra`` attributes are set over the ones it has (Keystone's merge), and so are
    ``options`` (a null one is unset). ``domain_id``, ``is_domain`` and ``parent_id``, when
    given, must be the project's own (Keystone's: none of them changes). An immutable project
    takes one update only: ``options`` setting ``immutable`` to false or null, and nothing else.
    Raises ``PolicyNotAuthorized`` (``identity:update_project``), ``ProjectNotFound``,
    ``ProjectImmutable`` (403), ``Invalid`` for a bad tag, another domain or ``is_domain`` true,
    ``ParentUnchangeable`` (403) for another parent, ``IdentityConflict``."""
    authorize(actor, "identity:update_project", {"project_id": project_id})
    project = project_get(project_id)
    unlocks = options is not None and "immutable" in options and not options["immutable"]
    only_options = (tags is None and domain_id is UNSET and is_domain is None and parent_id is UNSET
                    and not extra and not changes)
    if project.is_immutable and not (unlocks and only_options):
        raise ProjectImmutable(project_id=project.id)
    if domain_id is not UNSET and domain_id != project.domain_id:
        raise Invalid(f"Invalid input for field 'domain_id': a project stays in its domain "
                      f"({project.domain_id!r}); it cannot move to {domain_id!r}.")
    if is_domain is not None and is_domain != project.is_domain:
        raise Invalid("Invalid input for field 'is_domain': a project's is_domain cannot be changed "
                      "(this cloud has only the Default domain).")
    if parent_id is not UNSET and parent_id != project_parent_id(project):
        raise ParentUnchangeable(parent_id=project_parent_id(project))
    if tags is not None:
        tags = project_tags_checked(tags)
    name = changes.get("name")
    if name and name != project.name and Project.objects.filter(name=name, domain_id=project.domain_id).exists():
        raise IdentityConflict(type="project", name=name)
    with transaction.atomic():
        for key, value in changes.items():
            setattr(project, key, value)
        if extra:
            project.extra = {**project.extra, **extra}
        if options:
            project.options = project_options_merged(project.options, options)
        project.save()
        if tags is not None:
            project_tags_write(project, tags)
    return project


def project_options_merged(current: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """``current`` options with ``given`` set over them, a null one unset (Keystone's way)."""
    merged = {**current, **given}
    return {name: value for name, value in merged.items() if value is not None}


def project_mutable_checked(project: Project) -> Project:
    """``project``, unless its ``immutable`` option is set: ``ProjectImmutable`` (403)."""
    if project.is_immutable:
        raise ProjectImmutable(project_id=project.id)
    return project


def project_parent_id(project: Project) -> str:
    """The project's parent as Keystone shows it: its domain's id (no project has another)."""
    return project.parent_id or project.domain_id


def project_tags_checked(tags: list[str]) -> list[str]:
    """``tags`` if Keystone would store them as a project's tags: at most ``MAX_PROJECT_TAGS``,
    no repeats, each 1 to ``MAX_TAG_LENGTH`` characters without '/' or ','. Raises ``Invalid``
    (400) naming the first one that is not."""
    if len(tags) > MAX_PROJECT_TAGS:
        raise Invalid(f"Invalid input for field 'tags': a project has at most {MAX_PROJECT_TAGS} tags "
                      f"({len(tags)} given).")
    seen: set[str] = set()
    for tag in tags:
        if not 1 <= len(tag) <= MAX_TAG_LENGTH:
            raise Invalid(f"Invalid input for field 'tags': {tag!r} is not a string of 1 to {MAX_TAG_LENGTH} "
                          "characters.")
        if "/" in tag or "," in tag:
            raise Invalid(f"Invalid input for field 'tags': {tag!r} contains '/' or ','.")
        if tag in seen:
            raise Invalid(f"Invalid input for field 'tags': {tag!r} is given twice.")
        seen.add(tag)
    return tags


def project_tags_write(project: Project, tags: list[str]) -> None:
    """Make ``tags`` (checked) the tags of ``project``, in that order."""
    ProjectTag.objects.filter(project=project).delete()
    ProjectTag.objects.bulk_create([ProjectTag(project=project, name=tag) for tag in tags])


def project_tag_names(project: Project) -> list[str]:
    """The tags of ``project`` in the order they were given (prefetched ones if any)."""
    return [tag.name for tag in sorted(project.tags.all(), key=lambda tag: tag.pk)]


def project_delete(*, actor: RequestContext, project_id: str) -> None:
    """Delete a project and its members group. Raises ``PolicyNotAuthorized``
    (``identity:delete_project``), ``ProjectNotFound``, ``ProjectImmutable`` (403)."""
    authorize(actor, "identity:delete_project", {"project_id": project_id})
    project = project_mutable_checked(project_get(project_id))
    from django.contrib.auth.models import Group

    Group.objects.filter(name=members_group_name(project.id)).delete()
    project.delete()


# --- users ----------------------------------------------------------------------------------------


def user_get(user_id: str) -> User:
    user = User.objects.filter(id=user_id).first()
    if user is None:
        raise UserNotFound(user_id=user_id)
    return user


def user_create(*, actor: RequestContext, name: str, password: str | None = None,
                domain_id: str = DEFAULT_DOMAIN_ID, default_project_id: str | None = None, email: str = "",
                description: str = "", enabled: bool = True) -> User:
    """A new user. Raises ``PolicyNotAuthorized`` (``identity:create_user``), ``ProjectNotFound``
    (default project), ``IdentityConflict`` when the name is taken in the domain."""
    authorize(actor, "identity:create_user")
    default_project = project_get(default_project_id) if default_project_id else None
    if User.objects.filter(name=name, domain_id=domain_id).exists():
        raise IdentityConflict(type="user", name=name)
    return User.objects.create_user(
        name, password, domain_id=domain_id, default_project=default_project, email=email,
        description=description, enabled=enabled,
    )


def user_update(*, actor: RequestContext, user_id: str, password: str | None = None,
                default_project_id: str | None = UNSET, **changes: Any) -> User:
    """Change a user (``name``, ``email``, ``description``, ``enabled``, default project, password).
    A new password or disabling revokes every token of the user; disabling also deletes the user's
    application credentials (as Keystone).
    Raises ``PolicyNotAuthorized`` (``identity:update_user``), ``UserNotFound``, ``ProjectNotFound``,
    ``IdentityConflict``."""
    authorize(actor, "identity:update_user", {"user_id": user_id})
    user = user_get(user_id)
    if default_project_id is not UNSET:
        changes["default_project"] = project_get(default_project_id) if default_project_id else None
    return _user_write(user, password=password, **changes)


def user_password_change(*, actor: RequestContext, user_id: str, original_password: str, password: str) -> None:
    """A user changes their own password (``POST /v3/users/{id}/password``); every token of the
    user is revoked. Raises ``Forbidden`` for anyone else's password (Keystone's
    ``identity:change_password``: the user themself only), ``UserNotFound``, ``AuthFailed`` (401)
    when ``original_password`` is wrong."""
    if user_id != actor.user_id:
        raise Forbidden("You are not authorized to perform the requested action: identity:change_password.")
    user = user_get(user_id)
    if not user.check_password(original_password):
        raise AuthFailed()
    _user_write(user, password=password)


def _user_write(user: User, *, password: str | None = None, **changes: Any) -> User:
    name = changes.get("name")
    if name and name != user.name and User.objects.filter(name=name, domain_id=user.domain_id).exists():
        raise IdentityConflict(type="user", name=name)
    for key, value in changes.items():
        setattr(user, key, value)
    if password is not None:
        user.set_password(password)
    user.save()
    if password is not None or changes.get("enabled") is False:
        # Keystone revokes a user's tokens when the password changes or the user is disabled.
        Token.objects.filter(user=user, revoked=False).update(revoked=True)
        token_cache.identity_changed([user.id])  # after the update: no process validates them again
    if changes.get("enabled") is False:
        ApplicationCredential.objects.filter(user=user).delete()
    return user


def user_delete(*, actor: RequestContext, user_id: str) -> None:
    """Delete a user. Raises ``PolicyNotAuthorized`` (``identity:delete_user``), ``UserNotFound``."""
    authorize(actor, "identity:delete_user", {"user_id": user_id})
    user = user_get(user_id)
    user.delete()


def user_authenticate(ref: dict[str, Any]) -> User:
    """The user of a password-method ``user`` object, or AuthFailed (401)."""
    password = ref.get("password")
    if not isinstance(password, str):
        raise AuthFailed()
    if "id" in ref:
        user = User.objects.filter(id=ref["id"]).first()
    elif "name" in ref:
        try:
            domain_id = domain_id_from(ref.get("domain"))
        except DomainNotFound:
            raise AuthFailed() from None
        user = User.objects.filter(name=ref["name"], domain_id=domain_id).first()
    else:
        raise AuthFailed()
    if user is None or not user.enabled or not user.check_password(password):
        raise AuthFailed()
    return user


def user_projects(user: User) -> list[Project]:
    """Projects on which ``user`` holds any role (directly or through a group)."""
    from guardian.shortcuts import get_objects_for_user

    perms = [f"identity.role_{name}" for name in ROLE_NAMES]
    projects = get_objects_for_user(user, perms, klass=Project, any_perm=True, with_superuser=False,
                                    accept_global_perms=False)
    return [p for p in projects.order_by("name") if roles_for(user=user, project=p)]


def role_get(role_id: str) -> Role:
    role = Role.objects.filter(id=role_id).first() or Role.objects.filter(name=role_id).first()
    if role is None:
        raise RoleNotFound(role=role_id)
    return role
