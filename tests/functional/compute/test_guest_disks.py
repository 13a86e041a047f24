"""A guest's local disks through the API on libvirt's test driver (cloudcore's own libvirt driver):
the flavor's ephemeral and swap disks, and the data on the root and ephemeral disks across
resizes, cold migrations and shelve/unshelve (the disks move, they are not rebuilt)."""
from __future__ import annotations

import uuid
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from cells.context import target_cell
from cells.models import InstanceMapping
from compute.block_devices import block_device_info
from servers.models import Flavor
from tests.cloud import Cloud

pytestmark = pytest.mark.django_db(databases="__all__")
GiB, MiB = 1024**3, 1024**2
MARKER = b"CLOUDCORE-DISK-MARKER"


def _flavor(name: str, *, disk: int = 1, ephemeral_gb: int = 0, swap: int = 0, ram: int = 512) -> Flavor:
    return Flavor.objects.create(flavorid=str(uuid.uuid4()), name=name, vcpus=1, memory_mb=ram, root_gb=disk,
                                 ephemeral_gb=ephemeral_gb, swap=swap)


def _disks(cloud: Cloud, server_id: str) -> dict[str, Path]:
    """The guest's file-backed disks by target device, from its domain XML."""
    instance = cloud.instance(server_id)
    root = ET.fromstring(cloud.driver(instance.host)._domain(instance).XMLDesc(0))
    return {d.find("target").get("dev"): Path(d.find("source").get("file"))  # type: ignore[union-attr,arg-type]
            for d in root.findall("./devices/disk[@device='disk']")}


def _block_device_info(server_id: str) -> dict[str, Any]:
    mapping = InstanceMapping.objects.select_related("cell").get(instance_uuid=server_id)
    with target_cell(mapping.cell):
        from servers.models import Instance

        return block_device_info(Instance.objects.get(uuid=server_id))


def _nics_and_cdroms(cloud: Cloud, server_id: str) -> tuple[list[str], int]:
    """The guest's NIC MACs and how many cdroms (config drives) its domain has."""
    instance = cloud.instance(server_id)
    root = ET.fromstring(cloud.driver(instance.host)._domain(instance).XMLDesc(0))
    macs = [m.get("address", "") for m in root.findall("./devices/interface/mac")]
    return macs, len(root.findall("./devices/disk[@device='cdrom']"))


def _instance_dir(cloud: Cloud, server_id: str) -> Path:
    instance = cloud.instance(server_id)
    return cloud.driver(instance.host).instance_dir(instance)  # type: ignore[attr-defined,no-any-return]


def _mark(path: Path, marker: bytes = MARKER) -> None:
    with path.open("r+b") as disk:
        disk.write(marker)


def _marked(path: Path, marker: bytes = MARKER) -> bool:
    with path.open("rb") as disk:
        return disk.read(len(marker)) == marker


def _server(cloud: Cloud, client: Any, flavor: Flavor) -> dict[str, Any]:
    server = cloud.create_server(client, "disks", flavor=flavor.flavorid, availability_zone="az1")
    return cloud.wait_for_status(cloud.admin(), server["id"], "ACTIVE")


def test_the_flavors_ephemeral_and_swap_disks_are_vdb_and_vdc_of_their_sizes(libvirt_cloud: Cloud) -> None:
    # given a flavor with a 2 GiB ephemeral disk and 512 MiB of swap
    cloud, member = libvirt_cloud, libvirt_cloud.member()
    flavor = _flavor("eph", ephemeral_gb=2, swap=512)
    # when a server is built with it
    server = _server(cloud, member, flavor)
    # then its domain has the ephemeral disk as vdb and the swap disk as vdc, of the flavor's sizes
    disks = _disks(cloud, server["id"])
    workdir = _instance_dir(cloud, server["id"])
    assert disks == {"vdb": workdir / "disk.local", "vdc": workdir / "disk.swap"}
    assert disks["vdb"].stat().st_size == 2 * GiB and disks["vdc"].stat().st_size == 512 * MiB
    # and the block device info names them as Nova does
    info = _block_device_info(server["id"])
    assert [(e["device_name"], e["size"]) for e in info["ephemerals"]] == [("/dev/vdb", 2)]
    assert info["swap"]["device_name"] == "/dev/vdc" and info["swap"]["swap_size"] == 512


def test_a_flavor_without_local_disks_gives_none(libvirt_cloud: Cloud) -> None:
    cloud, member = libvirt_cloud, libvirt_cloud.member()
    server = _server(cloud, member, _flavor("plain"))
    assert _disks(cloud, server["id"]) == {}
    info = _block_device_info(server["id"])
    assert info["ephemerals"] == [] and info["swap"] is None


def test_a_hard_reboot_and_stop_start_keep_the_local_disks_data(libvirt_cloud: Cloud) -> None:
    cloud, member = libvirt_cloud, libvirt_cloud.member()
    server = _server(cloud, member, _flavor("eph", ephemeral_gb=1))
    workdir = _instance_dir(cloud, server["id"])
    _mark(workdir / "disk")
    _mark(workdir / "disk.local")
    for body, status in (({"reboot": {"type": "HARD"}}, "ACTIVE"), ({"os-stop": None}, "SHUTOFF"),
                         ({"os-start": None}, "ACTIVE")):
        assert cloud.action(member, server["id"], body).status_code == 202
        cloud.wait_for_status(member, server["id"], status)
    assert _marked(workdir / "disk") and _marked(workdir / "disk.local")


