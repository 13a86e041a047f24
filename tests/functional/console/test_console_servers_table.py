"""The servers table is sorted and paged by the compute API (sort_key/sort_dir, limit/marker):
the console never fetches more than a page."""
from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client

from console import server_views
from tests.apihelpers import auth_client, make_identity

pytestmark = pytest.mark.django_db(transaction=True, databases=["default", "cell0", "cell1", "cell2"])


def _names(body: str) -> list[str]:
    return re.findall(r'<a class="fw-semibold" href="/servers/[^/]+/">([^<]+)</a>', body)


def test_servers_are_sorted_and_paged_by_the_api(cloud: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # given three servers and a page size of two
    user, project = make_identity("demo", project="demo", roles=["member"], password="pw")
    for name in ("bravo", "alpha", "charlie"):
        cloud.create_server(auth_client(user, project), name)
    monkeypatch.setattr(server_views, "PAGE_SIZE", 2)
    client = Client()
    client.post("/login/", {"username": "demo", "password": "pw"})
    # when sorted by name, the first page holds the first two and links to the next by marker
    first = client.get("/servers/?sort=name&dir=asc").content.decode()
    assert _names(first) == ["alpha", "bravo"]
    next_href = re.search(r'rel="next" href="\?([^"]+)"', first)
    assert next_href and "marker=" in next_href.group(1) and "sort=name" in next_href.group(1)
    # then the next page holds the rest and no further link
    second = client.get("/servers/?" + next_href.group(1).replace("&amp;", "&")).content.decode()
    assert _names(second) == ["charlie"] and 'rel="next"' not in second
    # and the other direction reverses the order
    assert _names(client.get("/servers/?sort=name&dir=desc").content.decode()) == ["charlie", "bravo"]
