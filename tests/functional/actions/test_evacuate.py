"""Evacuate (os-evacuate): a server of a host whose compute service is down is rebuilt on another
host of its cell; the microversion shapes of the body and the answer, Nova's refusals, the
records (migration, action events, trace, notifications), allocations at every step, server
groups, a failed rebuild, and the source host's clean-up when its compute service starts again."""
from __future__ import annotations

from typing import Any

import pytest

from cells.context import target_cell
from compute.ops import destroy_evacuated_instances
from scheduling.services.traces import trace_record_list
from tests.cloud import Cloud

from .moves import TINY, allocs, migration_of, node_of, other, started

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])


def host_fails(cloud: Cloud, host: str, server_ids: list[str]) -> None:
    """The host dies (its guests stop with it) and the operator forces its compute service down."""
    for server_id in server_ids:
        cloud.domain(server_id).destroy()
    admin = cloud.admin()
    sid = cloud.get(admin, f"os-services?host={host}", version="2.53").json()["services"][0]["id"]
    assert cloud.put(admin, f"os-services/{sid}", {"forced_down": True}, version="2.53").status_code == 200


def evacuate(cloud: Cloud, server_id: str, body: dict[str, Any] | None = None, version: str = "2.94") -> Any:
    return cloud.action(cloud.admin(), server_id, {"evacuate": body or {}}, version=version)


def test_evacuate_to_the_host_the_scheduler_picks(cloud: Cloud) -> None:
    # given a server whose host has failed
    server, source = started(cloud)
    host_fails(cloud, source, [server["id"]])
    # when it is evacuated with no host named (2.14+: 200, no body)
    answer = evacuate(cloud, server["id"])
    assert answer.status_code == 200 and answer.content == b""
    # then it runs on the other host of its cell, rebuilt from its image
    admin = cloud.admin()
    shown = cloud.show(admin, server["id"])
    dest = other(source)
    assert shown["status"] == "ACTIVE" and shown["OS-EXT-SRV-ATTR:host"] == dest
    assert cloud.domain(server["id"]).isActive()
    assert server["id"] in cloud.driver(dest).spawned
    # the migration is an evacuation, done, from the source to the destination
    migration = migration_of(cloud, server["id"])
    assert (migration["migration_type"], migration["status"]) == ("evacuation", "done")
    assert (migration["source_compute"], migration["dest_compute"]) == (source, dest)
    # the server holds the destination's allocations; the migration the source's until it comes back
    assert allocs(server["id"]) == {node_of(cloud, dest): TINY}
    assert allocs(migration["uuid"]) == {node_of(cloud, source): TINY}
    # the action and its events, the scheduling trace and the notifications
    actions = cloud.get(admin, f"servers/{server['id']}/os-instance-actions", version="2.84").json()
    evacuation = next(a for a in actions["instanceActions"] if a["action"] == "evacuate")
    detail = cloud.get(admin, f"servers/{server['id']}/os-instance-actions/{evacuation['request_id']}",
                       version="2.84").json()["instanceAction"]
    events = {e["event"]: e["result"] for e in detail["events"]}
    assert events == {"rebuild_server": "Success", "compute_rebuild_instance": "Success"}
    traces = trace_record_list(instance_uuid=server["id"])  # newest first
    assert len(traces) == 2 and traces[0].trace["selections"][0]["host"] == dest
    assert [n["payload"]["nova_object.data"]["host"] for n in cloud.notifications("instance.evacuate")] == [source]
    assert len(cloud.notifications("instance.rebuild.end")) == 1
    assert len(cloud.notifications("instance.rebuild_scheduled")) == 1  # the scheduler chose the destination


