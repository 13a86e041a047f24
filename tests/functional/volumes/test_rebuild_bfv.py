"""Seed 1: booting from volume and rebuilding a volume-backed server (DESIGN.md 7.1); the
reference's acceptance scenarios 1–16 with cloudcore's decisions."""
from __future__ import annotations

from typing import Any

import pytest

from tests.functional.volumes.conftest import IMAGE_A, IMAGE_B

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])


def boot_bfv(cloud: Any, client: Any, *, image: str | None = None, stopped: bool = False) -> dict[str, Any]:
    bdm = [{"boot_index": 0, "uuid": image or cloud.image_a, "source_type": "image", "destination_type": "volume",
            "volume_size": 1, "delete_on_termination": True}]
    server = cloud.create_server(client, "bfv", image=None, block_device_mapping_v2=bdm)
    assert cloud.show(client, server["id"])["status"] == "ACTIVE"
    if stopped:
        cloud.action(client, server["id"], {"os-stop": None})
    return server


def root_volume(cloud: Any, server_id: str) -> Any:
    from cells.context import target_cell
    from servers.models import BlockDeviceMapping
    from volumes.models import Volume

    cell = cloud.cells[cloud.hosts[cloud.instance(server_id).host]["cell"]]
    with target_cell(cell):
        bdm = BlockDeviceMapping.objects.get(instance_uuid=server_id, boot_index=0)
    return bdm, Volume.objects.get(pk=bdm.volume_id)


def volume_bytes(volume_id: str, n: int) -> bytes:
    from volumes.backends import get_backend

    return get_backend().path(volume_id).read_bytes()[:n]


def rebuild(cloud: Any, client: Any, server_id: str, image: str, version: str = "2.93", **extra: Any) -> Any:
    return cloud.action(client, server_id, {"rebuild": {"imageRef": image, **extra}}, version=version)


def test_boot_from_volume_creates_and_attaches_the_root_volume(bfv: Any) -> None:
    # given a boot-from-volume request (image → volume)
    client = bfv.member()
    server = boot_bfv(bfv, client)
    # then the server shows no image, and its root volume holds the image's bytes, in-use
    assert bfv.show(client, server["id"])["image"] == ""
    bdm, vol = root_volume(bfv, server["id"])
    assert vol.status == "in-use" and vol.bootable and vol.volume_image_metadata["image_id"] == bfv.image_a
    assert bdm.attachment_id and bdm.connection_info["data"]["volume_id"] == vol.id
    assert volume_bytes(vol.id, len(IMAGE_A)) == IMAGE_A


def test_delete_releases_and_deletes_delete_on_termination_volumes(bfv: Any) -> None:
    from volumes.backends import get_backend
    from volumes.models import Volume

    client = bfv.member()
    server = boot_bfv(bfv, client)
    _bdm, vol = root_volume(bfv, server["id"])
    # when the server is deleted
    assert bfv.delete(client, f"servers/{server['id']}").status_code == 204
    # then the volume (delete_on_termination) is gone with its file
    assert not Volume.objects.filter(pk=vol.id).exists()
    assert not get_backend().path(vol.id).exists()


def test_scenario_1_different_image_at_2_92_is_400(bfv: Any) -> None:
    client = bfv.member()
    server = boot_bfv(bfv, client)
    response = rebuild(bfv, client, server["id"], bfv.image_b, version="2.92")
    assert response.status_code == 400
    assert "Unable to rebuild with a different image for a volume-backed server." in response.json()["badRequest"][
        "message"]


