"""Live migration (os-migrateLive): a running server moves to another host of its cell; the
microversion shapes of the body, Nova's refusals (synchronous below 2.34, the migration's
``error`` from 2.34), the records (migration statuses, action events, trace, notifications),
allocations at every step, server groups, a destination that fails to start the guest, and
``GET /servers/{id}/migrations`` with force_complete and abort."""
from __future__ import annotations

from typing import Any

import pytest

from cells.context import target_cell
from scheduling.services.traces import trace_record_list
from servers.models import InstanceFault
from tests.cloud import Cloud

from .moves import TINY, allocs, migration_of, node_of, other, started

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])


def migrate_live(cloud: Cloud, server_id: str, body: dict[str, Any], version: str = "2.30") -> Any:
    return cloud.action(cloud.admin(), server_id, {"os-migrateLive": body}, version=version)


def fault_of(cloud: Cloud, server_id: str) -> str:
    """The server's newest fault (shown by the API only on an ERROR server, as Nova does)."""
    with target_cell(cloud.cells["cell1"]):
        return str(InstanceFault.objects.filter(instance_uuid=server_id).order_by("-id").first().message)


def events_of(cloud: Cloud, server_id: str) -> dict[str, str]:
    admin = cloud.admin()
    actions = cloud.get(admin, f"servers/{server_id}/os-instance-actions", version="2.84").json()
    action = next(a for a in actions["instanceActions"] if a["action"] == "live-migration")
    detail = cloud.get(admin, f"servers/{server_id}/os-instance-actions/{action['request_id']}",
                       version="2.84").json()["instanceAction"]
    return {e["event"]: e["result"] for e in detail["events"]}


def test_live_migrate_to_a_named_host(cloud: Cloud) -> None:
    # given a running server
    server, source = started(cloud)
    dest = other(source)
    # when it is live-migrated to the other host of its cell (2.30, as `openstack server migrate
    # --live-migration --host` sends it)
    answer = migrate_live(cloud, server["id"], {"host": dest, "block_migration": "auto"})
    # then 202 with no body, and the server runs on the destination
    assert answer.status_code == 202 and answer.content == b""
    shown = cloud.show(cloud.admin(), server["id"])
    assert shown["status"] == "ACTIVE" and shown["OS-EXT-SRV-ATTR:host"] == dest
    assert shown["OS-EXT-STS:task_state"] is None
    assert cloud.domain(server["id"]).isActive()
    assert f"host={dest}<" in cloud.domain(server["id"]).XMLDesc(0)
    # the migration is a live migration, completed
    migration = migration_of(cloud, server["id"])
    assert (migration["migration_type"], migration["status"]) == ("live-migration", "completed")
    assert (migration["source_compute"], migration["dest_compute"]) == (source, dest)
    # the server holds the destination's allocations; the source's are gone with the migration
    assert allocs(server["id"]) == {node_of(cloud, dest): TINY}
    assert allocs(migration["uuid"]) == {}
    # the action and its events, the trace and the notifications
    assert events_of(cloud, server["id"]) == {
        "conductor_live_migrate_instance": "Success", "compute_check_can_live_migrate_source": "Success",
        "compute_pre_live_migration": "Success", "compute_live_migration": "Success",
        "compute_post_live_migration_at_destination": "Success"}
    traces = trace_record_list(instance_uuid=server["id"])  # newest first
    assert traces[0].trace["selections"][0]["host"] == dest
    for phase in ("pre", "post", "post_dest"):
        for end in ("start", "end"):
            assert len(cloud.notifications(f"instance.live_migration_{phase}.{end}")) == 1
    # and it may be moved back
    assert migrate_live(cloud, server["id"], {"host": None, "block_migration": False}).status_code == 202
    assert cloud.show(cloud.admin(), server["id"])["OS-EXT-SRV-ATTR:host"] == source


def test_the_body_by_microversion(cloud: Cloud) -> None:
    server, source = started(cloud)
    dest = other(source)
    sid = server["id"]
    # 2.1-2.24: host, block_migration and disk_over_commit are all required, booleans
    assert migrate_live(cloud, sid, {"host": dest, "block_migration": False}, version="2.24").status_code == 400
    assert migrate_live(cloud, sid, {"host": dest, "block_migration": "auto", "disk_over_commit": False},
                        version="2.24").status_code == 400
    assert migrate_live(cloud, sid, {"block_migration": False, "disk_over_commit": False},
                        version="2.1").status_code == 400
    # 2.25: disk_over_commit is gone, block_migration may be "auto"; force only from 2.30 to 2.67
    assert migrate_live(cloud, sid, {"host": dest, "block_migration": True, "disk_over_commit": False},
                        version="2.25").status_code == 400
    assert migrate_live(cloud, sid, {"host": dest, "block_migration": "auto", "force": False},
                        version="2.29").status_code == 400
    assert migrate_live(cloud, sid, {"host": dest, "block_migration": "auto", "force": False},
                        version="2.68").status_code == 400
    assert migrate_live(cloud, sid, {"host": dest}, version="2.68").status_code == 400
    # every accepted shape moves the server
    moves = [({"host": dest, "block_migration": "false", "disk_over_commit": False}, "2.1"),
             ({"host": None, "block_migration": "auto"}, "2.25"),
             ({"host": dest, "block_migration": True, "force": True}, "2.30"),
             ({"host": None, "block_migration": "auto"}, "2.68")]
    where = source
    for body, version in moves:
        assert migrate_live(cloud, sid, body, version=version).status_code == 202, (body, version)
        shown = cloud.show(cloud.admin(), sid)
        assert shown["status"] == "ACTIVE" and shown["OS-EXT-SRV-ATTR:host"] == other(where), (body, version)
        where = other(where)


