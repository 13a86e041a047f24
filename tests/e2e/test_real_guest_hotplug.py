"""A port attached to a running real guest is hot-plugged, and a detached one unplugged (issue 20
item 1): one guest under ``qemu:///system`` (TCG, direct kernel boot of the busybox initramfs) gets
a second NIC while it runs; QEMU's live device list and the persistent definition both carry it,
with its port's MAC and security group filter; after the detach neither does.
Skipped where QEMU, a kernel, busybox or libvirtd are missing (as the other real-guest tests).
"""
from __future__ import annotations

import tempfile
import time
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from .test_real_guest import build_initramfs, kernel_path, wait_console
from .test_real_guest_security_groups import _rules, _vif, leave_no_trace, qemu_system  # noqa: F401 - the fixture

pytestmark = pytest.mark.slow


def _macs(dom: Any, flags: int) -> set[str]:
    from xml.etree import ElementTree

    root = ElementTree.fromstring(dom.XMLDesc(flags))  # noqa: S314 - libvirt's own XML
    return {str(m.get("address")) for m in root.findall("./devices/interface/mac")}


def test_a_port_is_hot_plugged_into_a_running_guest_and_unplugged(qemu_system: object) -> None:  # noqa: F811
    import libvirt

    from compute.virt.libvirt import LibvirtDriver
    from compute.virt.nwfilter import filter_name

    work = Path(tempfile.mkdtemp(prefix="cloudcore-hotplug-", dir="/var/tmp"))
    work.chmod(0o755)
    net_id = str(uuid.uuid4())
    ports = [str(uuid.uuid4()), str(uuid.uuid4())]
    macs = ["fa:16:3e:5e:d0:01", "fa:16:3e:5e:d0:02"]
    ips = ["10.78.0.11", "10.78.0.12"]
    vifs = [_vif(ports[i], macs[i], ips[i], net_id, _rules(ips, icmp_from_group=True)) for i in range(2)]
    driver = None
    try:
        initrd = build_initramfs(work / "initrd.gz", with_drivers=True)
        driver = LibvirtDriver(host="hotplug-e2e", uri="qemu:///system", state_path=work / "state",
                               virt_type="qemu")
        guest = SimpleNamespace(uuid=str(uuid.uuid4()), memory_mb=192, vcpus=1, display_name="hotplug",
                                hostname="hotplug", config_drive="True", availability_zone="az1", project_id="p1",
                                launch_index=0, metadata={}, key_name=None, key_data=None, user_data=None)
        # given a running guest with one port
        driver.spawn(instance=guest, image_meta={"kernel_path": str(kernel_path()), "ramdisk_path": str(initrd)},
                     network_info=[vifs[0]])
        try:
            wait_console(driver.instance_dir(guest) / "console.log", f"GUEST-IP {ips[0]}")
            dom = driver._domain(guest)
            # when a second port is attached
            driver.attach_interface(instance=guest, vif=vifs[1])
            # then QEMU runs the new NIC now and the definition keeps it, filtered by its port's groups
            assert _macs(dom, 0) == set(macs)
            assert _macs(dom, libvirt.VIR_DOMAIN_XML_INACTIVE) == set(macs)
            assert driver.nwfilter_xml(filter_name(ports[1])) is not None
            # when it is detached
            driver.detach_interface(instance=guest, vif=vifs[1])
            # then the definition drops it at once and the guest lets the device go
            assert _macs(dom, libvirt.VIR_DOMAIN_XML_INACTIVE) == {macs[0]}
            deadline = time.monotonic() + 90
            while _macs(dom, 0) != {macs[0]} and time.monotonic() < deadline:
                time.sleep(1)
            assert _macs(dom, 0) == {macs[0]}
        finally:
            driver.destroy(instance=guest, destroy_disks=True)
    finally:
        leave_no_trace(driver, work, net_id, ports)
