"""Consoles through the compute API on the in-process cloud: os-getConsoleOutput (the guest's log
read from its host, ``length``), remote consoles (2.6+) and the older os-get*Console actions (to
2.5), console tokens (stored hashed, expiring, dropped with the server) and
``GET /os-console-auth-tokens/{token}`` (admin; every type from 2.31); Nova's codes, policies
and microversion gates."""
from __future__ import annotations

import hashlib
import urllib.parse
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from servers.console_proxy import ConsoleTokenPlugin
from servers.models import ConsoleAuthToken
from servers.services.consoles import console_token_validate
from tests.cloud import Cloud

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])


def active_server(cloud: Cloud, client: Any, name: str = "vm1") -> str:
    server = cloud.create_server(client, name)
    return str(cloud.wait_for_status(client, server["id"], "ACTIVE")["id"])


def output(cloud: Cloud, client: Any, sid: str, body: Any) -> Any:
    return cloud.action(client, sid, {"os-getConsoleOutput": body})


def remote(cloud: Cloud, client: Any, sid: str, protocol: str, kind: str, version: str = "2.6") -> Any:
    return cloud.post(client, f"servers/{sid}/remote-consoles", {"remote_console": {"protocol": protocol,
                                                                                     "type": kind}},
                      version=version)


def token_of(url: str) -> str:
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)
    if "path" in query:  # noVNC's page: the websocket path carries the token
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(query["path"][0]).query)
    return query["token"][0]


def fault(response: Any, code: int) -> str:
    assert response.status_code == code, response.content
    return str(next(iter(response.json().values()))["message"])


def test_console_output_is_the_guests_log_from_its_host(cloud: Cloud) -> None:
    # given an active server whose guest has written five lines on its serial console
    client = cloud.member()
    sid = active_server(cloud, client)
    host = cloud.instance(sid).host
    cloud.driver(host).console_logs[sid] += b"\nline 4\x07\nline 5"
    # when its whole console output is asked for (no length, null, -1, "-1")
    for body in ({}, {"length": None}, {"length": -1}, {"length": "-1"}):
        response = output(cloud, client, sid, body)
        # then it is the host's log, control characters (the bell) stripped
        assert response.status_code == 200, response.content
        text = response.json()["output"]
        assert text.startswith(f"[    0.000000] booting {sid} on {host}") and text.endswith("line 4\nline 5")
    # length: the last lines, as an integer or a string of digits; 0 is nothing
    assert output(cloud, client, sid, {"length": 2}).json() == {"output": "line 4\nline 5"}
    assert output(cloud, client, sid, {"length": "1"}).json() == {"output": "line 5"}
    assert output(cloud, client, sid, {"length": 0}).json() == {"output": ""}
    # Nova's schema: no object, below -1, not a number, or an unknown key is 400
    for bad in (None, {"length": -2}, {"length": "two"}, {"length": 1.5}, {"lines": 2}):
        assert output(cloud, client, sid, bad).status_code == 400, bad


def test_console_output_policy_and_states(cloud: Cloud) -> None:
    client = cloud.member()
    sid = active_server(cloud, client)
    # a reader of the project may not read it (os_compute_api:os-console-output is member's)
    reader = cloud.member("reader1", roles=("reader",))
    assert "os_compute_api:os-console-output" in fault(output(cloud, reader, sid, {}), 403)
    # another project does not see the server at all
    assert output(cloud, cloud.member("demo2", project="demo2"), sid, {}).status_code == 404
    # a log the host cannot read is Nova's 404 ConsoleNotAvailable
    del cloud.driver(cloud.instance(sid).host).console_logs[sid]
    assert fault(output(cloud, client, sid, {}), 404) == "Guest does not have a console available."


