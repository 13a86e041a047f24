"""os-aggregates (admin) and os-availability-zone over hosts in two cells."""
from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from cells.models import HostMapping
from tests.factories import ServiceFactory

from .conftest import ALL_DATABASES, Personas

pytestmark = pytest.mark.django_db(databases=ALL_DATABASES)
AGG = "/compute/v2.1/os-aggregates"


@pytest.fixture
def hosts(cells: dict[str, Any]) -> dict[str, Any]:
    """compute1 (cell1, up), compute3 (cell2, up), compute4 (cell2, disabled), a conductor."""
    now = timezone.now()
    for host, cell, disabled in (("compute1", "cell1", False), ("compute3", "cell2", False),
                                 ("compute4", "cell2", True)):
        HostMapping.objects.create(host=host, cell=cells[cell])
        ServiceFactory(cell=cells[cell], host=host, binary="nova-compute", disabled=disabled, last_seen_up=now)
    ServiceFactory(cell=cells["cell1"], host="control", binary="nova-conductor", topic="conductor",
                   last_seen_up=now - timedelta(hours=1))
    return cells


def _create(client: Any, name: str, zone: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"name": name}
    if zone:
        body["availability_zone"] = zone
    response = client.post(AGG, {"aggregate": body}, format="json")
    assert response.status_code == 200, response.content
    return response.json()["aggregate"]


def test_aggregate_lifecycle(personas: Personas, hosts: dict[str, Any]) -> None:
    admin = personas.client("admin", "2.41")
    # when an aggregate with a zone is created
    created = _create(admin, "agg1", "az1")
    # then Nova's create body: no hosts/metadata keys, uuid from 2.41
    assert created["name"] == "agg1" and created["availability_zone"] == "az1"
    assert "hosts" not in created and "metadata" not in created and "uuid" in created
    agg_id = created["id"]
    added = admin.post(f"{AGG}/{agg_id}/action", {"add_host": {"host": "compute1"}}, format="json")
    assert added.status_code == 200 and added.json()["aggregate"]["hosts"] == ["compute1"]
    meta = admin.post(f"{AGG}/{agg_id}/action", {"set_metadata": {"metadata": {"ssd": "true"}}}, format="json")
    assert meta.json()["aggregate"]["metadata"] == {"availability_zone": "az1", "ssd": "true"}
    shown = admin.get(f"{AGG}/{agg_id}").json()["aggregate"]
    assert shown["hosts"] == ["compute1"] and shown["deleted"] is False
    listed = personas.client("admin", "2.1").get(AGG).json()["aggregates"]
    assert [a["name"] for a in listed] == ["agg1"] and "uuid" not in listed[0]
    renamed = admin.put(f"{AGG}/{agg_id}", {"aggregate": {"name": "agg-one"}}, format="json")
    assert renamed.status_code == 200 and renamed.json()["aggregate"]["name"] == "agg-one"
    # a non-empty aggregate cannot be deleted (400), an emptied one can
    assert admin.delete(f"{AGG}/{agg_id}").status_code == 400
    assert admin.post(f"{AGG}/{agg_id}/action", {"remove_host": {"host": "compute1"}},
                      format="json").status_code == 200
    assert admin.delete(f"{AGG}/{agg_id}").status_code == 200
    assert admin.get(f"{AGG}/{agg_id}").status_code == 404


def test_aggregate_errors(personas: Personas, hosts: dict[str, Any]) -> None:
    admin = personas.client("admin")
    agg = _create(admin, "agg1", "az1")
    other = _create(admin, "agg2", "az2")
    # duplicate name: 409
    dup = admin.post(AGG, {"aggregate": {"name": "agg1"}}, format="json")
    assert dup.status_code == 409
    assert dup.json() == {"conflictingRequest": {"code": 409, "message": "Aggregate agg1 already exists."}}
    # unknown host: 404; host twice: 409; host into a second zone: 409
    missing = admin.post(f"{AGG}/{agg['id']}/action", {"add_host": {"host": "nohost"}}, format="json")
    assert missing.status_code == 404
    assert missing.json()["itemNotFound"]["message"] == "Compute host nohost could not be found."
    admin.post(f"{AGG}/{agg['id']}/action", {"add_host": {"host": "compute1"}}, format="json")
    again = admin.post(f"{AGG}/{agg['id']}/action", {"add_host": {"host": "compute1"}}, format="json")
    assert again.status_code == 409
    cross = admin.post(f"{AGG}/{other['id']}/action", {"add_host": {"host": "compute1"}}, format="json")
    assert cross.status_code == 409
    # removing a host the aggregate does not have: 404
    assert admin.post(f"{AGG}/{other['id']}/action", {"remove_host": {"host": "compute3"}},
                      format="json").status_code == 404
    # unknown aggregate: 404; bad bodies: 400
    assert admin.get(f"{AGG}/999").status_code == 404
    assert admin.get(f"{AGG}/-1").status_code == 404 and admin.delete(f"{AGG}/-1").status_code == 404
    not_integer = admin.get(f"{AGG}/abc")
    assert not_integer.status_code == 400
    assert not_integer.json()["badRequest"]["message"] == "Invalid input received: id must be an integer."
    assert admin.post(AGG, {"aggregate": {"name": "x", "availability_zone": "a:b"}}, format="json").status_code == 400
    assert admin.post(AGG, {"aggregate": {"name": "x", "bogus": 1}}, format="json").status_code == 400
    assert admin.post(f"{AGG}/{agg['id']}/action", {"explode": {}}, format="json").status_code == 400
    assert admin.put(f"{AGG}/{agg['id']}", {"aggregate": {}}, format="json").status_code == 400