def test_refusals(cloud: Cloud) -> None:
    server, source = started(cloud)
    sid = server["id"]
    # not an admin (the owner of a server): 403
    member = cloud.member()
    own = cloud.create_server(member, "own", availability_zone="az1")
    cloud.wait_for_status(member, own["id"], "ACTIVE")
    refused = cloud.action(member, own["id"], {"os-migrateLive": {"host": None, "block_migration": "auto"}},
                           version="2.30")
    assert refused.status_code == 403 and refused.json()["forbidden"]["message"] == (
        "Policy doesn't allow os_compute_api:os-migrate-server:migrate_live to be performed.")
    # force without a host: 400
    bare = migrate_live(cloud, sid, {"host": None, "block_migration": "auto", "force": True})
    assert bare.status_code == 400 and bare.json()["badRequest"]["message"] == (
        "Can't force to a non-provided destination")
    # an unknown host: 400
    unknown = migrate_live(cloud, sid, {"host": "nowhere", "block_migration": "auto"})
    assert unknown.status_code == 400 and unknown.json()["badRequest"]["message"] == (
        "Compute host nowhere could not be found.")
    # below 2.34 the destination's pre-checks answer 400: the server's own host, a host down
    same = migrate_live(cloud, sid, {"host": source, "block_migration": "auto"}, version="2.33")
    assert same.status_code == 400 and same.json()["badRequest"]["message"] == (
        f"Unable to migrate instance ({sid}) to current host ({source}).")
    admin = cloud.admin()
    dest = other(source)
    service = cloud.get(admin, f"os-services?host={dest}", version="2.53").json()["services"][0]["id"]
    assert cloud.put(admin, f"os-services/{service}", {"forced_down": True}, version="2.53").status_code == 200
    down = migrate_live(cloud, sid, {"host": dest, "block_migration": "auto"}, version="2.33")
    assert down.status_code == 400 and down.json()["badRequest"]["message"] == (
        f"Compute service of {dest} is unavailable at this time.")
    # nothing was recorded for the refused requests
    assert cloud.get(admin, f"os-migrations?instance_uuid={sid}", version="2.80").json()["migrations"] == []
    assert cloud.show(admin, sid)["OS-EXT-STS:task_state"] is None
    # from 2.34 the same checks run in the background: 202, the migration ends error and the
    # server stays ACTIVE on its source with the fault and its allocations
    assert migrate_live(cloud, sid, {"host": dest, "block_migration": "auto"}, version="2.34").status_code == 202
    shown = cloud.show(admin, sid)
    assert (shown["status"], shown["OS-EXT-SRV-ATTR:host"], shown["OS-EXT-STS:task_state"]) == (
        "ACTIVE", source, None)
    assert fault_of(cloud, sid) == f"Compute service of {dest} is unavailable at this time."
    assert migration_of(cloud, sid)["status"] == "error"
    assert allocs(sid) == {node_of(cloud, source): TINY} and allocs(migration_of(cloud, sid)["uuid"]) == {}
    assert len(cloud.notifications("compute_task.migrate_server.error")) == 1
    # a host of another cell: the scheduler keeps the server in its cell (no valid host)
    assert migrate_live(cloud, sid, {"host": "compute3", "block_migration": "auto"}).status_code == 202
    shown = cloud.show(admin, sid)
    assert (shown["status"], shown["OS-EXT-SRV-ATTR:host"]) == ("ACTIVE", source)
    assert "No valid host" in fault_of(cloud, sid)
    assert migration_of(cloud, sid)["status"] == "error"