@pytest.mark.parametrize("stopped", [False, True])
def test_scenarios_2_3_4_9_rebuild_reimages_the_volume(bfv: Any, stopped: bool) -> None:
    from images.models import Image
    from volumes import services as volumes

    client = bfv.member()
    server = boot_bfv(bfv, client, stopped=stopped)
    old_bdm, vol = root_volume(bfv, server["id"])
    Image.objects.filter(pk=bfv.image_b).update(properties={"os_distro": "cirros"})
    calls: list[tuple[str, Any]] = []
    originals = {name: getattr(volumes, name) for name in
                 ("attachment_create", "attachment_delete", "volume_reimage", "attachment_update",
                  "attachment_complete")}

    def spy(name: str) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            calls.append((name, kwargs))
            return originals[name](*args, **kwargs)
        return wrapper

    import pytest as _pytest

    with _pytest.MonkeyPatch.context() as mp:  # spies record the order; the real services run
        for name in originals:
            mp.setattr(volumes, name, spy(name))
        response = rebuild(bfv, client, server["id"], bfv.image_b)
    # then 202 and the server ends ACTIVE (SHUTOFF when it was stopped)
    assert response.status_code == 202, response.content
    assert bfv.show(client, server["id"])["status"] == ("SHUTOFF" if stopped else "ACTIVE")
    # and the volume operations ran in the seed's order
    names = [c[0] for c in calls]
    assert names[:3] == ["attachment_create", "attachment_delete", "volume_reimage"]
    assert calls[0][1].get("connector") is None
    assert calls[1][1]["attachment_id"] == old_bdm.attachment_id
    assert calls[2][1]["reimage_reserved"] is True
    assert names[3:5] == ["attachment_update", "attachment_complete"]
    # and the new attachment is on the BDM, the volume in-use holding the new image's bytes
    new_bdm, vol = root_volume(bfv, server["id"])
    assert new_bdm.attachment_id != old_bdm.attachment_id and vol.status == "in-use"
    assert vol.volume_image_metadata["image_id"] == bfv.image_b
    assert volume_bytes(vol.id, len(IMAGE_B)) == IMAGE_B
    assert bfv.show(client, server["id"])["image"] == ""
    # and the image properties the server keeps are the new image's (Nova's API resets them)
    sysmeta = bfv.instance(server["id"]).system_metadata
    assert (sysmeta.get("image_os_distro"), sysmeta.get("image_base_image_ref")) == ("cirros", bfv.image_b)


def test_scenario_5_failed_reimage_errors_the_server(bfv: Any) -> None:
    from volumes.backends import get_backend

    client = bfv.member()
    server = boot_bfv(bfv, client)
    # given the storage backend fails the next reimage
    get_backend().inject_fault("reimage", "disk on fire")
    assert rebuild(bfv, client, server["id"], bfv.image_b).status_code == 202
    shown = bfv.show(client, server["id"])
    # then the volume is in error, the server ERROR with the seed's fault
    assert shown["status"] == "ERROR"
    assert "Failed to rebuild volume backed instance" in shown["fault"]["message"]
    _bdm, vol = root_volume(bfv, server["id"])
    assert vol.status == "error"
    # and no attachment update was attempted on the volume in error (still reserved only)
    assert vol.attachments.filter(deleted=False, connector__isnull=True).count() == 1


def test_scenario_6_event_timeout_errors_the_server(bfv: Any) -> None:
    from volumes.backends import get_backend

    client = bfv.member()
    server = boot_bfv(bfv, client)
    (get_backend().pool_dir / "LOSE_EVENTS").write_text("")  # the volume-reimaged event never arrives
    assert rebuild(bfv, client, server["id"], bfv.image_b).status_code == 202
    shown = bfv.show(client, server["id"])
    assert shown["status"] == "ERROR" and shown["OS-EXT-STS:task_state"] is None
    assert "Failed to rebuild volume backed instance" in shown["fault"]["message"]


def test_volume_api_error_before_change_restores_the_server(bfv: Any, settings: Any) -> None:
    from volumes.backends import get_backend

    client = bfv.member()
    server = boot_bfv(bfv, client)
    _bdm, vol = root_volume(bfv, server["id"])
    # given the reimage request is refused by the volume API (image larger than the volume: 400)
    from volumes.models import Volume

    Volume.objects.filter(pk=vol.id).update(size=0)
    assert rebuild(bfv, client, server["id"], bfv.image_b).status_code == 202
    Volume.objects.filter(pk=vol.id).update(size=1)
    # then the action failed and the server is back ACTIVE with its volume in-use and unchanged
    shown = bfv.show(client, server["id"])
    assert shown["status"] == "ACTIVE"
    _bdm, vol = root_volume(bfv, server["id"])
    assert vol.status == "in-use" and volume_bytes(vol.id, len(IMAGE_A)) == IMAGE_A
    actions = bfv.get(client, f"servers/{server['id']}/os-instance-actions").json()["instanceActions"]
    assert actions[0]["action"] == "rebuild" and actions[0]["message"] == "Error"
    assert get_backend().pool_dir.exists()


