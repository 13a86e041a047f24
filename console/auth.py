"""Who is using the console: the identity user of the session and the project they chose.

The console logs users in with their identity (Keystone) name and password (Django's session
auth over ``identity.User``); the session remembers the project. ``console_context`` builds
the same RequestContext the APIs build from a token, so console actions go through the same
services and policy checks.
"""
from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import TYPE_CHECKING, Any, cast

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from cloudcore.core.context import RequestContext
from identity import selectors as identity_selectors
from identity.services.roles import roles_for
from identity.services.tokens import is_admin_project

if TYPE_CHECKING:
    from identity.models import Project, User

SESSION_PROJECT = "console_project_id"


def projects_of(user: User) -> list[Project]:
    """Projects on which ``user`` holds a role, admin project first."""
    projects = identity_selectors.projects_with_any_role(user)
    return sorted(projects, key=lambda p: (not is_admin_project(p), p.name))


def console_context(request: HttpRequest) -> RequestContext:
    user = cast("User", request.user)  # console views require a logged-in user
    project = identity_selectors.project_find(request.session.get(SESSION_PROJECT))
    if project is None:
        choices = projects_of(user)
        project = choices[0] if choices else None
        if project is not None:
            request.session[SESSION_PROJECT] = project.id
    roles = roles_for(user=user, project=project) if project else []
    return RequestContext(
        user_id=user.id, project_id=project.id if project else None, roles=roles,
        is_admin="admin" in roles and is_admin_project(project), user_name=user.name,
        project_name=project.name if project else None,
    )


View = Callable[..., HttpResponse]


def console_view(*, admin: bool = False) -> Callable[[View], View]:
    """Login required; with ``admin`` the cloud admin role too (403 page otherwise)."""

    def decorate(view: View) -> View:
        @login_required
        @wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            ctx = console_context(request)
            if admin and not ctx.is_admin:
                # the console's own page (header, menu, styles), not the server's bare 403
                user = cast("User", request.user)
                return render(request, "console/error.html", {
                    "ctx": ctx, "projects": projects_of(user),
                    "message": "This page needs the admin role on the admin project."}, status=403)
            request.ctx = ctx  # type: ignore[attr-defined]
            return view(request, *args, **kwargs)

        return wrapper

    return decorate
