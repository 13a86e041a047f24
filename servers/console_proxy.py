"""The console proxies' token check: a websockify token plugin backed by cloudcore's console tokens.

``manage.py console_proxy --kind novnc`` (and ``--kind serial``) run websockify's
``WebSocketProxy`` with this plugin: before the websocket upgrade, websockify hands the plugin the
``token`` of the request's query string; the plugin answers the ``(host, port)`` the token leads
to, or None, and websockify refuses the connection (no upgrade). A token is good while it is
unexpired and of a console type this proxy serves (the VNC proxy does not open serial consoles).

websockify serves each connection in a forked child: the plugin closes the database connections
it opened before returning, so no connection is shared across processes.

The token is the query's; a request whose query has none may carry it in a ``token`` cookie
(``ConsoleRequestHandler``), as Nova's proxies also accept: noVNC before 1.1 sent it so, and so
does Tempest's websocket client (``GET /websockify`` with ``Cookie: token=...``), whose serial
console checks websockify alone refused ("Token not present").

``ConsoleOriginPlugin`` is websockify's auth plugin of both proxies: a browser's websocket whose
``Origin`` names another host than the proxy's own ``Host`` (or one of
``settings.CONSOLE_ALLOWED_ORIGINS``, Nova's ``[console] allowed_origins``), or another scheme
than the proxy's, is refused with 403 before the upgrade, as nova-novncproxy does: a page on
another site cannot open a console with a token it got hold of. A client that sends no ``Origin``
(not a browser) is let through; the token still decides.
"""
from __future__ import annotations

import logging
from typing import Any
from urllib.parse import parse_qs, urlsplit

from django.conf import settings
from django.db import connections
from django.http.cookie import parse_cookie
from websockify.auth_plugins import AuthenticationError
from websockify.token_plugins import BasePlugin
from websockify.websocketproxy import ProxyRequestHandler

from .services.consoles import console_token_validate

log = logging.getLogger(__name__)

#: the console types each proxy kind serves
KINDS = {"novnc": ("novnc",), "serial": ("serial",)}


def _close_connections() -> None:
    """Close the connections this lookup opened; one inside a transaction belongs to the caller
    (a test's), not to this lookup, and is left alone."""
    for connection in connections.all(initialized_only=True):
        if not connection.in_atomic_block:
            connection.close()


class ConsoleTokenPlugin(BasePlugin):
    """``source`` is the proxy's kind (``novnc`` or ``serial``)."""

    def __init__(self, source: str) -> None:
        super().__init__(source)
        self.console_types = KINDS[source]

    def lookup(self, token: str) -> tuple[str, int] | None:
        try:
            row = console_token_validate(token, console_types=self.console_types)
        finally:
            _close_connections()
        if row is None:
            log.info("refused a %s console connection: unknown or expired token", self.source)
            return None
        log.info("console %s of instance %s -> %s:%s", row.console_type, row.instance_uuid, row.host, row.port)
        return row.host, row.port


def _hostname(netloc: str) -> str:
    """``netloc``'s host without its port ("[::1]:6080" -> "::1"), lower case."""
    return (urlsplit(f"//{netloc}").hostname or "").lower()


def _scheme_family(scheme: str) -> str:
    return {"ws": "http", "wss": "https"}.get(scheme.lower(), scheme.lower())


class ConsoleOriginPlugin:
    """websockify's auth plugin (``authenticate(headers, target_host, target_port)``): the
    ``Origin`` check of the proxy of kind ``source``."""

    def __init__(self, source: str) -> None:
        self.source = source

    def _expected_scheme(self) -> str:
        base = settings.NOVNCPROXY_BASE_URL if self.source == "novnc" else settings.SERIALPROXY_BASE_URL
        return _scheme_family(urlsplit(base).scheme or "http")

    def authenticate(self, headers: Any, target_host: Any = None, target_port: Any = None) -> None:
        origin = headers.get("Origin")
        if origin is None:
            return
        parsed = urlsplit(origin)
        allowed = {_hostname(headers.get("Host") or "")} | {o.lower() for o in settings.CONSOLE_ALLOWED_ORIGINS}
        if not parsed.hostname or parsed.hostname.lower() not in allowed:
            log.info("refused a %s console connection from origin %r (allowed: %s)", self.source, origin,
                     ", ".join(sorted(allowed)))
            raise AuthenticationError(response_code=403, response_msg="Origin header does not match this host.")
        if _scheme_family(parsed.scheme) != self._expected_scheme():
            log.info("refused a %s console connection from origin %r: not %s", self.source, origin,
                     self._expected_scheme())
            raise AuthenticationError(response_code=403,
                                      response_msg="Origin header protocol does not match this host.")


class ConsoleRequestHandler(ProxyRequestHandler):  # type: ignore[misc]  # (websockify is untyped)
    """websockify's request handler, taking the token from a ``token`` cookie when the query has none
    (see the module doc)."""

    def get_target(self, target_plugin: Any) -> tuple[str, int]:
        if not self.host_token and "token" not in parse_qs(urlsplit(self.path).query):
            token = parse_cookie(self.headers.get("Cookie") or "").get("token")
            if token:
                found = target_plugin.lookup(token)
                if found is None:
                    raise self.server.EClose("Token not found")
                return found  # type: ignore[no-any-return]
        return super().get_target(target_plugin)  # type: ignore[no-any-return]
