"""Instance disks as qcow2 overlays on a per-host image cache (qemu-img, Debian's qemu-utils)."""
from __future__ import annotations

import json
import shutil
import subprocess
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from compute.virt.imagecache import (
    FlavorDiskSmallerThanImage,
    GiB,
    cached_image,
    create_overlay,
    flatten,
    grow,
)
from compute.virt.libvirt import write_test_node
from tests.unit.compute.test_libvirt_driver import DaemonDriver  # the real-daemon paths over a test connection

pytestmark = pytest.mark.skipif(shutil.which("qemu-img") is None, reason="qemu-img (qemu-utils) is not installed")
MARKER = b"CLOUDCORE-QCOW2-IMAGE\n"


def info(path: Path) -> dict[str, Any]:
    out = subprocess.run(["qemu-img", "info", "--output=json", str(path)], capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def raw_image(path: Path, size: int = 1024 * 1024) -> Path:
    path.write_bytes(MARKER + bytes(size - len(MARKER)))
    return path


def qcow2_image(tmp_path: Path) -> Path:
    target = tmp_path / "image.qcow2"
    subprocess.run(["qemu-img", "convert", "-f", "raw", "-O", "qcow2", str(raw_image(tmp_path / "src.raw")),
                    str(target)], check=True)
    return target


def test_an_image_is_fetched_once_per_host(tmp_path: Path) -> None:
    source = raw_image(tmp_path / "store-file")
    meta = {"id": "img-1", "path": str(source), "disk_format": "raw"}
    cached = cached_image(tmp_path / "_base", meta, host="h1")
    assert cached == tmp_path / "_base" / "img-1" and cached.read_bytes().startswith(MARKER)
    source.write_bytes(b"changed in the store")  # the cache is not fetched again
    assert cached_image(tmp_path / "_base", meta, host="h1").read_bytes().startswith(MARKER)
    assert [p.name for p in (tmp_path / "_base").iterdir()] == ["img-1"]  # no partial fetch left


@pytest.mark.parametrize("fmt", ["raw", "qcow2"])
def test_the_disk_is_a_qcow2_overlay_sized_to_the_flavor(tmp_path: Path, fmt: str) -> None:
    base = raw_image(tmp_path / "base") if fmt == "raw" else qcow2_image(tmp_path)
    disk = tmp_path / "disk"
    create_overlay(base, fmt, disk, root_gb=1, host="h1")
    overlay = info(disk)
    assert overlay["format"] == "qcow2" and overlay["virtual-size"] == GiB
    assert overlay["backing-filename"] == str(base) and overlay["backing-filename-format"] == fmt
    # a bigger flavor grows it
    grow(disk, root_gb=2, host="h1")
    assert info(disk)["virtual-size"] == 2 * GiB
    # flattening (an overlay of the image's own size, flavor disk 0) gives the image's bytes back
    small = tmp_path / "small"
    create_overlay(base, fmt, small, root_gb=0, host="h1")
    flat = tmp_path / "flat"
    flatten(small, flat, "raw", host="h1")
    assert flat.read_bytes()[:len(MARKER)] == MARKER and info(flat)["virtual-size"] == 1024 * 1024


def test_a_flavor_disk_smaller_than_the_image_is_refused(tmp_path: Path) -> None:
    base = tmp_path / "big.qcow2"
    subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", str(base), "3G"], check=True)
    with pytest.raises(FlavorDiskSmallerThanImage):
        create_overlay(base, "qcow2", tmp_path / "disk", root_gb=1, host="h1")
    create_overlay(base, "qcow2", tmp_path / "disk0", root_gb=0, host="h1")  # 0: the image's own size
    assert info(tmp_path / "disk0")["virtual-size"] == 3 * GiB


def test_the_driver_boots_an_overlay_declared_qcow2_and_snapshots_it_flat(tmp_path: Path) -> None:
    # given a host on a (test) daemon and a qcow2 image in the store
    node = write_test_node(tmp_path / "h1", hostname="h1", vcpus=2, memory_mb=2048, disk_gb=20)
    d = DaemonDriver(host="h1", uri=f"test://{node}", state_path=tmp_path / "h1", virt_type="test")
    image = {"id": str(uuid.uuid4()), "path": str(qcow2_image(tmp_path)), "disk_format": "qcow2"}
    inst = SimpleNamespace(uuid=str(uuid.uuid4()), memory_mb=128, vcpus=1, root_gb=1, config_drive="")
    # when a server is spawned from it
    d.spawn(instance=inst, image_meta=image, network_info=[])
    # then its disk is a qcow2 overlay on the host's cached image, and the domain says qcow2
    disk = d.instance_dir(inst) / "disk"
    assert info(disk)["backing-filename"] == str(tmp_path / "h1" / "_base" / image["id"])
    (xml_disk,) = ET.fromstring(d._domain(inst).XMLDesc(0)).findall("./devices/disk[@device='disk']")
    assert xml_disk.find("driver").get("type") == "qcow2"  # type: ignore[union-attr]
    assert xml_disk.find("source").get("file") == str(disk)  # type: ignore[union-attr]
    # and a snapshot is one standalone file in the image's format
    snap = tmp_path / "snap"
    d.snapshot(instance=inst, target_path=snap)
    assert info(snap)["format"] == "qcow2" and "backing-filename" not in info(snap)
    # and a resize to a bigger flavor grows the same disk
    inst.root_gb = 2
    d.spawn(instance=inst, image_meta=image, network_info=[])
    assert info(disk)["virtual-size"] == 2 * GiB


def test_the_cleaner_removes_only_cached_images_no_disk_is_based_on_once_old_enough(tmp_path: Path) -> None:
    import os

    # given two images cached by two servers, the second server since deleted
    node = write_test_node(tmp_path / "h1", hostname="h1", vcpus=2, memory_mb=2048, disk_gb=20)
    d = DaemonDriver(host="h1", uri=f"test://{node}", state_path=tmp_path / "h1", virt_type="test")
    images = [{"id": f"img-{n}", "path": str(raw_image(tmp_path / f"src-{n}")), "disk_format": "raw"}
              for n in (1, 2)]
    kept, gone = (SimpleNamespace(uuid=str(uuid.uuid4()), memory_mb=64, vcpus=1, root_gb=0, config_drive="")
                  for _ in range(2))
    d.spawn(instance=kept, image_meta=images[0], network_info=[])
    d.spawn(instance=gone, image_meta=images[1], network_info=[])
    d.destroy(instance=gone, destroy_disks=True)
    cache = tmp_path / "h1" / "_base"
    # when the cleaner runs before the unused image is old enough, nothing goes
    assert d.clean_image_cache(min_age_seconds=3600) == []
    # and once both are older than the minimum age, only the unused one goes
    for cached in cache.iterdir():
        os.utime(cached, (1, 1))
    assert d.clean_image_cache(min_age_seconds=3600) == [cache / "img-2"]
    assert sorted(p.name for p in cache.iterdir()) == ["img-1"]
