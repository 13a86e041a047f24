"""Building servers through the HTTP API on the in-process test cloud (tests/cloud.py)."""
from __future__ import annotations

import pytest

ALL = ["default", "cell0", "cell1", "cell2"]
pytestmark = pytest.mark.django_db(databases=ALL)


def test_create_reaches_active_on_a_host_with_a_running_domain(cloud):
    # given a member of the demo project
    client = cloud.member()
    # when they boot a server from the tiny image on demo-net
    server = cloud.create_server(client, "vm1", networks="demo-net")
    # then the build ran inside the request: ACTIVE on one of the four hosts
    assert server["adminPass"] and server["OS-DCF:diskConfig"] == "MANUAL"
    shown = cloud.wait_for_status(client, server["id"], "ACTIVE")
    instance = cloud.instance(server["id"])
    assert instance.host in cloud.hosts
    assert cloud.cell_of(server["id"]) == cloud.hosts[instance.host]["cell"]
    # and libvirt runs the domain instance-<uuid>
    dom = cloud.domain(server["id"])
    assert dom is not None and dom.isActive()
    # and the address on demo-net is shown
    assert shown["addresses"]["demo-net"][0]["addr"].startswith("10.0.0.")
