"""2.104: ``PUT /servers/{id}`` unpins a server from its availability zone (``pinned_availability_zone``
null) or pins it to the zone it is in; any other zone is a 400, and below 2.104 the field is a 400."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])


def test_unpin_and_repin_at_2_104_and_refused_below(cloud):
    # given a server created in az1 (so pinned to it)
    client = cloud.member()
    server = cloud.create_server(client, "pin1", availability_zone="az1")
    shown = cloud.wait_for_status(client, server["id"], "ACTIVE", version="2.104")
    assert shown["pinned_availability_zone"] == "az1"
    path = f"servers/{server['id']}"
    # below 2.104 the field is not part of the update body
    assert cloud.put(client, path, {"server": {"pinned_availability_zone": None}}, version="2.103").status_code == 400
    # when it is unpinned at 2.104
    unpinned = cloud.put(client, path, {"server": {"pinned_availability_zone": None}}, version="2.104")
    assert unpinned.status_code == 200, unpinned.content
    assert unpinned.json()["server"]["pinned_availability_zone"] is None
    assert cloud.show(client, server["id"], version="2.104")["pinned_availability_zone"] is None
    # unpinning again is a no-op
    again = cloud.put(client, path, {"server": {"pinned_availability_zone": None}}, version="2.104")
    assert again.status_code == 200 and again.json()["server"]["pinned_availability_zone"] is None
    # pinning to another zone than its own is a 400
    other = cloud.put(client, path, {"server": {"pinned_availability_zone": "az2"}}, version="2.104")
    assert other.status_code == 400, other.content
    # when it is pinned to the zone it is in, it reads back pinned
    pinned = cloud.put(client, path, {"server": {"pinned_availability_zone": "az1"}}, version="2.104")
    assert pinned.status_code == 200 and pinned.json()["server"]["pinned_availability_zone"] == "az1"
    assert cloud.show(client, server["id"], version="2.104")["pinned_availability_zone"] == "az1"