def test_the_source_destroys_the_evacuated_guest_when_its_compute_starts_again(cloud: Cloud,
                                                                               monkeypatch: Any) -> None:
    # given a server evacuated from its failed host
    server, source = started(cloud)
    host_fails(cloud, source, [server["id"]])
    evacuate(cloud, server["id"])
    migration = migration_of(cloud, server["id"])
    destroyed: list[tuple[str, bool]] = []
    driver = cloud.driver(source)
    real_destroy = driver.destroy

    def spy(*, instance: Any, destroy_disks: bool = True, **kw: Any) -> None:
        destroyed.append((instance.uuid, destroy_disks))
        real_destroy(instance=instance, destroy_disks=destroy_disks, **kw)

    monkeypatch.setattr(driver, "destroy", spy)
    # a start whose destroy fails leaves the evacuation for the next start (and still starts)
    driver.fail_destroys = 1
    with target_cell(cloud.cells["cell1"]):
        assert destroy_evacuated_instances(host=source, driver=driver) == []
    assert migration_of(cloud, server["id"])["status"] == "done"
    assert allocs(migration["uuid"]) == {node_of(cloud, source): TINY}
    destroyed.clear()
    # when the source's compute service starts again (the start-up step of compute.startup)
    with target_cell(cloud.cells["cell1"]):
        cleaned = destroy_evacuated_instances(host=source, driver=driver)
    # then its copy of the guest is destroyed with its disks, the migration completed and its
    # (the source's) allocations gone; the server keeps running on the destination
    assert cleaned == [server["id"]] and destroyed == [(server["id"], True)]
    assert migration_of(cloud, server["id"])["status"] == "completed"
    assert allocs(migration["uuid"]) == {}
    assert allocs(server["id"]) == {node_of(cloud, other(source)): TINY}
    assert cloud.domain(server["id"]).isActive()
    # and a second start finds nothing left to clean
    with target_cell(cloud.cells["cell1"]):
        assert destroy_evacuated_instances(host=source, driver=driver) == []


@pytest.mark.parametrize(("version", "status"), [("2.94", "ACTIVE"), ("2.95", "SHUTOFF")])
def test_from_2_95_the_evacuated_server_is_stopped(cloud: Cloud, version: str, status: str) -> None:
    server, source = started(cloud)
    host_fails(cloud, source, [server["id"]])
    assert evacuate(cloud, server["id"], version=version).status_code == 200
    shown = cloud.show(cloud.admin(), server["id"])
    assert shown["status"] == status and shown["OS-EXT-SRV-ATTR:host"] == other(source)
    assert bool(cloud.domain(server["id"]).isActive()) is (status == "ACTIVE")


def test_a_stopped_server_stays_stopped(cloud: Cloud) -> None:
    server, source = started(cloud)
    cloud.action(cloud.admin(), server["id"], {"os-stop": None})
    host_fails(cloud, source, [])
    assert evacuate(cloud, server["id"]).status_code == 200
    assert cloud.show(cloud.admin(), server["id"])["status"] == "SHUTOFF"


def test_before_2_14_on_shared_storage_is_required_and_the_password_answered(cloud: Cloud) -> None:
    server, source = started(cloud)
    host_fails(cloud, source, [server["id"]])
    dest = other(source)
    # onSharedStorage is required below 2.14, and a password cannot be set on a kept disk
    assert evacuate(cloud, server["id"], {"host": dest}, version="2.13").status_code == 400
    kept = evacuate(cloud, server["id"], {"onSharedStorage": True, "adminPass": "pw"}, version="2.13")
    assert kept.status_code == 400 and kept.json()["badRequest"]["message"] == (
        "admin password can't be changed on existing disk")
    # and above 2.13 it is unknown
    assert evacuate(cloud, server["id"], {"onSharedStorage": False}, version="2.14").status_code == 400
    answer = evacuate(cloud, server["id"], {"host": dest, "onSharedStorage": "False", "adminPass": "s3cret"},
                      version="2.13")
    assert answer.status_code == 200 and answer.json() == {"adminPass": "s3cret"}
    assert cloud.show(cloud.admin(), server["id"])["OS-EXT-SRV-ATTR:host"] == dest


def test_a_generated_password_is_answered_before_2_14(cloud: Cloud) -> None:
    server, source = started(cloud)
    host_fails(cloud, source, [server["id"]])
    answer = evacuate(cloud, server["id"], {"onSharedStorage": False}, version="2.1")
    assert answer.status_code == 200 and len(answer.json()["adminPass"]) >= 8


def test_force_exists_from_2_29_to_2_67_and_needs_a_host(cloud: Cloud) -> None:
    server, source = started(cloud)
    host_fails(cloud, source, [server["id"]])
    dest = other(source)
    assert evacuate(cloud, server["id"], {"host": dest, "force": True}, version="2.28").status_code == 400
    assert evacuate(cloud, server["id"], {"host": dest, "force": True}, version="2.68").status_code == 400
    bare = evacuate(cloud, server["id"], {"force": True}, version="2.29")
    assert bare.status_code == 400 and bare.json()["badRequest"]["message"] == (
        "Can't force to a non-provided destination")
    admin = cloud.admin()
    assert evacuate(cloud, server["id"], {"host": dest, "force": True}, version="2.29").status_code == 200
    assert cloud.show(admin, server["id"])["OS-EXT-SRV-ATTR:host"] == dest


