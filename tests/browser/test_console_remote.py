"""A server's consoles in Debian's chromium: the server page's "Serial console" button opens
xterm.js on the serial proxy's websocket and shows what the guest printed (and echoes what is
typed), "VNC console" opens noVNC's RFB on the VNC proxy's websocket and draws the guest's screen.

The path is the real one but for the guest: the console page asks the compute API for the token
(as the member who owns the server), the browser opens the URL the API returned, and the proxy is
websockify with cloudcore's token plugin (``servers.console_proxy``, in a thread of this process
so it sees the test databases). libvirt's test driver runs no guest, so the guest's serial line
and VNC server are the test driver's models of them (``TestVirtDriver.serve_consoles``,
compute/virt/testconsoles.py). Photographed at 1280 and 390 px."""
from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from websockify.websocketproxy import LibProxyServer

from compute.virt.testconsoles import COLOUR, SCREEN
from servers.console_proxy import ConsoleOriginPlugin, ConsoleTokenPlugin
from tests.apihelpers import auth_client, make_identity
from tests.cloud import Cloud, build_cloud

from .conftest import login, shot

pytestmark = [
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True, databases=["default", "cell0", "cell1", "cell2"]),
]


def _proxy(kind: str) -> tuple[LibProxyServer, threading.Thread]:
    server = LibProxyServer(listen_host="127.0.0.1", listen_port=0)
    # websockify's library server drops the token_plugin keyword and never sets unix_listen, which
    # its request handler reads: both set by hand
    server.token_plugin, server.auth_plugin = ConsoleTokenPlugin(kind), ConsoleOriginPlugin(kind)
    server.unix_listen = None
    # a console stays open until the browser or the guest hangs up: do not wait for it at shutdown
    server.daemon_threads, server.block_on_close = True, False
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server, thread


@pytest.fixture
def proxies(settings: Any) -> Iterator[dict[str, int]]:
    """Both console proxies on free ports, and the API's base URLs pointing at them (as make run's)."""
    started = {kind: _proxy(kind) for kind in ("novnc", "serial")}
    ports = {kind: int(server.server_address[1]) for kind, (server, _) in started.items()}
    settings.NOVNCPROXY_BASE_URL = f"http://127.0.0.1:{ports['novnc']}/vnc_lite.html"
    settings.SERIALPROXY_BASE_URL = f"ws://127.0.0.1:{ports['serial']}/"
    # the live server's pages are on localhost, the proxies on 127.0.0.1: the origin check lets
    # localhost's pages in only because it is allowed (Nova's [console] allowed_origins)
    settings.CONSOLE_ALLOWED_ORIGINS = ["localhost"]
    yield ports
    for server, thread in started.values():
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.fixture
def console_cloud(cells: dict) -> Iterator[Cloud]:
    cloud = build_cloud(cells)
    yield cloud
    cloud.teardown()


def _member_server(cloud: Cloud) -> dict[str, Any]:
    user, project = make_identity("demo", project="demo", roles=["member"], password="pw")
    client = auth_client(user, project)
    server = cloud.create_server(client, "web1")
    cloud.wait_for_status(client, server["id"], "ACTIVE")
    host = str(cloud.instance(server["id"]).host)
    cloud.driver(host).serve_consoles(server["id"], "web1")
    server["host"] = host
    return server


#: the terminal's text as xterm.js holds it, a line wrapped at a narrow width joined again
TERMINAL_TEXT = """() => { const b = window.cloudcoreConsole.term.buffer.active; let out = "";
    for (let i = 0; i < b.length; i++) { const line = b.getLine(i);
        out += (line.isWrapped ? "" : "\\n") + line.translateToString(true); }
    return out; }"""


def _open_console(page: Any, live_server: Any, cloud: Cloud, kind: str) -> dict[str, Any]:
    """A member's ACTIVE server (its guest booted and its consoles listening), its page shown and
    photographed, and its ``kind`` console opened from the Console card: the page says connected."""
    server = _member_server(cloud)
    login(page, live_server.url, "demo", "pw")
    page.goto(f"{live_server.url}/servers/{server['id']}/")
    shot(page, f"live-server-console-card-{page.viewport_size['width']}")
    page.click(f"[data-console-open={kind}]")
    page.wait_for_selector("#console-status[data-state=connected]")
    return server


def _fits(page: Any) -> None:
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 1, overflow


@pytest.mark.parametrize("page", [1280, 390], indirect=True)
def test_serial_console_shows_the_guest_output(page: Any, live_server: Any, console_cloud: Cloud,
                                               proxies: dict[str, int]) -> None:
    # given a member's ACTIVE server whose guest has booted (its serial log ends at the login prompt)
    # when the member clicks "Serial console" on its page
    server = _open_console(page, live_server, console_cloud, "serial")
    # then xterm.js, connected through the serial proxy, shows what the guest printed
    rows = page.locator("#console-terminal .xterm-rows")
    rows.filter(has_text="login:").wait_for()
    text = page.evaluate(TERMINAL_TEXT)
    assert f"booting {server['id']} on {server['host']}" in text and "Run /init as init process" in text
    # and what is typed reaches the guest, whose tty echoes it back into the terminal and its log
    page.locator("#console-terminal").click()
    page.keyboard.type("root")
    page.keyboard.press("Enter")
    rows.filter(has_text="login: root").wait_for()
    assert console_cloud.driver(server["host"]).console_logs[server["id"]].endswith(b"login: root\r\n")
    _fits(page)
    shot(page, f"live-serial-console-{page.viewport_size['width']}")


@pytest.mark.parametrize("page", [1280, 390], indirect=True)
def test_vnc_console_connects_and_draws_the_screen(page: Any, live_server: Any, console_cloud: Cloud,
                                                   proxies: dict[str, int]) -> None:
    # given a member's ACTIVE server with a VNC screen
    # when the member clicks "VNC console" on its page: noVNC connects through the VNC proxy
    _open_console(page, live_server, console_cloud, "vnc")
    # then it learns the guest's name and draws its screen, pixel for pixel
    assert page.locator("#remote-console").get_attribute("data-desktop-name") == "web1"
    page.wait_for_function("""([w, h]) => { const c = document.querySelector('#console-vnc canvas');
        return c && c.width === w && c.height === h
            && c.getContext('2d').getImageData(w / 2, h / 2, 1, 1).data[3] === 255; }""", arg=list(SCREEN))
    centre = page.evaluate("""([w, h]) => Array.from(document.querySelector('#console-vnc canvas')
        .getContext('2d').getImageData(w / 2, h / 2, 1, 1).data)""", list(SCREEN))
    assert centre == [*COLOUR, 255]
    assert not page.locator("[data-console-keys]").is_disabled()
    _fits(page)
    shot(page, f"live-vnc-console-{page.viewport_size['width']}")
