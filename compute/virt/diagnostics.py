"""A libvirt guest's diagnostics, in the two shapes of Nova's ``GET /servers/{id}/diagnostics``.

``standardized`` (2.48+): the same keys whatever the driver (state, driver, hypervisor,
hypervisor_os, uptime, config_drive, counts, ``memory_details`` in MiB, per vCPU / disk / NIC
counters); ``legacy`` (below 2.48): libvirt's own flat keys (``cpu0_time``, ``vda_read``,
``vnet0_rx``, ``memory``, ``memory-<stat>``). Counters a hypervisor does not report (libvirt's test
driver has no disks or interfaces, no memory statistics) are left out or zero, as Nova's libvirt
driver does.
"""
from __future__ import annotations

from datetime import datetime
from typing import Any
from xml.etree import ElementTree

import libvirt
from django.utils import timezone

from servers.choices import PowerState

#: libvirt's domain states -> Nova's power states
LIBVIRT_POWER = {0: PowerState.NOSTATE, 1: PowerState.RUNNING, 2: PowerState.RUNNING, 3: PowerState.PAUSED,
                 4: PowerState.SHUTDOWN, 5: PowerState.SHUTDOWN, 6: PowerState.CRASHED, 7: PowerState.SUSPENDED}
#: the counters of ``virDomainBlockStats`` and ``virDomainInterfaceStats``, in libvirt's order
_BLOCK = ("read_requests", "read_bytes", "write_requests", "write_bytes", "errors_count")
_NIC = ("rx_octets", "rx_packets", "rx_errors", "rx_drop", "tx_octets", "tx_packets", "tx_errors", "tx_drop")
_LEGACY_BLOCK = ("_read_req", "_read", "_write_req", "_write", "_errors")
_LEGACY_NIC = ("_rx", "_rx_packets", "_rx_errors", "_rx_drop", "_tx", "_tx_packets", "_tx_errors", "_tx_drop")


def _xml(dom: Any) -> ElementTree.Element:
    # the hypervisor's own description of a domain this host defined: not untrusted input
    return ElementTree.fromstring(dom.XMLDesc(0))  # noqa: S314


def _vcpu_times(dom: Any) -> list[tuple[int, int]]:
    """(vCPU number, time in ns); none where the hypervisor cannot tell (e.g. a guest that is off)."""
    try:
        return [(int(info[0]), int(info[2])) for info in dom.vcpus()[0]]
    except libvirt.libvirtError:
        return []


def _disks(dom: Any, xml: ElementTree.Element) -> list[tuple[str, tuple[int, ...]]]:
    found = []
    for target in xml.findall("./devices/disk/target"):
        dev = target.get("dev")
        if not dev:
            continue
        try:
            found.append((dev, tuple(int(v) for v in dom.blockStats(dev))))
        except libvirt.libvirtError:
            continue
    return found


def _nics(dom: Any, xml: ElementTree.Element) -> list[tuple[str, str | None, tuple[int, ...]]]:
    """(MAC address, device, counters): an interface with no target device has no counters."""
    found = []
    for interface in xml.findall("./devices/interface"):
        mac = interface.find("mac")
        target = interface.find("target")
        dev = target.get("dev") if target is not None else None
        stats: tuple[int, ...] = ()
        if dev:
            try:
                stats = tuple(int(v) for v in dom.interfaceStats(dev))
            except libvirt.libvirtError:
                stats = ()
        found.append((mac.get("address", "") if mac is not None else "", dev, stats))
    return found


def standardized(dom: Any, *, hypervisor: str, launched_at: datetime | None,
                 config_drive: bool = False) -> dict[str, Any]:
    """Nova's 2.48 diagnostics of ``dom`` (``hypervisor``: libvirt's virt type, e.g. kvm, qemu, test)."""
    state, max_mem_kb, mem_kb, _nr, _cpu = dom.info()
    xml = _xml(dom)
    cpus = [{"id": number, "time": time, "utilisation": None} for number, time in _vcpu_times(dom)]
    disks = [dict(zip(_BLOCK, stats, strict=False)) for _dev, stats in _disks(dom, xml)]
    nics = []
    for mac, _dev, stats in _nics(dom, xml):
        counters = dict(zip(_NIC, stats, strict=False)) if stats else dict.fromkeys(_NIC, 0)
        nics.append({"mac_address": mac, **counters, "rx_rate": None, "tx_rate": None})
    uptime = int((timezone.now() - launched_at).total_seconds()) if launched_at else 0
    return {
        "state": PowerState.NAMES.get(LIBVIRT_POWER.get(state, PowerState.NOSTATE), "pending"),
        "driver": "libvirt", "hypervisor": hypervisor, "hypervisor_os": "linux", "uptime": uptime,
        "config_drive": config_drive, "num_cpus": len(cpus), "num_disks": len(disks), "num_nics": len(nics),
        "memory_details": {"maximum": max_mem_kb // 1024, "used": mem_kb // 1024},
        "cpu_details": cpus, "disk_details": disks, "nic_details": nics,
    }


def legacy(dom: Any) -> dict[str, Any]:
    """libvirt's diagnostics before 2.48: flat ``<device>_<counter>`` keys."""
    xml = _xml(dom)
    out: dict[str, Any] = {f"cpu{number}_time": time for number, time in _vcpu_times(dom)}
    for dev, stats in _disks(dom, xml):
        out.update({dev + suffix: value for suffix, value in zip(_LEGACY_BLOCK, stats, strict=False)})
    for _mac, dev, stats in _nics(dom, xml):
        if dev and stats:
            out.update({dev + suffix: value for suffix, value in zip(_LEGACY_NIC, stats, strict=False)})
    out["memory"] = int(dom.maxMemory())
    try:
        out.update({f"memory-{key}": value for key, value in dom.memoryStats().items()})
    except libvirt.libvirtError:
        pass
    return out