def test_refusals(cloud: Cloud) -> None:
    server, source = started(cloud)
    # the source compute service is up: 400 (Nova's ComputeServiceInUse)
    up = evacuate(cloud, server["id"])
    assert up.status_code == 400 and up.json()["badRequest"]["message"] == (
        f"Compute service of {source} is still in use.")
    host_fails(cloud, source, [server["id"]])
    # not an admin: 403
    member = cloud.member()
    assert cloud.action(member, server["id"], {"evacuate": {}}, version="2.94").status_code in (403, 404)
    # the server's own host: 400; an unknown host: 404
    same = evacuate(cloud, server["id"], {"host": source})
    assert same.status_code == 400 and same.json()["badRequest"]["message"] == "The target host can't be the same one."
    unknown = evacuate(cloud, server["id"], {"host": "nowhere"})
    assert unknown.status_code == 404 and unknown.json()["itemNotFound"]["message"] == (
        "Compute host nowhere not found.")
    # a host of another cell: the scheduler keeps the server in its cell (no valid host: ERROR)
    assert evacuate(cloud, server["id"], {"host": "compute3"}).status_code == 200
    shown = cloud.show(cloud.admin(), server["id"])
    assert shown["status"] == "ERROR" and shown["OS-EXT-SRV-ATTR:host"] == source
    assert migration_of(cloud, server["id"])["status"] == "error"
    assert allocs(server["id"]) == {node_of(cloud, source): TINY}
    # an ERROR server may be evacuated; a shelved one may not (409)
    assert evacuate(cloud, server["id"]).status_code == 200
    assert cloud.show(cloud.admin(), server["id"])["status"] == "ACTIVE"


def test_invalid_state_is_409(cloud: Cloud) -> None:
    server, source = started(cloud)
    cloud.action(cloud.admin(), server["id"], {"pause": None})
    host_fails(cloud, source, [])
    refused = evacuate(cloud, server["id"])
    assert refused.status_code == 409 and "vm_state paused" in refused.json()["conflictingRequest"]["message"]


def test_anti_affinity_is_honoured(cloud: Cloud) -> None:
    # given two servers of an anti-affinity group on the two hosts of cell1
    admin = cloud.admin()
    group = cloud.post(admin, "os-server-groups", {"server_group": {"name": "g", "policies": ["anti-affinity"]}},
                       version="2.1").json()["server_group"]
    first = cloud.create_server(admin, "a", availability_zone="az1", hints={"group": group["id"]})
    second = cloud.create_server(admin, "b", availability_zone="az1", hints={"group": group["id"]})
    source = cloud.show(admin, first["id"])["OS-EXT-SRV-ATTR:host"]
    assert cloud.show(admin, second["id"])["OS-EXT-SRV-ATTR:host"] == other(source)
    host_fails(cloud, source, [first["id"]])
    # when the first is evacuated, the only other host of its cell has the second: no valid host
    assert evacuate(cloud, first["id"]).status_code == 200
    shown = cloud.show(admin, first["id"])
    assert shown["status"] == "ERROR" and shown["OS-EXT-SRV-ATTR:host"] == source
    assert "No valid host" in shown["fault"]["message"]
    trace = trace_record_list(instance_uuid=first["id"])[0].trace
    assert "ServerGroupAntiAffinityFilter" in str(trace)
    assert migration_of(cloud, first["id"])["status"] == "error"
    assert allocs(first["id"]) == {node_of(cloud, source): TINY}
    assert [n["payload"]["nova_object.data"]["state"]
            for n in cloud.notifications("compute_task.rebuild_server.error")] == ["error"]


def test_a_failed_rebuild_leaves_the_server_on_its_source_in_error(cloud: Cloud) -> None:
    server, source = started(cloud)
    host_fails(cloud, source, [server["id"]])
    cloud.driver(other(source)).fail_spawns = 1
    assert evacuate(cloud, server["id"]).status_code == 200
    shown = cloud.show(cloud.admin(), server["id"])
    assert shown["status"] == "ERROR" and shown["OS-EXT-SRV-ATTR:host"] == source
    migration = migration_of(cloud, server["id"])
    assert migration["status"] == "failed"
    assert allocs(server["id"]) == {node_of(cloud, source): TINY} and allocs(migration["uuid"]) == {}
    assert len(cloud.notifications("instance.rebuild.error")) == 1
    # a failed evacuation leaves the source's guest alone when it comes back
    with target_cell(cloud.cells["cell1"]):
        assert destroy_evacuated_instances(host=source, driver=cloud.driver(source)) == []