def test_a_resize_to_another_host_moves_the_disks_and_confirm_drops_the_source_copy(libvirt_cloud: Cloud,
                                                                                   settings: Any) -> None:
    # given a server (with a config drive and a port) with bytes of its own on its root and ephemeral disks
    settings.FORCE_CONFIG_DRIVE = True
    cloud, member = libvirt_cloud, libvirt_cloud.member()
    server = _server(cloud, member, _flavor("small", ephemeral_gb=1, swap=64))
    macs, cdroms = _nics_and_cdroms(cloud, server["id"])
    assert len(macs) == 1 and cdroms == 1
    source = cloud.instance(server["id"]).host
    source_dir = _instance_dir(cloud, server["id"])
    _mark(source_dir / "disk")
    _mark(source_dir / "disk.local")
    # when it is resized (to the other host of its cell)
    bigger = _flavor("bigger", disk=2, ephemeral_gb=1, swap=64, ram=1024)
    assert cloud.action(member, server["id"], {"resize": {"flavorRef": bigger.flavorid}}).status_code == 202
    cloud.wait_for_status(member, server["id"], "VERIFY_RESIZE")
    # then the guest on the destination has the same bytes (not a fresh copy of the image)
    dest = cloud.instance(server["id"]).host
    assert dest != source
    dest_dir = _instance_dir(cloud, server["id"])
    assert dest_dir != source_dir
    disks = _disks(cloud, server["id"])
    assert _marked(dest_dir / "disk") and _marked(disks["vdb"]) and disks["vdc"] == dest_dir / "disk.swap"
    # with the same NIC (its port's MAC) and its config drive
    assert _nics_and_cdroms(cloud, server["id"]) == (macs, 1)
    # the source keeps its copy until the resize is confirmed
    kept = source_dir.parent / f"{server['id']}_resize"
    assert not source_dir.exists() and _marked(kept / "disk")
    assert cloud.action(member, server["id"], {"confirmResize": None}).status_code == 204
    cloud.wait_for_status(member, server["id"], "ACTIVE")
    assert not kept.exists() and _marked(dest_dir / "disk")


def test_a_reverted_resize_gets_the_source_disks_back(libvirt_cloud: Cloud) -> None:
    cloud, member = libvirt_cloud, libvirt_cloud.member()
    server = _server(cloud, member, _flavor("small"))
    source_dir = _instance_dir(cloud, server["id"])
    _mark(source_dir / "disk")
    bigger = _flavor("bigger", disk=2, ram=1024)
    assert cloud.action(member, server["id"], {"resize": {"flavorRef": bigger.flavorid}}).status_code == 202
    cloud.wait_for_status(member, server["id"], "VERIFY_RESIZE")
    dest_dir = _instance_dir(cloud, server["id"])
    # the guest writes on the destination after the move; the revert returns to the source's disk
    _mark(dest_dir / "disk", b"WRITTEN-AFTER-THE-MOVE")
    assert cloud.action(member, server["id"], {"revertResize": None}).status_code == 202
    cloud.wait_for_status(member, server["id"], "ACTIVE")
    assert _instance_dir(cloud, server["id"]) == source_dir and _marked(source_dir / "disk")
    assert not dest_dir.exists() and not (source_dir.parent / f"{server['id']}_resize").exists()


def test_a_cold_migration_keeps_the_root_disk(libvirt_cloud: Cloud) -> None:
    cloud, member = libvirt_cloud, libvirt_cloud.member()
    server = _server(cloud, member, _flavor("small"))
    _mark(_instance_dir(cloud, server["id"]) / "disk")
    assert cloud.action(cloud.admin(), server["id"], {"migrate": None}).status_code == 202
    cloud.wait_for_status(member, server["id"], "VERIFY_RESIZE")
    assert _marked(_instance_dir(cloud, server["id"]) / "disk")


def test_shelve_offload_and_unshelve_boot_from_the_snapshot_of_the_disk(libvirt_cloud: Cloud,
                                                                        settings: Any) -> None:
    # given a server with bytes of its own on its root disk, shelved and offloaded
    settings.SHELVED_OFFLOAD_TIME = 0
    cloud, member = libvirt_cloud, libvirt_cloud.member()
    server = _server(cloud, member, _flavor("small"))
    _mark(_instance_dir(cloud, server["id"]) / "disk")
    assert cloud.action(member, server["id"], {"shelve": None}).status_code == 202
    cloud.wait_for_status(member, server["id"], "SHELVED_OFFLOADED")
    # when it is unshelved
    assert cloud.action(member, server["id"], {"unshelve": None}).status_code == 202
    cloud.wait_for_status(member, server["id"], "ACTIVE")
    # then its new root disk has them (it was made from the shelve snapshot)
    assert _marked(_instance_dir(cloud, server["id"]) / "disk")
