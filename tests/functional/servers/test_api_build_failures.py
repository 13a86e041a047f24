"""Builds that fail: NoValidHost buries the server in cell0 (ERROR, or PENDING with the option on, seed 3),
spawn failures reschedule to same-cell alternates, quotas refuse with 403."""
from __future__ import annotations

import pytest

from servers.models import InstanceAction, InstanceFault

ALL = ["default", "cell0", "cell1", "cell2"]
pytestmark = pytest.mark.django_db(databases=ALL)


def _impossible(cloud):
    return cloud.flavor("m1.huge", vcpus=1, ram=30000, disk=1)


def test_no_valid_host_lands_in_cell0_as_error_with_fault_and_failed_create_action(cloud):
    # given a flavor no host can hold
    _impossible(cloud)
    client = cloud.member()
    # when a server is booted with it
    server = cloud.create_server(client, "big", flavor="m1.huge")
    # then it is in cell0, ERROR, with Nova's fault
    assert cloud.cell_of(server["id"]) == "cell0"
    shown = cloud.wait_for_status(client, server["id"], "ERROR")
    assert shown["OS-EXT-STS:vm_state"] == "error"
    assert shown["fault"]["code"] == 500
    assert shown["fault"]["message"].startswith("No valid host was found.")
    # and its create action failed at conductor_schedule_and_build_instances
    actions = cloud.get(client, f"servers/{server['id']}/os-instance-actions").json()["instanceActions"]
    assert [a["action"] for a in actions] == ["create"]
    detail = cloud.get(client, f"servers/{server['id']}/os-instance-actions/{actions[0]['request_id']}",
                       version="2.51").json()["instanceAction"]
    assert detail["events"][0]["event"] == "conductor_schedule_and_build_instances"
    assert detail["events"][0]["result"] == "Error"


def test_pending_state_visible_only_from_2_105(cloud, settings):
    # given the operator chose the PENDING state
    settings.USE_PENDING_STATE = True
    _impossible(cloud)
    client = cloud.member()
    # when a server cannot be scheduled
    server = cloud.create_server(client, "big", flavor="m1.huge")
    # then 2.105 shows PENDING (and vm_state pending), with the fault
    new = cloud.show(client, server["id"], version="2.105")
    assert (new["status"], new["OS-EXT-STS:vm_state"]) == ("PENDING", "pending")
    assert new["fault"]["message"].startswith("No valid host was found.")
    # and 2.104 shows ERROR / error
    old = cloud.show(client, server["id"], version="2.104")
    assert (old["status"], old["OS-EXT-STS:vm_state"]) == ("ERROR", "error")
    # and the status filters follow the microversion
    ids = [s["id"] for s in cloud.get(client, "servers/detail?status=PENDING", version="2.105").json()["servers"]]
    assert ids == [server["id"]]
    ids = [s["id"] for s in cloud.get(client, "servers/detail?status=ERROR", version="2.104").json()["servers"]]
    assert ids == [server["id"]]


def test_list_shows_active_and_failed_servers_and_both_delete(cloud, settings):
    # given one ACTIVE server and one PENDING server in cell0
    settings.USE_PENDING_STATE = True
    _impossible(cloud)
    client = cloud.member()
    ok = cloud.create_server(client, "ok")
    bad = cloud.create_server(client, "bad", flavor="m1.huge")
    # when listing at 2.105
    servers = cloud.get(client, "servers/detail", version="2.105").json()["servers"]
    # then both are there, newest first
    assert [(s["name"], s["status"]) for s in servers] == [("bad", "PENDING"), ("ok", "ACTIVE")]
    # when both are deleted
    assert cloud.delete(client, f"servers/{bad['id']}").status_code == 204
    assert cloud.delete(client, f"servers/{ok['id']}").status_code == 204
    # then they are gone, and the domain too
    assert cloud.get(client, "servers").json()["servers"] == []
    assert cloud.get(client, f"servers/{ok['id']}").status_code == 404
    assert cloud.domain(ok["id"]) is None
    assert cloud.instance(ok["id"]).deleted


def test_reset_state_moves_pending_to_error(cloud, settings):
    # given a PENDING server
    settings.USE_PENDING_STATE = True
    _impossible(cloud)
    server = cloud.create_server(cloud.member(), "big", flavor="m1.huge")
    # when the admin resets it to error through the reset_state service
    from cells.context import target_cell
    from cloudcore.core.context import RequestContext
    from servers.selectors import server_get
    from servers.services.reset_state import server_reset_state

    admin = RequestContext.system()
    record = server_get(admin, server["id"])
    with target_cell(record.cell):
        server_reset_state(actor=admin, instance=record.instance, state="error")
    # then it is ERROR at 2.105 too
    assert cloud.show(cloud.admin(), server["id"], version="2.105")["status"] == "ERROR"


def test_spawn_failure_reschedules_to_the_alternate_in_the_same_cell(cloud):
    # given compute2 already carries a server (so the RAM weigher prefers compute1)
    admin = cloud.admin()
    cloud.create_server(admin, "filler", flavor="m1.large", availability_zone="az1:compute2")
    # and compute1's libvirt fails the next spawn
    cloud.driver("compute1").fail_spawns = 1
    client = cloud.member()
    # when a server is booted in az1
    server = cloud.create_server(client, "vm", availability_zone="az1")
    # then it was rescheduled to compute2 and is ACTIVE there
    cloud.wait_for_status(client, server["id"], "ACTIVE")
    assert cloud.instance(server["id"]).host == "compute2"
    assert cloud.domain(server["id"]).isActive()
    assert cloud.driver("compute1").fail_spawns == 0


