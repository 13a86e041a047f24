"""Consoles on the live cloud with the real ``openstack`` CLI and the console proxies ``run_cloud``
started (websockify with cloudcore's token plugin): ``console log show`` reads the guest's log from
its host; ``console url show --novnc`` / ``--serial`` hand out proxy URLs whose token the proxy
checks: a bad token, another kind's token or a dead server's token is refused before the websocket
upgrade; a good one is upgraded and the bytes of the guest's console (here a small TCP server the
test stands up where the token points: the test driver's guests run no console server) flow both
ways."""
from __future__ import annotations

import socket
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from websockify.websocket import WebSocket

from .cloud import LiveCloud
from .test_cli_security_groups import wait_active
from .traffic import connect

pytestmark = [pytest.mark.slow, pytest.mark.e2e]


class TokenWebSocket(WebSocket):
    """websockify's client, keeping the query string (the token) in the upgrade request."""

    def __init__(self, query: str) -> None:
        super().__init__()
        self.query = query

    def send_request(self, type: str, path: str) -> None:  # noqa: A002 - websockify's signature
        super().send_request(type, f"{path}?{self.query}")


def open_console(proxy_port: int, token: str) -> WebSocket:
    ws = TokenWebSocket(urllib.parse.urlencode({"token": token}))
    ws.connect(f"ws://127.0.0.1:{proxy_port}/", protocols=["binary"])
    ws.socket.settimeout(15)
    return ws


def refused(proxy_port: int, token: str) -> bool:
    try:
        open_console(proxy_port, token).close()
    except Exception:  # noqa: BLE001 - websockify's client raises plain Exceptions on a denied upgrade
        return True
    return False


@contextmanager
def guest_console(port: int, greeting: bytes) -> Iterator[list[bytes]]:
    """A TCP server on 127.0.0.1:``port`` standing in for the guest's console: it sends
    ``greeting`` to whoever connects and records what it receives."""
    received: list[bytes] = []
    server = socket.create_server(("127.0.0.1", port), reuse_port=False)
    server.settimeout(30)

    def serve() -> None:
        try:
            conn, _ = server.accept()
        except OSError:
            return
        with conn:
            conn.sendall(greeting)
            conn.settimeout(15)
            try:
                data = conn.recv(1024)
            except OSError:
                return
            received.append(data)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield received
    finally:
        server.close()
        thread.join(timeout=20)


def token_of(url: str) -> str:
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)
    if "path" in query:
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(query["path"][0]).query)
    return query["token"][0]


def token_target(admin: Any, token: str) -> dict[str, Any]:
    response = admin.compute.get(f"/os-console-auth-tokens/{token}", microversion="2.31")
    assert response.status_code == 200, response.text
    return dict(response.json()["console"])


def through_the_proxy(proxy_port: int, token: str, target: dict[str, Any]) -> None:
    """A good token: the upgrade succeeds and bytes flow between the client and the guest's console."""
    with guest_console(int(target["port"]), b"RFB 003.008\n") as received:
        ws = open_console(proxy_port, token)
        try:
            assert ws.recv() == b"RFB 003.008\n"
            ws.send(b"RFB 003.008\n")
        finally:
            ws.close()
    assert received == [b"RFB 003.008\n"]


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
        # a good token is upgraded and forwarded to where it points
        through_the_proxy(vnc_proxy, vnc_token, vnc_target)
        through_the_proxy(serial_proxy, serial_token, serial_target)
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
