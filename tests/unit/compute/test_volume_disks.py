"""A server's volumes as disks of its domain (libvirt's test driver; the real-QEMU test attaches
one to a running guest)."""
from __future__ import annotations

import uuid
import xml.etree.ElementTree as ET
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from compute.virt.libvirt import LibvirtDriver, next_free_target, volumes_xml, write_test_node


def _bdi(tmp_path: Path, *devices: str) -> dict[str, Any]:
    mapping = []
    for index, dev in enumerate(devices):
        vol_id = f"vol-{index}"
        path = tmp_path / f"volume-{vol_id}"
        path.write_bytes(b"\0" * 512)
        mapping.append({"connection_info": {"driver_volume_type": "file", "serial": vol_id,
                                            "data": {"device_path": str(path), "volume_id": vol_id,
                                                     "access_mode": "rw"}},
                        "mount_device": dev, "boot_index": 0 if index == 0 else None})
    return {"block_device_mapping": mapping, "root_device_name": devices[0] if devices else "/dev/vda"}


def _disks(driver: LibvirtDriver, inst: Any) -> list[tuple[str | None, str | None, str | None]]:
    root = ET.fromstring(driver._domain(inst).XMLDesc(0))
    return [(d.find("target").get("dev"), d.find("source").get("file"),  # type: ignore[union-attr]
             d.findtext("serial")) for d in root.findall("./devices/disk[@device='disk']")]


def test_a_volume_backed_server_boots_from_its_volume_and_keeps_the_others(tmp_path: Path) -> None:
    # given a host and a volume-backed server with a root volume and a data volume
    node = write_test_node(tmp_path / "h1", hostname="h1", vcpus=2, memory_mb=2048, disk_gb=20)
    d = LibvirtDriver(host="h1", uri=f"test://{node}", state_path=tmp_path / "h1")
    inst = SimpleNamespace(uuid=str(uuid.uuid4()), memory_mb=128, vcpus=1, config_drive="")
    bdi = _bdi(tmp_path, "/dev/vda", "/dev/vdb")
    # when it is spawned with its block device info
    d.spawn(instance=inst, image_meta=None, network_info=[], block_device_info=bdi)
    # then both volumes are disks, at their mount devices, with the volume ids as serials
    assert _disks(d, inst) == [("vda", str(tmp_path / "volume-vol-0"), "vol-0"),
                               ("vdb", str(tmp_path / "volume-vol-1"), "vol-1")]


def test_an_image_disk_keeps_vda_and_a_volume_named_vda_moves_on() -> None:
    bdi = {"block_device_mapping": [
        {"connection_info": {"data": {"device_path": "/srv/v1", "volume_id": "v1"}}, "mount_device": "/dev/vda"},
        {"connection_info": {"data": {"device_path": "/srv/v2", "volume_id": "v2", "access_mode": "ro"}},
         "mount_device": "/dev/vdb"},
        {"connection_info": None, "mount_device": "/dev/vdc"}]}  # not connected to this host: left out
    disks = ET.fromstring(f"<devices>{volumes_xml(bdi, taken={'vda'})}</devices>").findall("disk")
    assert [(x.find("target").get("dev"), x.find("source").get("file"), x.find("readonly") is not None)  # type: ignore[union-attr]
            for x in disks] == [("vdb", "/srv/v1", False), ("vdc", "/srv/v2", True)]
    assert next_free_target("vdb", {"vda"}) == "vdb" and next_free_target("vda", {"vda", "vdb"}) == "vdc"


def test_a_multiattach_volume_is_a_shareable_disk_of_the_domain(tmp_path: Path) -> None:
    # given a server whose data volume is multiattach (Cinder's connection_info says so)
    node = write_test_node(tmp_path / "h1", hostname="h1", vcpus=2, memory_mb=2048, disk_gb=20)
    d = LibvirtDriver(host="h1", uri=f"test://{node}", state_path=tmp_path / "h1")
    inst = SimpleNamespace(uuid=str(uuid.uuid4()), memory_mb=128, vcpus=1, config_drive="")
    bdi = _bdi(tmp_path, "/dev/vda", "/dev/vdb")
    bdi["block_device_mapping"][1]["connection_info"]["multiattach"] = True
    # when it is spawned
    d.spawn(instance=inst, image_meta=None, network_info=[], block_device_info=bdi)
    # then only the multiattach volume's disk is <shareable/> in the domain libvirt holds
    root = ET.fromstring(d._domain(inst).XMLDesc(0))
    shared = {x.find("target").get("dev"): x.find("shareable") is not None  # type: ignore[union-attr]
              for x in root.findall("./devices/disk[@device='disk']")}
    assert shared == {"vda": False, "vdb": True}
    # and the driver says it can share volumes (the host's trait COMPUTE_VOLUME_MULTI_ATTACH)
    assert d.capabilities["supports_multiattach"] is True
