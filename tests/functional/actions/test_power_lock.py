"""os-start/os-stop/reboot/lock/unlock/os-resetState through the action API (changePassword:
test_change_password.py), on the in-process cloud (real libvirt test-driver domains)."""
from __future__ import annotations

import libvirt
import pytest

from tests.cloud import Cloud

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])


def active_server(cloud: Cloud, client: object, name: str = "vm1") -> dict:
    server = cloud.create_server(client, name)
    return cloud.wait_for_status(client, server["id"], "ACTIVE")


def test_stop_then_start_changes_the_domain(cloud: Cloud) -> None:
    client = cloud.member()
    server = active_server(cloud, client)
    assert cloud.action(client, server["id"], {"os-stop": None}).status_code == 202
    assert cloud.show(client, server["id"])["status"] == "SHUTOFF"
    assert not cloud.domain(server["id"]).isActive()
    # stopping again is Nova's 409
    again = cloud.action(client, server["id"], {"os-stop": None})
    assert again.status_code == 409
    assert again.json()["conflictingRequest"]["message"] == (
        f"Cannot 'stop' instance {server['id']} while it is in vm_state stopped")
    assert cloud.action(client, server["id"], {"os-start": None}).status_code == 202
    assert cloud.show(client, server["id"])["status"] == "ACTIVE"
    assert cloud.domain(server["id"]).isActive()
    actions = [a["action"] for a in cloud.get(client, f"servers/{server['id']}/os-instance-actions").json()[
        "instanceActions"]]
    assert actions[:2] == ["start", "stop"]
    assert len(cloud.notifications("instance.power_off.start")) == 1
    assert len(cloud.notifications("instance.power_off.end")) == 1


def test_start_of_an_active_server_is_409(cloud: Cloud) -> None:
    client = cloud.member()
    server = active_server(cloud, client)
    response = cloud.action(client, server["id"], {"os-start": None})
    assert response.status_code == 409


def test_reboot_soft_and_hard_and_bad_type(cloud: Cloud) -> None:
    client = cloud.member()
    server = active_server(cloud, client)
    assert cloud.action(client, server["id"], {"reboot": {"type": "SOFT"}}).status_code == 202
    assert cloud.show(client, server["id"])["status"] == "ACTIVE"
    assert cloud.action(client, server["id"], {"reboot": {"type": "hard"}}).status_code == 202
    assert cloud.action(client, server["id"], {"reboot": {"type": "WARM"}}).status_code == 400
    assert cloud.action(client, server["id"], {"reboot": {}}).status_code == 400


def test_hard_reboot_recovers_an_error_server_whose_guest_is_gone(cloud: Cloud) -> None:
    client = cloud.member()
    server = active_server(cloud, client)
    dom = cloud.domain(server["id"])
    dom.destroy()
    dom.undefine()
    admin = cloud.admin()
    assert cloud.action(admin, server["id"], {"os-resetState": {"state": "error"}}).status_code == 202
    assert cloud.show(client, server["id"])["status"] == "ERROR"
    # a soft reboot is not allowed from ERROR; a hard one re-creates the guest
    assert cloud.action(client, server["id"], {"reboot": {"type": "SOFT"}}).status_code == 409
    assert cloud.action(client, server["id"], {"reboot": {"type": "HARD"}}).status_code == 202
    assert cloud.show(client, server["id"])["status"] == "ACTIVE"
    assert cloud.domain(server["id"]).isActive()


def test_lock_blocks_the_owner_not_the_admin(cloud: Cloud) -> None:
    client = cloud.member()
    server = active_server(cloud, client)
    admin = cloud.admin()
    assert cloud.action(admin, server["id"], {"lock": {"locked_reason": "maintenance"}}, version="2.73"
                        ).status_code == 202
    shown = cloud.show(client, server["id"], version="2.73")
    assert shown["locked"] is True and shown["locked_reason"] == "maintenance"
    locked = cloud.action(client, server["id"], {"os-stop": None})
    assert locked.status_code == 409 and "is locked" in locked.json()["conflictingRequest"]["message"]
    # the owner cannot lift an admin's lock
    assert cloud.action(client, server["id"], {"unlock": None}).status_code == 403
    assert cloud.action(admin, server["id"], {"unlock": None}).status_code == 202
    assert cloud.action(client, server["id"], {"os-stop": None}).status_code == 202


