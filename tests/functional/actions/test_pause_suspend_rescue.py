"""pause/unpause, suspend/resume, rescue/unrescue and trigger_crash_dump through the action API, on
the in-process cloud (real libvirt test-driver domains): states, instance actions and events,
notifications, Nova's 409 for a wrong state or a lock, policy, microversion gates."""
from __future__ import annotations

from typing import Any

import libvirt
import pytest

from servers.choices import PowerState, VmState
from tests.cloud import Cloud

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])


def active_server(cloud: Cloud, client: object, name: str = "vm1") -> dict:
    server = cloud.create_server(client, name)
    return cloud.wait_for_status(client, server["id"], "ACTIVE")


def last_action(cloud: Cloud, server_id: str) -> dict[str, Any]:
    """The server's newest action with its events, as the cloud admin sees it."""
    admin = cloud.admin()
    listed = cloud.get(admin, f"servers/{server_id}/os-instance-actions").json()["instanceActions"]
    shown = cloud.get(admin, f"servers/{server_id}/os-instance-actions/{listed[0]['request_id']}").json()
    return shown["instanceAction"]


def events(cloud: Cloud, event_type: str, server_id: str) -> list[dict[str, Any]]:
    return [n for n in cloud.notifications(event_type)
            if n["payload"]["nova_object.data"]["uuid"] == server_id]


def conflict(response: Any) -> str:
    assert response.status_code == 409, response.content
    return str(response.json()["conflictingRequest"]["message"])


def test_pause_and_unpause(cloud: Cloud) -> None:
    # given an active server
    client = cloud.member()
    server = active_server(cloud, client)
    sid = server["id"]
    # when it is paused
    assert cloud.action(client, sid, {"pause": None}).status_code == 202
    # then it is PAUSED, its vCPUs stopped, with the action, its event and the notifications
    shown = cloud.show(client, sid)
    assert shown["status"] == "PAUSED" and shown["OS-EXT-STS:vm_state"] == "paused"
    assert shown["OS-EXT-STS:task_state"] is None and shown["OS-EXT-STS:power_state"] == PowerState.PAUSED
    assert cloud.domain(sid).state()[0] == libvirt.VIR_DOMAIN_PAUSED
    action = last_action(cloud, sid)
    assert action["action"] == "pause" and action["message"] is None
    assert [(e["event"], e["result"]) for e in action["events"]] == [("compute_pause_instance", "Success")]
    assert len(events(cloud, "instance.pause.start", sid)) == 1
    end = events(cloud, "instance.pause.end", sid)
    assert len(end) == 1 and end[0]["payload"]["nova_object.data"]["state"] == "paused"
    # a paused server cannot be paused again: Nova's 409
    assert conflict(cloud.action(client, sid, {"pause": None})) == (
        f"Cannot 'pause' instance {sid} while it is in vm_state paused")
    # when it is unpaused it runs again
    assert cloud.action(client, sid, {"unpause": None}).status_code == 202
    shown = cloud.show(client, sid)
    assert shown["status"] == "ACTIVE" and shown["OS-EXT-STS:power_state"] == PowerState.RUNNING
    assert cloud.domain(sid).state()[0] == libvirt.VIR_DOMAIN_RUNNING
    assert last_action(cloud, sid)["action"] == "unpause"
    assert len(events(cloud, "instance.unpause.end", sid)) == 1
    # and unpausing an active server is 409
    assert conflict(cloud.action(client, sid, {"unpause": None})) == (
        f"Cannot 'unpause' instance {sid} while it is in vm_state active")


def test_suspend_and_resume(cloud: Cloud) -> None:
    client = cloud.member()
    sid = active_server(cloud, client)["id"]
    # when it is suspended: the guest's memory saved with the domain, the domain off
    assert cloud.action(client, sid, {"suspend": None}).status_code == 202
    shown = cloud.show(client, sid)
    assert shown["status"] == "SUSPENDED" and shown["OS-EXT-STS:vm_state"] == "suspended"
    assert shown["OS-EXT-STS:power_state"] == PowerState.SHUTDOWN
    dom = cloud.domain(sid)
    assert not dom.isActive() and dom.hasManagedSaveImage(0)
    assert [e["event"] for e in last_action(cloud, sid)["events"]] == ["compute_suspend_instance"]
    assert [len(events(cloud, f"instance.suspend.{p}", sid)) for p in ("start", "end")] == [1, 1]
    # a suspended server cannot be paused, stopped or suspended again
    assert "vm_state suspended" in conflict(cloud.action(client, sid, {"pause": None}))
    assert "vm_state suspended" in conflict(cloud.action(client, sid, {"os-stop": None}))
    assert "vm_state suspended" in conflict(cloud.action(client, sid, {"suspend": None}))
    # when it is resumed it runs from its saved memory, back in its old state
    assert cloud.action(client, sid, {"resume": None}).status_code == 202
    shown = cloud.show(client, sid)
    assert shown["status"] == "ACTIVE" and shown["OS-EXT-STS:power_state"] == PowerState.RUNNING
    assert cloud.domain(sid).isActive() and not cloud.domain(sid).hasManagedSaveImage(0)
    assert "old_vm_state" not in (cloud.instance(sid).system_metadata or {})
    assert [len(events(cloud, f"instance.resume.{p}", sid)) for p in ("start", "end")] == [1, 1]
    assert conflict(cloud.action(client, sid, {"resume": None})) == (
        f"Cannot 'resume' instance {sid} while it is in vm_state active")


