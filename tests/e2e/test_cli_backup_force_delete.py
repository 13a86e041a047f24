"""Backups, diagnostics, force delete and restore with the real ``openstack`` CLI against the live
cloud: ``server backup create`` with a rotation keeps only the newest backups of a type,
``server show --diagnostics`` (admin) reads the guest through its host, ``server restore`` of a
server that is not soft-deleted is refused with Nova's message, ``server delete --force`` deletes
it (the shared live cloud runs with soft delete off). A cloud of its own runs with
``RECLAIM_INSTANCE_INTERVAL`` on: ``server delete`` soft-deletes, ``server restore`` brings the
server back, the beat's periodic reclaims a soft-deleted server after the interval, and
``server delete --force`` deletes a soft-deleted one at once."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from .cloud import LiveCloud
from .test_cli_pause_suspend_rescue import wait_status
from .test_cli_security_groups import wait_active

pytestmark = [pytest.mark.slow, pytest.mark.e2e]

#: seconds a soft-deleted server of ``deferred_cloud`` stays restorable
RECLAIM = 30


@pytest.fixture(scope="module")
def deferred_cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveCloud]:
    from .livecloud import running_cloud

    with running_cloud(tmp_path_factory, "deferred-delete-cloud", broker_db=5,
                       CLOUDCORE_RECLAIM_INSTANCE_INTERVAL=str(RECLAIM), CLOUDCORE_PERIODIC_INTERVAL="2") as cloud:
        yield cloud


def server_gone(cloud: LiveCloud, server_id: str, timeout: float) -> bool:
    """Whether ``server show`` fails within ``timeout`` (waited for with the SDK)."""
    try:
        cloud.server_status(server_id, None, timeout=timeout)
    except AssertionError:
        return False
    return cloud.openstack("server", "show", server_id, check=False).returncode != 0


def backup(cloud: LiveCloud, server: str, name: str, rotate: int) -> dict[str, Any]:
    """``server backup create --wait`` (the image, once active); the server has no task left after."""
    image = cloud.openstack_json("server", "backup", "create", "--name", name, "--type", "daily",
                                 "--rotate", str(rotate), "--wait", server)
    wait_status(cloud, server, "ACTIVE")
    return dict(image)


def image_gone(cloud: LiveCloud, image_id: str, timeout: float = 30) -> bool:
    """Whether ``image show`` fails within ``timeout`` (waited for with the SDK)."""
    try:
        cloud.poll(lambda conn: conn.image.find_image(image_id, ignore_missing=True), lambda image: image is None,
                   f"image {image_id} to go", timeout=timeout)
    except AssertionError:
        return False
    return cloud.openstack("image", "show", image_id, check=False).returncode != 0


def test_backup_diagnostics_restore_and_force_delete_with_the_cli(live_cloud: LiveCloud) -> None:
    cloud = live_cloud
    cloud.openstack("server", "create", "--flavor", "m1.tiny", "--image", "tiny", "--network", "demo-net", "bfd-vm")
    server_id = wait_active(cloud, "bfd-vm")["id"]

    first = backup(cloud, "bfd-vm", "bfd-b1", rotate=1)
    shown = cloud.openstack_json("image", "show", first["id"])
    props = shown.get("properties") or {}
    assert props.get("image_type") == "backup" and props.get("backup_type") == "daily", shown
    assert props.get("instance_uuid") == server_id, shown
    second = backup(cloud, "bfd-vm", "bfd-b2", rotate=1)
    assert image_gone(cloud, first["id"]), f"the older backup was not rotated out\n{cloud.tail(30)}"
    assert cloud.openstack_json("image", "show", second["id"])["status"] == "active"

    diagnostics = cloud.openstack_json("--os-compute-api-version", "2.48", "server", "show", "--diagnostics",
                                       server_id, cloud="cloudcore-admin")
    assert diagnostics["driver"] == "libvirt" and diagnostics["state"] == "running", diagnostics
    refused = cloud.openstack("server", "show", "--diagnostics", "bfd-vm", check=False)
    assert refused.returncode != 0 and "os-server-diagnostics" in refused.stderr, refused.stderr

    refused = cloud.openstack("server", "restore", "bfd-vm", check=False)
    assert refused.returncode != 0 and "while it is in vm_state active" in refused.stderr, refused.stderr

    cloud.openstack("server", "delete", "--force", "--wait", "bfd-vm")
    assert cloud.openstack("server", "show", server_id, check=False).returncode != 0
    cloud.openstack("image", "delete", second["id"])


def test_soft_delete_restore_reclaim_and_force_delete_with_the_cli(deferred_cloud: LiveCloud) -> None:
    cloud = deferred_cloud
    for name in ("dd-vm1", "dd-vm2"):
        cloud.openstack("server", "create", "--flavor", "m1.tiny", "--image", "tiny", "--network", "demo-net", name)
    ids = {name: wait_active(cloud, name)["id"] for name in ("dd-vm1", "dd-vm2")}

    # a delete soft-deletes; restore brings the server back
    cloud.openstack("server", "delete", "dd-vm1")
    assert wait_status(cloud, "dd-vm1", "SOFT_DELETED")["OS-EXT-STS:vm_state"] == "soft-delete"
    cloud.openstack("server", "restore", "dd-vm1")
    assert wait_status(cloud, "dd-vm1", "ACTIVE")["OS-EXT-STS:power_state"] in ("Running", 1)

    # left soft-deleted, the periodic reclaims it after the interval
    cloud.openstack("server", "delete", "dd-vm1")
    wait_status(cloud, "dd-vm1", "SOFT_DELETED")
    assert server_gone(cloud, ids["dd-vm1"], timeout=RECLAIM + 90), f"not reclaimed\n{cloud.tail(30)}"

    # --force deletes a soft-deleted server at once
    cloud.openstack("server", "delete", "dd-vm2")
    wait_status(cloud, "dd-vm2", "SOFT_DELETED")
    cloud.openstack("server", "delete", "--force", "--wait", "dd-vm2")
    assert server_gone(cloud, ids["dd-vm2"], timeout=10)
