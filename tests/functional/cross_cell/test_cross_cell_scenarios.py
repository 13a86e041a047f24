"""Cross-cell resize and cold migration (seed 5): the scenarios of Nova's
``test_cross_cell_migrate.py`` (reference 1.9) and the failure table (reference 1.7), in-process
with two real cell databases. Every test asserts rows in both cells and the API database,
placement allocations, and that no volume attachment, port binding or temporary image leaks.

Setup: cell1 = compute1/compute2 (az1), cell2 = compute3/compute4 (az2); the server boots in
cell1 (cell2's hosts disabled for the boot), then cell1's hosts are disabled so only cell2 fits,
unless a test says otherwise. The rule ``compute:servers:resize:cross_cell`` is granted to the
demo project.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.utils import timezone

from cells.context import target_cell
from cells.models import InstanceMapping
from cloudcore.core import policy
from hosts.models import Service
from identity.models import Project
from scheduling.placement.services import allocations_get
from servers.models import BlockDeviceMapping, Instance, InstanceAction, Migration, VirtualInterface
from tests.cloud import Cloud

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])
RULE = "compute:servers:resize:cross_cell"


# --- helpers -------------------------------------------------------------------------------------


def set_cell_enabled(cloud: Cloud, cell: str, enabled: bool) -> None:
    with target_cell(cloud.cells[cell]):
        Service.objects.update(disabled=not enabled)


def rows(cloud: Cloud, cell: str, uuid: str) -> dict[str, Any]:
    """What the cell database holds of the server (soft-deleted rows included)."""
    with target_cell(cloud.cells[cell]):
        return {
            "hidden": list(Instance.all_objects.filter(uuid=uuid).values_list("hidden", flat=True)),
            "deleted": list(Instance.all_objects.filter(uuid=uuid).values_list("deleted", flat=True)),
            "migrations": sorted(Migration.all_objects.filter(instance_uuid=uuid).values_list("status", flat=True)),
            "bdms": BlockDeviceMapping.all_objects.filter(instance_uuid=uuid).count(),
            "actions": InstanceAction.objects.filter(instance_uuid=uuid).count(),
        }


def in_cell(cloud: Cloud, cell: str, uuid: str) -> Instance:
    with target_cell(cloud.cells[cell]):
        return Instance.all_objects.get(uuid=uuid)


def providers(consumer: str) -> set[str]:
    return set(allocations_get(consumer_uuid=consumer).allocations)


def node(cloud: Cloud, host: str) -> str:
    return cloud.hosts[host]["node_uuid"]


def migration_uuid(cloud: Cloud, server_id: str) -> str:
    cell = cloud.cell_of(server_id)
    with target_cell(cloud.cells[cell]):
        return Migration.all_objects.filter(instance_uuid=server_id).order_by("-id").first().uuid


def live_attachments(volume_id: str) -> list[Any]:
    from volumes.models import VolumeAttachment

    return list(VolumeAttachment.objects.filter(volume_id=volume_id, deleted=False))


def temp_images(name: str) -> list[Any]:
    from images.models import Image

    return list(Image.objects.filter(name=f"{name}-resize-temp", deleted=False))


def new_volume(client: Any) -> str:
    from django.test import TestCase

    with TestCase.captureOnCommitCallbacks(execute=True):
        response = client.post("/volume/v3/volumes", {"volume": {"size": 1}}, format="json")
    assert response.status_code == 202, response.content
    return response.json()["volume"]["id"]


@pytest.fixture
def xcloud(cloud: Cloud, settings: Any, tmp_path: Any) -> Cloud:
    """The test cloud with a volume pool, the rule granted to ``demo`` and cell2 closed for boots."""
    settings.VOLUME_POOL_DIR = tmp_path / "pool"
    settings.IMAGE_STORE_DIR = tmp_path / "images"
    from tests.apihelpers import make_identity

    cloud.member()  # the demo project and user
    policy.grant(RULE, project=Project.objects.get(name="demo"))
    policy.grant(RULE, user=make_identity("admin", project="admin", roles=["admin"])[0])  # migrate is admin's
    set_cell_enabled(cloud, "cell2", False)
    return cloud


def boot(cloud: Cloud, client: Any, name: str = "mover", *, volume_backed: bool = False, stopped: bool = False,
         **fields: Any) -> dict[str, Any]:
    if volume_backed:
        from tests.functional.volumes.conftest import make_image

        image = make_image(f"{name}-img", b"root-bytes " * 64)
        bdm = [{"boot_index": 0, "uuid": image, "source_type": "image", "destination_type": "volume",
                "volume_size": 1, "delete_on_termination": True, "tag": "root"}]
        server = cloud.create_server(client, name, image=None, block_device_mapping_v2=bdm, version="2.42",
                                     **fields)
    else:
        server = cloud.create_server(client, name, **fields)
    assert cloud.show(client, server["id"])["status"] == "ACTIVE"
    assert cloud.cell_of(server["id"]) == "cell1"
    if stopped:
        assert cloud.action(client, server["id"], {"os-stop": None}).status_code == 202
        assert cloud.show(client, server["id"])["status"] == "SHUTOFF"
    return server


def resize_to_cell2(cloud: Cloud, client: Any, server_id: str, *, expect: str = "VERIFY_RESIZE") -> dict[str, Any]:
    from servers.models import Flavor

    set_cell_enabled(cloud, "cell1", False)
    set_cell_enabled(cloud, "cell2", True)
    current = cloud.instance(server_id).flavor["name"]
    name = "m1.bigger" if current != "m1.bigger" else "m1.biggest"
    bigger = Flavor.objects.filter(name=name).first() or cloud.flavor(name, vcpus=2, ram=1024, disk=2)
    response = cloud.action(client, server_id, {"resize": {"flavorRef": bigger.flavorid}})
    assert response.status_code == 202, response.content
    set_cell_enabled(cloud, "cell1", True)
    shown = cloud.show(client, server_id)
    assert shown["status"] == expect, shown.get("fault")
    return shown


def assert_verify_resize_in_cell2(cloud: Cloud, client: Any, server_id: str, source_host: str) -> None:
    """Nova's ``_resize_and_validate``: one server and one finished migration listed, hidden copy
    in the source, visible copy in the target, the mapping on the target, split allocations."""
    assert InstanceMapping.objects.get(instance_uuid=server_id).cell.name == "cell2"
    assert rows(cloud, "cell1", server_id)["hidden"] == [True]
    assert rows(cloud, "cell2", server_id)["hidden"] == [False]
    # (a failed earlier attempt leaves its ``error`` migration, copied along)
    assert [m for m in rows(cloud, "cell1", server_id)["migrations"] if m != "error"] == ["post-migrating"]
    assert [m for m in rows(cloud, "cell2", server_id)["migrations"] if m != "error"] == ["finished"]
    listed = cloud.get(client, "servers/detail").json()["servers"]
    assert [s["id"] for s in listed] == [server_id]
    migrations = cloud.get(cloud.admin(), "os-migrations", version="2.59").json()["migrations"]
    assert [(m["uuid"], m["status"]) for m in migrations if m["status"] != "error"] == [
        (migration_uuid(cloud, server_id), "finished")]
    target = in_cell(cloud, "cell2", server_id)
    assert target.host in ("compute3", "compute4") and target.availability_zone == "az2"
    assert target.old_flavor["name"] == "m1.tiny" and target.new_flavor["name"] == "m1.bigger"
    assert providers(migration_uuid(cloud, server_id)) == {node(cloud, source_host)}
    assert providers(server_id) == {node(cloud, target.host)}
    limits = cloud.get(client, "limits").json()["limits"]["absolute"]
    assert limits["totalInstancesUsed"] == 1


# --- the happy paths --------------------------------------------------------------------------


def test_resize_confirm_image_backed(xcloud: Cloud) -> None:
    # given an image-backed server with tags on itself and its port, in cell1
    client = xcloud.member()
    server = boot(xcloud, client, networks=[{"uuid": xcloud.network_id, "tag": "nic1"}], version="2.52",
                  tags=["blue"])
    sid, source_host = server["id"], xcloud.instance(server["id"]).host
    # when it is resized and only cell2 fits
    resize_to_cell2(xcloud, client, sid)
    # then VERIFY_RESIZE in cell2, everything copied, listed once
    assert_verify_resize_in_cell2(xcloud, client, sid, source_host)
    with target_cell(xcloud.cells["cell2"]):
        assert VirtualInterface.objects.get(instance_uuid=sid).tag == "nic1"
        assert InstanceAction.objects.filter(instance_uuid=sid).values_list("action", flat=True).first() == "create"
    assert xcloud.get(client, f"servers/{sid}", version="2.26").json()["server"]["tags"] == ["blue"]
    # the resize action has its events in the target cell
    actions = xcloud.get(client, f"servers/{sid}/os-instance-actions", version="2.51").json()["instanceActions"]
    resize = next(a for a in actions if a["action"] == "resize")
    detail = xcloud.get(client, f"servers/{sid}/os-instance-actions/{resize['request_id']}",
                        version="2.51").json()["instanceAction"]
    assert {e["event"] for e in detail["events"]} >= {"conductor_migrate_server",
                                                       "compute_finish_snapshot_based_resize_at_dest"}
    assert all(e["result"] == "Success" for e in detail["events"])
    # the temporary snapshot was made and deleted
    from images.models import Image

    assert Image._base_manager.filter(name="mover-resize-temp", deleted=True).count() == 1
    assert temp_images("mover") == []
    # when confirmed
    assert xcloud.action(client, sid, {"confirmResize": None}).status_code == 204
    # then the source cell holds nothing of it, the target migration is confirmed
    assert xcloud.show(client, sid)["status"] == "ACTIVE"
    assert rows(xcloud, "cell1", sid) == {"hidden": [], "deleted": [], "migrations": [], "bdms": 0, "actions": 0}
    assert rows(xcloud, "cell2", sid)["migrations"] == ["confirmed"]
    assert providers(migration_uuid(xcloud, sid)) == set()
    events = [n["event_type"] for n in xcloud.notifications() if n["event_type"].startswith("instance.resize")]
    assert events == ["instance.resize_prep.start", "instance.resize_prep.end", "instance.resize.start",
                      "instance.resize.end", "instance.resize_finish.start", "instance.resize_finish.end",
                      "instance.resize_confirm.start", "instance.resize_confirm.end"]
    # and archiving after a delete works on the cell that holds it
    assert xcloud.delete(client, f"servers/{sid}").status_code == 204
    from django.core.management import call_command

    with pytest.raises(SystemExit) as archived:  # Nova's exit code 1: something was archived
        call_command("db", "archive_deleted_rows", "--all-cells", "--until-complete")
    assert archived.value.code == 1
    assert rows(xcloud, "cell2", sid)["deleted"] == []


def test_resize_revert_volume_backed_keeps_its_volumes(xcloud: Cloud) -> None:
    from volumes.models import Volume

    # given a volume-backed server with a second volume attached
    client = xcloud.member()
    server = boot(xcloud, client, volume_backed=True)
    sid, source_host = server["id"], xcloud.instance(server["id"]).host
    data = new_volume(client)
    assert xcloud.post(client, f"servers/{sid}/os-volume_attachments",
                       {"volumeAttachment": {"volumeId": data}}).status_code == 200
    with target_cell(xcloud.cells["cell1"]):
        volume_ids = list(BlockDeviceMapping.objects.filter(instance_uuid=sid).values_list("volume_id", flat=True))
    assert len(volume_ids) == 2
    # when it is resized into cell2
    resize_to_cell2(xcloud, client, sid)
    assert_verify_resize_in_cell2(xcloud, client, sid, source_host)
    # then no snapshot was taken, and each volume has two attachments: the source's empty
    # placeholder and the destination's completed one
    assert temp_images("mover") == []
    target_host = xcloud.instance(sid).host
    for vid in volume_ids:
        atts = live_attachments(vid)
        assert len(atts) == 2
        assert sorted(a.attach_status for a in atts) == ["attached", "reserved"]
        assert next(a for a in atts if a.attach_status == "attached").attached_host == target_host
        assert Volume.objects.get(pk=vid).status == "in-use"
    # when reverted
    assert xcloud.action(client, sid, {"revertResize": None}).status_code == 202
    # then the server is back in cell1 with its volumes connected to the source host only
    shown = xcloud.show(client, sid)
    assert shown["status"] == "ACTIVE" and shown["flavor"]["original_name"] == "m1.tiny"
    assert InstanceMapping.objects.get(instance_uuid=sid).cell.name == "cell1"
    assert rows(xcloud, "cell2", sid) == {"hidden": [], "deleted": [], "migrations": [], "bdms": 0, "actions": 0}
    assert rows(xcloud, "cell1", sid)["migrations"] == ["reverted"]
    assert rows(xcloud, "cell1", sid)["hidden"] == [False]
    for vid in volume_ids:
        atts = live_attachments(vid)
        assert [(a.attach_status, a.attached_host) for a in atts] == [("attached", source_host)]
        assert Volume.objects.get(pk=vid).status == "in-use"
    assert providers(sid) == {node(xcloud, source_host)}
    assert providers(migration_uuid(xcloud, sid)) == set()
    revert = xcloud.get(client, f"servers/{sid}/os-instance-actions", version="2.51").json()["instanceActions"]
    assert revert[0]["action"] == "revertResize"
    assert xcloud.domain(sid).isActive()


def test_resize_revert_keeps_a_volume_attached_while_resized(xcloud: Cloud) -> None:
    from volumes.models import Volume

    client = xcloud.member()
    server = boot(xcloud, client)
    sid, source_host = server["id"], xcloud.instance(server["id"]).host
    resize_to_cell2(xcloud, client, sid)
    # when a volume is attached in VERIFY_RESIZE (it lands in the target cell only)
    vid = new_volume(client)
    assert xcloud.post(client, f"servers/{sid}/os-volume_attachments",
                       {"volumeAttachment": {"volumeId": vid}}).status_code == 200
    assert rows(xcloud, "cell2", sid)["bdms"] == rows(xcloud, "cell1", sid)["bdms"] + 1
    # and the resize is reverted
    assert xcloud.action(client, sid, {"revertResize": None}).status_code == 202
    # then the volume stays attached, through a new attachment on the source host
    assert xcloud.show(client, sid)["status"] == "ACTIVE"
    attached = xcloud.get(client, f"servers/{sid}/os-volume_attachments").json()["volumeAttachments"]
    assert [a["volumeId"] for a in attached] == [vid]
    assert [(a.attach_status, a.attached_host) for a in live_attachments(vid)] == [("attached", source_host)]
    assert Volume.objects.get(pk=vid).status == "in-use"


def test_resize_revert_keeps_a_volume_detached_while_resized(xcloud: Cloud) -> None:
    from volumes.models import Volume

    client = xcloud.member()
    server = boot(xcloud, client)
    sid = server["id"]
    vid = new_volume(client)
    assert xcloud.post(client, f"servers/{sid}/os-volume_attachments",
                       {"volumeAttachment": {"volumeId": vid}}).status_code == 200
    resize_to_cell2(xcloud, client, sid)
    # when the volume is detached in VERIFY_RESIZE
    assert xcloud.delete(client, f"servers/{sid}/os-volume_attachments/{vid}").status_code == 202
    # and the resize is reverted
    assert xcloud.action(client, sid, {"revertResize": None}).status_code == 202
    # then it stays detached: no BDM in the source, no attachment left, the volume available
    assert xcloud.show(client, sid)["status"] == "ACTIVE"
    assert xcloud.get(client, f"servers/{sid}/os-volume_attachments").json()["volumeAttachments"] == []
    assert live_attachments(vid) == []
    assert Volume.objects.get(pk=vid).status == "available"


def test_delete_while_in_verify_resize_cleans_both_cells_and_the_volumes(xcloud: Cloud) -> None:
    from volumes.models import Volume

    client = xcloud.member()
    server = boot(xcloud, client, volume_backed=True)
    sid = server["id"]
    with target_cell(xcloud.cells["cell1"]):
        root = BlockDeviceMapping.objects.get(instance_uuid=sid).volume_id
    resize_to_cell2(xcloud, client, sid)
    mig = migration_uuid(xcloud, sid)
    # when the server is deleted in VERIFY_RESIZE
    assert xcloud.delete(client, f"servers/{sid}").status_code == 204
    # then the resize was confirmed first: source rows hard-deleted, target soft-deleted
    assert rows(xcloud, "cell1", sid) == {"hidden": [], "deleted": [], "migrations": [], "bdms": 0, "actions": 0}
    assert rows(xcloud, "cell2", sid)["deleted"] == [True]
    assert rows(xcloud, "cell2", sid)["migrations"] == ["confirmed"]
    assert providers(sid) == set() and providers(mig) == set()
    # and the root volume (delete_on_termination) went with no attachment left behind
    assert not Volume.objects.filter(pk=root).exists()
    assert xcloud.domain(sid) is None


@pytest.mark.parametrize("finish", ["confirmResize", "revertResize"])
def test_resize_from_stopped_stays_shutoff_and_can_move_again(xcloud: Cloud, finish: str) -> None:
    client = xcloud.member()
    server = boot(xcloud, client, stopped=True)
    sid = server["id"]
    resize_to_cell2(xcloud, client, sid)
    assert xcloud.instance(sid).power_state == 4  # spawned powered off
    assert xcloud.action(client, sid, {finish: None}).status_code in (202, 204)
    assert xcloud.show(client, sid)["status"] == "SHUTOFF"
    assert not xcloud.domain(sid).isActive()
    # a second move works: back into cell1 after a confirm, again into cell2 after a revert
    here = xcloud.cell_of(sid)
    set_cell_enabled(xcloud, here, False)
    assert xcloud.action(xcloud.admin(), sid, {"migrate": None}).status_code == 202
    set_cell_enabled(xcloud, here, True)
    assert xcloud.show(client, sid)["status"] == "VERIFY_RESIZE"
    assert xcloud.cell_of(sid) != here
    assert xcloud.action(client, sid, {"confirmResize": None}).status_code == 204
    assert xcloud.show(client, sid)["status"] == "SHUTOFF"
    assert rows(xcloud, here, sid)["hidden"] == []


def test_migrate_back_after_confirm_has_no_duplicate_keys(xcloud: Cloud) -> None:
    client = xcloud.member()
    server = boot(xcloud, client)
    sid = server["id"]
    resize_to_cell2(xcloud, client, sid)
    assert xcloud.action(client, sid, {"confirmResize": None}).status_code == 204
    set_cell_enabled(xcloud, "cell2", False)
    assert xcloud.action(xcloud.admin(), sid, {"migrate": None}).status_code == 202
    assert xcloud.show(client, sid)["status"] == "VERIFY_RESIZE" and xcloud.cell_of(sid) == "cell1"
    assert xcloud.action(client, sid, {"confirmResize": None}).status_code == 204
    assert rows(xcloud, "cell2", sid)["hidden"] == []
    assert rows(xcloud, "cell1", sid)["migrations"] == ["confirmed", "confirmed"]


# --- scheduling ----------------------------------------------------------------------------------


def test_cold_migrate_to_a_targeted_host_in_the_other_cell(xcloud: Cloud) -> None:
    client, admin = xcloud.member(), xcloud.admin()
    server = boot(xcloud, client)
    sid = server["id"]
    set_cell_enabled(xcloud, "cell2", True)
    # an unmapped host is a 400
    bad = xcloud.action(admin, sid, {"migrate": {"host": "nowhere"}}, version="2.56")
    assert bad.status_code == 400 and "nowhere" in bad.json()["badRequest"]["message"]
    # the targeted host in cell2 is honoured although cell1 has room
    assert xcloud.action(admin, sid, {"migrate": {"host": "compute4"}}, version="2.56").status_code == 202
    assert xcloud.show(client, sid)["status"] == "VERIFY_RESIZE"
    assert xcloud.instance(sid).host == "compute4" and xcloud.cell_of(sid) == "cell2"


def test_weigher_keeps_the_move_in_the_source_cell(xcloud: Cloud) -> None:
    client, admin = xcloud.member(), xcloud.admin()
    server = boot(xcloud, client)
    sid, source_host = server["id"], xcloud.instance(server["id"]).host
    set_cell_enabled(xcloud, "cell2", True)
    # when migrated with room in both cells
    assert xcloud.action(admin, sid, {"migrate": None}).status_code == 202
    # then the other cell1 host is chosen: a same-cell move
    assert xcloud.show(client, sid)["status"] == "VERIFY_RESIZE"
    assert xcloud.cell_of(sid) == "cell1" and xcloud.instance(sid).host not in (source_host, "compute3", "compute4")
    with target_cell(xcloud.cells["cell1"]):
        assert Migration.objects.get(instance_uuid=sid).cross_cell_move is False


def test_negative_multiplier_drains_the_source_cell(xcloud: Cloud, settings: Any) -> None:
    client, admin = xcloud.member(), xcloud.admin()
    server = boot(xcloud, client)
    sid = server["id"]
    set_cell_enabled(xcloud, "cell2", True)
    settings.CROSS_CELL_MOVE_WEIGHT_MULTIPLIER = -1000000.0
    assert xcloud.action(admin, sid, {"migrate": None}).status_code == 202
    assert xcloud.show(client, sid)["status"] == "VERIFY_RESIZE"
    assert xcloud.cell_of(sid) == "cell2"


def test_flavor_restricted_by_aggregate_goes_to_the_other_cell(xcloud: Cloud) -> None:
    from scheduling.services import aggregates

    client = xcloud.member()
    server = boot(xcloud, client)
    sid = server["id"]
    set_cell_enabled(xcloud, "cell2", True)
    agg = aggregates.aggregate_create(name="fast-disks")
    for host in ("compute3", "compute4"):
        aggregates.aggregate_add_host(aggregate=agg, host=host)
    aggregates.aggregate_set_metadata(aggregate=agg, metadata={"ssd": "true"})
    fast = xcloud.flavor("m1.fast", vcpus=1, ram=1024, disk=1)
    fast.extra_specs.create(key="aggregate_instance_extra_specs:ssd", value="true")
    assert xcloud.action(client, sid, {"resize": {"flavorRef": fast.flavorid}}).status_code == 202
    assert xcloud.show(client, sid)["status"] == "VERIFY_RESIZE"
    assert xcloud.cell_of(sid) == "cell2"


def test_without_the_rule_the_move_stays_in_the_cell(xcloud: Cloud) -> None:
    policy.revoke(RULE, project=Project.objects.get(name="demo"))
    client = xcloud.member()
    server = boot(xcloud, client)
    sid = server["id"]
    resize_to_cell2(xcloud, client, sid, expect="ACTIVE")
    assert xcloud.cell_of(sid) == "cell1"
    with target_cell(xcloud.cells["cell1"]):
        migration = Migration.objects.get(instance_uuid=sid)
    assert migration.status == "error" and migration.cross_cell_move is False
    assert rows(xcloud, "cell2", sid)["hidden"] == []
    assert providers(sid) == {node(xcloud, xcloud.instance(sid).host)}


def test_auto_confirm_of_an_old_cross_cell_resize(xcloud: Cloud, settings: Any) -> None:
    from conductor import periodic

    client = xcloud.member()
    server = boot(xcloud, client)
    sid = server["id"]
    resize_to_cell2(xcloud, client, sid)
    settings.RESIZE_CONFIRM_WINDOW = 60
    assert periodic.confirm_resizes() == 0  # not old enough
    with target_cell(xcloud.cells["cell2"]):
        Migration.objects.filter(instance_uuid=sid).update(updated_at=timezone.now() - timezone.timedelta(hours=1))
    assert periodic.confirm_resizes() == 1
    assert xcloud.show(client, sid)["status"] == "ACTIVE"
    assert rows(xcloud, "cell1", sid)["hidden"] == []
    assert rows(xcloud, "cell2", sid)["migrations"] == ["confirmed"]


# --- VERIFY_RESIZE rules, events ------------------------------------------------------------------


def test_actions_refused_in_verify_resize(xcloud: Cloud) -> None:
    client, admin = xcloud.member(), xcloud.admin()
    server = boot(xcloud, client)
    sid = server["id"]
    resize_to_cell2(xcloud, client, sid)
    refused = [
        {"reboot": {"type": "SOFT"}}, {"reboot": {"type": "HARD"}}, {"os-stop": None}, {"os-start": None},
        {"rebuild": {"imageRef": xcloud.image_id}}, {"resize": {"flavorRef": "1"}}, {"shelve": None},
        {"createImage": {"name": "snap"}},
    ]
    for body in refused:
        response = xcloud.action(client, sid, body)
        assert response.status_code == 409, (body, response.status_code, response.content)
        assert "conflictingRequest" in response.json()
    assert xcloud.action(admin, sid, {"migrate": None}).status_code == 409
    assert xcloud.put(client, f"servers/{sid}/tags/red", version="2.26").status_code == 409
    assert xcloud.post(client, f"servers/{sid}/metadata", {"metadata": {"a": "b"}}).status_code == 409
    # lock and unlock are allowed, and the server is still waiting for its confirm
    assert xcloud.action(client, sid, {"lock": None}).status_code == 202
    assert xcloud.action(client, sid, {"unlock": None}).status_code == 202
    assert xcloud.show(client, sid)["status"] == "VERIFY_RESIZE"


def test_external_events_reach_both_hosts_during_the_move(xcloud: Cloud) -> None:
    from servers.services.external_events import event_hosts

    client = xcloud.member()
    server = boot(xcloud, client)
    sid, source_host = server["id"], xcloud.instance(server["id"]).host
    resize_to_cell2(xcloud, client, sid)
    target_host = xcloud.instance(sid).host
    # the source copy's migration context names the *source* cell's migration
    source_copy = in_cell(xcloud, "cell1", sid)
    with target_cell(xcloud.cells["cell1"]):
        source_migration = Migration.objects.get(instance_uuid=sid)
        assert source_copy.migration_context["migration_id"] == source_migration.id
        assert event_hosts(source_copy) == {source_host, target_host}
    with target_cell(xcloud.cells["cell2"]):
        assert event_hosts(xcloud.instance(sid)) == {source_host, target_host}
    response = xcloud.post(xcloud.admin(), "os-server-external-events",
                           {"events": [{"name": "network-changed", "server_uuid": sid}]})
    assert response.status_code == 200 and response.json()["events"][0]["code"] == 200


# --- the failure table (reference 1.7) -------------------------------------------------------------


NO_ROWS = {"hidden": [], "deleted": [], "migrations": [], "bdms": 0, "actions": 0}


def assert_rolled_back(cloud: Cloud, client: Any, sid: str, source_host: str, *, status: str,
                       target_rows: dict[str, Any] = NO_ROWS, bindings_left: int = 0) -> None:
    shown = cloud.show(client, sid)
    assert shown["status"] == status, shown.get("fault")
    assert shown["OS-EXT-STS:task_state"] is None if "OS-EXT-STS:task_state" in shown else True
    assert "fault" in shown or status == "ACTIVE"
    assert cloud.cell_of(sid) == "cell1"
    assert rows(cloud, "cell2", sid) == target_rows
    assert rows(cloud, "cell1", sid)["hidden"] == [False]
    assert rows(cloud, "cell1", sid)["migrations"] == ["error"]
    assert providers(sid) == {node(cloud, source_host)}
    assert providers(migration_uuid(cloud, sid)) == set()
    assert in_cell(cloud, "cell1", sid).migration_context is None
    assert temp_images("mover") == []
    from networks.models import PortBinding

    assert PortBinding.objects.filter(port__device_id=sid, host__in=["compute3", "compute4"]).count() == bindings_left


def test_target_db_setup_failure_rolls_back(xcloud: Cloud) -> None:
    client = xcloud.member()
    server = boot(xcloud, client)
    sid, source_host = server["id"], xcloud.instance(server["id"]).host
    # given a stale row of the same server left in cell2 (its uuid is unique there)
    with target_cell(xcloud.cells["cell1"]):
        row = Instance.objects.filter(uuid=sid).values("project_id", "user_id").first()
    with target_cell(xcloud.cells["cell2"]):
        Instance.objects.create(uuid=sid, hidden=True, deleted=True, **row)
    # when resized into cell2
    resize_to_cell2(xcloud, client, sid, expect="ACTIVE")
    # then vm_state unchanged, migration error, fault, allocations back, target rows gone
    # (the stale row stays as it was: the failed copy was one transaction)
    assert_rolled_back(xcloud, client, sid, source_host, status="ACTIVE",
                       target_rows={**NO_ROWS, "hidden": [True], "deleted": [True]})
    faults = xcloud.get(xcloud.admin(), f"servers/{sid}/os-instance-actions", version="2.51").json()
    assert faults["instanceActions"][0]["action"] == "resize"
    assert xcloud.domain(sid).isActive()


def resize_onto_compute3_only(cloud: Cloud, client: Any, server_id: str, *,
                              while_closed: Callable[[], None] | None = None) -> None:
    """Resize with compute3 the only host open (cell1 closed, cell2 open, compute4 disabled);
    ``while_closed`` runs before cell1 opens again (e.g. a conductor task the test runs itself)."""
    set_cell_enabled(cloud, "cell1", False)
    set_cell_enabled(cloud, "cell2", True)
    with target_cell(cloud.cells["cell2"]):
        Service.objects.filter(host="compute4").update(disabled=True)
    bigger = cloud.flavor("m1.bigger", vcpus=2, ram=1024, disk=2)
    assert cloud.action(client, server_id, {"resize": {"flavorRef": bigger.flavorid}}).status_code == 202
    if while_closed is not None:
        while_closed()
    set_cell_enabled(cloud, "cell1", True)


def test_prep_at_destination_binding_failure_tries_no_alternate(xcloud: Cloud) -> None:
    from networks.models import Port, PortBinding
    from volumes.models import Volume

    client = xcloud.member()
    server = boot(xcloud, client, volume_backed=True)
    sid, source_host = server["id"], xcloud.instance(server["id"]).host
    with target_cell(xcloud.cells["cell1"]):
        root = BlockDeviceMapping.objects.get(instance_uuid=sid).volume_id
    # given a binding of the server's port already on compute3 (the destination's binding fails)
    port = Port.objects.get(device_id=sid)
    PortBinding.objects.create(port=port, host="compute3", status="INACTIVE")
    # when resized with compute3 the only host open (cell2 open, cell1 closed)
    resize_onto_compute3_only(xcloud, client, sid)
    # then the move failed in the prep at the destination (compute3 was scheduled, its binding
    # refused), without an alternate (the binding that was there before stays); failures later
    # in the prep: test_cross_cell_failures
    from servers.models import InstanceFault

    with target_cell(xcloud.cells["cell1"]):
        faults = list(InstanceFault.objects.filter(instance_uuid=sid).values_list("message", flat=True))
    assert faults == [f"Binding for port {port.id} on host compute3 already exists."]
    events = [n["event_type"] for n in xcloud.notifications()]
    assert "instance.resize_prep.start" in events and "instance.resize_prep.end" not in events
    assert_rolled_back(xcloud, client, sid, source_host, status="ACTIVE", bindings_left=1)
    assert [(a.attach_status, a.attached_host) for a in live_attachments(root)] == [("attached", source_host)]
    assert Volume.objects.get(pk=root).status == "in-use"


def test_power_off_failure_at_source_only_clears_the_task(xcloud: Cloud) -> None:
    client = xcloud.member()
    server = boot(xcloud, client)
    sid, source_host = server["id"], xcloud.instance(server["id"]).host
    xcloud.driver(source_host).fail_power_offs = 1
    resize_to_cell2(xcloud, client, sid, expect="ACTIVE")
    assert_rolled_back(xcloud, client, sid, source_host, status="ACTIVE")
    assert xcloud.domain(sid).isActive()


def test_destroy_failure_at_source_errors_then_hard_reboot_and_retry(xcloud: Cloud) -> None:
    client = xcloud.member()
    server = boot(xcloud, client)
    sid, source_host = server["id"], xcloud.instance(server["id"]).host
    xcloud.driver(source_host).fail_destroys = 1
    resize_to_cell2(xcloud, client, sid, expect="ERROR")
    assert_rolled_back(xcloud, client, sid, source_host, status="ERROR")
    assert "injected destroy failure" in xcloud.show(client, sid)["fault"]["message"]
    events = [n["event_type"] for n in xcloud.notifications() if n["event_type"].startswith("instance.resize")]
    assert events[-1] == "instance.resize.error"
    # a hard reboot recovers it, and a retry then succeeds
    assert xcloud.action(client, sid, {"reboot": {"type": "HARD"}}).status_code == 202
    assert xcloud.show(client, sid)["status"] == "ACTIVE"
    resize_to_cell2(xcloud, client, sid)
    assert_verify_resize_in_cell2(xcloud, client, sid, source_host)


def test_spawn_failure_at_destination_errors_in_source_then_recovers_volume_backed(xcloud: Cloud) -> None:
    from volumes.models import Volume

    client = xcloud.member()
    server = boot(xcloud, client, volume_backed=True)
    sid, source_host = server["id"], xcloud.instance(server["id"]).host
    with target_cell(xcloud.cells["cell1"]):
        root = BlockDeviceMapping.objects.get(instance_uuid=sid).volume_id
    for host in ("compute3", "compute4"):
        xcloud.driver(host).fail_spawns = 1
    resize_to_cell2(xcloud, client, sid, expect="ERROR")
    assert_rolled_back(xcloud, client, sid, source_host, status="ERROR")
    # the destination's attachment went; the source's is connected to the source host again
    assert [(a.attach_status, a.attached_host) for a in live_attachments(root)] == [("attached", source_host)]
    assert Volume.objects.get(pk=root).status == "in-use"
    assert xcloud.action(client, sid, {"reboot": {"type": "HARD"}}).status_code == 202
    assert xcloud.show(client, sid)["status"] == "ACTIVE"
    resize_to_cell2(xcloud, client, sid)
    assert_verify_resize_in_cell2(xcloud, client, sid, source_host)


def test_confirm_refused_while_the_source_compute_is_down(xcloud: Cloud) -> None:
    client = xcloud.member()
    server = boot(xcloud, client)
    sid, source_host = server["id"], xcloud.instance(server["id"]).host
    resize_to_cell2(xcloud, client, sid)
    with target_cell(xcloud.cells["cell1"]):
        Service.objects.filter(host=source_host).update(forced_down=True)
    response = xcloud.action(client, sid, {"confirmResize": None})
    assert response.status_code == 409 and source_host in response.json()["conflictingRequest"]["message"]
    assert rows(xcloud, "cell2", sid)["migrations"] == ["finished"]
    assert xcloud.show(client, sid)["status"] == "VERIFY_RESIZE"


def test_confirm_failure_errors_the_server_and_the_migration(xcloud: Cloud) -> None:
    client = xcloud.member()
    server = boot(xcloud, client)
    sid, source_host = server["id"], xcloud.instance(server["id"]).host
    resize_to_cell2(xcloud, client, sid)
    xcloud.driver(source_host).fail_destroys = 1
    xcloud.action(client, sid, {"confirmResize": None})
    shown = xcloud.show(client, sid)
    assert shown["status"] == "ERROR" and "injected destroy failure" in shown["fault"]["message"]
    assert rows(xcloud, "cell2", sid)["migrations"] == ["error"]
    assert xcloud.cell_of(sid) == "cell2"
    assert providers(migration_uuid(xcloud, sid)) == set()


def test_an_old_compute_service_keeps_the_move_in_the_cell(xcloud: Cloud) -> None:
    from servers.services.cross_cell import MIN_COMPUTE_CROSS_CELL_RESIZE

    # given one nova-compute in cell2 older than the cross-cell minimum
    client = xcloud.member()
    server = boot(xcloud, client)
    sid = server["id"]
    with target_cell(xcloud.cells["cell2"]):
        Service.objects.filter(host="compute4").update(version=MIN_COMPUTE_CROSS_CELL_RESIZE - 1)
    # when resized with only cell2 open: the move silently stays in cell1 and finds no host there
    resize_to_cell2(xcloud, client, sid, expect="ACTIVE")
    with target_cell(xcloud.cells["cell1"]):
        migration = Migration.objects.get(instance_uuid=sid)
    assert migration.status == "error" and migration.cross_cell_move is False
    assert rows(xcloud, "cell2", sid) == NO_ROWS


def test_a_failed_cross_cell_move_is_not_retried_on_an_alternate(xcloud: Cloud) -> None:
    # given both cell2 hosts fit and the first one chosen fails to spawn
    client = xcloud.member()
    server = boot(xcloud, client)
    sid, source_host = server["id"], xcloud.instance(server["id"]).host
    for host in ("compute3", "compute4"):
        xcloud.driver(host).fail_spawns = 1
    resize_to_cell2(xcloud, client, sid, expect="ERROR")
    # then exactly one destination was tried
    tried = [h for h in ("compute3", "compute4") if xcloud.driver(h).fail_spawns == 0]
    assert len(tried) == 1
    assert_rolled_back(xcloud, client, sid, source_host, status="ERROR")
