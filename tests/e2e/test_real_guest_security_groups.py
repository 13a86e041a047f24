"""Security groups enforced on real guests (issue 20 item 2): two guests under ``qemu:///system``
(TCG, direct kernel boot of the busybox initramfs) on one isolated libvirt network, their ports in
one group whose rules are Neutron's default egress plus ICMP in from the group's members. The second
guest's user data asks it to ping the first's fixed IP every second; its console says ``ok``; the
ICMP rule is removed (the driver redefines the ports' nwfilters, which libvirt applies to the running
guests) and the pings then fail. When both guests are gone, their filters and the network are too.

The security group rules are given to the driver as the compute host receives them
(``network_info``'s ``firewall``: a remote group expanded to its members' fixed IPs); how the API's
rule changes reach the host is covered by tests/functional/compute/test_security_group_filters.py.
Skipped where QEMU, a kernel, busybox or libvirtd are missing (as the other real-guest tests).
"""
from __future__ import annotations

import base64
import re
import shutil
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from .test_real_guest import build_initramfs, kernel_path, system_libvirt, wait_console

pytestmark = pytest.mark.slow


def _vif(port_id: str, mac: str, ip: str, net_id: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {"id": port_id, "address": mac,
            "network": {"id": net_id, "label": "sg-e2e", "mtu": 1500, "subnets": [
                {"cidr": "10.77.0.0/24", "gateway": None,
                 "ips": [{"address": ip, "type": "fixed", "version": 4}]}]},
            "firewall": {"security_groups": ["sg"], "rules": rules}}


def _rules(member_ips: list[str], *, icmp_from_group: bool) -> list[dict[str, Any]]:
    """The group's rules as the host gets them: egress anywhere, and ICMP in from the group."""
    rules: list[dict[str, Any]] = [{"direction": "egress", "ethertype": "IPv4", "protocol": None, "stateful": True}]
    if icmp_from_group:
        rules.append({"direction": "ingress", "ethertype": "IPv4", "protocol": "icmp", "remote_group_id": "sg",
                      "remote_ips": member_ips, "stateful": True})
    return rules


def _pings(log: str) -> list[tuple[int, str]]:
    return [(int(n), r) for n, r in re.findall(r"GUEST-PING (\d+) \S+ (ok|fail)", log)]


def _wait_pings(console: Path, wanted: str, *, after: int, count: int, timeout: float = 180) -> list[tuple[int, str]]:
    """Wait until ``count`` consecutive pings numbered above ``after`` answered ``wanted``."""
    deadline = time.monotonic() + timeout
    seen: list[tuple[int, str]] = []
    while time.monotonic() < deadline:
        seen = [p for p in _pings(console.read_text(errors="replace")) if p[0] > after] if console.exists() else []
        tail = [r for _n, r in seen[-count:]]
        if len(tail) == count and set(tail) == {wanted}:
            return seen
        time.sleep(1)
    pytest.fail(f"no {count} pings in a row {wanted!r} after #{after}: {seen[-20:]}")


def leave_no_trace(driver: Any, work: Path, net_id: str, ports: list[str]) -> None:
    """Whatever a failed real-guest test left on the shared daemon: its network, its ports'
    filters, and its work directory."""
    from compute.virt.nwfilter import filter_name

    if driver is not None:
        with suppress(Exception):
            network = driver.conn.networkLookupByName(f"cloudcore-{net_id}")
            network.destroy()
            network.undefine()
        for port in ports:
            driver.nwfilter_undefine(filter_name(port))
    shutil.rmtree(work, ignore_errors=True)


@pytest.fixture
def qemu_system() -> Iterator[object]:
    with system_libvirt() as libvirt:
        yield libvirt


def test_icmp_from_the_group_reaches_a_guest_until_the_rule_is_removed(qemu_system: object) -> None:
    import libvirt

    from compute.virt.libvirt import LibvirtDriver
    from compute.virt.nwfilter import filter_name

    work = Path(tempfile.mkdtemp(prefix="cloudcore-sg-", dir="/var/tmp"))
    work.chmod(0o755)
    net_id = str(uuid.uuid4())
    ports = [str(uuid.uuid4()), str(uuid.uuid4())]
    driver = None
    try:
        initrd = build_initramfs(work / "initrd.gz", with_drivers=True)
        driver = LibvirtDriver(host="sg-e2e", uri="qemu:///system", state_path=work / "state", virt_type="qemu")
        image = {"kernel_path": str(kernel_path()), "ramdisk_path": str(initrd)}
        ips = ["10.77.0.11", "10.77.0.12"]
        macs = ["fa:16:3e:5e:c0:01", "fa:16:3e:5e:c0:02"]
        guests = [SimpleNamespace(uuid=str(uuid.uuid4()), memory_mb=192, vcpus=1, display_name=f"sg-{i}",
                                  hostname=f"sg-{i}", config_drive="True", availability_zone="az1", project_id="p1",
                                  launch_index=0, metadata={}, key_name=None, key_data=None,
                                  user_data=base64.b64encode(f"CLOUDCORE-PING {ips[0]}\n".encode()).decode()
                                  if i == 1 else None)
                  for i in range(2)]

        def network_info(i: int, *, icmp_from_group: bool) -> list[dict[str, Any]]:
            return [_vif(ports[i], macs[i], ips[i], net_id, _rules(ips, icmp_from_group=icmp_from_group))]

        # given two guests on one network, in a group that lets ICMP in from its members
        for i, guest in enumerate(guests):
            driver.spawn(instance=guest, image_meta=image, network_info=network_info(i, icmp_from_group=True))
        try:
            first_xml = driver._domain(guests[0]).XMLDesc(0)
            assert f"filter='{filter_name(ports[0])}'" in first_xml or f'filter="{filter_name(ports[0])}"' in first_xml
            defined = driver.nwfilter_xml(filter_name(ports[0]))
            assert defined is not None and re.search(r"<icmp [^>]*srcipaddr='10.77.0.12'", defined), defined
            console = driver.instance_dir(guests[1]) / "console.log"
            wait_console(driver.instance_dir(guests[0]) / "console.log", f"GUEST-IP {ips[0]}")
            # then the second guest's pings of the first's fixed IP are answered
            seen = _wait_pings(console, "ok", after=0, count=3, timeout=240)
            # when the ICMP rule is removed (the host redefines the ports' filters)
            for i, guest in enumerate(guests):
                driver.refresh_port_filters(instance=guest, network_info=network_info(i, icmp_from_group=False))
            assert not re.search(r"<icmp ", str(driver.nwfilter_xml(filter_name(ports[0]))))
            # then they are not any more
            _wait_pings(console, "fail", after=seen[-1][0] + 2, count=5)
            # and back when the rule is back
            last = _pings(console.read_text(errors="replace"))[-1][0]
            for i, guest in enumerate(guests):
                driver.refresh_port_filters(instance=guest, network_info=network_info(i, icmp_from_group=True))
            _wait_pings(console, "ok", after=last + 2, count=3)
        finally:
            for guest in guests:
                driver.destroy(instance=guest, destroy_disks=True)
        # the last guest gone, its filters and the network went with it
        assert [driver.nwfilter_xml(filter_name(p)) for p in ports] == [None, None]
        with pytest.raises(libvirt.libvirtError):
            driver.conn.networkLookupByName(f"cloudcore-{net_id}")
    finally:
        leave_no_trace(driver, work, net_id, ports)