def test_spawn_failure_on_every_alternate_ends_in_error_with_fault(cloud):
    # given both az1 hosts fail their next spawn
    cloud.driver("compute1").fail_spawns = 1
    cloud.driver("compute2").fail_spawns = 1
    client = cloud.member()
    # when a server is booted in az1
    server = cloud.create_server(client, "vm", availability_zone="az1")
    # then it is ERROR in cell1 with a fault, no domain left behind
    shown = cloud.wait_for_status(client, server["id"], "ERROR")
    assert cloud.cell_of(server["id"]) == "cell1"
    assert "fault" in shown
    assert cloud.domain(server["id"]) is None
    from cells.context import target_cell

    with target_cell("cell1"):
        assert InstanceFault.objects.filter(instance_uuid=server["id"]).exists()
        assert InstanceAction.objects.filter(instance_uuid=server["id"], action="create").exists()


def test_quota_exceeded_is_403_with_novas_message(cloud, settings):
    # given a project quota of one instance, already used
    settings.QUOTA_INSTANCES = 1
    client = cloud.member()
    cloud.create_server(client, "one")
    # when another server is requested
    response = cloud.post(client, "servers", {"server": {"name": "two", "flavorRef": "1",
                                                         "imageRef": cloud.image_id, "networks": "auto"}},
                          version="2.90")
    # then 403 with Nova's text
    assert response.status_code == 403
    assert response.json()["forbidden"]["message"] == (
        "Quota exceeded for instances: Requested 1, but already used 1 of 1 instances")


def test_multi_create_takes_what_the_quota_allows_down_to_min_count(cloud, settings):
    # given room for three more instances
    settings.QUOTA_INSTANCES = 3
    client = cloud.member()
    # when asking for 2 to 5
    rid = cloud.create_server(client, "many", min_count=2, max_count=5, return_reservation_id=True)["reservation_id"]
    # then three were created
    listed = cloud.get(client, f"servers?reservation_id={rid}").json()["servers"]
    assert len(listed) == 3
    # and a further min_count=1 is refused
    response = cloud.post(client, "servers", {"server": {"name": "more", "flavorRef": "1", "networks": "none",
                                                         "imageRef": cloud.image_id}}, version="2.37")
    assert response.status_code == 403


def test_a_host_without_a_running_compute_driver_fails_over_not_500(cloud):
    # given compute1's compute worker is gone from this process (no virt driver)
    from compute.drivers import unregister_driver

    unregister_driver("compute1")
    unregister_driver("compute2")
    client = cloud.member()
    # when a server is booted in az1
    server = cloud.create_server(client, "orphan", availability_zone="az1")
    # then the API answered 202 and the server is ERROR with a fault
    shown = cloud.wait_for_status(client, server["id"], "ERROR")
    assert shown["fault"]["message"].startswith("Exceeded maximum number of retries.")


def test_boot_from_volume_is_passed_through_to_the_build(cloud):
    # given a boot-from-volume request of a bootable volume (no real volume service behind it here)
    from volumes.models import Volume

    client = cloud.member()
    Volume.objects.create(id="11111111-2222-3333-4444-555555555555", name="root", size=1, status="available",
                          bootable=True, project_id="p", user_id="u")
    bdm = [{"boot_index": 0, "uuid": "11111111-2222-3333-4444-555555555555", "source_type": "volume",
            "destination_type": "volume", "delete_on_termination": False}]
    server = cloud.create_server(client, "bfv", image=None, block_device_mapping_v2=bdm)
    # then the API accepted it, the mapping is stored in the cell, and the answer is never a 500
    instance = cloud.instance(server["id"])
    assert instance is not None and instance.image_ref == ""
    from cells.context import target_cell
    from servers.models import BlockDeviceMapping

    with target_cell(cloud.cell_of(server["id"])):
        assert BlockDeviceMapping.objects.filter(instance_uuid=server["id"], boot_index=0,
                                                 volume_id=bdm[0]["uuid"]).exists()
    assert cloud.show(client, server["id"])["status"] in ("ACTIVE", "ERROR")


def test_boot_from_a_missing_or_non_bootable_volume_is_400(cloud):
    from volumes.models import Volume

    client = cloud.member()
    plain = Volume.objects.create(name="data", size=1, status="available", bootable=False,
                                  project_id="p", user_id="u")
    for volume_id, words in ((str(plain.id), "is not bootable"), ("99999999-2222-3333-4444-555555555555",
                                                                  "failed to get volume")):
        bdm = [{"boot_index": 0, "uuid": volume_id, "source_type": "volume", "destination_type": "volume"}]
        response = cloud.post(client, "servers", {"server": {"name": "x", "flavorRef": "1",
                                                             "block_device_mapping_v2": bdm, "networks": "none"}},
                              version="2.37")
        assert response.status_code == 400 and words in response.json()["badRequest"]["message"], response.content
