"""Consoles on the live cloud with the real ``openstack`` CLI and the console proxies ``run_cloud``
started (websockify with cloudcore's token plugin): ``console log show`` reads the guest's log from
its host; ``console url show --novnc`` / ``--serial`` hand out proxy URLs whose token the proxy
checks: a bad token, another kind's token or a dead server's token is refused before the websocket
upgrade; a good one is upgraded and the bytes of the guest's console flow both ways (the test
driver's guest's console servers, compute/virt/testconsoles.py: its serial line replays its log and
echoes, its VNC server greets in RFB 3.8)."""
from __future__ import annotations

import socket
import urllib.parse
from typing import Any

import pytest
from websockify.websocket import WebSocket

from .cloud import LiveCloud
from .test_cli_security_groups import wait_active
from .traffic import connect

pytestmark = [pytest.mark.slow, pytest.mark.e2e]


class TokenWebSocket(WebSocket):
    """websockify's client, keeping the query string (the token) in the upgrade request, and not
    losing the frames that came with the upgrade's answer.

    websockify's ``connect()`` keeps what it read past the ``101`` response in its buffer, but
    ``recv()`` decodes that buffer only after the socket gives more bytes. A console speaks first
    and then waits for the client (a VNC server's greeting, a serial line's replayed log): when its
    first frame came in the same read as the ``101`` (the proxy forwards it at once; under load the
    client reads late, and gets both), ``recv()`` waited for bytes that never came and the test saw
    nothing from the console. ``connect()`` here queues those frames as ``recv()`` would."""

    def __init__(self, query: str) -> None:
        super().__init__()
        self.query = query

    def send_request(self, type: str, path: str) -> None:  # noqa: A002 - websockify's signature
        super().send_request(type, f"{path}?{self.query}")

    def connect(self, uri: str, origin: str | None = None, protocols: list[str] | None = None) -> None:
        super().connect(uri, origin=origin, protocols=protocols or [])
        while (frame := self._decode_hybi(self._recv_buffer)) is not None:
            self._recv_buffer = self._recv_buffer[frame["length"]:]
            self._recv_queue.append(frame)


class CookieTokenWebSocket(TokenWebSocket):
    """The token in a ``token`` cookie and none in the path (``GET /websockify``), as Tempest's
    websocket client and noVNC before 1.1 send it."""

    def __init__(self, token: str) -> None:
        super().__init__("")
        self.token = token

    def send_request(self, type: str, path: str) -> None:  # noqa: A002 - websockify's signature
        WebSocket.send_request(self, type, "/websockify")
        self.send_header("Cookie", f"token={self.token}")


def open_console(proxy_port: int, token: str, origin: str | None = None, *, cookie: bool = False) -> WebSocket:
    ws = CookieTokenWebSocket(token) if cookie else TokenWebSocket(urllib.parse.urlencode({"token": token}))
    ws.connect(f"ws://127.0.0.1:{proxy_port}/", origin=origin, protocols=["binary"])
    ws.socket.settimeout(15)
    return ws


def refused(proxy_port: int, token: str, origin: str | None = None, *, cookie: bool = False) -> bool:
    try:
        open_console(proxy_port, token, origin, cookie=cookie).close()
    except Exception:  # noqa: BLE001 - websockify's client raises plain Exceptions on a denied upgrade
        return True
    return False


def token_of(url: str) -> str:
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)
    if "path" in query:
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(query["path"][0]).query)
    return query["token"][0]


def token_target(admin: Any, token: str) -> dict[str, Any]:
    response = admin.compute.get(f"/os-console-auth-tokens/{token}", microversion="2.31")
    assert response.status_code == 200, response.text
    return dict(response.json()["console"])


def recv_until(ws: WebSocket, end: bytes) -> bytes:
    """What the console sent up to ``end``; AssertionError (with what came) if it stops short."""
    data = b""
    while not data.endswith(end):
        try:
            data += ws.recv()
        except TimeoutError:
            raise AssertionError(f"no {end!r} from the console, only {data!r}") from None
    return data


def through_the_vnc_proxy(proxy_port: int, token: str) -> None:
    """A good token: the upgrade succeeds and the guest's VNC server answers the client."""
    ws = open_console(proxy_port, token)
    try:
        assert recv_until(ws, b"\n") == b"RFB 003.008\n"
        ws.send(b"RFB 003.008\n")
        assert recv_until(ws, b"\x01") == bytes([1, 1])  # one security type: None
    finally:
        ws.close()


