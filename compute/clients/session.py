"""Authenticated sessions to the other services, as nova-compute has for Placement, Glance, Cinder
and Neutron: keystoneauth1 with the service user's password, endpoints from the token's catalog.

``settings.SERVICE_TRANSPORT == "inprocess"`` (the test suite) sends the requests through this
process's own WSGI handler instead of the network: the real views, serializers and policies
answer, inside the caller's transaction, on the service side (``cells.isolation``) with no cell
targeted.
"""
from __future__ import annotations

import threading
from collections.abc import Iterable
from http import HTTPStatus
from typing import Any, cast

import requests
from django.conf import settings
from django.test.signals import setting_changed
from keystoneauth1 import adapter, session
from keystoneauth1.identity import v3

from cloudcore.core.exceptions import CloudcoreError

#: How long one HTTP call to another service may take (connect, read), seconds.
TIMEOUT = 60
#: How often a call that could not reach the service (refused, reset, or a kept-alive connection the
#: web server had just closed: "Remote end closed connection without response") is sent again.
#: The request never reached a view in those cases; gunicorn closes idle connections after its
#: keep-alive, and an agent's session may pick one up just then.
CONNECT_RETRIES = 3

_lock = threading.Lock()
_session: session.Session | None = None


class ServiceCallFailed(CloudcoreError):
    message = "%(service)s answered %(status)s to %(method)s %(url)s: %(detail)s"
    code = 502


class _InProcessAdapter(requests.adapters.BaseAdapter):
    """A requests transport that hands the request to Django's handler in this process."""

    def send(self, request: requests.PreparedRequest, stream: bool = False, timeout: Any = None,
             verify: Any = True, cert: Any = None, proxies: Any = None) -> requests.Response:
        from urllib.parse import urlsplit

        from django.test import Client

        # The in-process transport is the tests' (SERVICE_TRANSPORT="inprocess"): a real compute
        # agent never loads Django's test client nor the identity app's services.
        from cells.context import untargeted
        from cells.isolation import service_side
        from identity.services.service_user import service_user_ensure

        parts = urlsplit(str(request.url))
        headers = {k: v for k, v in request.headers.items() if k.lower() not in ("content-length", "host")}
        content_type = headers.pop("Content-Type", headers.pop("content-type", "application/json"))
        body = request.body or b""
        if not isinstance(body, bytes | str):  # a streamed body (an image upload): the test client wants it whole
            body = b"".join(cast("Iterable[bytes]", body))
        with service_side(), untargeted():
            if parts.path.rstrip("/").endswith("/auth/tokens") and request.method == "POST":
                # Each test starts from an empty API database: the service user appears on first use.
                service_user_ensure()
            client = _in_process_client(Client)
            answer = client.generic(str(request.method), parts.path, data=body, content_type=str(content_type),
                                    headers=headers, QUERY_STRING=parts.query)
        response = requests.Response()
        response.status_code = answer.status_code
        response.reason = HTTPStatus(answer.status_code).phrase
        response.headers.update(dict(answer.items()))
        response._content = answer.content
        response.url = str(request.url)
        response.request = request
        response.encoding = answer.charset if hasattr(answer, "charset") else "utf-8"
        return response

    def close(self) -> None:
        pass


#: One test client per thread: a new one loads the middleware on its first request (WhiteNoise
#: then lists and stats every static file), which cost more than the call itself. Dropped when a
#: test changes a setting (the middleware, the static files); cookies never pass between calls.
_in_process = threading.local()
_settings_generation = 0


def _in_process_client(client_class: Any) -> Any:
    cached = getattr(_in_process, "client", None)
    if cached is None or cached[0] != _settings_generation:
        cached = _in_process.client = (_settings_generation,
                                       client_class(raise_request_exception=False, enforce_csrf_checks=False))
    client = cached[1]
    client.cookies.clear()
    return client


def _settings_changed(**_kwargs: Any) -> None:
    global _settings_generation
    _settings_generation += 1


setting_changed.connect(_settings_changed, dispatch_uid="compute-in-process-client")


def _new_session() -> session.Session:
    auth = v3.Password(
        auth_url=settings.SERVICE_AUTH_URL, username=settings.SERVICE_USER_NAME, password=settings.SERVICE_PASSWORD,
        project_name=settings.ADMIN_PROJECT_NAME, user_domain_id="default", project_domain_id="default",
    )
    sess = session.Session(auth=auth, timeout=TIMEOUT)
    if settings.SERVICE_TRANSPORT == "inprocess":
        transport = _InProcessAdapter()
        sess.session.mount("http://", transport)
        sess.session.mount("https://", transport)
    return sess


def service_session() -> session.Session:
    """The process's authenticated session (one token, renewed by keystoneauth when it expires or
    is refused)."""
    global _session
    with _lock:
        if _session is None:
            _session = _new_session()
        return _session


def service_adapter(service_type: str) -> adapter.Adapter:
    """An adapter for ``service_type`` ("placement", "image", "volumev3", "network", "compute")."""
    return adapter.Adapter(session=service_session(), service_type=service_type, interface="public",
                           region_name="RegionOne", raise_exc=False,
                           connect_retries=CONNECT_RETRIES, connect_retry_delay=0.2)


def expect(resp: requests.Response, *codes: int, service: str = "") -> requests.Response:
    """``resp`` if its status is one of ``codes``; otherwise ServiceCallFailed with its fault text."""
    if resp.status_code in codes:
        return resp
    detail = resp.text[:500]
    try:
        body = resp.json()
        if isinstance(body, dict) and body:
            inner = next(iter(body.values()))
            if isinstance(inner, dict) and "message" in inner:
                detail = str(inner["message"])
            elif isinstance(body.get("errors"), list) and body["errors"]:
                detail = str(body["errors"][0].get("detail", detail))
    except ValueError:
        pass
    raise ServiceCallFailed(service=service or "service", status=resp.status_code,
                            method=resp.request.method if resp.request else "", url=resp.url, detail=detail)