def test_lock_and_unlock_are_notified_by_the_api(cloud: Cloud) -> None:
    client = cloud.member()
    server = active_server(cloud, client)
    assert cloud.action(client, server["id"], {"lock": {"locked_reason": "mine"}}, version="2.73").status_code == 202
    assert cloud.action(client, server["id"], {"unlock": None}).status_code == 202
    locked, unlocked = cloud.notifications("instance.lock"), cloud.notifications("instance.unlock")
    assert len(locked) == len(unlocked) == 1
    assert locked[0]["publisher_id"].startswith("nova-api:")
    data = locked[0]["payload"]["nova_object.data"]
    assert (data["uuid"], data["locked"], data["locked_reason"]) == (server["id"], True, "mine")
    assert unlocked[0]["payload"]["nova_object.data"]["locked"] is False


def test_locked_reason_needs_273(cloud: Cloud) -> None:
    client = cloud.member()
    server = active_server(cloud, client)
    assert cloud.action(client, server["id"], {"lock": {"locked_reason": "x"}}, version="2.73").status_code == 202
    assert cloud.action(client, server["id"], {"lock": {"bogus": "x"}}, version="2.73").status_code == 400


def test_reset_state_is_admin_only_and_validated(cloud: Cloud) -> None:
    client = cloud.member()
    server = active_server(cloud, client)
    denied = cloud.action(client, server["id"], {"os-resetState": {"state": "error"}})
    assert denied.status_code == 403
    assert denied.json()["forbidden"]["message"] == (
        "Policy doesn't allow os_compute_api:os-admin-actions:reset_state to be performed.")
    assert cloud.action(cloud.admin(), server["id"], {"os-resetState": {"state": "paused"}}).status_code == 400


def test_unknown_action_and_malformed_bodies(cloud: Cloud) -> None:
    client = cloud.member()
    server = active_server(cloud, client)
    assert cloud.action(client, server["id"], {"os-frobnicate": None}).status_code == 404
    assert cloud.action(client, server["id"], {"os-start": None, "os-stop": None}).status_code == 400
    assert cloud.post(client, f"servers/{server['id']}/action", []).status_code == 400


def test_other_projects_server_is_404(cloud: Cloud) -> None:
    server = active_server(cloud, cloud.member())
    other = cloud.member("mallory", "demo2")
    assert cloud.action(other, server["id"], {"os-stop": None}).status_code == 404


def test_concurrent_stops_have_one_winner(cloud: Cloud) -> None:
    """The compare-and-swap claim: of two racing stops, one wins and the other gets 409."""
    from cells.context import target_cell
    from cloudcore.core.exceptions import InstanceInvalidState
    from servers.choices import TaskState, VmState
    from servers.models import Instance
    from servers.services.guards import claim_task_state

    client = cloud.member()
    server = active_server(cloud, client)
    with target_cell(cloud.cell_of(server["id"])):
        first = Instance.objects.get(uuid=server["id"])
        second = Instance.objects.get(uuid=server["id"])  # read before the first claim
        claim_task_state(first, "stop", new_task_state=TaskState.POWERING_OFF, vm_states=[VmState.ACTIVE])
        with pytest.raises(InstanceInvalidState):
            claim_task_state(second, "stop", new_task_state=TaskState.POWERING_OFF, vm_states=[VmState.ACTIVE])


def test_domain_lookup_helper_raises_for_missing(cloud: Cloud) -> None:
    assert cloud.domain("no-such-uuid") is None
    with pytest.raises(libvirt.libvirtError):
        cloud.driver("compute1").conn.lookupByName("instance-none")


def test_inject_network_info_is_admin_only_and_accepted(cloud: Cloud) -> None:
    client = cloud.member()
    server = cloud.create_server(client, "vm1")
    assert cloud.action(client, server["id"], {"injectNetworkInfo": None}).status_code == 403
    assert cloud.action(cloud.admin(), server["id"], {"injectNetworkInfo": None}).status_code == 202
    assert cloud.action(cloud.admin(), server["id"], {"injectNetworkInfo": {}}).status_code == 202  # Tempest's body
    assert cloud.action(cloud.admin(), server["id"], {"injectNetworkInfo": "x"}).status_code == 400
    assert cloud.show(client, server["id"])["status"] == "ACTIVE"