def test_a_suspended_server_can_be_deleted(cloud: Cloud) -> None:
    client = cloud.member()
    sid = active_server(cloud, client)["id"]
    assert cloud.action(client, sid, {"suspend": None}).status_code == 202
    assert cloud.delete(client, f"servers/{sid}").status_code == 204
    assert cloud.domain(sid) is None


def test_rescue_and_unrescue(cloud: Cloud) -> None:
    client = cloud.member()
    sid = active_server(cloud, client)["id"]
    # when it is rescued with a password of its own
    response = cloud.action(client, sid, {"rescue": {"adminPass": "s3cret", "rescue_image_ref": cloud.image_id}})
    # then Nova's 200 with the password, the server in RESCUE booted from the rescue domain
    assert response.status_code == 200 and response.json() == {"adminPass": "s3cret"}
    shown = cloud.show(client, sid)
    assert shown["status"] == "RESCUE" and shown["OS-EXT-STS:vm_state"] == "rescued"
    assert shown["OS-EXT-STS:task_state"] is None
    dom = cloud.domain(sid)
    assert dom.isActive() and "<title>rescue</title>" in dom.XMLDesc(0)
    assert cloud.driver(cloud.instance(sid).host).rescue_images[sid] == cloud.image_id
    assert [e["event"] for e in last_action(cloud, sid)["events"]] == ["compute_rescue_instance"]
    assert [len(events(cloud, f"instance.rescue.{p}", sid)) for p in ("start", "end")] == [1, 1]
    # a rescued server cannot be rescued, paused or suspended
    assert conflict(cloud.action(client, sid, {"rescue": None})) == (
        f"Cannot 'rescue' instance {sid} while it is in vm_state rescued")
    assert "vm_state rescued" in conflict(cloud.action(client, sid, {"pause": None}))
    assert "vm_state rescued" in conflict(cloud.action(client, sid, {"suspend": None}))
    # when it is unrescued it boots from its own domain again
    assert cloud.action(client, sid, {"unrescue": None}).status_code == 202
    shown = cloud.show(client, sid)
    assert shown["status"] == "ACTIVE"
    assert cloud.domain(sid).isActive() and "rescue" not in cloud.domain(sid).XMLDesc(0)
    assert [len(events(cloud, f"instance.unrescue.{p}", sid)) for p in ("start", "end")] == [1, 1]
    assert conflict(cloud.action(client, sid, {"unrescue": None})) == (
        f"Cannot 'unrescue' instance {sid} while it is in vm_state active")


def test_rescue_generates_a_password_rescues_a_stopped_server_and_validates_its_body(cloud: Cloud) -> None:
    client = cloud.member()
    sid = active_server(cloud, client)["id"]
    assert cloud.action(client, sid, {"rescue": {"rescue_image_ref": "not-a-uuid"}}).status_code == 400
    assert cloud.action(client, sid, {"rescue": {"bogus": 1}}).status_code == 400
    assert cloud.action(client, sid, {"os-stop": None}).status_code == 202
    response = cloud.action(client, sid, {"rescue": None})
    assert response.status_code == 200 and len(response.json()["adminPass"]) == 12
    assert cloud.show(client, sid)["status"] == "RESCUE"
    # the rescue image defaults to the server's own
    assert cloud.driver(cloud.instance(sid).host).rescue_images[sid] == cloud.image_id
    # unrescue ends ACTIVE, as in Nova, whatever the state before the rescue
    assert cloud.action(client, sid, {"unrescue": None}).status_code == 202
    assert cloud.show(client, sid)["status"] == "ACTIVE"


def test_rescue_of_a_volume_backed_server_needs_287(cloud: Cloud) -> None:
    from cells.context import target_cell
    from cells.models import CellMapping
    from servers.models import Instance

    client = cloud.member()
    sid = active_server(cloud, client)["id"]
    with target_cell(CellMapping.objects.get(name=cloud.cell_of(sid))):
        Instance.objects.filter(uuid=sid).update(image_ref="")  # what a boot-from-volume server looks like
    refused = cloud.action(client, sid, {"rescue": None}, version="2.86")
    assert refused.status_code == 400
    assert refused.json()["badRequest"]["message"] == (
        f"Instance {sid} cannot be rescued: Cannot rescue a volume-backed instance")
    assert cloud.show(client, sid)["status"] == "ACTIVE"
    assert cloud.action(client, sid, {"rescue": None}, version="2.87").status_code == 200
    assert cloud.show(client, sid)["status"] == "RESCUE"


