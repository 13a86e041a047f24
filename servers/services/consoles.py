"""A server's consoles: its console log (``os-getConsoleOutput``) and its interactive consoles
(``POST /servers/{id}/remote-consoles``, the older ``os-get*Console`` actions), behind console
tokens that the console proxies check (``servers.console_proxy``).

Flow of a remote console: policy, the server must have a host (else 409 ``InstanceNotReady``),
the protocol and type must match and be one this cloud serves; the compute host answers where the
guest's console listens (``compute.rpc.get_console_connection``, a call the API waits for); a
token is minted, its SHA-256 stored with the target (``ConsoleAuthToken``, API database) and the
token string handed out once, in the URL of the console proxy. The proxy resolves the token with
``console_token_validate`` and forwards the websocket to ``host:port``.

Errors as Nova's: a console the guest does not have is 400 (``ConsoleTypeUnavailable``), a type
that does not go with the protocol 400 (``ConsoleTypeInvalid``), a protocol this hypervisor
cannot serve at all (rdp, mks) 501; a console log the host cannot read 404 (the host's
``ConsoleNotAvailable``: a host's failure comes back with its error's code).
"""
from __future__ import annotations

import hashlib
import re
import secrets
import urllib.parse
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.utils import timezone

from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Conflict, Invalid, NotFound, NotImplementedYet, Unauthorized
from cloudcore.core.policy import authorize
from compute import rpc as compute_rpc

from ..models import ConsoleAuthToken, Instance
from .power import call, target

if TYPE_CHECKING:
    from cells.models import CellMapping


class InstanceNotReady(Conflict):
    message = "Instance %(instance_id)s is not ready"


class ConsoleTypeInvalid(Invalid):
    message = "Invalid console type %(console_type)s"


class ConsoleTypeUnavailable(Invalid):
    message = "Unavailable console type %(console_type)s."


class ConsoleNotSupported(NotImplementedYet):
    message = "Action is not supported."


class ConsoleTokenNotFound(NotFound):
    message = "Token not found"


class ConsoleTokenNotAccessible(Unauthorized):
    message = "The requested console type details are not accessible"


#: protocol -> the console types it has (Nova's); only ``novnc`` and ``serial`` are served here
PROTOCOL_TYPES = {"vnc": ("novnc", "xvpvnc"), "spice": ("spice-html5",), "rdp": ("rdp-html5",),
                  "serial": ("serial",), "mks": ("webmks",)}
#: protocols the libvirt driver cannot serve at all (Nova's NotImplementedError: 501)
UNSUPPORTED_PROTOCOLS = ("rdp", "mks")
#: Nova's xvpvnc proxy is gone: the type is refused as invalid
RETIRED_TYPES = ("xvpvnc",)
#: Nova strips the control characters a console log may hold, except tab, newline and form feed
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f]")


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _require_host(instance: Instance) -> None:
    if not instance.host:
        raise InstanceNotReady(instance_id=instance.uuid)


def server_console_output(*, actor: RequestContext, instance: Instance, cell: CellMapping,
                          length: int | None) -> str:
    """The last ``length`` lines of the guest's serial console log (None or -1: all of it).

    Preconditions: the server has a host (else 409). Side effects: none (a call to the host).
    Raises: ``PolicyNotAuthorized`` (``os_compute_api:os-console-output``), ``InstanceNotReady``,
    the host's ``ConsoleNotAvailable`` (404) or any other error of the host (with its code).
    """
    authorize(actor, "os_compute_api:os-console-output", target(instance))
    _require_host(instance)
    if length is not None and length < 0:
        length = None
    answer = call(compute_rpc.get_console_output, actor=actor, instance=instance, cell=cell, length=length)
    return _CONTROL.sub("", str(answer.get("output") or ""))


