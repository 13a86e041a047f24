"""End to end with openstacksdk only (issue 10): a live cloudcore (``manage.py run_cloud``: web,
conductor, beat, volume worker and four compute workers as real processes) driven through the
SDK's compute, image, block-storage and network proxies: flavors, keypairs, images (upload and
download), volumes, servers (create, list, show, delete), boot from volume, the server actions,
unshelve to a host at 2.91, rebuild with reimage at 2.93, services and hypervisors; and a second
cloud with ``CLOUDCORE_USE_PENDING_STATE=true`` where a server with no valid host is PENDING at
2.105 and ERROR at 2.104."""
from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .cloud import LiveCloud

pytestmark = [pytest.mark.slow, pytest.mark.e2e]


def connect(cloud: LiveCloud, name: str = "cloudcore-demo") -> Any:
    import openstack.config
    from openstack.connection import Connection

    config = openstack.config.OpenStackConfig(config_files=[str(cloud.clouds_yaml)])
    return Connection(config=config.get_one(cloud=name))


def wait_server(conn: Any, server: Any, status: str, timeout: float = 90) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        server = conn.compute.get_server(server.id)
        if server.status == status:
            return server
        time.sleep(0.5)
    raise AssertionError(f"{server.name} is {server.status}, not {status}: {server.fault}")


def raw(conn: Any, method: str, path: str, version: str, **kw: Any) -> Any:
    """A compute API call at an explicit microversion (the SDK's own adapter: auth, catalog)."""
    return getattr(conn.compute, method)(path, microversion=version, **kw)


@pytest.fixture(scope="module")
def sdk(live_cloud: LiveCloud) -> Iterator[tuple[Any, Any, LiveCloud]]:
    demo, admin = connect(live_cloud), connect(live_cloud, "cloudcore-admin")
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if len([s for s in admin.compute.services() if s.state == "up"]) == 4:
            break
        time.sleep(1)
    yield demo, admin, live_cloud
    demo.close()
    admin.close()


def test_catalog_flavors_keypairs_services_hypervisors(sdk: tuple[Any, Any, LiveCloud], tmp_path: Path) -> None:
    demo, admin, _ = sdk
    assert {f.name for f in demo.compute.flavors()} >= {"m1.tiny", "m1.small", "m1.medium", "m1.large"}
    flavor = admin.compute.create_flavor(name="sdk.flavor", ram=256, vcpus=1, disk=1)
    assert admin.compute.get_flavor(flavor.id).ram == 256
    admin.compute.delete_flavor(flavor)
    keypair = demo.compute.create_keypair(name="sdk-key")
    assert keypair.private_key and keypair.fingerprint
    assert "sdk-key" in [k.name for k in demo.compute.keypairs()]
    demo.compute.delete_keypair("sdk-key")
    services = sorted((s.host, s.availability_zone) for s in admin.compute.services())
    assert services == [("compute1", "az1"), ("compute2", "az1"), ("compute3", "az2"), ("compute4", "az2")]
    hypervisors = sorted(h.name for h in admin.compute.hypervisors())
    assert hypervisors == ["compute1", "compute2", "compute3", "compute4"]


def test_images_and_volumes(sdk: tuple[Any, Any, LiveCloud]) -> None:
    demo, _, _ = sdk
    data = b"sdk image bytes " * 1000
    image = demo.image.create_image(name="sdk-image", data=data, disk_format="raw", container_format="bare",
                                    visibility="private")
    image = demo.image.get_image(image.id)
    assert image.status == "active" and image.size == len(data)
    assert demo.image.download_image(image).content == data
    volume = demo.block_storage.create_volume(size=1, name="sdk-vol")
    volume = demo.block_storage.wait_for_status(volume, status="available", wait=60)
    assert demo.block_storage.get_volume(volume.id).size == 1
    demo.block_storage.delete_volume(volume)
    demo.block_storage.wait_for_delete(volume, wait=60)
    demo.image.delete_image(image)
    assert "sdk-image" not in [i.name for i in demo.image.images()]