def test_retry_from_error_after_the_cause_is_fixed(bfv: Any) -> None:
    from volumes.backends import get_backend
    from volumes.models import Volume

    client = bfv.member()
    server = boot_bfv(bfv, client)
    get_backend().inject_fault("reimage")
    rebuild(bfv, client, server["id"], bfv.image_b)
    assert bfv.show(client, server["id"])["status"] == "ERROR"
    # when an admin resets the volume to reserved (the seed's operator path) and the user retries
    _bdm, vol = root_volume(bfv, server["id"])
    Volume.objects.filter(pk=vol.id).update(status="reserved")
    assert rebuild(bfv, client, server["id"], bfv.image_b).status_code == 202
    assert bfv.show(client, server["id"])["status"] == "ACTIVE"
    assert volume_bytes(vol.id, len(IMAGE_B)) == IMAGE_B


def test_scenario_10_image_backed_rebuild_never_reimages(bfv: Any) -> None:
    from volumes import services as volumes

    client = bfv.member()
    server = bfv.create_server(client, "vm1")
    called: list[Any] = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(volumes, "volume_reimage", lambda *a, **k: called.append(k))
        assert rebuild(bfv, client, server["id"], bfv.image_b).status_code == 202
    assert not called and bfv.show(client, server["id"])["status"] == "ACTIVE"


def test_scenario_11_same_image(bfv: Any) -> None:
    from volumes.backends import get_backend

    client = bfv.member()
    server = boot_bfv(bfv, client)
    _bdm, vol = root_volume(bfv, server["id"])
    path = get_backend().path(vol.id)
    with open(path, "r+b") as fh:
        fh.write(b"user data")
    # at 2.92 the same image keeps the data
    assert rebuild(bfv, client, server["id"], bfv.image_a, version="2.92").status_code == 202
    assert path.read_bytes()[:9] == b"user data"
    # at 2.93 the volume is reimaged
    assert rebuild(bfv, client, server["id"], bfv.image_a).status_code == 202
    assert volume_bytes(vol.id, len(IMAGE_A)) == IMAGE_A


@pytest.mark.parametrize(("version", "value", "code"), [
    ("2.92", True, 400), ("2.92", False, 400), ("2.93", True, 202), ("2.93", False, 400),
])
def test_scenario_12_reimage_boot_volume_field(bfv: Any, version: str, value: bool, code: int) -> None:
    client = bfv.member()
    server = boot_bfv(bfv, client)
    response = rebuild(bfv, client, server["id"], bfv.image_b, version=version, reimage_boot_volume=value)
    assert response.status_code == code, response.content


def test_reimage_true_on_image_backed_server_is_400(bfv: Any) -> None:
    client = bfv.member()
    server = bfv.create_server(client, "vm1")
    response = rebuild(bfv, client, server["id"], bfv.image_b, reimage_boot_volume=True)
    assert response.status_code == 400


def test_multiattach_root_is_400(bfv: Any) -> None:
    from volumes.models import Volume

    client = bfv.member()
    server = boot_bfv(bfv, client)
    _bdm, vol = root_volume(bfv, server["id"])
    Volume.objects.filter(pk=vol.id).update(multiattach=True)
    assert rebuild(bfv, client, server["id"], bfv.image_b).status_code == 400


def test_host_without_trait_is_409(bfv: Any) -> None:
    from scheduling.placement import services as placement

    client = bfv.member()
    server = boot_bfv(bfv, client)
    host = bfv.instance(server["id"]).host
    placement.traits_remove(rp=bfv.hosts[host]["node_uuid"], traits=["COMPUTE_REBUILD_BFV"])
    response = rebuild(bfv, client, server["id"], bfv.image_b)
    assert response.status_code == 409
    assert "COMPUTE_REBUILD_BFV" in response.json()["conflictingRequest"]["message"]


def test_scenario_13_volume_not_in_use_is_400(bfv: Any) -> None:
    from volumes.models import Volume

    client = bfv.member()
    server = boot_bfv(bfv, client)
    _bdm, vol = root_volume(bfv, server["id"])
    Volume.objects.filter(pk=vol.id).update(status="detaching")
    response = rebuild(bfv, client, server["id"], bfv.image_b)
    assert response.status_code == 400 and "must be 'in-use'" in response.json()["badRequest"]["message"]


def test_scenario_14_actions_and_events(bfv: Any) -> None:
    client = bfv.member()
    server = boot_bfv(bfv, client)
    rebuild(bfv, client, server["id"], bfv.image_b)
    actions = bfv.get(client, f"servers/{server['id']}/os-instance-actions").json()["instanceActions"]
    assert actions[0]["action"] == "rebuild"
    detail = bfv.get(client, f"servers/{server['id']}/os-instance-actions/{actions[0]['request_id']}",
                     version="2.93").json()["instanceAction"]
    assert "compute_rebuild_instance" in {e["event"] for e in detail["events"]}