def test_a_stopped_server_is_409_and_a_paused_one_moves_paused(cloud: Cloud) -> None:
    server, source = started(cloud)
    admin = cloud.admin()
    cloud.action(admin, server["id"], {"os-stop": None})
    refused = migrate_live(cloud, server["id"], {"host": None, "block_migration": "auto"})
    assert refused.status_code == 409 and "vm_state stopped" in refused.json()["conflictingRequest"]["message"]
    cloud.action(admin, server["id"], {"os-start": None})
    cloud.action(admin, server["id"], {"pause": None})
    assert cloud.show(admin, server["id"])["status"] == "PAUSED"
    assert migrate_live(cloud, server["id"], {"host": None, "block_migration": "auto"}).status_code == 202
    shown = cloud.show(admin, server["id"])
    assert (shown["status"], shown["OS-EXT-SRV-ATTR:host"]) == ("PAUSED", other(source))


def test_anti_affinity_is_honoured(cloud: Cloud) -> None:
    # given two servers of an anti-affinity group on the two hosts of cell1
    admin = cloud.admin()
    group = cloud.post(admin, "os-server-groups", {"server_group": {"name": "g", "policies": ["anti-affinity"]}},
                       version="2.1").json()["server_group"]
    first = cloud.create_server(admin, "a", availability_zone="az1", hints={"group": group["id"]})
    cloud.create_server(admin, "b", availability_zone="az1", hints={"group": group["id"]})
    source = cloud.show(admin, first["id"])["OS-EXT-SRV-ATTR:host"]
    # when the first is live-migrated, the only other host of its cell has the second: no valid host
    assert migrate_live(cloud, first["id"], {"host": None, "block_migration": "auto"}).status_code == 202
    shown = cloud.show(admin, first["id"])
    assert (shown["status"], shown["OS-EXT-SRV-ATTR:host"]) == ("ACTIVE", source)
    assert "No valid host" in fault_of(cloud, first["id"])
    assert "ServerGroupAntiAffinityFilter" in str(trace_record_list(instance_uuid=first["id"])[0].trace)
    assert migration_of(cloud, first["id"])["status"] == "error"
    assert allocs(first["id"]) == {node_of(cloud, source): TINY}


def test_a_destination_that_fails_to_start_the_guest_rolls_back(cloud: Cloud) -> None:
    # given a server and a destination whose driver fails its next spawn
    server, source = started(cloud)
    dest = other(source)
    cloud.driver(dest).fail_spawns = 1
    # when it is live-migrated there
    assert migrate_live(cloud, server["id"], {"host": dest, "block_migration": "auto"}).status_code == 202
    # then it runs on its source still, ACTIVE with no task and the fault
    shown = cloud.show(cloud.admin(), server["id"])
    assert (shown["status"], shown["OS-EXT-SRV-ATTR:host"], shown["OS-EXT-STS:task_state"]) == (
        "ACTIVE", source, None)
    assert "injected spawn failure" in fault_of(cloud, server["id"])
    assert cloud.domain(server["id"]).isActive() and f"host={source}<" in cloud.domain(server["id"]).XMLDesc(0)
    # the migration failed after it started; the allocations are the server's on its source again
    migration = migration_of(cloud, server["id"])
    assert migration["status"] == "failed"
    assert allocs(server["id"]) == {node_of(cloud, source): TINY} and allocs(migration["uuid"]) == {}
    events = events_of(cloud, server["id"])
    assert events["compute_pre_live_migration"] == "Error" and "compute_live_migration" not in events
    for name in ("rollback", "rollback_dest"):
        assert len(cloud.notifications(f"instance.live_migration_{name}.end")) == 1
    assert cloud.notifications("instance.live_migration_post.start") == []


def held(monkeypatch: Any, cast: str) -> list[dict[str, Any]]:
    """Hold back the casts ``compute.rpc.<cast>`` (a host that has not picked its message up
    yet): the list gets their arguments; ``deliver`` sends them."""
    from compute import rpc

    kept: list[dict[str, Any]] = []
    real = getattr(rpc, cast)
    monkeypatch.setattr(rpc, cast, lambda **kwargs: kept.append({"send": real, **kwargs}))
    return kept


def deliver(kept: list[dict[str, Any]]) -> None:
    for kwargs in kept:
        kwargs.pop("send")(**kwargs)


