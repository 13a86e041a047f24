"""Shelve, offload and unshelve, with the AZ/host decision matrix of the reference (2.4) and the
15 scenarios of Nova's test_availability_zones.py.

An offloaded server is unshelved inside its own cell (its rows live there, as in Nova), so for the
cross-zone scenarios cell1 gets two more hosts in az2: compute5 and compute6. Servers are booted
with ``host`` pinned into cell1 where the scenario does not say otherwise."""
from __future__ import annotations

from typing import Any

import pytest

from scheduling.models import RequestSpec
from servers.models import InstanceActionEvent
from tests.cloud import Cloud

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])
V = "2.91"
ZONE = {"compute1": "az1", "compute2": "az1", "compute3": "az2", "compute4": "az2", "compute5": "az2",
        "compute6": "az2"}


@pytest.fixture
def cloud(cloud: Cloud) -> Cloud:  # noqa: F811 - the shared cloud, with cell1 spanning both zones
    cloud.add_host("compute5", cell="cell1", zone="az2")
    cloud.add_host("compute6", cell="cell1", zone="az2")
    for host in ("compute3", "compute4"):  # cell2 stays out of these scenarios
        from cells.context import target_cell
        from hosts.models import Service

        with target_cell(cloud.cells["cell2"]):
            Service.objects.filter(host=host).update(disabled=True)
    return cloud


def offloaded(cloud: Cloud, client: Any, az: str | None = None) -> str:
    fields = {"availability_zone": az} if az else {}
    server = cloud.create_server(client, "shelvy", version=V, **fields)
    cloud.wait_for_status(client, server["id"], "ACTIVE", version=V)
    assert cloud.action(client, server["id"], {"shelve": None}, version=V).status_code == 202
    # SHELVED_OFFLOAD_TIME is 0 by default: offloaded at once, host cleared
    shown = cloud.wait_for_status(client, server["id"], "SHELVED_OFFLOADED", version=V)
    assert shown.get("OS-EXT-SRV-ATTR:host") is None  # (admins only see the key)
    assert cloud.instance(server["id"]).host is None
    return server["id"]


def spec_az(server_id: str) -> str | None:
    return RequestSpec.objects.get(instance_uuid=server_id).spec.get("availability_zone")


def unshelve(cloud: Cloud, client: Any, server_id: str, body: Any, expect: int = 202) -> dict:
    response = cloud.action(client, server_id, {"unshelve": body}, version=V)
    assert response.status_code == expect, response.content
    return cloud.show(client, server_id, version=V)


def assert_on(shown: dict, *, host: str | None = None, zone: str | None = None) -> None:
    assert shown["status"] == "ACTIVE", shown.get("fault")
    actual = shown["OS-EXT-SRV-ATTR:host"]
    if host:
        assert actual == host
    if zone:
        assert ZONE[actual] == zone
    assert shown["OS-EXT-AZ:availability_zone"] == ZONE[actual]


# -- server booted without a zone ------------------------------------------------------------------
def test_unshelve_server_without_az_contraint(cloud: Cloud) -> None:
    admin = cloud.admin()
    sid = offloaded(cloud, admin)
    assert_on(unshelve(cloud, admin, sid, None))
    assert spec_az(sid) is None


def test_unshelve_unpin_az_server_without_az_contraint(cloud: Cloud) -> None:
    admin = cloud.admin()
    sid = offloaded(cloud, admin)
    assert_on(unshelve(cloud, admin, sid, {"availability_zone": None}))
    assert spec_az(sid) is None


def test_unshelve_to_host_server_without_az_contraint(cloud: Cloud) -> None:
    admin = cloud.admin()
    sid = offloaded(cloud, admin)
    assert_on(unshelve(cloud, admin, sid, {"host": "compute5"}), host="compute5")
    assert spec_az(sid) is None


def test_unshelve_to_host_and_unpin_server_without_az_contraint(cloud: Cloud) -> None:
    admin = cloud.admin()
    sid = offloaded(cloud, admin)
    assert_on(unshelve(cloud, admin, sid, {"host": "compute5", "availability_zone": None}), host="compute5")
    assert spec_az(sid) is None