def test_scenarios_15_16_external_events(bfv: Any) -> None:
    admin = bfv.admin()
    client = bfv.member()
    server = bfv.create_server(client, "vm1")
    event = {"name": "volume-reimaged", "server_uuid": server["id"], "tag": "v1"}
    assert bfv.post(admin, "os-server-external-events", {"events": [event]}, version="2.92").status_code == 400
    ok = bfv.post(admin, "os-server-external-events", {"events": [event]}, version="2.93")
    assert ok.status_code == 200 and ok.json()["events"][0]["code"] == 200
    unknown = {"name": "volume-reimaged", "server_uuid": "00000000-0000-4000-8000-000000000000", "tag": "v"}
    mixed = bfv.post(admin, "os-server-external-events", {"events": [event, unknown]}, version="2.93")
    assert mixed.status_code == 207 and [e["code"] for e in mixed.json()["events"]] == [200, 404]
    # a member may not post events
    assert bfv.post(client, "os-server-external-events", {"events": [event]}, version="2.93").status_code == 403


def test_a_service_user_of_another_project_may_post_events(bfv: Any) -> None:
    # given a user with only the service role (Cinder's or Neutron's user, on their own project)
    from identity.services.roles import ensure_bootstrap_roles
    from tests.apihelpers import auth_client, make_identity

    ensure_bootstrap_roles()
    user, project = make_identity("cinder", project="service", roles=["service"])
    server = bfv.create_server(bfv.member(), "vm1")
    event = {"name": "volume-reimaged", "server_uuid": server["id"], "tag": "v1"}
    # when it posts an event for a server of another project, it is delivered (Nova's service rule)
    ok = bfv.post(auth_client(user, project), "os-server-external-events", {"events": [event]}, version="2.93")
    assert ok.status_code == 200 and ok.json()["events"][0]["code"] == 200
    # and a member of that project may not
    member, _ = make_identity("bystander", project="service", roles=["member"])
    assert bfv.post(auth_client(member, project), "os-server-external-events", {"events": [event]},
                    version="2.93").status_code == 403


def test_scenario_16_server_without_host_is_422(bfv: Any, settings: Any) -> None:
    from cells.context import target_cell
    from servers.models import Instance

    admin = bfv.admin()
    client = bfv.member()
    server = bfv.create_server(client, "vm1")
    other = bfv.create_server(client, "vm2")
    cell = bfv.cells[bfv.hosts[bfv.instance(other["id"]).host]["cell"]]
    with target_cell(cell):
        Instance.objects.filter(uuid=other["id"]).update(host=None)
    events = [{"name": "volume-reimaged", "server_uuid": s["id"], "tag": "t"} for s in (server, other)]
    response = bfv.post(admin, "os-server-external-events", {"events": events}, version="2.93")
    assert response.status_code == 207 and [e["code"] for e in response.json()["events"]] == [200, 422]


def test_scenario_7_attachment_create_error_restores_the_server(bfv: Any) -> None:
    # given the volume API refuses the empty attachment (nothing changed on the volume)
    from volumes import services as volumes

    client = bfv.member()
    server = boot_bfv(bfv, client, stopped=True)
    _bdm, vol = root_volume(bfv, server["id"])

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise volumes.InvalidVolume(reason="backend unavailable")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(volumes, "attachment_create", refuse)
        assert rebuild(bfv, client, server["id"], bfv.image_b).status_code == 202
    # then (DESIGN 7.1, the seed's rule) the action failed and the server is back SHUTOFF, data kept
    shown = bfv.show(client, server["id"])
    assert shown["status"] == "SHUTOFF" and shown["OS-EXT-STS:task_state"] is None
    _bdm, vol = root_volume(bfv, server["id"])
    assert vol.status == "in-use" and volume_bytes(vol.id, len(IMAGE_A)) == IMAGE_A


def test_external_event_tag_required_and_volume_extended(bfv: Any) -> None:
    admin = bfv.admin()
    client = bfv.member()
    server = bfv.create_server(client, "vm1")
    events = [{"name": "volume-extended", "server_uuid": server["id"]},
              {"name": "network-vif-plugged", "server_uuid": server["id"], "status": "completed"}]
    response = bfv.post(admin, "os-server-external-events", {"events": events}, version="2.51")
    assert response.status_code == 207 and [e["code"] for e in response.json()["events"]] == [400, 200]
    assert bfv.post(admin, "os-server-external-events", {"events": []}, version="2.93").status_code == 400
