"""The console is a client of cloudcore's own REST APIs, like Horizon is of Nova's.

Server pages and actions call the compute API in-process (Django's URL resolver, no network
hop) with a token issued for the session's user and project, so they get exactly the API's
policy checks, state guards, validation and messages, at the newest microversion.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any, cast

from django.http import HttpRequest
from django.test import RequestFactory
from django.urls import resolve
from django.utils import timezone

from identity import selectors as identity_selectors
from identity.services.tokens import token_issue

from .auth import SESSION_PROJECT

if TYPE_CHECKING:
    from identity.models import User

SESSION_TOKEN = "console_token"
MICROVERSION = "2.105"


@dataclass
class APIResult:
    status: int
    data: Any
    headers: dict[str, str]

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    @property
    def message(self) -> str:
        """The fault's message (Nova, Keystone or Neutron shapes), or a plain description."""
        if isinstance(self.data, dict) and self.data:
            body = next(iter(self.data.values()))
            if isinstance(body, dict) and "message" in body:
                return str(body["message"])
        return f"HTTP {self.status}"


def form_number(value: str) -> int | float | str:
    """A form field as the number an API expects (left as text when it is none: the API explains)."""
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            continue
    return value


def _token(request: HttpRequest) -> str:
    user = cast("User", request.user)  # console views require a logged-in user
    project_id = request.session.get(SESSION_PROJECT)
    cached = request.session.get(SESSION_TOKEN)
    if cached and cached.get("project") == project_id:
        token = identity_selectors.token_find_unrevoked(cached["id"])
        if token is not None and token.expires_at > timezone.now() + timedelta(seconds=60):
            return token.value
    project = identity_selectors.project_find(project_id)
    token = token_issue(user=user, project=project, methods=["password"])
    request.session[SESSION_TOKEN] = {"id": token.value, "project": project_id}
    return token.value


def call(request: HttpRequest, method: str, path: str, body: Any = None, *, version: str = MICROVERSION,
         service: str = "compute") -> APIResult:
    """``call(request, "POST", "/compute/v2.1/servers/<id>/action", {"os-stop": None})``."""
    factory = RequestFactory()
    headers = {"HTTP_X_AUTH_TOKEN": _token(request), "HTTP_OPENSTACK_API_VERSION": f"{service} {version}",
               "HTTP_ACCEPT": "application/json"}
    payload = json.dumps(body) if body is not None else None
    builder = getattr(factory, method.lower())
    if payload is None:
        api_request = builder(path, **headers)
    else:
        api_request = builder(path, data=payload, content_type="application/json", **headers)
    match = resolve(path.split("?", 1)[0])
    response = match.func(api_request, *match.args, **match.kwargs)
    if hasattr(response, "render"):
        response.render()
    content = response.content
    try:
        data = json.loads(content) if content else None
    except ValueError:
        data = None
    return APIResult(response.status_code, data, {k: v for k, v in response.items()})
