"""A multiattach volume on real QEMU: two guests under ``qemu:///system`` (TCG, direct kernel boot
of the busybox initramfs) run at once with the same volume file as a ``<shareable/>`` disk, and
both read it. Without ``<shareable/>`` QEMU's image locking refuses the second guest its write
lock. Skipped where QEMU, a kernel, busybox or libvirtd are missing (as the other real-guest tests).
"""
from __future__ import annotations

import shutil
import tempfile
import uuid
from pathlib import Path
from types import SimpleNamespace

import pytest

from .test_real_guest import build_initramfs, kernel_path, wait_console
from .test_real_guest_security_groups import qemu_system  # noqa: F401 - the fixture

pytestmark = pytest.mark.slow


def test_two_running_guests_share_a_multiattach_volume(qemu_system: object) -> None:  # noqa: F811
    import libvirt

    from compute.virt.libvirt import LibvirtDriver

    work = Path(tempfile.mkdtemp(prefix="cloudcore-multiattach-", dir="/var/tmp"))
    work.chmod(0o755)
    guests: list[SimpleNamespace] = []
    driver = None
    try:
        initrd = build_initramfs(work / "initrd.gz", with_drivers=True)
        volume = work / "volume-shared"
        volume.write_bytes(b"SHARED-VOLUME-MARKER\n" + bytes(1024 * 1024))
        volume.chmod(0o666)
        connection = {"driver_volume_type": "file", "serial": "shared", "multiattach": True,
                      "data": {"device_path": str(volume), "volume_id": "shared", "access_mode": "rw"}}
        driver = LibvirtDriver(host="ma-e2e", uri="qemu:///system", state_path=work / "state", virt_type="qemu")
        image = {"kernel_path": str(kernel_path()), "ramdisk_path": str(initrd)}
        # when two guests are spawned, each with the volume as its vdb
        for _ in range(2):
            guest = SimpleNamespace(uuid=str(uuid.uuid4()), memory_mb=192, vcpus=1)
            driver.spawn(instance=guest, image_meta=image, network_info=[], block_device_info={
                "block_device_mapping": [{"connection_info": connection, "mount_device": "/dev/vdb"}]})
            guests.append(guest)
        # then both run at once and read the volume's first line
        for guest in guests:
            log = wait_console(driver.instance_dir(guest) / "console.log", "GUEST-DONE")
            assert "GUEST-VOLUME serial=shared head=SHARED-VOLUME-MARKER" in log, log[-3000:]
            live = driver._domain(guest).XMLDesc(0)
            assert "<shareable/>" in live and str(volume) in live
            assert driver._domain(guest).state()[0] == libvirt.VIR_DOMAIN_RUNNING
    finally:
        for guest in guests:
            if driver is not None:
                driver.destroy(instance=guest, destroy_disks=True)
        shutil.rmtree(work, ignore_errors=True)