def server_remote_console(*, actor: RequestContext, instance: Instance, cell: CellMapping, protocol: str,
                          console_type: str) -> str:
    """A console URL (with a fresh token) for the guest's ``protocol``/``console_type`` console.

    Preconditions: the server has a host (else 409). Side effects: one ``ConsoleAuthToken`` row
    in the API database (expired tokens of the server are dropped). Raises:
    ``PolicyNotAuthorized`` (``os_compute_api:os-remote-consoles``), ``InstanceNotReady``,
    ``ConsoleTypeInvalid``, ``ConsoleTypeUnavailable`` (400), ``ConsoleNotSupported`` (501).
    """
    authorize(actor, "os_compute_api:os-remote-consoles", target(instance))
    _require_host(instance)
    if protocol in UNSUPPORTED_PROTOCOLS:
        raise ConsoleNotSupported()
    if console_type not in PROTOCOL_TYPES.get(protocol, ()) or console_type in RETIRED_TYPES:
        raise ConsoleTypeInvalid(console_type=console_type)
    enabled = {"novnc": settings.VNC_ENABLED, "serial": settings.SERIAL_CONSOLE_ENABLED}
    if not enabled.get(console_type, False):
        raise ConsoleTypeUnavailable(console_type=console_type)
    where = call(compute_rpc.get_console_connection, actor=actor, instance=instance, cell=cell,
                  console_type=console_type)
    base = settings.NOVNCPROXY_BASE_URL if console_type == "novnc" else settings.SERIALPROXY_BASE_URL
    token = console_token_create(instance_uuid=instance.uuid, console_type=console_type, host=str(where["host"]),
                                 port=int(where["port"]), internal_access_path=where.get("internal_access_path"),
                                 access_url_base=base)
    return console_url(base, console_type, token)


def console_url(base: str, console_type: str, token: str) -> str:
    """Nova's URL shapes: noVNC's page gets the websocket path to open (``?path=%3Ftoken%3D...``),
    the serial console's websocket URL the token itself."""
    query = {"path": f"?token={token}"} if console_type == "novnc" else {"token": token}
    separator = "&" if "?" in base else "?"
    return f"{base}{separator}{urllib.parse.urlencode(query)}"


def console_token_create(*, instance_uuid: str, console_type: str, host: str, port: int,
                         internal_access_path: str | None, access_url_base: str) -> str:
    """Store a new token (its hash) good for ``settings.CONSOLE_TOKEN_TTL`` seconds; return the
    token string (known only now). The server's expired tokens go."""
    now = timezone.now()
    ConsoleAuthToken.objects.filter(instance_uuid=instance_uuid, expires__lte=now).delete()
    token = secrets.token_urlsafe(32)
    ConsoleAuthToken.objects.create(
        token_hash=token_digest(token), console_type=console_type, host=host, port=port,
        internal_access_path=internal_access_path, instance_uuid=instance_uuid, access_url_base=access_url_base,
        created_at=now, expires=now + timedelta(seconds=settings.CONSOLE_TOKEN_TTL))
    return token


def console_token_validate(token: str, *, console_types: tuple[str, ...] | None = None) -> ConsoleAuthToken | None:
    """The live token ``token`` (of one of ``console_types`` when given), or None: unknown,
    expired, or of another kind of console."""
    if not token:
        return None
    row = ConsoleAuthToken.objects.filter(token_hash=token_digest(token), expires__gt=timezone.now()).first()
    if row is None or (console_types is not None and row.console_type not in console_types):
        return None
    return row


def console_token_show(*, actor: RequestContext, token: str, rdp_only: bool) -> dict[str, Any]:
    """``GET /os-console-auth-tokens/{token}``: where the token leads. Before 2.31 only RDP tokens
    may be shown (401 otherwise, as Nova).

    Raises: ``PolicyNotAuthorized`` (``os_compute_api:os-console-auth-tokens``),
    ``ConsoleTokenNotFound`` (unknown or expired), ``ConsoleTokenNotAccessible``."""
    authorize(actor, "os_compute_api:os-console-auth-tokens", {"project_id": actor.project_id})
    row = console_token_validate(token)
    if row is None:
        raise ConsoleTokenNotFound()
    if rdp_only and row.console_type != "rdp-html5":
        raise ConsoleTokenNotAccessible()
    return {"instance_uuid": row.instance_uuid, "host": row.host, "port": row.port,
            "internal_access_path": row.internal_access_path}


def console_tokens_delete_for_instance(instance_uuid: str) -> int:
    """Drop every console token of a server (its delete): a token must not outlive its guest."""
    return int(ConsoleAuthToken.objects.filter(instance_uuid=instance_uuid).delete()[0])
