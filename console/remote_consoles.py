"""A server's interactive consoles in the browser: the serial console in xterm.js, VNC in noVNC.

The page asks the compute API for a remote console (``POST /servers/{id}/remote-consoles``, as
the user of the session: the API's policy ``os_compute_api:os-remote-consoles`` and its 404 for
another project's server apply) and connects the browser to the console proxy's websocket with
the token of the URL the API returned. Nothing here mints a token or reaches a guest itself.

The URL is the API's (``NOVNCPROXY_BASE_URL`` / ``SERIALPROXY_BASE_URL``); only when it names a
loopback host that the browser did not use to reach the console, and the proxy listens on every
address (``NOVNCPROXY_HOST`` / ``SERIALPROXY_HOST`` ``0.0.0.0`` or ``::``), is the host swapped for
the one the browser used: a console reached at ``http://cloud.example:8000/`` then opens
``ws://cloud.example:6083/`` instead of a loopback address the browser cannot reach.
"""
from __future__ import annotations

import urllib.parse
from dataclasses import dataclass

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_POST

from .auth import console_view
from .compute_client import call
from .views import _page

BASE = "/compute/v2.1"


@dataclass(frozen=True)
class ConsoleKind:
    protocol: str
    type: str
    title: str


#: the consoles the server page offers, by the name in its URL
KINDS = {"serial": ConsoleKind("serial", "serial", "Serial console"),
         "vnc": ConsoleKind("vnc", "novnc", "VNC console")}
LOOPBACK = {"127.0.0.1", "localhost", "::1"}
ALL_ADDRESSES = {"0.0.0.0", "::", ""}  # noqa: S104 - a listen setting compared, not bound


def _proxy_listens_everywhere(kind: ConsoleKind) -> bool:
    listen = settings.NOVNCPROXY_HOST if kind.type == "novnc" else settings.SERIALPROXY_HOST
    return listen in ALL_ADDRESSES


def browser_url(url: str, *, kind: ConsoleKind, request_host: str) -> str:
    """The API's console ``url`` as this browser can open it (see the module docstring)."""
    parts = urllib.parse.urlsplit(url)
    browser_host = urllib.parse.urlsplit(f"//{request_host}").hostname or ""
    if (parts.hostname in LOOPBACK and browser_host and browser_host not in LOOPBACK
            and _proxy_listens_everywhere(kind)):
        host = f"[{browser_host}]" if ":" in browser_host else browser_host
        netloc = f"{host}:{parts.port}" if parts.port else host
        return urllib.parse.urlunsplit(parts._replace(netloc=netloc))
    return url


def websocket_url(url: str, *, kind: ConsoleKind) -> str:
    """The websocket to open: the serial URL as it is; for noVNC, its page's host with the
    websocket ``path`` the page's query carries (``?path=%3Ftoken%3D...``, Nova's shape)."""
    if kind.type != "novnc":
        return url
    parts = urllib.parse.urlsplit(url)
    path = urllib.parse.parse_qs(parts.query).get("path", [""])[0]
    scheme = "wss" if parts.scheme == "https" else "ws"
    return f"{scheme}://{parts.netloc}/{path.lstrip('/')}"


@require_POST
@console_view()
def server_console(request: HttpRequest, server_id: str, kind: str) -> HttpResponse:
    """A fresh console token for the server (the compute API's, with the user's policy) and the
    page whose terminal or screen connects to the proxy with it."""
    console = KINDS.get(kind)
    if console is None:
        return _page(request, "console/error.html", {"message": f"Unknown console {kind!r}."}, status=404)
    server = call(request, "GET", f"{BASE}/servers/{server_id}")
    if not server.ok:
        return _page(request, "console/error.html", {"message": server.message}, status=server.status)
    result = call(request, "POST", f"{BASE}/servers/{server_id}/remote-consoles",
                  {"remote_console": {"protocol": console.protocol, "type": console.type}})
    if not result.ok:
        return _page(request, "console/error.html",
                     {"message": f"{console.title} unavailable: {result.message}"}, status=result.status)
    url = browser_url(result.data["remote_console"]["url"], kind=console, request_host=request.get_host())
    response = _page(request, "console/remote_console.html", {
        "server": server.data["server"], "kind": kind, "console": console, "url": url,
        "websocket_url": websocket_url(url, kind=console),
    })
    response["Cache-Control"] = "no-store"  # the page carries a live console token
    return response
