"""The console proxies' token check: a websockify token plugin backed by cloudcore's console tokens.

``manage.py console_proxy --kind novnc`` (and ``--kind serial``) run websockify's
``WebSocketProxy`` with this plugin: before the websocket upgrade, websockify hands the plugin the
``token`` of the request's query string; the plugin answers the ``(host, port)`` the token leads
to, or None, and websockify refuses the connection (no upgrade). A token is good while it is
unexpired and of a console type this proxy serves (the VNC proxy does not open serial consoles).

websockify serves each connection in a forked child: the plugin closes the database connections
it opened before returning, so no connection is shared across processes.
"""
from __future__ import annotations

import logging

from django.db import connections
from websockify.token_plugins import BasePlugin

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
