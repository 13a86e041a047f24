"""End to end (issue 7's "done when"): boot from volume with the openstack CLI, rebuild it with
``--reimage-boot-volume`` at 2.93 (a real volume worker does the reimage and posts
``volume-reimaged``), and the documented 400 without 2.93; snapshots, volume types (admin create with
properties, private types with project access, delete refused in use), clones and extend."""
from __future__ import annotations

from typing import Any

import pytest

from .cloud import LiveCloud

pytestmark = [pytest.mark.slow, pytest.mark.e2e]


def wait_status(cloud: LiveCloud, name: str, wanted: str, timeout: float = 90) -> dict[str, Any]:
    """The CLI's ``server show`` (2.93) of ``name`` once its status is ``wanted`` (polled with the SDK)."""
    cloud.server_status(name, wanted, timeout=timeout)
    shown: dict[str, Any] = cloud.openstack_json("server", "show", name, "--os-compute-api-version", "2.93")
    assert shown["status"] == wanted, f"{name} is {shown['status']}, not {wanted}: {shown.get('fault')}"
    return shown


def test_boot_from_volume_and_reimage(live_cloud: LiveCloud) -> None:
    cloud = live_cloud
    # given a server booted from a new 1 GiB volume made from the tiny image
    cloud.openstack("server", "create", "--flavor", "m1.tiny", "--image", "tiny", "--boot-from-volume", "1",
                    "--network", "demo-net", "bfv1")
    wait_status(cloud, "bfv1", "ACTIVE")
    # when it is rebuilt without 2.93, the CLI's request fails with the documented 400
    refused = cloud.openstack("server", "rebuild", "--image", "tiny", "--reimage-boot-volume", "bfv1",
                              "--os-compute-api-version", "2.92", check=False)
    assert refused.returncode != 0
    # when it is rebuilt at 2.93 with --reimage-boot-volume onto the demo's other image, it ends
    # ACTIVE again
    cloud.openstack("server", "rebuild", "--image", "tiny-alt", "--reimage-boot-volume", "bfv1",
                    "--os-compute-api-version", "2.93")
    shown = wait_status(cloud, "bfv1", "ACTIVE")
    assert "booted from volume" in str(shown["image"])  # the CLI's text for image ""
    volumes = cloud.openstack_json("volume", "list", "--long")
    assert any(v["Status"] == "in-use" for v in volumes)
    # and its root volume now holds the new image (Cinder's image metadata says which)
    root = cloud.openstack_json("volume", "show", shown["volumes_attached"][0]["id"])
    alt = cloud.openstack_json("image", "show", "tiny-alt")
    assert root["volume_image_metadata"]["image_id"] == alt["id"]
    assert root["volume_image_metadata"]["image_name"] == "tiny-alt"


def wait_volume(cloud: LiveCloud, kind: str, name: str, wanted: str, timeout: float = 60) -> dict[str, Any]:
    """The CLI's ``volume [KIND] show NAME`` once its status is ``wanted`` (polled with the SDK)."""
    cloud.volume_status(kind, name, wanted, timeout=timeout)
    shown: dict[str, Any] = cloud.openstack_json("volume", *([] if kind == "volume" else [kind]), "show", name)
    assert shown["status"] == wanted, f"{kind} {name} is {shown['status']}, not {wanted}\n{cloud.tail(40)}"
    return shown


def test_volume_snapshots_with_the_cli(live_cloud: LiveCloud) -> None:
    cloud = live_cloud
    cloud.openstack("volume", "create", "--size", "1", "snap-src")
    wait_volume(cloud, "volume", "snap-src", "available")
    cloud.openstack("volume", "snapshot", "create", "--volume", "snap-src", "--property", "why=backup", "snap-1")
    snap = wait_volume(cloud, "snapshot", "snap-1", "available")
    assert snap["size"] == 1 and "why" in str(snap["properties"])
    assert "snap-1" in {s["Name"] for s in cloud.openstack_json("volume", "snapshot", "list")}
    cloud.openstack("volume", "create", "--snapshot", "snap-1", "--size", "2", "from-snap")
    restored = wait_volume(cloud, "volume", "from-snap", "available")
    assert restored["snapshot_id"] == snap["id"] and restored["size"] == 2
    # the source cannot go while the snapshot exists
    refused = cloud.openstack("volume", "delete", "snap-src", check=False)
    assert refused.returncode != 0 and "have snapshots" in refused.stderr
    cloud.openstack("volume", "snapshot", "delete", "snap-1")
    cloud.volume_status("snapshot", "snap-1", None)
    assert "snap-1" not in {s["Name"] for s in cloud.openstack_json("volume", "snapshot", "list")}
    cloud.openstack("volume", "delete", "snap-src", "from-snap")


