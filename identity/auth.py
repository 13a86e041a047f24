"""DRF authentication for every OpenStack API view.

``TokenAuthentication``: the Keystone token of ``X-Auth-Token`` (what API clients send).
``SessionContextAuthentication``: a browser logged in to the console or Django admin, so that the
DRF browsable API works when an endpoint is opened in a browser; it acts for the project chosen
in the console (``console_project_id`` in the session), else the user's first project, and
enforces CSRF on unsafe methods as DRF's session authentication does.
Both give ``request.user`` = the identity User and ``request.auth`` = the RequestContext.
"""
from __future__ import annotations

from typing import Any

from rest_framework.authentication import BaseAuthentication, SessionAuthentication
from rest_framework.exceptions import AuthenticationFailed

from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Unauthorized

from .models import Project, User
from .services.accounts import user_projects
from .services.catalog import public_base
from .services.roles import roles_for
from .services.tokens import context_for_token, is_admin_project

SESSION_PROJECT = "console_project_id"


class TokenAuthentication(BaseAuthentication):
    def authenticate(self, request: Any) -> tuple[Any, Any] | None:
        token = request.META.get("HTTP_X_AUTH_TOKEN")
        if not token:
            return None
        try:
            user, ctx = context_for_token(token, request_id=getattr(request, "request_id", None))
        except Unauthorized:
            raise AuthenticationFailed("The request you have made requires authentication.") from None
        return user, ctx

    def authenticate_header(self, request: Any) -> str:
        return f'Keystone uri="{public_base()}/identity"'


def session_context(user: Any, session: Any) -> RequestContext:
    """The RequestContext of a logged-in browser session (see the module docstring)."""
    project = Project.objects.filter(id=session.get(SESSION_PROJECT)).first() if session is not None else None
    if project is None:
        projects = sorted(user_projects(user), key=lambda p: (not is_admin_project(p), p.name))
        project = projects[0] if projects else None
    roles = roles_for(user=user, project=project) if project else []
    return RequestContext(
        user_id=user.id, project_id=project.id if project else None, roles=roles,
        is_admin="admin" in roles and is_admin_project(project), user_name=user.name,
        project_name=project.name if project else None,
    )


class SessionContextAuthentication(SessionAuthentication):
    def authenticate(self, request: Any) -> tuple[Any, Any] | None:
        result = super().authenticate(request)
        if result is None or not isinstance(result[0], User) or not result[0].enabled:
            return None
        user = result[0]
        ctx = session_context(user, getattr(request._request, "session", None))
        request_id = getattr(request._request, "request_id", None)
        if request_id:
            ctx.request_id = request_id
        return user, ctx