def test_remote_vnc_and_serial_consoles_hand_out_tokens(cloud: Cloud) -> None:
    # given an active server
    client = cloud.member()
    sid = active_server(cloud, client)
    cloud.driver(cloud.instance(sid).host).console_ports[(sid, "novnc")] = 5907
    # when a noVNC console is asked for at 2.6
    response = remote(cloud, client, sid, "vnc", "novnc")
    # then the URL is the noVNC proxy's page with the websocket path carrying a fresh token
    assert response.status_code == 200, response.content
    console = response.json()["remote_console"]
    assert (console["protocol"], console["type"]) == ("vnc", "novnc")
    assert console["url"].startswith("http://127.0.0.1:6080/vnc_lite.html?path=%3Ftoken%3D")
    token = token_of(console["url"])
    # only the token's hash is stored, with the target, the server and an expiry
    row = ConsoleAuthToken.objects.get(token_hash=hashlib.sha256(token.encode()).hexdigest())
    assert (row.console_type, row.host, row.port, row.instance_uuid) == ("novnc", "127.0.0.1", 5907, sid)
    assert not ConsoleAuthToken.objects.filter(token_hash=token).exists()
    assert timedelta(seconds=590) < row.expires - timezone.now() <= timedelta(seconds=600)
    # the serial console's URL is the serial proxy's websocket with the token
    serial = remote(cloud, client, sid, "serial", "serial").json()["remote_console"]
    assert serial["url"].startswith("ws://127.0.0.1:6083/?token=")
    serial_row = console_token_validate(token_of(serial["url"]))
    assert serial_row is not None and (serial_row.console_type, serial_row.port) == ("serial", 10000)
    # the admin looks a token up (2.31+ for every type; before it only RDP tokens: 401)
    admin = cloud.admin()
    shown = cloud.get(admin, f"os-console-auth-tokens/{token}", version="2.31")
    assert shown.status_code == 200, shown.content
    assert shown.json() == {"console": {"instance_uuid": sid, "host": "127.0.0.1", "port": 5907,
                                        "internal_access_path": None}}
    assert fault(cloud.get(admin, f"os-console-auth-tokens/{token}", version="2.30"), 401) == (
        "The requested console type details are not accessible")
    assert fault(cloud.get(admin, "os-console-auth-tokens/not-a-token", version="2.31"), 404) == "Token not found"
    # a member may not (admin policy)
    assert "os-console-auth-tokens" in fault(cloud.get(client, f"os-console-auth-tokens/{token}", version="2.31"),
                                             403)
    # when the server is deleted its tokens go with it
    assert cloud.delete(client, f"servers/{sid}").status_code == 204
    assert not ConsoleAuthToken.objects.filter(instance_uuid=sid).exists()


def test_remote_console_errors_as_nova(cloud: Cloud) -> None:
    client = cloud.member()
    sid = active_server(cloud, client)
    # below 2.6 the resource does not exist
    assert remote(cloud, client, sid, "vnc", "novnc", version="2.5").status_code == 404
    # a protocol or type outside the schema is 400; mks only from 2.8
    assert remote(cloud, client, sid, "telnet", "novnc").status_code == 400
    assert remote(cloud, client, sid, "mks", "webmks", version="2.7").status_code == 400
    # a type that does not go with the protocol, or the retired xvpvnc: 400 ConsoleTypeInvalid
    assert fault(remote(cloud, client, sid, "vnc", "serial"), 400) == "Invalid console type serial"
    assert fault(remote(cloud, client, sid, "vnc", "xvpvnc"), 400) == "Invalid console type xvpvnc"
    # SPICE: the guests have no SPICE graphics: 400 ConsoleTypeUnavailable
    assert fault(remote(cloud, client, sid, "spice", "spice-html5"), 400) == (
        "Unavailable console type spice-html5.")
    # RDP and MKS: this hypervisor cannot serve them at all: Nova's 501
    assert remote(cloud, client, sid, "rdp", "rdp-html5").status_code == 501
    assert remote(cloud, client, sid, "mks", "webmks", version="2.8").status_code == 501
    # a stopped guest has no console to open: 400 ConsoleTypeUnavailable from its host
    assert cloud.action(client, sid, {"os-stop": None}).status_code == 202
    cloud.wait_for_status(client, sid, "SHUTOFF")
    assert fault(remote(cloud, client, sid, "vnc", "novnc"), 400) == "Unavailable console type novnc."
    # a reader may not open a console
    reader = cloud.member("reader1", roles=("reader",))
    assert "os_compute_api:os-remote-consoles" in fault(remote(cloud, reader, sid, "vnc", "novnc"), 403)
    assert not ConsoleAuthToken.objects.filter(instance_uuid=sid).exists()