def test_unshelve_to_az_server_without_az_constraint(cloud: Cloud) -> None:
    admin = cloud.admin()
    sid = offloaded(cloud, admin)
    assert_on(unshelve(cloud, admin, sid, {"availability_zone": "az2"}), zone="az2")
    assert spec_az(sid) == "az2"


def test_unshelve_to_az_and_host_server_without_az_constraint(cloud: Cloud) -> None:
    admin = cloud.admin()
    sid = offloaded(cloud, admin)
    assert_on(unshelve(cloud, admin, sid, {"availability_zone": "az2", "host": "compute6"}), host="compute6")
    assert spec_az(sid) == "az2"


def test_unshelve_to_wrong_az_and_host_server_without_az_constraint(cloud: Cloud) -> None:
    admin = cloud.admin()
    sid = offloaded(cloud, admin)
    response = cloud.action(admin, sid, {"unshelve": {"availability_zone": "az1", "host": "compute5"}}, version=V)
    assert response.status_code == 409
    assert response.json()["conflictingRequest"]["message"] == 'Host "compute5" is not in the availability zone "az1".'
    assert cloud.show(admin, sid, version=V)["status"] == "SHELVED_OFFLOADED"


# -- server booted in az1 ---------------------------------------------------------------------------
def test_unshelve_a_server_with_az_contraint(cloud: Cloud) -> None:
    admin = cloud.admin()
    sid = offloaded(cloud, admin, "az1")
    assert_on(unshelve(cloud, admin, sid, None), zone="az1")
    assert spec_az(sid) == "az1"


def test_unshelve_to_unpin_az_a_server_with_az_constraint(cloud: Cloud) -> None:
    admin = cloud.admin()
    sid = offloaded(cloud, admin, "az1")
    assert_on(unshelve(cloud, admin, sid, {"availability_zone": None}))
    assert spec_az(sid) is None


def test_unshelve_to_host_server_with_az_contraint(cloud: Cloud) -> None:
    admin = cloud.admin()
    sid = offloaded(cloud, admin, "az1")
    assert_on(unshelve(cloud, admin, sid, {"host": "compute2"}), host="compute2")
    assert spec_az(sid) == "az1"


def test_unshelve_to_host_wrong_az_server_with_az_contraint(cloud: Cloud) -> None:
    admin = cloud.admin()
    sid = offloaded(cloud, admin, "az1")
    response = cloud.action(admin, sid, {"unshelve": {"host": "compute5"}}, version=V)
    assert response.status_code == 409
    assert spec_az(sid) == "az1"


def test_unshelve_to_host_and_unpin_server_with_az_contraint(cloud: Cloud) -> None:
    admin = cloud.admin()
    sid = offloaded(cloud, admin, "az1")
    assert_on(unshelve(cloud, admin, sid, {"host": "compute5", "availability_zone": None}), host="compute5")
    assert spec_az(sid) is None


def test_unshelve_to_az_a_server_with_az_constraint(cloud: Cloud) -> None:
    admin = cloud.admin()
    sid = offloaded(cloud, admin, "az1")
    assert_on(unshelve(cloud, admin, sid, {"availability_zone": "az2"}), zone="az2")
    assert spec_az(sid) == "az2"


def test_unshelve_to_host_and_az_a_server_with_az_constraint(cloud: Cloud) -> None:
    admin = cloud.admin()
    sid = offloaded(cloud, admin, "az1")
    assert_on(unshelve(cloud, admin, sid, {"availability_zone": "az2", "host": "compute6"}), host="compute6")
    assert spec_az(sid) == "az2"


def test_unshelve_to_host_and_wrong_az_a_server_with_az_constraint(cloud: Cloud) -> None:
    admin = cloud.admin()
    sid = offloaded(cloud, admin, "az1")
    response = cloud.action(admin, sid, {"unshelve": {"availability_zone": "az2", "host": "compute1"}}, version=V)
    assert response.status_code == 409
    assert spec_az(sid) == "az1"


