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


def test_a_server_still_scheduling_is_listed_first_shown_as_build_and_deletable(cloud):
    # given a server accepted but not yet scheduled (the conductor task never ran: no on-commit execution)
    client = cloud.member()
    active = cloud.create_server(client, "done")
    body = {"server": {"name": "waiting", "flavorRef": "1", "imageRef": cloud.image_id, "networks": "auto"}}
    response = client.post("/compute/v2.1/servers", body, format="json", HTTP_OPENSTACK_API_VERSION="compute 2.37")
    assert response.status_code == 202
    waiting = response.json()["server"]["id"]
    # then it is listed first, as BUILD/scheduling, and shown
    listed = cloud.get(client, "servers/detail", version="2.37").json()["servers"]
    assert [s["id"] for s in listed] == [waiting, active["id"]]
    assert (listed[0]["status"], listed[0]["OS-EXT-STS:task_state"]) == ("BUILD", "scheduling")
    assert cloud.show(client, waiting)["name"] == "waiting"
    # when it is deleted
    assert cloud.delete(client, f"servers/{waiting}").status_code == 204
    # then it is gone, and a late conductor run builds nothing
    assert cloud.get(client, f"servers/{waiting}").status_code == 404
    from cloudcore.core.context import RequestContext
    from conductor.build import schedule_and_build_instances

    schedule_and_build_instances(RequestContext.system(), instance_uuids=[waiting])
    assert cloud.cell_of(waiting) is None and cloud.domain(waiting) is None
