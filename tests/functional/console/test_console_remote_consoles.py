"""The server page's consoles: a button asks the compute API for a console token as the session's
user (its policy and its 404 for another project's server), and the console page carries the
proxy's websocket URL the API returned, adapted to the host the browser used only when the proxy
listens on every address."""
from __future__ import annotations

import urllib.parse
from typing import Any

import pytest
from django.test import Client

from console.remote_consoles import KINDS, browser_url, websocket_url
from servers.models import ConsoleAuthToken
from servers.services.consoles import console_token_validate
from tests.apihelpers import auth_client, make_identity

pytestmark = pytest.mark.django_db(transaction=True, databases=["default", "cell0", "cell1", "cell2"])


def _logged_in(name: str, project: str, roles: list[str]) -> tuple[Client, Any]:
    user, proj = make_identity(name, project=project, roles=roles, password="pw")
    client = Client()
    assert client.post("/login/", {"username": name, "password": "pw"}).status_code == 302
    return client, auth_client(user, proj)


def _token(page: str) -> str:
    marker = 'data-websocket-url="'
    url = page.split(marker, 1)[1].split('"', 1)[0].replace("&amp;", "&")
    return urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)["token"][0]


def test_member_opens_consoles_of_their_server_only(cloud: Any) -> None:
    # given two members of different projects, each with a server
    alice, alice_api = _logged_in("alice", "alpha", ["member"])
    _bob, bob_api = _logged_in("bob", "bravo", ["member"])
    mine = cloud.create_server(alice_api, "mine")
    theirs = cloud.create_server(bob_api, "theirs")

    # when alice opens the serial console of her own server
    page = alice.post(f"/servers/{mine['id']}/console/serial/")
    # then the page connects to the serial proxy with a live token for that server
    assert page.status_code == 200 and page["Cache-Control"] == "no-store"
    body = page.content.decode()
    assert 'data-kind="serial"' in body and 'data-websocket-url="ws://127.0.0.1:6083/?token=' in body
    row = console_token_validate(_token(body), console_types=("serial",))
    assert row is not None and row.instance_uuid == mine["id"]
    # and the VNC console's page opens the noVNC proxy's websocket (not its HTML page)
    vnc = alice.post(f"/servers/{mine['id']}/console/vnc/").content.decode()
    assert 'data-websocket-url="ws://127.0.0.1:6080/?token=' in vnc
    assert console_token_validate(_token(vnc), console_types=("novnc",)) is not None

    # when she asks for a console of bob's server, the API's 404 stands and no token is minted
    before = ConsoleAuthToken.objects.count()
    refused = alice.post(f"/servers/{theirs['id']}/console/serial/")
    assert refused.status_code == 404 and "token=" not in refused.content.decode()
    assert alice.post(f"/servers/{theirs['id']}/console/vnc/").status_code == 404
    assert ConsoleAuthToken.objects.count() == before


def test_console_policy_denial_is_shown_and_mints_nothing(cloud: Any) -> None:
    # given a reader (no os-remote-consoles for a reader by default) on a project's server
    member, member_api = _logged_in("carol", "charlie", ["member"])
    server = cloud.create_server(member_api, "web")
    reader, _ = _logged_in("dave", "charlie", ["reader"])
    # then the server page offers no console buttons to the reader
    detail = reader.get(f"/servers/{server['id']}/").content.decode()
    assert "Policy does not allow you to open this server's consoles." in detail
    assert 'data-console-open="serial"' not in detail
    assert 'data-console-open="serial"' in member.get(f"/servers/{server['id']}/").content.decode()
    # and a forged POST is refused by the API's policy with its message, minting no token
    refused = reader.post(f"/servers/{server['id']}/console/serial/")
    assert refused.status_code == 403 and "os_compute_api:os-remote-consoles" in refused.content.decode()
    assert ConsoleAuthToken.objects.count() == 0


def test_console_needs_login_post_and_a_known_kind(cloud: Any) -> None:
    client, api = _logged_in("erin", "echo", ["member"])
    server = cloud.create_server(api, "web")
    assert client.get(f"/servers/{server['id']}/console/serial/").status_code == 405
    assert client.post(f"/servers/{server['id']}/console/spice/").status_code == 404
    assert Client().post(f"/servers/{server['id']}/console/serial/").status_code == 302  # to the login page


def test_browser_url_follows_the_browser_host_only_when_the_proxy_listens_everywhere(settings: Any) -> None:
    serial, vnc = KINDS["serial"], KINDS["vnc"]
    url = "ws://127.0.0.1:6083/?token=abc"
    # a proxy on loopback only: the API's URL is kept whatever host the browser used
    settings.SERIALPROXY_HOST = "127.0.0.1"
    assert browser_url(url, kind=serial, request_host="cloud.example:8000") == url
    # a proxy on every address: a browser on another host name reaches it by that name
    settings.SERIALPROXY_HOST = "0.0.0.0"  # noqa: S104
    assert browser_url(url, kind=serial, request_host="cloud.example:8000") == "ws://cloud.example:6083/?token=abc"
    assert browser_url(url, kind=serial, request_host="127.0.0.1:8000") == url
    # a base URL naming a real host is never rewritten
    named = "wss://consoles.example/?token=abc"
    assert browser_url(named, kind=serial, request_host="10.0.0.5:8000") == named
    # noVNC: the page's websocket path becomes the websocket URL on the page's host
    settings.NOVNCPROXY_HOST = "::"
    page = "http://127.0.0.1:6080/vnc_lite.html?path=%3Ftoken%3Dxyz"
    moved = browser_url(page, kind=vnc, request_host="10.0.0.5:8000")
    assert moved == "http://10.0.0.5:6080/vnc_lite.html?path=%3Ftoken%3Dxyz"
    assert websocket_url(moved, kind=vnc) == "ws://10.0.0.5:6080/?token=xyz"
    assert websocket_url("https://c.example/vnc_lite.html?path=%3Ftoken%3Dq", kind=vnc) == "wss://c.example/?token=q"