# -- no valid host, policy, state and schema ------------------------------------------------------------
def test_pinned_server_with_its_zone_disabled_stays_offloaded(cloud: Cloud) -> None:
    from cells.context import target_cell
    from hosts.models import Service

    admin = cloud.admin()
    sid = offloaded(cloud, admin, "az1")
    with target_cell(cloud.cells["cell1"]):
        Service.objects.filter(host__in=["compute1", "compute2"]).update(disabled=True)
    shown = unshelve(cloud, admin, sid, None)
    assert shown["status"] == "SHELVED_OFFLOADED" and shown["OS-EXT-STS:task_state"] is None
    event = InstanceActionEventForUnshelve(cloud, sid)
    assert event.result == "Error" and "No valid host" in (event.details or event.traceback or "")


def InstanceActionEventForUnshelve(cloud: Cloud, sid: str) -> InstanceActionEvent:  # noqa: N802
    from cells.context import target_cell

    with target_cell(cloud.cell_of(sid)):
        return InstanceActionEvent.objects.get(action__instance_uuid=sid, action__action="unshelve",
                                               event="schedule_instances")


def test_member_may_not_pick_a_host(cloud: Cloud) -> None:
    member = cloud.member()
    sid = offloaded(cloud, member)
    response = cloud.action(member, sid, {"unshelve": {"host": "compute1"}}, version=V)
    assert response.status_code == 403
    assert response.json()["forbidden"]["message"] == (
        "Policy doesn't allow os_compute_api:os-shelve:unshelve_to_host to be performed.")
    # a project admin of the server's project may (DESIGN.md 7.2)
    project_admin = cloud.member("demo-admin", "demo", roles=("admin",))
    assert cloud.action(project_admin, sid, {"unshelve": {"host": "compute1"}}, version=V).status_code == 202
    assert cloud.show(member, sid, version=V)["status"] == "ACTIVE"


def test_unknown_host_is_400_and_unknown_zone_is_400(cloud: Cloud) -> None:
    admin = cloud.admin()
    sid = offloaded(cloud, admin)
    bad_host = cloud.action(admin, sid, {"unshelve": {"host": "host01"}}, version=V)
    assert bad_host.status_code == 400
    assert bad_host.json()["badRequest"]["message"] == "Compute host host01 could not be found."
    bad_zone = cloud.action(admin, sid, {"unshelve": {"availability_zone": "nowhere"}}, version=V)
    assert bad_zone.status_code == 400
    assert bad_zone.json()["badRequest"]["message"] == "The requested availability zone is not available"


def test_a_host_of_another_cell_is_400(cloud: Cloud) -> None:
    """The server's rows live in its cell and it is unshelved there: a host of another cell is
    not found (Nova), whatever its zone."""
    admin = cloud.admin()
    sid = offloaded(cloud, admin)
    assert cloud.cell_of(sid) == "cell1"
    other_cell = cloud.action(admin, sid, {"unshelve": {"host": "compute3"}}, version=V)
    assert other_cell.status_code == 400
    assert other_cell.json()["badRequest"]["message"] == "Compute host compute3 could not be found."
    assert cloud.show(admin, sid, version=V)["status"] == "SHELVED_OFFLOADED"


def test_host_for_a_server_not_offloaded_is_409(cloud: Cloud, settings: Any) -> None:
    settings.SHELVED_OFFLOAD_TIME = -1
    admin = cloud.admin()
    server = cloud.create_server(admin, "keep", version=V)
    assert cloud.action(admin, server["id"], {"shelve": None}, version=V).status_code == 202
    assert cloud.show(admin, server["id"], version=V)["status"] == "SHELVED"
    for body in ({"host": "compute1"}, {"availability_zone": None}):
        response = cloud.action(admin, server["id"], {"unshelve": body}, version=V)
        assert response.status_code == 409
        assert "The server status must be SHELVED_OFFLOADED." in response.json()["conflictingRequest"]["message"]
    # a plain unshelve of a SHELVED server powers it on where it is
    assert_on(unshelve(cloud, admin, server["id"], None))
    # and shelveOffload works from SHELVED only
    assert cloud.action(admin, server["id"], {"shelveOffload": None}, version=V).status_code == 409