def test_a_failed_rescue_puts_the_server_in_error_with_a_fault(cloud: Cloud) -> None:
    client = cloud.member()
    sid = active_server(cloud, client)["id"]
    cloud.driver(cloud.instance(sid).host).fail_rescues = 1
    assert cloud.action(client, sid, {"rescue": None}).status_code == 200
    shown = cloud.show(client, sid)
    assert shown["status"] == "ERROR" and shown["OS-EXT-STS:task_state"] is None
    assert "injected rescue failure" in shown["fault"]["message"]
    # and Nova's notifications: no instance.rescue.error (Nova has none), its compute.exception
    assert events(cloud, "instance.rescue.error", sid) == []
    (exception,) = [n["payload"] for n in cloud.notifications("compute.exception")]
    assert exception["nova_object.name"] == "ExceptionPayload"
    assert "injected rescue failure" in exception["nova_object.data"]["exception_message"]
    assert last_action(cloud, sid)["events"][0]["result"] == "Error"


def test_a_failed_pause_gives_up_the_task_only(cloud: Cloud) -> None:
    client = cloud.member()
    sid = active_server(cloud, client)["id"]
    cloud.driver(cloud.instance(sid).host).fail_pauses = 1
    assert cloud.action(client, sid, {"pause": None}).status_code == 202
    shown = cloud.show(client, sid)
    assert shown["status"] == "ACTIVE" and shown["OS-EXT-STS:task_state"] is None
    assert cloud.instance(sid).vm_state == VmState.ACTIVE
    assert events(cloud, "instance.pause.error", sid) == []  # not one of Nova's notifications
    assert len(cloud.notifications("compute.exception")) == 1
    # and it can be paused once the hypervisor agrees
    assert cloud.action(client, sid, {"pause": None}).status_code == 202
    assert cloud.show(client, sid)["status"] == "PAUSED"


def test_trigger_crash_dump_from_217(cloud: Cloud) -> None:
    client = cloud.member()
    sid = active_server(cloud, client)["id"]
    # below 2.17 the action does not exist
    assert cloud.action(client, sid, {"trigger_crash_dump": None}, version="2.16").status_code == 404
    assert cloud.action(client, sid, {"trigger_crash_dump": {}}, version="2.17").status_code == 400
    # from 2.17 it sends an NMI and changes no state
    assert cloud.action(client, sid, {"trigger_crash_dump": None}, version="2.17").status_code == 202
    assert cloud.driver(cloud.instance(sid).host).crash_dumps == [sid]
    shown = cloud.show(client, sid)
    assert shown["status"] == "ACTIVE" and shown["OS-EXT-STS:task_state"] is None
    action = last_action(cloud, sid)
    assert action["action"] == "trigger_crash_dump"
    assert [e["event"] for e in action["events"]] == ["compute_trigger_crash_dump"]
    assert [len(events(cloud, f"instance.trigger_crash_dump.{p}", sid)) for p in ("start", "end")] == [1, 1]
    # a paused server takes one too; a stopped one is 409
    assert cloud.action(client, sid, {"pause": None}).status_code == 202
    assert cloud.action(client, sid, {"trigger_crash_dump": None}, version="2.17").status_code == 202
    assert cloud.action(client, sid, {"unpause": None}).status_code == 202
    assert cloud.action(client, sid, {"os-stop": None}).status_code == 202
    assert conflict(cloud.action(client, sid, {"trigger_crash_dump": None}, version="2.17")) == (
        f"Cannot 'trigger_crash_dump' instance {sid} while it is in vm_state stopped")


@pytest.mark.parametrize("body", [{"pause": None}, {"suspend": None}, {"rescue": None},
                                  {"trigger_crash_dump": None}])
def test_a_locked_server_refuses_the_owner_not_the_admin(cloud: Cloud, body: dict[str, Any]) -> None:
    client = cloud.member()
    sid = active_server(cloud, client)["id"]
    admin = cloud.admin()
    assert cloud.action(admin, sid, {"lock": None}).status_code == 202
    assert conflict(cloud.action(client, sid, body, version="2.17")) == f"Instance {sid} is locked"
    assert cloud.action(admin, sid, body, version="2.17").status_code in (200, 202)


@pytest.mark.parametrize(("body", "rule"), [
    ({"pause": None}, "os_compute_api:os-pause-server:pause"),
    ({"suspend": None}, "os_compute_api:os-suspend-server:suspend"),
    ({"rescue": None}, "os_compute_api:os-rescue"),
    ({"trigger_crash_dump": None}, "os_compute_api:servers:trigger_crash_dump"),
])
def test_a_reader_is_refused_by_policy(cloud: Cloud, body: dict[str, Any], rule: str) -> None:
    client = cloud.member()
    sid = active_server(cloud, client)["id"]
    reader = cloud.member("reader", "demo", roles=("reader",))
    denied = cloud.action(reader, sid, body, version="2.17")
    assert denied.status_code == 403
    assert denied.json()["forbidden"]["message"] == f"Policy doesn't allow {rule} to be performed."
    assert cloud.show(client, sid)["status"] == "ACTIVE"
    # another project's server does not exist for its members
    assert cloud.action(cloud.member("mallory", "demo2"), sid, body, version="2.17").status_code == 404