def test_server_lifecycle_and_actions(sdk: tuple[Any, Any, LiveCloud]) -> None:
    demo, admin, _ = sdk
    flavor = demo.compute.find_flavor("m1.tiny")
    image = demo.image.find_image("tiny")
    network = demo.network.find_network("demo-net")
    server = demo.compute.create_server(name="sdk-vm", flavor_id=flavor.id, image_id=image.id,
                                        networks=[{"uuid": network.id}], availability_zone="az2")
    assert server.admin_password
    server = wait_server(demo, server, "ACTIVE")
    assert "sdk-vm" in [s.name for s in demo.compute.servers()]
    assert server.addresses["demo-net"][0]["addr"].startswith("10.")
    # power actions, lock
    demo.compute.stop_server(server)
    wait_server(demo, server, "SHUTOFF")
    demo.compute.start_server(server)
    wait_server(demo, server, "ACTIVE")
    demo.compute.reboot_server(server, "HARD")
    wait_server(demo, server, "ACTIVE")
    demo.compute.lock_server(server)
    assert demo.compute.get_server(server.id).is_locked is True if hasattr(server, "is_locked") else True
    demo.compute.unlock_server(server)
    # rebuild, snapshot
    demo.compute.rebuild_server(server, image=image.id, name="sdk-vm")
    wait_server(demo, server, "ACTIVE")
    snapshot_id = demo.compute.create_server_image(server, name="sdk-snap", wait=True, timeout=60).id
    assert demo.image.get_image(snapshot_id).status == "active"
    demo.image.delete_image(snapshot_id)
    # resize with revert, then confirm
    demo.compute.resize_server(server, demo.compute.find_flavor("m1.small").id)
    wait_server(demo, server, "VERIFY_RESIZE")
    demo.compute.revert_server_resize(server)
    assert wait_server(demo, server, "ACTIVE").flavor.name == "m1.tiny"
    demo.compute.resize_server(server, demo.compute.find_flavor("m1.small").id)
    wait_server(demo, server, "VERIFY_RESIZE")
    demo.compute.confirm_server_resize(server)
    assert wait_server(demo, server, "ACTIVE").flavor.name == "m1.small"
    # shelve (offloaded at once in the demo), then unshelve to a chosen host at 2.91 as admin
    demo.compute.shelve_server(server)
    wait_server(demo, server, "SHELVED_OFFLOADED")
    current = admin.compute.get_server(server.id).compute_host
    assert current is None
    response = raw(admin, "post", f"/servers/{server.id}/action", "2.91", json={"unshelve": {"host": "compute4"}})
    assert response.status_code == 202, response.text
    wait_server(demo, server, "ACTIVE")
    assert admin.compute.get_server(server.id).compute_host == "compute4"
    # delete
    demo.compute.delete_server(server)
    demo.compute.wait_for_delete(server, wait=60)


def test_boot_from_volume_and_reimage_at_2_93(sdk: tuple[Any, Any, LiveCloud]) -> None:
    demo, _, _ = sdk
    image = demo.image.find_image("tiny")
    bdm = [{"boot_index": 0, "uuid": image.id, "source_type": "image", "destination_type": "volume",
            "volume_size": 1, "delete_on_termination": True}]
    server = demo.compute.create_server(name="sdk-bfv", flavor_id=demo.compute.find_flavor("m1.tiny").id,
                                        block_device_mapping=bdm, networks="none")
    server = wait_server(demo, server, "ACTIVE")
    assert not (server.image or {}).get("id")
    [attachment] = list(demo.compute.volume_attachments(server))
    assert demo.block_storage.get_volume(attachment.volume_id).status == "in-use"
    refused = raw(demo, "post", f"/servers/{server.id}/action", "2.92",
                  json={"rebuild": {"imageRef": image.id, "reimage_boot_volume": True}})
    assert refused.status_code == 400 and "reimage_boot_volume" in refused.text
    accepted = raw(demo, "post", f"/servers/{server.id}/action", "2.93",
                   json={"rebuild": {"imageRef": image.id, "reimage_boot_volume": True}})
    assert accepted.status_code == 202, accepted.text
    wait_server(demo, server, "ACTIVE")
    demo.compute.delete_server(server)
    demo.compute.wait_for_delete(server, wait=60)
    deadline = time.monotonic() + 60  # the root volume was delete_on_termination
    while demo.block_storage.find_volume(attachment.volume_id) is not None and time.monotonic() < deadline:
        time.sleep(0.5)
    assert demo.block_storage.find_volume(attachment.volume_id) is None


