"""Reading image data from a URL a client gave: the tasks API's ``import`` (``images.services``'
``image_task_run``), as Glance's task executor reads ``import_from``.

The cloud opens that URL from inside its own network, so the reader is bounded:

* only ``http`` and ``https``, at the start and after every redirect (no ``file:``, ``ftp:`` or
  ``data:``: the opener has no handler for them);
* at most ``IMAGE_IMPORT_MAX_BYTES`` bytes: a larger declared ``Content-Length`` is refused before
  a byte is read, a body that runs past the bound when it is reached;
* every connect and read waits at most ``IMAGE_IMPORT_TIMEOUT`` seconds, and the whole transfer
  ``TRANSFER_DEADLINE`` (the conductor's thread pool enforces no task time limit);
* never inside a web request: the conductor runs the task, the API answers 201 at once;
* only to where a client may send the cloud (``check_url``, ``_checked_connection``): a port the
  URL names must be one of ``IMAGE_IMPORT_ALLOWED_PORTS`` (80 and 443, Glance's default), and the
  address connected to must be a global one unless it is in ``IMAGE_IMPORT_ALLOWED_NETWORKS``: a
  URL cannot make the cloud read its own services, its metadata or its private networks. The
  address is the one the socket connected to, at every connection (redirects too), so a name that
  resolves to another address at the second lookup gains nothing.

Who may make the cloud read a URL is the policy's business: Glance's ``tasks_api_access``, cloud
admins by default (``images.policies``).
"""
from __future__ import annotations

import http.client
import ipaddress
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from http.client import HTTPException
from typing import IO, Any
from urllib.parse import urlsplit

from django.conf import settings

from cloudcore.core.exceptions import Invalid

SCHEMES = ("http", "https")
#: seconds a whole transfer may take, however steadily the bytes come
TRANSFER_DEADLINE = 1800
CHUNK = 1024 * 1024


class ImageFetchFailed(Invalid):
    message = "Could not read image data from %(url)s: %(reason)s"


def check_url(url: object) -> str:
    """``url`` if it is an http(s) URL with a host; Invalid (400) otherwise."""
    if not isinstance(url, str) or not url:
        raise Invalid("import_from must be a URL.")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - a port that is not a number raises here
    except ValueError:
        raise Invalid(f"Invalid import_from URL: {url}") from None
    if parts.scheme.lower() not in SCHEMES or not parts.hostname:
        raise Invalid(f"The import_from URL must be an http or https URL with a host, not {url}")
    allowed = settings.IMAGE_IMPORT_ALLOWED_PORTS
    if parts.port is not None and allowed and parts.port not in allowed:
        raise Invalid(f"The import_from URL may not name port {parts.port}: "
                      f"allowed are {', '.join(str(p) for p in allowed)}")
    return url


class AddressRefused(OSError):
    """The address a connection reached is not one a URL may make the cloud read."""


def _reachable(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%")[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return (ip.is_global and not ip.is_multicast) or any(
        ip in ipaddress.ip_network(network, strict=False) for network in settings.IMAGE_IMPORT_ALLOWED_NETWORKS)


def _checked_connection(address: tuple[str, int], *args: Any, **kwargs: Any) -> socket.socket:
    """``socket.create_connection``, refusing (``AddressRefused``) a peer that is not ``_reachable``."""
    sock = socket.create_connection(address, *args, **kwargs)
    peer = sock.getpeername()[0]
    if not _reachable(peer):
        sock.close()
        raise AddressRefused(f"{address[0]} is at {peer}, an address image data may not be read from")
    return sock


class _CheckedHTTPConnection(http.client.HTTPConnection):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._create_connection = _checked_connection


class _CheckedHTTPSConnection(http.client.HTTPSConnection):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._create_connection = _checked_connection


class _CheckedHTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_CheckedHTTPConnection, req)


class _CheckedHTTPSHandler(urllib.request.HTTPSHandler):
    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_CheckedHTTPSConnection, req, context=getattr(self, "_context", None))


class _HttpOnlyRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req: urllib.request.Request, fp: IO[bytes], code: int, msg: str,
                         headers: Any, newurl: str) -> urllib.request.Request | None:
        if urlsplit(newurl).scheme.lower() not in SCHEMES:
            raise urllib.error.URLError(f"redirected to a URL that is not http or https: {newurl}")
        try:
            check_url(newurl)
        except Invalid as exc:
            raise urllib.error.URLError(f"redirected to {newurl}: {exc}") from None
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def _opener() -> urllib.request.OpenerDirector:
    opener = urllib.request.OpenerDirector()
    for handler in (_CheckedHTTPHandler(), _CheckedHTTPSHandler(), _HttpOnlyRedirects(),
                    urllib.request.HTTPDefaultErrorHandler(), urllib.request.HTTPErrorProcessor()):
        opener.add_handler(handler)
    return opener


def fetch(url: str, *, max_bytes: int, timeout: float) -> Iterator[bytes]:
    """The body at ``url`` in blocks of at most 1 MiB, within the bounds above; ImageFetchFailed
    (with the reason: an HTTP error status, a name that does not resolve, a timeout, too many
    bytes) when it cannot be read whole."""
    url = check_url(url)
    deadline = time.monotonic() + TRANSFER_DEADLINE
    try:
        with _opener().open(url, timeout=timeout) as response:
            declared = response.headers.get("Content-Length")
            if declared and declared.isdigit() and int(declared) > max_bytes:
                raise ImageFetchFailed(url=url, reason=f"its {declared} bytes are more than the {max_bytes} allowed")
            received = 0
            while block := response.read(CHUNK):
                received += len(block)
                if received > max_bytes:
                    raise ImageFetchFailed(url=url, reason=f"it holds more than the {max_bytes} bytes allowed")
                if time.monotonic() > deadline:
                    raise ImageFetchFailed(url=url, reason=f"the transfer took more than {TRANSFER_DEADLINE} s")
                yield block
    except urllib.error.HTTPError as exc:
        raise ImageFetchFailed(url=url, reason=f"HTTP {exc.code} {exc.reason}") from None
    except urllib.error.URLError as exc:
        raise ImageFetchFailed(url=url, reason=str(exc.reason)) from None
    except (OSError, HTTPException) as exc:  # timeouts, resets, a malformed response
        raise ImageFetchFailed(url=url, reason=str(exc) or type(exc).__name__) from None