def test_old_console_actions_up_to_2_5(cloud: Cloud) -> None:
    client = cloud.member()
    sid = active_server(cloud, client)
    # os-getVNCConsole and os-getSerialConsole answer {"console": {"type", "url"}} at 2.1
    vnc = cloud.action(client, sid, {"os-getVNCConsole": {"type": "novnc"}}, version="2.1")
    assert vnc.status_code == 200, vnc.content
    assert vnc.json()["console"]["type"] == "novnc" and "vnc_lite.html?path=" in vnc.json()["console"]["url"]
    serial = cloud.action(client, sid, {"os-getSerialConsole": {"type": "serial"}}, version="2.5")
    assert serial.status_code == 200 and serial.json()["console"]["url"].startswith("ws://")
    # a type outside the action's enum is 400; SPICE is unavailable (400), RDP not supported (501)
    assert cloud.action(client, sid, {"os-getVNCConsole": {"type": "serial"}}, version="2.1").status_code == 400
    assert cloud.action(client, sid, {"os-getSPICEConsole": {"type": "spice-html5"}},
                        version="2.1").status_code == 400
    assert cloud.action(client, sid, {"os-getRDPConsole": {"type": "rdp-html5"}}, version="2.1").status_code == 501
    # from 2.6 the actions are gone (404)
    assert cloud.action(client, sid, {"os-getVNCConsole": {"type": "novnc"}}, version="2.6").status_code == 404


def test_the_proxy_token_plugin_checks_expiry_and_kind(cloud: Cloud) -> None:
    # given a server with a noVNC token and a serial token
    client = cloud.member()
    sid = active_server(cloud, client)
    vnc_token = token_of(remote(cloud, client, sid, "vnc", "novnc").json()["remote_console"]["url"])
    serial_token = token_of(remote(cloud, client, sid, "serial", "serial").json()["remote_console"]["url"])
    vnc_proxy, serial_proxy = ConsoleTokenPlugin("novnc"), ConsoleTokenPlugin("serial")
    # then each proxy opens its own kind only, to the guest's console on its host
    assert vnc_proxy.lookup(vnc_token) == ("127.0.0.1", 5900)
    assert serial_proxy.lookup(serial_token) == ("127.0.0.1", 10000)
    assert vnc_proxy.lookup(serial_token) is None and serial_proxy.lookup(vnc_token) is None
    # an unknown token, an empty one, or the stored hash itself open nothing
    row = ConsoleAuthToken.objects.get(console_type="novnc", instance_uuid=sid)
    for bad in ("nope", "", row.token_hash):
        assert vnc_proxy.lookup(bad) is None
    # when the token expires it is refused
    ConsoleAuthToken.objects.filter(pk=row.pk).update(expires=timezone.now() - timedelta(seconds=1))
    assert vnc_proxy.lookup(vnc_token) is None
    # and a new console drops the server's expired tokens
    remote(cloud, client, sid, "vnc", "novnc")
    assert not ConsoleAuthToken.objects.filter(pk=row.pk).exists()


@pytest.mark.parametrize(("origin", "host", "allowed", "refusal"), [
    (None, "127.0.0.1", [], None),  # not a browser: the token alone decides
    ("http://127.0.0.1:8000", "127.0.0.1", [], None),  # the web console's page, another port
    ("http://[::1]:8000", "[::1]:6080", [], None),
    ("http://LOCALHOST:8000", "127.0.0.1:6080", ["localhost"], None),  # an allowed origin
    ("http://evil.example", "127.0.0.1:6080", [], "Origin header does not match this host."),
    ("http://localhost:8000", "127.0.0.1:6080", [], "Origin header does not match this host."),
    ("null", "127.0.0.1:6080", [], "Origin header does not match this host."),
    ("https://127.0.0.1:8000", "127.0.0.1:6080", [], "Origin header protocol does not match this host."),
])
def test_the_proxies_check_the_origin_of_a_browser(settings: Any, origin: str | None, host: str,
                                                   allowed: list[str], refusal: str | None) -> None:
    from websockify.auth_plugins import AuthenticationError

    from servers.console_proxy import ConsoleOriginPlugin

    settings.CONSOLE_ALLOWED_ORIGINS = allowed
    settings.NOVNCPROXY_BASE_URL, settings.SERIALPROXY_BASE_URL = "http://h:6080/vnc_lite.html", "ws://h:6083/"
    headers = {"Host": host, **({"Origin": origin} if origin else {})}
    for kind in ("novnc", "serial"):
        if refusal is None:
            ConsoleOriginPlugin(kind).authenticate(headers, None, None)
        else:
            with pytest.raises(AuthenticationError) as raised:
                ConsoleOriginPlugin(kind).authenticate(headers, None, None)
            assert (raised.value.code, raised.value.msg) == (403, refusal)
    # behind TLS (wss/https base URLs) it is the other way round
    settings.NOVNCPROXY_BASE_URL = "https://h:6080/vnc_lite.html"
    if origin == "https://127.0.0.1:8000":
        ConsoleOriginPlugin("novnc").authenticate(headers, None, None)