@pytest.fixture(scope="module")
def pending_cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveCloud]:
    from .livecloud import running_cloud

    with running_cloud(tmp_path_factory, "pending-cloud", broker_db=1, CLOUDCORE_USE_PENDING_STATE="true") as cloud:
        yield cloud


def boot_without_host(admin: Any, demo: Any, name: str, disk: int) -> tuple[Any, Any, dict[str, Any]]:
    """(flavor, server, its body at 2.105 once out of BUILD) of a server asking ``disk`` GB."""
    flavor = admin.compute.create_flavor(name=f"sdk.{name}", ram=512, vcpus=1, disk=disk)
    server = demo.compute.create_server(name=f"sdk-{name}", flavor_id=flavor.id,
                                        image_id=demo.image.find_image("tiny").id, networks="none")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        body = raw(demo, "get", f"/servers/{server.id}", "2.105").json()["server"]
        if body["status"] != "BUILD":
            break
        time.sleep(0.5)
    return flavor, server, body


def test_pending_at_2_105_and_error_at_2_104(pending_cloud: LiveCloud) -> None:
    admin, demo = connect(pending_cloud, "cloudcore-admin"), connect(pending_cloud)
    flavor, server, body = boot_without_host(admin, demo, "nohost", 5000)
    assert body["status"] == "PENDING" and body["OS-EXT-STS:vm_state"] == "pending"
    older = raw(demo, "get", f"/servers/{server.id}", "2.104").json()["server"]
    assert older["status"] == "ERROR" and older["OS-EXT-STS:vm_state"] == "error"
    assert "No valid host was found" in older["fault"]["message"]
    demo.compute.delete_server(server)
    demo.compute.wait_for_delete(server, wait=60)
    admin.compute.delete_flavor(flavor)


def test_pending_server_explained_through_the_api_and_the_command(pending_cloud: LiveCloud) -> None:
    """Issue 22: the PENDING server's fault names the shortfall without host names; the admin
    reads the trace (cloudcore's os-scheduling-explanation), dry-runs the request, and
    ``manage.py scheduler explain`` says the same."""
    admin, demo = connect(pending_cloud, "cloudcore-admin"), connect(pending_cloud)
    flavor, server, body = boot_without_host(admin, demo, "explain", 6000)
    assert body["status"] == "PENDING"
    message = body["fault"]["message"]
    assert message.startswith("No valid host was found.") and "Not enough disk: needs 6000 GB" in message
    assert "compute" not in message
    assert raw(demo, "get", f"/servers/{server.id}/os-scheduling-explanation", "2.105").status_code == 403
    explained = raw(admin, "get", f"/servers/{server.id}/os-scheduling-explanation", "2.105").json()
    trace = explained["scheduling_explanation"]["trace"]
    assert trace["result"] == "no_valid_host" and trace["placement"]["candidates"] == 0
    assert trace["placement"]["shortfall"]["resources"]["DISK_GB"]["short_on"] == 4
    assert {n["host"] for n in trace["placement"]["shortfall"]["nearest"]} == {
        "compute1", "compute2", "compute3", "compute4"}
    dry = raw(admin, "post", "/os-scheduling-explanation", "2.105",
              json={"explain": {"server_id": server.id}}).json()["scheduling_dry_run"]
    assert dry["fits"] is False and dry["suggestions"]
    fits = raw(admin, "post", "/os-scheduling-explanation", "2.105",
               json={"explain": {"flavorRef": "m1.tiny"}}).json()["scheduling_dry_run"]
    assert fits["fits"] is True and fits["hosts"]
    text = pending_cloud.manage("scheduler", "explain", server.id)
    assert "Not enough disk: needs 6000 GB" in text and "DISK_GB: 6000 requested, short on 4 providers" in text
    assert pending_cloud.manage("scheduler", "explain", "--flavor", "m1.tiny").startswith("fits now on: compute")
    demo.compute.delete_server(server)
    demo.compute.wait_for_delete(server, wait=60)
    admin.compute.delete_flavor(flavor)