def test_a_queued_live_migration_is_listed_and_aborted_from_2_65(cloud: Cloud, monkeypatch: Any) -> None:
    # given a live migration the conductor queued for a source host that has not started it
    server, source = started(cloud)
    sid, admin = server["id"], cloud.admin()
    kept = held(monkeypatch, "live_migration_prepare")
    assert migrate_live(cloud, sid, {"host": None, "block_migration": "auto"}).status_code == 202
    shown = cloud.show(admin, sid)
    assert (shown["status"], shown["OS-EXT-STS:task_state"]) == ("MIGRATING", "migrating")
    # then GET /servers/{id}/migrations shows it (2.23+, 404 below), with Nova's fields
    assert cloud.get(admin, f"servers/{sid}/migrations", version="2.22").status_code == 404
    listed = cloud.get(admin, f"servers/{sid}/migrations", version="2.80").json()["migrations"]
    assert len(listed) == 1 and listed[0]["status"] == "queued" and listed[0]["server_uuid"] == sid
    assert (listed[0]["source_compute"], listed[0]["dest_compute"]) == (source, other(source))
    assert set(listed[0]) == {
        "created_at", "dest_compute", "dest_host", "dest_node", "disk_processed_bytes", "disk_remaining_bytes",
        "disk_total_bytes", "id", "memory_processed_bytes", "memory_remaining_bytes", "memory_total_bytes",
        "server_uuid", "source_compute", "source_node", "status", "updated_at", "uuid", "user_id", "project_id"}
    mid = listed[0]["id"]
    one = cloud.get(admin, f"servers/{sid}/migrations/{mid}", version="2.23").json()["migration"]
    assert one["id"] == mid and "uuid" not in one
    # force_complete needs a running migration: 400
    forced = cloud.post(admin, f"servers/{sid}/migrations/{mid}/action", {"force_complete": None}, version="2.22")
    assert forced.status_code == 400 and forced.json()["badRequest"]["message"] == (
        f"Migration {mid} state of instance {sid} is queued. Cannot force complete while the migration is in "
        "this state.")
    # abort of a queued one: 409 below 2.65, 202 from 2.65 (cancelled)
    early = cloud.delete(admin, f"servers/{sid}/migrations/{mid}", version="2.64")
    assert early.status_code == 409 and early.json()["conflictingRequest"]["message"] == (
        f"Aborting live migration {mid} with status queued is not supported for this version of OpenStack "
        "Compute API.")
    assert cloud.delete(admin, f"servers/{sid}/migrations/{mid}", version="2.65").status_code == 202
    # when the source host picks the message up, it rolls the cancelled migration back
    deliver(kept)
    shown = cloud.show(admin, sid)
    assert (shown["status"], shown["OS-EXT-SRV-ATTR:host"], shown["OS-EXT-STS:task_state"]) == (
        "ACTIVE", source, None)
    migration = migration_of(cloud, sid)
    assert migration["status"] == "cancelled"
    assert allocs(sid) == {node_of(cloud, source): TINY} and allocs(migration["uuid"]) == {}
    assert cloud.get(admin, f"servers/{sid}/migrations", version="2.23").json()["migrations"] == []
    gone = cloud.get(admin, f"servers/{sid}/migrations/{mid}", version="2.23")
    assert gone.status_code == 404 and gone.json()["itemNotFound"]["message"] == (
        f"In-progress live migration {mid} is not found for server {sid}.")
    # and with no migration under way both answer 409
    assert cloud.delete(admin, f"servers/{sid}/migrations/{mid}", version="2.65").status_code == 409


def test_a_running_live_migration_completes_and_cannot_be_aborted(cloud: Cloud, monkeypatch: Any) -> None:
    # given a live migration whose destination runs the guest, the source not done yet
    server, source = started(cloud)
    sid, admin = server["id"], cloud.admin()
    kept = held(monkeypatch, "live_migration")
    assert migrate_live(cloud, sid, {"host": None, "block_migration": "auto"}).status_code == 202
    listed = cloud.get(admin, f"servers/{sid}/migrations", version="2.24").json()["migrations"]
    assert [m["status"] for m in listed] == ["running"]
    mid = listed[0]["id"]
    # force_complete: 202 (it completes by itself); abort of a running one: 400; unknown ones 400/404
    assert cloud.post(admin, f"servers/{sid}/migrations/{mid}/action", {"force_complete": None},
                      version="2.22").status_code == 202
    for phase in ("start", "end"):  # as the source host sends them in Nova
        sent = cloud.notifications(f"instance.live_migration_force_complete.{phase}")
        assert [(n["publisher_id"], n["payload"]["nova_object.data"]["uuid"]) for n in sent] == [
            (f"nova-compute:{source}", sid)]
    assert cloud.post(admin, f"servers/{sid}/migrations/{mid}/action", {"force_complete": {}},
                      version="2.22").status_code == 400
    aborted = cloud.delete(admin, f"servers/{sid}/migrations/{mid}", version="2.65")
    assert aborted.status_code == 400 and "is running. Cannot abort live migration" in (
        aborted.json()["badRequest"]["message"])
    assert cloud.post(admin, f"servers/{sid}/migrations/999999/action", {"force_complete": None},
                      version="2.22").status_code == 400
    assert cloud.delete(admin, f"servers/{sid}/migrations/999999", version="2.24").status_code == 404
    # when the source finishes, the server is on the destination
    deliver(kept)
    shown = cloud.show(admin, sid)
    assert (shown["status"], shown["OS-EXT-SRV-ATTR:host"]) == ("ACTIVE", other(source))
    assert migration_of(cloud, sid)["status"] == "completed"
    assert allocs(sid) == {node_of(cloud, other(source)): TINY}