def test_aggregates_are_admin_only(personas: Personas, hosts: dict[str, Any]) -> None:
    response = personas.client("project_admin").get(AGG)
    assert response.status_code == 403
    assert response.json()["forbidden"]["message"] == (
        "Policy doesn't allow os_compute_api:os-aggregates:index to be performed.")


def test_availability_zone_list(personas: Personas, hosts: dict[str, Any]) -> None:
    admin = personas.client("admin")
    agg = _create(admin, "agg1", "az1")
    admin.post(f"{AGG}/{agg['id']}/action", {"add_host": {"host": "compute1"}}, format="json")
    dis = _create(admin, "agg-off", "az-off")
    admin.post(f"{AGG}/{dis['id']}/action", {"add_host": {"host": "compute4"}}, format="json")
    # when a member lists zones
    response = personas.client("member").get("/compute/v2.1/os-availability-zone")
    # then az1 and the default zone (compute3) are available, az-off (only a disabled host) is not
    assert response.status_code == 200
    assert response.json() == {"availabilityZoneInfo": [
        {"zoneName": "az1", "zoneState": {"available": True}, "hosts": None},
        {"zoneName": "nova", "zoneState": {"available": True}, "hosts": None},
        {"zoneName": "az-off", "zoneState": {"available": False}, "hosts": None},
    ]}


def test_availability_zone_detail(personas: Personas, hosts: dict[str, Any]) -> None:
    admin = personas.client("admin")
    agg = _create(admin, "agg1", "az1")
    admin.post(f"{AGG}/{agg['id']}/action", {"add_host": {"host": "compute1"}}, format="json")
    info = {z["zoneName"]: z for z in admin.get("/compute/v2.1/os-availability-zone/detail").json()[
        "availabilityZoneInfo"]}
    assert set(info) == {"az1", "nova", "internal"}
    compute1 = info["az1"]["hosts"]["compute1"]["nova-compute"]
    assert compute1["available"] is True and compute1["active"] is True and compute1["updated_at"]
    # the conductor has not reported for an hour: listed, not active
    assert info["internal"]["hosts"]["control"]["nova-conductor"]["active"] is False
    assert list(info["nova"]["hosts"]) == ["compute3"]
    assert personas.client("member").get("/compute/v2.1/os-availability-zone/detail").status_code == 403


def test_each_write_is_notified_as_nova_does(personas: Personas, hosts: dict[str, Any]) -> None:
    from cloudcore.core.models import NotificationRecord

    admin = personas.client("admin", "2.41")
    created = _create(admin, "agg9", "az9")
    agg_id = created["id"]
    admin.post(f"{AGG}/{agg_id}/action", {"add_host": {"host": "compute1"}}, format="json")
    admin.post(f"{AGG}/{agg_id}/action", {"set_metadata": {"metadata": {"ssd": "true"}}}, format="json")
    admin.put(f"{AGG}/{agg_id}", {"aggregate": {"name": "agg-nine"}}, format="json")
    admin.post(f"{AGG}/{agg_id}/action", {"remove_host": {"host": "compute1"}}, format="json")
    assert admin.delete(f"{AGG}/{agg_id}").status_code == 200
    # a refused write sends nothing
    assert admin.post(f"{AGG}/{agg_id}/action", {"add_host": {"host": "compute1"}}, format="json").status_code == 404
    sent = [(r.event_type, r.payload["publisher_id"].split(":")[0], r.payload["payload"]["nova_object.data"])
            for r in NotificationRecord.objects.filter(event_type__startswith="aggregate.").order_by("id")]
    assert [(event, publisher) for event, publisher, _ in sent] == [
        (f"aggregate.{action}.{phase}", "nova-api")
        for action in ("create", "add_host", "update_metadata", "update_prop", "remove_host", "delete")
        for phase in ("start", "end")]
    data = [payload for _, _, payload in sent]
    assert all(d["uuid"] == created["uuid"] for d in data)
    # a create's start has no id nor hosts yet, only the zone asked for; its end has them
    assert (data[0]["id"], data[0]["hosts"], data[0]["metadata"]) == (None, None, {"availability_zone": "az9"})
    assert (data[1]["id"], data[1]["hosts"]) == (agg_id, [])
    # each payload is the aggregate before the write (start) and after it (end)
    assert (data[2]["hosts"], data[3]["hosts"]) == ([], ["compute1"])
    assert "ssd" not in data[4]["metadata"] and data[5]["metadata"] == {"availability_zone": "az9", "ssd": "true"}
    assert data[6]["name"] == data[7]["name"] == "agg-nine"
    assert (data[8]["hosts"], data[9]["hosts"]) == (["compute1"], [])
    assert data[10]["name"] == data[11]["name"] == "agg-nine"