def test_volume_types_clones_and_extend_with_the_cli(live_cloud: LiveCloud) -> None:
    cloud, admin = live_cloud, "cloudcore-admin"
    # given an admin's type with a property (the CLI posts the extra specs after the create)
    cloud.openstack("volume", "type", "create", "--property", "tier=gold", "--description", "gold disks",
                    "e2e-gold", cloud=admin)
    shown = cloud.openstack_json("volume", "type", "show", "e2e-gold", cloud=admin)
    assert "tier" in str(shown["properties"]) and shown["description"] == "gold disks"
    # then a member may not create one
    assert cloud.openstack("volume", "type", "create", "e2e-mine", check=False).returncode != 0
    # when a member makes a volume of the type, it shows the type's name
    cloud.openstack("volume", "create", "--size", "1", "--type", "e2e-gold", "typed")
    assert wait_volume(cloud, "volume", "typed", "available")["type"] == "e2e-gold"
    # and `volume set --size` extends it (offline)
    cloud.openstack("volume", "set", "--size", "2", "typed")
    cloud.poll(lambda conn: conn.block_storage.find_volume("typed"),
               lambda vol: (vol.status, vol.size) == ("available", 2), "volume typed to be extended")
    grown = wait_volume(cloud, "volume", "typed", "available")
    assert grown["size"] == 2
    # and a clone of it (--source) has its size and type
    cloud.openstack("volume", "create", "--source", "typed", "typed-clone")
    clone = wait_volume(cloud, "volume", "typed-clone", "available")
    assert (clone["size"], clone["type"], clone["source_volid"]) == (2, "e2e-gold", grown["id"])
    # and the type cannot be deleted while volumes use it
    refused = cloud.openstack("volume", "type", "delete", "e2e-gold", cloud=admin, check=False)
    assert refused.returncode != 0 and "still in use" in refused.stderr
    # and a private type given to project demo is seen by demo, not by demo2
    cloud.openstack("volume", "type", "create", "--private", "--project", "demo", "e2e-private", cloud=admin)
    assert "e2e-private" in {t["Name"] for t in cloud.openstack_json("volume", "type", "list")}
    assert "e2e-private" not in {t["Name"] for t in cloud.openstack_json("volume", "type", "list",
                                                                          cloud="cloudcore-demo2")}
    # once the volumes are gone the types go
    cloud.openstack("volume", "delete", "typed", "typed-clone")
    for name in ("typed", "typed-clone"):
        cloud.volume_status("volume", name, None)
    assert not {"typed", "typed-clone"} & {v["Name"] for v in cloud.openstack_json("volume", "list")}
    cloud.openstack("volume", "type", "delete", "e2e-gold", "e2e-private", cloud=admin)


def test_volume_backups_with_the_cli(live_cloud: LiveCloud) -> None:
    cloud = live_cloud
    try:
        # given a volume, backed up by the volume worker into the cloud's backup directory
        cloud.openstack("volume", "create", "--size", "1", "backup-src")
        wait_volume(cloud, "volume", "backup-src", "available")
        cloud.openstack("volume", "backup", "create", "--name", "bk-1", "backup-src")
        backup = wait_volume(cloud, "backup", "bk-1", "available")
        assert backup["size"] == 1 and backup["volume_id"] == cloud.openstack_json("volume", "show",
                                                                                  "backup-src")["id"]
        assert (cloud.var_dir / "backups" / f"backup-{backup['id']}").is_file()
        # when it is restored into a new volume, that volume comes up available
        cloud.openstack("volume", "backup", "restore", "bk-1", "from-backup")
        restored = wait_volume(cloud, "volume", "from-backup", "available")
        assert restored["size"] == 1
        # and the backup can then go
        cloud.openstack("volume", "backup", "delete", "bk-1")
        cloud.volume_status("backup", "bk-1", None)
        assert "bk-1" not in {b["Name"] for b in cloud.openstack_json("volume", "backup", "list")}
    finally:
        cloud.openstack("volume", "backup", "delete", "bk-1", check=False)
        cloud.openstack("volume", "delete", "backup-src", "from-backup", check=False)