def through_the_serial_proxy(proxy_port: int, token: str, name: str) -> None:
    """A good token: the upgrade succeeds, the guest's serial line shows its boot and echoes."""
    ws = open_console(proxy_port, token)
    try:
        assert recv_until(ws, f"{name} login: \n".encode()).endswith(f"{name} login: \n".encode())
        ws.send(b"root\r")
        assert recv_until(ws, b"root\r\n") == b"root\r\n"
    finally:
        ws.close()


def test_console_log_and_urls_through_the_proxies(live_cloud: LiveCloud) -> None:
    cloud = live_cloud
    vnc_proxy, serial_proxy = int(cloud.env["CLOUDCORE_NOVNCPROXY_PORT"]), int(cloud.env["CLOUDCORE_SERIALPROXY_PORT"])
    cloud.openstack("server", "create", "--flavor", "m1.tiny", "--image", "tiny", "--network", "demo-net",
                    "console-vm")
    server = wait_active(cloud, "console-vm")
    sid = server["id"]

    # the console log is the guest's boot, read from its host; --lines tails it
    log = cloud.openstack("console", "log", "show", "console-vm").stdout
    assert f"instance {sid}" in log and "Run /init as init process" in log, log
    tail = cloud.openstack("console", "log", "show", "--lines", "2", "console-vm").stdout
    assert tail.strip() == "console-vm login:", tail  # the log's last two lines: the prompt and its newline

    # a noVNC URL: the proxy's page, the token in the websocket path
    novnc = cloud.openstack_json("console", "url", "show", "--novnc", "console-vm")
    assert novnc["type"] == "novnc" and novnc["url"].startswith(f"http://127.0.0.1:{vnc_proxy}/vnc_lite.html?path=")
    vnc_token = token_of(novnc["url"])
    serial = cloud.openstack_json("console", "url", "show", "--serial", "console-vm")
    assert serial["type"] == "serial" and serial["url"].startswith(f"ws://127.0.0.1:{serial_proxy}/?token=")
    serial_token = token_of(serial["url"])

    admin = connect(cloud, "cloudcore-admin")
    try:
        vnc_target, serial_target = token_target(admin, vnc_token), token_target(admin, serial_token)
        assert vnc_target["instance_uuid"] == serial_target["instance_uuid"] == sid
        # the proxies refuse an unknown token, and each refuses the other's kind
        assert refused(vnc_proxy, "not-a-token") and refused(serial_proxy, "not-a-token")
        assert refused(vnc_proxy, serial_token) and refused(serial_proxy, vnc_token)
        # a good token from a page of another site, or of this host over https, is refused; a page
        # of this host (the web console's) is let through
        for origin in ("http://evil.example", "https://127.0.0.1:8000"):
            assert refused(vnc_proxy, vnc_token, origin) and refused(serial_proxy, serial_token, origin), origin
        assert not refused(vnc_proxy, vnc_token, f"http://127.0.0.1:{cloud.port}")
        # a good token is upgraded and forwarded to where it points: the guest's consoles
        through_the_vnc_proxy(vnc_proxy, vnc_token)
        through_the_serial_proxy(serial_proxy, serial_token, "console-vm")
        # the token in a cookie instead (Tempest's client): the line replays its log, with what was
        # typed above, and echoes; a bad token, or the other kind's, refused so too
        ws = open_console(serial_proxy, serial_token, cookie=True)
        try:
            assert recv_until(ws, b"login: \nroot\r\n").startswith(b"[    0.000000] Linux version")
            ws.send(b"cookie\r")
            assert recv_until(ws, b"cookie\r\n") == b"cookie\r\n"
        finally:
            ws.close()
        assert refused(serial_proxy, "not-a-token", cookie=True) and refused(serial_proxy, vnc_token, cookie=True)
        # the noVNC web client is served by the VNC proxy (Debian's novnc package)
        page = urllib.parse.urlsplit(novnc["url"])
        with socket.create_connection(("127.0.0.1", vnc_proxy), timeout=10) as raw:
            raw.sendall(f"GET {page.path} HTTP/1.0\r\n\r\n".encode())
            assert b" 200 " in raw.recv(64).split(b"\r\n")[0]
    finally:
        admin.close()

    # once the server is deleted its tokens open nothing
    cloud.openstack("server", "delete", "--wait", "console-vm")
    assert refused(vnc_proxy, vnc_token) and refused(serial_proxy, serial_token)
