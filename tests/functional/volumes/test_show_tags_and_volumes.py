"""A server's tags and attached volumes, as a show renders them, come from one statement of its
cell (a ``UNION ALL``: ``servers.api.servers._tags_and_volumes``): the tags sorted, the volumes in
the order they were attached, each server's own, on a show and on a list page."""
from __future__ import annotations

from typing import Any

import pytest
from django.db import connections
from django.test.utils import CaptureQueriesContext

from tests.functional.volumes.test_volume_api import call

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])


def _volume(client: Any, name: str) -> str:
    response = call(client, "post", "/volume/v3/volumes", {"volume": {"size": 1, "name": name}})
    assert response.status_code == 202, response.content
    return str(response.json()["volume"]["id"])


def test_tags_and_volumes_are_read_together_in_their_order(bfv: Any) -> None:
    client = bfv.member()
    # given two servers, the first tagged and with three volumes attached, the second with one of each
    first = bfv.create_server(client, "first", networks="none", tags=["zeta", "alpha", "mid"], version="2.52")
    second = bfv.create_server(client, "second", networks="none", tags=["solo"], version="2.52")
    attached = [_volume(client, name) for name in ("c", "a", "b")]
    for volume_id in attached:
        response = bfv.post(client, f"servers/{first['id']}/os-volume_attachments",
                            {"volumeAttachment": {"volumeId": volume_id}})
        assert response.status_code == 200, response.content
    lone = _volume(client, "lone")
    assert bfv.post(client, f"servers/{second['id']}/os-volume_attachments",
                    {"volumeAttachment": {"volumeId": lone}}).status_code == 200
    bfv.show(client, first["id"], version="2.90")  # (the show's statement built)
    # when the first is shown
    cell = bfv.cell_of(first["id"])
    with CaptureQueriesContext(connections[cell]) as captured:
        shown = bfv.show(client, first["id"], version="2.90")
    # then its tags are sorted and its volumes in attachment order, from one statement of its cell
    assert shown["tags"] == ["alpha", "mid", "zeta"]
    assert [v["id"] for v in shown["os-extended-volumes:volumes_attached"]] == attached
    extras = [q["sql"] for q in captured.captured_queries if "servers_tag" in q["sql"]]
    assert len(extras) == 1 and "servers_blockdevicemapping" in extras[0], captured.captured_queries
    # and a list page gives each server its own
    listed = {s["id"]: s for s in bfv.get(client, "servers/detail", version="2.90").json()["servers"]}
    assert listed[first["id"]]["tags"] == ["alpha", "mid", "zeta"]
    assert [v["id"] for v in listed[first["id"]]["os-extended-volumes:volumes_attached"]] == attached
    assert listed[second["id"]]["tags"] == ["solo"]
    assert [v["id"] for v in listed[second["id"]]["os-extended-volumes:volumes_attached"]] == [lone]
    # and below 2.26 (no tags) the volumes alone are read
    old = bfv.show(client, first["id"], version="2.25")
    assert "tags" not in old and [v["id"] for v in old["os-extended-volumes:volumes_attached"]] == attached