@pytest.mark.parametrize(("version", "body", "code"), [
    ("2.91", {}, 400),                              # DESIGN.md 7.2: {} rejected
    ("2.91", {"host": None}, 400),
    ("2.91", {"host": 3}, 400),
    ("2.91", {"host": "compute1", "extra": 1}, 400),
    ("2.90", {"host": "compute1"}, 400),            # host only from 2.91
    ("2.77", {}, 400),                              # 2.77-2.90: availability_zone required in an object
    ("2.77", {"availability_zone": None}, 400),
])
def test_unshelve_schema_per_microversion(cloud: Cloud, version: str, body: Any, code: int) -> None:
    admin = cloud.admin()
    sid = offloaded(cloud, admin)
    assert cloud.action(admin, sid, {"unshelve": body}, version=version).status_code == code


def test_before_277_the_body_is_ignored(cloud: Cloud) -> None:
    admin = cloud.admin()
    sid = offloaded(cloud, admin, "az1")
    response = cloud.action(admin, sid, {"unshelve": {"availability_zone": "az2"}}, version="2.76")
    assert response.status_code == 202
    assert spec_az(sid) == "az1"


def test_shelve_snapshot_image_is_created_then_deleted_on_unshelve(cloud: Cloud) -> None:
    from images.models import Image

    admin = cloud.admin()
    sid = offloaded(cloud, admin)
    image = Image.objects.get(name="shelvy-shelved")
    assert image.status == "active" and image.properties["instance_uuid"] == sid
    unshelve(cloud, admin, sid, None)
    image.refresh_from_db()
    assert image.deleted


@pytest.mark.parametrize("offload", [True, False])
def test_deleting_a_shelved_server_deletes_its_snapshot(cloud: Cloud, settings: Any, offload: bool) -> None:
    from images.models import Image

    settings.SHELVED_OFFLOAD_TIME = 0 if offload else -1
    member = cloud.member()
    server = cloud.create_server(member, "shelvy", version=V)
    cloud.wait_for_status(member, server["id"], "ACTIVE", version=V)
    assert cloud.action(member, server["id"], {"shelve": None}, version=V).status_code == 202
    cloud.wait_for_status(member, server["id"], "SHELVED_OFFLOADED" if offload else "SHELVED", version=V)
    image = Image.objects.get(name="shelvy-shelved")
    # when its owner deletes the shelved server
    assert cloud.delete(member, f"servers/{server['id']}").status_code == 204
    # then its snapshot goes with it (Nova's API deletes it), and the server is gone
    image.refresh_from_db()
    assert image.deleted and image.status == "deleted"
    assert cloud.get(member, f"servers/{server['id']}").status_code == 404


def test_a_shelved_servers_snapshot_already_gone_does_not_stop_its_delete(cloud: Cloud) -> None:
    from images.models import Image

    admin = cloud.admin()
    sid = offloaded(cloud, admin)
    Image.objects.filter(name="shelvy-shelved").delete()
    assert cloud.delete(admin, f"servers/{sid}").status_code == 204
    assert cloud.get(admin, f"servers/{sid}").status_code == 404


def test_offload_frees_allocations_and_unshelve_claims_on_the_new_host(cloud: Cloud) -> None:
    from scheduling.placement.services import allocations_get

    admin = cloud.admin()
    sid = offloaded(cloud, admin)
    assert not allocations_get(consumer_uuid=sid).allocations
    shown = unshelve(cloud, admin, sid, {"host": "compute6"})
    allocations = allocations_get(consumer_uuid=sid).allocations
    assert list(allocations) == [cloud.hosts["compute6"]["node_uuid"]]
    assert shown["OS-EXT-SRV-ATTR:host"] == "compute6"
