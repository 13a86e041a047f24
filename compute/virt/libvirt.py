"""The libvirt driver, on libvirt-python.

``test:///<state_path>/node.xml`` (the embedded default and the tests: each simulated host has its
own node definition, so its CPUs and RAM differ; disk size and the hypervisor hostname live next
to it in ``hypervisor.json``) or ``qemu:///system`` for real guests (direct kernel boot when the
image, or the instance's ``kernel_id``/``ramdisk_id`` as in Nova, names a kernel and ramdisk).
Domains are named ``instance-<uuid>``; guest disks, the kernel and ramdisk copies and the serial
console log are files under ``<state_path>/instances/<uuid>/``.

Several compute hosts may share one real daemon (the demo with ``CLOUDCORE_DEMO_LIBVIRT_URI``):
then each host's ``hypervisor.json`` names its node (``hostname``), and a host only counts and
lists the domains whose ``<description>`` says ``host=<its name>``.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from xml.etree import ElementTree
from xml.sax.saxutils import escape

import libvirt
from django.conf import settings

from images.formats import convert
from images.services import SNAPSHOT_DISK_FORMAT, image_data_path
from servers.choices import PowerState

from . import diagnostics, testconsoles
from .configdrive import FILE_NAME as CONFIG_DRIVE_FILE
from .configdrive import config_drive_files, config_drive_required, write_config_drive
from .diagnostics import LIBVIRT_POWER as _POWER
from .driver import (
    ConsoleNotAvailable,
    ConsoleTypeUnavailable,
    InstanceNotFoundOnHypervisor,
    VirtDriverError,
    tap_name,
)
from .imagecache import (
    GiB,
    cached_image,
    clean_cache,
    copy_sparse,
    create_blank,
    create_overlay,
    fetch_into_cache,
    flatten,
    formatted_base,
    grow,
    image_format,
    rebase,
)
from .nwfilter import filter_name, filterref_xml, has_filter, port_filter_xml

libvirt.registerErrorHandler(lambda *_args: None, None)  # errors come back as exceptions, not stderr
MiB = 1024**2
#: files of an instance directory a move leaves behind: the rescue's, and the serial log (the
#: destination's guest writes its own)
NOT_MOVED = frozenset({"disk.rescue", "unrescue.xml", "console.log"})

#: The lock every compute process of this machine holds from picking a real guest's serial console
#: port to defining the guest: the compute hosts of a machine (several of one cloud, or of several
#: clouds) share its libvirtd, and a port is only seen as taken once a defined domain names it or its
#: guest listens on it; without the lock two computes could both pick the same free port.
SERIAL_PORTS_LOCK = Path(tempfile.gettempdir()) / "cloudcore-serial-console-ports.lock"


@contextlib.contextmanager
def serial_ports_claimed() -> Iterator[None]:
    """Hold ``SERIAL_PORTS_LOCK`` (an exclusive ``flock``, released when the block ends or the
    process dies)."""
    fd = os.open(SERIAL_PORTS_LOCK, os.O_RDONLY | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def write_hypervisor_sidecar(state_path: Path, *, hostname: str, disk_gb: int | None = None) -> Path:
    """Name this host's node (and optionally its disk size): for simulated hosts, and for hosts
    that share one real libvirt daemon (each needs its own hypervisor_hostname)."""
    state_path.mkdir(parents=True, exist_ok=True)
    sidecar = state_path / "hypervisor.json"
    data: dict[str, Any] = {"hostname": hostname}
    if disk_gb is not None:
        data["disk_gb"] = disk_gb
    sidecar.write_text(json.dumps(data) + "\n")
    return sidecar


def write_test_node(state_path: Path, *, hostname: str, vcpus: int, memory_mb: int, disk_gb: int) -> Path:
    """Write (or rewrite) a simulated host's node definition for libvirt's test driver."""
    state_path.mkdir(parents=True, exist_ok=True)
    node = state_path / "node.xml"
    node.write_text(
        "<node><cpu><mhz>2400</mhz><model>cloudcore-test</model><nodes>1</nodes><sockets>1</sockets>"
        f"<cores>{vcpus}</cores><threads>1</threads><active>{vcpus}</active></cpu>"
        f"<memory>{memory_mb * 1024}</memory></node>\n"
    )
    write_hypervisor_sidecar(state_path, hostname=hostname, disk_gb=disk_gb)
    return node


class LibvirtDriver:
    #: ``supports_multiattach``: a volume may be shared with other guests (``<shareable/>``, libvirt
    #: >= 3.10); reported as trait COMPUTE_VOLUME_MULTI_ATTACH.
    capabilities = {"supports_rebuild_bfv": True, "supports_attach_volume": True, "supports_multiattach": True}

    def __init__(self, *, host: str, uri: str, state_path: Path, virt_type: str | None = None) -> None:
        self.host = host
        #: "kvm", "qemu" (TCG) or "auto" (kvm when /dev/kvm exists): settings.LIBVIRT_VIRT_TYPE
        self.virt_type = virt_type or getattr(settings, "LIBVIRT_VIRT_TYPE", "auto")
        self.uri = uri
        self.state_path = Path(state_path)
        self._lock = threading.RLock()
        #: test mode: the guests' console servers (compute/virt/testconsoles.py), by (uuid, type)
        self._test_consoles: dict[tuple[str, str], testconsoles.TCPConsole] = {}
        try:
            self.conn = libvirt.open(uri)
        except libvirt.libvirtError as exc:
            raise VirtDriverError(host=host, reason=f"cannot connect to {uri}: {exc}") from exc

    @property
    def is_test(self) -> bool:
        return self.uri.startswith("test://")

    def _sidecar(self) -> dict[str, Any]:
        path = self.state_path / "hypervisor.json"
        return json.loads(path.read_text()) if path.exists() else {}

    # -- identity and resources ----------------------------------------------------------------
    def hypervisor_hostname(self) -> str:
        named = self._sidecar().get("hostname")
        if named:
            return str(named)
        return self.host if self.is_test else str(self.conn.getHostname())

    def _owned_domains(self) -> list[Any]:
        """This host's domains: all of a (private) test connection's; on a real daemon (which
        several hosts may share) the ones whose files live under this host's state path, or whose
        description names this host. The state path is the machine: a domain left by this
        machine under another host name still counts (seed 2: a renamed host sees its guests)."""
        domains = [d for d in self.conn.listAllDomains() if d.name().startswith("instance-")]
        if self.is_test:
            return domains
        owned = []
        for dom in domains:
            try:
                description = dom.metadata(libvirt.VIR_DOMAIN_METADATA_DESCRIPTION, None)
            except libvirt.libvirtError:
                description = ""
            on_this_machine = (self.state_path / "instances" / dom.UUIDString()).is_dir()
            if on_this_machine or description == f"host={self.host}":
                owned.append(dom)
        return owned

    def get_host_uptime(self) -> str:
        """The host's ``uptime`` line (what ``os-hypervisors/{id}/uptime`` shows): the machine this
        worker drives runs the hypervisor (the test driver simulates one on this machine)."""
        return host_uptime()

    def get_available_resource(self) -> dict[str, Any]:
        model, memory_mb, cpus, _mhz, *_ = self.conn.getInfo()
        if self.is_test or "disk_gb" in self._sidecar():
            disk_gb = int(self._sidecar().get("disk_gb", 40))
        else:
            self.state_path.mkdir(parents=True, exist_ok=True)
            usage = shutil.disk_usage(self.state_path)
            disk_gb = int(usage.total / 1024**3)
        used_vcpus, used_mem = 0, 0
        for dom in self.conn.listAllDomains() if self.is_test else self._owned_domains():
            if dom.isActive():
                _state, _max, mem_kib, vcpu, _t = dom.info()
                used_vcpus += vcpu
                used_mem += mem_kib // 1024
        return {
            "vcpus": int(cpus), "memory_mb": int(memory_mb), "local_gb": disk_gb, "vcpus_used": used_vcpus,
            "memory_mb_used": used_mem, "local_gb_used": 0, "hypervisor_type": "QEMU" if not self.is_test else "test",
            "hypervisor_version": int(self.conn.getVersion()), "hypervisor_hostname": self.hypervisor_hostname(),
            "cpu_info": json.dumps({"arch": "x86_64", "model": model, "topology": {"cores": cpus, "sockets": 1,
                                                                                 "threads": 1}}),
        }

    def list_instance_uuids(self) -> list[str]:
        return sorted(d.name()[len("instance-"):] for d in self._owned_domains())

    # -- guests ---------------------------------------------------------------------------------
    @staticmethod
    def domain_name(instance: Any) -> str:
        return f"instance-{instance.uuid}"

    def _domain(self, instance: Any) -> Any:
        try:
            return self.conn.lookupByName(self.domain_name(instance))
        except libvirt.libvirtError:
            raise InstanceNotFoundOnHypervisor(instance_uuid=instance.uuid, host=self.host) from None

    def _virt_type(self) -> str:
        """The domain type of real guests: ``kvm`` where /dev/kvm exists, else ``qemu`` (``auto``)."""
        if self.virt_type == "auto":
            return "kvm" if Path("/dev/kvm").exists() else "qemu"
        return str(self.virt_type)

    def instance_dir(self, instance: Any) -> Path:
        return self.state_path / "instances" / str(instance.uuid)

    def _domain_xml(self, instance: Any, disk: Path | None, image_meta: dict[str, Any] | None,
                    network_info: list[dict[str, Any]], block_device_info: dict[str, Any] | None = None,
                    local_disks: list[tuple[Path, str]] | None = None) -> str:
        name = escape(self.domain_name(instance))
        memory = max(int(instance.memory_mb or 64), 16)
        vcpus = max(int(instance.vcpus or 1), 1)
        taken = ({"vda"} if disk is not None else set()) | {dev for _path, dev in local_disks or []}
        devices = ("".join(self._disk_xml(instance, path, dev) for path, dev in local_disks or [])
                   + volumes_xml(block_device_info, taken=taken)
                   + self._config_drive_xml(instance) + "".join(_interface_xml(vif) for vif in network_info))
        if self.is_test:
            return (f"<domain type='test'><name>{name}</name><uuid>{instance.uuid}</uuid>"
                    f"<memory unit='MiB'>{memory}</memory><vcpu>{vcpus}</vcpu><os><type>hvm</type></os>"
                    f"<description>host={escape(self.host)}</description><devices>{devices}</devices></domain>")
        kernel, ramdisk = self._boot_files(instance)
        boot = "<boot dev='hd'/>"
        if kernel:
            boot = f"<kernel>{escape(kernel)}</kernel>"
            if ramdisk:
                boot += f"<initrd>{escape(ramdisk)}</initrd>"
            # no_timer_check: under TCG on a loaded host the kernel's IO-APIC timer check can fail and panic
            boot += "<cmdline>console=ttyS0 no_timer_check</cmdline>"
        virt_type = self._virt_type()
        log = self.instance_dir(instance) / "console.log"
        disks = self._disk_xml(instance, disk, "vda") if disk is not None else ""
        return (f"<domain type='{virt_type}'><name>{name}</name><uuid>{instance.uuid}</uuid>"
                f"<memory unit='MiB'>{memory}</memory><vcpu>{vcpus}</vcpu>"
                f"<description>host={escape(self.host)}</description>"
                f"<os><type arch='x86_64'>hvm</type>{boot}</os><features><acpi/></features>"
                f"<devices>{disks}{devices}{self._serial_xml(log)}{self._graphics_xml()}"
                f"{_guest_agent_xml(instance, image_meta)}</devices></domain>")

    def _serial_xml(self, log: Path) -> str:
        """The guest's serial port: with the serial console on (settings.SERIAL_CONSOLE_ENABLED) a
        TCP server on a free port of ``SERIAL_CONSOLE_PORT_RANGE`` for the serial proxy, its output
        also logged to ``console.log`` (virtlogd); otherwise the log file only."""
        if not settings.SERIAL_CONSOLE_ENABLED:
            return (f"<serial type='file'><source path='{escape(str(log))}'/><target port='0'/></serial>"
                    "<console type='file'><target type='serial' port='0'/></console>")
        port = self._free_serial_port()
        return (f"<serial type='tcp'><source mode='bind' host='{escape(settings.SERIAL_CONSOLE_LISTEN)}' "
                f"service='{port}'/><protocol type='raw'/><log file='{escape(str(log))}' append='on'/>"
                "<target port='0'/></serial>")

    def _free_serial_port(self) -> int:
        """A port of the range that no domain of this daemon names and nothing listens on."""
        taken = set()
        for dom in self.conn.listAllDomains():
            with contextlib.suppress(libvirt.libvirtError):
                taken.add(_xml_int(dom.XMLDesc(0), "./devices/serial[@type='tcp']/source", "service"))
        low, high = settings.SERIAL_CONSOLE_PORT_RANGE
        for port in range(low, high + 1):
            if port in taken:
                continue
            with socket.socket() as probe:
                try:
                    probe.bind((settings.SERIAL_CONSOLE_LISTEN, port))
                except OSError:
                    continue
            return port
        raise VirtDriverError(host=self.host, reason=f"no free serial console port in {low}:{high}")

    @staticmethod
    def _graphics_xml() -> str:
        """A VNC server for the guest (Nova's vnc.enabled), on a port libvirt picks."""
        if not settings.VNC_ENABLED:
            return ""
        return f"<graphics type='vnc' autoport='yes' listen='{escape(settings.VNC_SERVER_LISTEN)}'/>"

    def _disk_xml(self, instance: Any, disk: Path, dev: str) -> str:
        fmt = self._disk_formats(instance).get(disk.name, "raw")
        return (f"<disk type='file' device='disk'><driver name='qemu' type='{fmt}'/>"
                f"<source file='{escape(str(disk))}'/><target dev='{dev}' bus='virtio'/></disk>")

    # -- disks: the image cache and qcow2 overlays (real hypervisors; imagecache) ----------------
    def _disk_formats(self, instance: Any) -> dict[str, str]:
        """``disk.info``: each disk file's format and the format of the image it came from (a
        snapshot is written in that one), as Nova keeps it; a disk not named there is raw."""
        info = self.instance_dir(instance) / "disk.info"
        return json.loads(info.read_text()) if info.exists() else {}

    def _create_disk(self, instance: Any, image_meta: dict[str, Any], name: str) -> Path:
        """The instance disk ``name`` from the image: on a real hypervisor a qcow2 overlay on the
        host's cached copy of the image, sized to the flavor's root disk; on the test driver, which
        never reads a disk, a plain copy of the image's bytes (empty when the store has none). An
        existing disk is kept (a qcow2 one grown to the flavor: a resize)."""
        workdir = self.instance_dir(instance)
        disk = workdir / name
        formats = self._disk_formats(instance)
        root_gb = int(getattr(instance, "root_gb", 0) or 0)
        if disk.exists():
            if formats.get(name) == "qcow2":
                grow(disk, root_gb=root_gb, host=self.host)
            else:
                formats.setdefault(name, "raw")  # a plain copy (the test driver's, or an older host's): kept
        elif self.is_test:
            source = Path(image_meta["path"])
            if source.exists() and image_format(image_meta) == "qcow2":
                convert(source, disk, source_format="qcow2", target_format="raw")  # what a snapshot reads
            elif source.exists():
                shutil.copyfile(source, disk)
            else:
                disk.write_bytes(b"")
            formats.update({name: "raw", f"{name}.image_format": image_format(image_meta)})
        else:
            base = cached_image(self.state_path / "_base", image_meta, host=self.host)
            disk.unlink(missing_ok=True)
            create_overlay(base, image_format(image_meta), disk, root_gb=root_gb, host=self.host)
            formats.update({name: "qcow2", f"{name}.image_format": image_format(image_meta),
                            f"{name}.base": str(base)})
        (workdir / "disk.info").write_text(json.dumps(formats) + "\n")
        return disk

    def _create_local_disks(self, instance: Any, block_device_info: dict[str, Any] | None) -> list[tuple[Path, str]]:
        """The flavor's ephemeral (``disk.local``) and swap (``disk.swap``) disks that
        ``block_device_info`` names, with their devices: on a real hypervisor qcow2 disks, blank, or
        for an ephemeral disk with a file system (``guest_format``) an overlay on a formatted base
        in the image cache; on the test driver sparse raw files of the size. An existing disk is
        kept with its data (a reboot, a move)."""
        info = block_device_info or {}
        wanted = [("disk.local" if i == 0 else f"disk.eph{i}", str(e["device_name"]), int(e["size"]) * GiB,
                   e.get("guest_format")) for i, e in enumerate(info.get("ephemerals") or [])]
        if info.get("swap"):
            wanted.append(("disk.swap", str(info["swap"]["device_name"]), int(info["swap"]["swap_size"]) * MiB, None))
        if not wanted:
            return []
        workdir = self.instance_dir(instance)
        formats = self._disk_formats(instance)
        disks = []
        for name, device, size, fs_format in wanted:
            disk = workdir / name
            if disk.exists():
                pass
            elif self.is_test:
                with disk.open("wb") as blank:
                    blank.truncate(size)
                formats[name] = "raw"
            elif fs_format:
                base = formatted_base(self.state_path / "_base", size_gb=size // GiB, fs_format=str(fs_format),
                                      host=self.host)
                create_overlay(base, "raw", disk, root_gb=size // GiB, host=self.host)
                formats.update({name: "qcow2", f"{name}.image_format": "raw", f"{name}.base": str(base)})
            else:
                create_blank(disk, size_bytes=size, host=self.host)
                formats[name] = "qcow2"
            disks.append((disk, device.rsplit("/", 1)[-1]))
        (workdir / "disk.info").write_text(json.dumps(formats) + "\n")
        return disks

    # -- moves: the instance directory goes with the server -------------------------------------
    def resize_dir(self, instance: Any) -> Path:
        """Where the source of a move keeps the instance directory until confirm or revert."""
        return self.state_path / "instances" / f"{instance.uuid}_resize"

    def migrate_disk_and_power_off(self, *, instance: Any, **_kw: Any) -> str:
        """Source of a cold migration or resize (also to this same host): take the guest down and
        keep its instance directory as ``<uuid>_resize``, as Nova's libvirt driver does (a revert
        returns to it, a confirm removes it). Returns its path: the destination copies the disks
        from there (``finish_migration``)."""
        with self._lock:
            self.destroy(instance=instance, destroy_disks=False)
            workdir, kept = self.instance_dir(instance), self.resize_dir(instance)
            shutil.rmtree(kept, ignore_errors=True)
            if workdir.exists():
                workdir.rename(kept)
            else:
                kept.mkdir(parents=True)
            return str(kept)

    def finish_migration(self, *, instance: Any, disk_source: str, **_kw: Any) -> None:
        """Destination of a move: copy the disks (and ``disk.info``, the kernel and ramdisk) from
        the source's kept directory ``disk_source`` into this host's instance directory. Nova's
        source copies them over ssh/rsync; the hosts here share one machine, so the destination
        reads the path the source named in its RPC message, and each host writes only its own
        directories. A qcow2 disk is re-pointed at this host's image cache (its base copied from
        the source's cache when this one lacks it). The spawn that follows keeps these disks."""
        source = Path(disk_source)
        workdir = self.instance_dir(instance)
        with self._lock:
            shutil.rmtree(workdir, ignore_errors=True)
            workdir.mkdir(parents=True)
            for item in source.iterdir():
                if item.is_file() and item.name not in NOT_MOVED:
                    copy_sparse(item, workdir / item.name)
            formats = self._disk_formats(instance)
            for name, fmt in list(formats.items()):
                old_base = formats.get(f"{name}.base")
                if fmt != "qcow2" or not old_base or not (workdir / name).exists():
                    continue
                base = fetch_into_cache(Path(old_base), self.state_path / "_base" / Path(old_base).name)
                rebase(workdir / name, base, formats.get(f"{name}.image_format", "raw"), host=self.host)
                formats[f"{name}.base"] = str(base)
            if formats:
                (workdir / "disk.info").write_text(json.dumps(formats) + "\n")

    def guest_host(self, instance: Any) -> str | None:
        """The host whose guest of ``instance`` this connection has (its ``<description>``), or
        None: on a daemon the hosts share, the guest of that name may be another host's."""
        try:
            dom = self.conn.lookupByName(self.domain_name(instance))
        except libvirt.libvirtError:
            return None
        if self.is_test:
            return self.host
        try:
            description = str(dom.metadata(libvirt.VIR_DOMAIN_METADATA_DESCRIPTION, None))
        except libvirt.libvirtError:
            return None
        return description.removeprefix("host=") if description.startswith("host=") else None

    def cleanup_live_migration_source(self, *, instance: Any, **_kw: Any) -> None:
        """Source of a live migration whose guest the destination started: this host's copy goes
        with its disks. A test connection is this host's own; on a daemon the hosts share
        (qemu:///system), the domain of that name is the destination's already (its ``spawn``
        replaced this one), so only this host's instance directory goes."""
        with self._lock:
            owner = self.guest_host(instance)
            if owner is not None and owner != self.host:
                shutil.rmtree(self.instance_dir(instance), ignore_errors=True)
                return
            self.destroy(instance=instance, destroy_disks=True)

    def confirm_migration(self, *, instance: Any, **_kw: Any) -> None:
        """Source of a confirmed move: the kept directory goes (the guest was taken down already)."""
        shutil.rmtree(self.resize_dir(instance), ignore_errors=True)

    def finish_revert_migration(self, *, instance: Any, **_kw: Any) -> None:
        """Source of a reverted move: the kept directory is the instance's again (the spawn that
        follows finds the disks as they were before the move)."""
        with self._lock:
            kept = self.resize_dir(instance)
            if kept.exists():
                shutil.rmtree(self.instance_dir(instance), ignore_errors=True)
                kept.rename(self.instance_dir(instance))

    def cache_image(self, *, image_meta: dict[str, Any]) -> bool:
        """Fetch the image into this host's image cache ahead of the spawns that will want it (an
        aggregate's pre-caching; Nova's ``cache_image``): True when it was fetched now, False when
        it was there (its last use is then renewed, for the cleaner)."""
        fetched = not (self.state_path / "_base" / str(image_meta["id"])).exists()
        cached_image(self.state_path / "_base", image_meta, host=self.host)
        return fetched

    def clean_image_cache(self, *, min_age_seconds: float) -> list[Path]:
        """Remove the cached images that no instance disk on this host is based on any more (the
        ``<disk>.base`` entries of every instance's ``disk.info``) once unused long enough."""
        in_use = []
        for info in (self.state_path / "instances").glob("*/disk.info"):
            try:
                entries = json.loads(info.read_text())
            except (OSError, ValueError):
                continue
            in_use += [Path(v) for k, v in entries.items() if k.endswith(".base")]
        return clean_cache(self.state_path / "_base", in_use, min_age_seconds=min_age_seconds)

    def _config_drive_xml(self, instance: Any) -> str:
        """The config drive spawn wrote, as a read-only IDE cdrom (``hdd``, as Nova attaches it on
        the ``pc`` machine type), or nothing."""
        drive = self.instance_dir(instance) / CONFIG_DRIVE_FILE
        if not drive.exists():
            return ""
        return ("<disk type='file' device='cdrom'><driver name='qemu' type='raw'/>"
                f"<source file='{escape(str(drive))}'/><target dev='hdd' bus='ide'/><readonly/></disk>")

    def ensure_network(self, vif: dict[str, Any]) -> str:
        """The libvirt network that carries the cloudcore network of ``vif``, defined, started and
        autostarted if this daemon lacks it: isolated (no ``<forward>``, no address of the host on
        its bridge), so its guests reach each other and nothing else. Hosts sharing one daemon
        share it. Returns its name."""
        net = vif.get("network") or {}
        name = libvirt_network_name(str(net["id"]))
        with self._lock:
            try:
                network = self.conn.networkLookupByName(name)
            except libvirt.libvirtError:
                mtu = f"<mtu size='{int(net['mtu'])}'/>" if net.get("mtu") else ""
                xml = (f"<network><name>{name}</name><bridge name='{bridge_name(str(net['id']))}' stp='off'/>"
                       f"{mtu}</network>")
                try:
                    network = self.conn.networkDefineXML(xml)
                except libvirt.libvirtError:  # another host on this daemon defined it first
                    network = self.conn.networkLookupByName(name)
            try:
                if not network.isActive():
                    network.create()
                network.setAutostart(1)
            except libvirt.libvirtError as exc:
                if not network.isActive():
                    raise VirtDriverError(host=self.host, reason=f"network {name}: {exc}") from exc
        return name

    def _plug_vifs(self, network_info: list[dict[str, Any]]) -> None:
        """What the guest's NICs need before the domain starts: their libvirt networks and, for the
        ports with port security, their security group filters."""
        for vif in network_info:
            self.ensure_network(vif)
            if has_filter(vif):
                self.nwfilter_define(port_filter_xml(vif))

    def _release_nic_references(self, networks: set[str], filters: set[str]) -> None:
        """Undefine the filters and remove the networks (stop, undefine) of a domain that is gone,
        each only when no domain left on this daemon refers to it (hosts may share a daemon)."""
        used_networks: set[str] = set()
        used_filters: set[str] = set()
        for dom in self.conn.listAllDomains():
            with contextlib.suppress(libvirt.libvirtError):
                nets, refs = _nic_references(dom.XMLDesc(libvirt.VIR_DOMAIN_XML_INACTIVE))
                used_networks |= nets
                used_filters |= refs
        for name in sorted(filters - used_filters):
            self.nwfilter_undefine(name)
        for name in sorted(networks - used_networks):
            with contextlib.suppress(libvirt.libvirtError):
                network = self.conn.networkLookupByName(name)
                if network.isActive():
                    network.destroy()
                network.undefine()

    # -- security groups: one nwfilter per port (nwfilter.py) -----------------------------------
    # libvirt's test driver has no nwfilter support: there, this host keeps the filters it defines
    # as files under ``<state_path>/nwfilter/`` (their XML as a real daemon would be given it).
    def _nwfilter_dir(self) -> Path:
        return self.state_path / "nwfilter"

    def nwfilter_define(self, xml: str) -> None:
        """Define (or redefine) a filter; libvirt applies a redefined filter to the running guests
        that reference it."""
        if self.is_test:
            name = ElementTree.fromstring(xml).get("name")  # noqa: S314 - our own XML
            self._nwfilter_dir().mkdir(parents=True, exist_ok=True)
            (self._nwfilter_dir() / f"{name}.xml").write_text(xml)
            return
        try:
            self.conn.nwfilterDefineXML(xml)
        except libvirt.libvirtError as exc:
            raise VirtDriverError(host=self.host, reason=f"nwfilter: {exc}") from exc

    def nwfilter_undefine(self, name: str) -> None:
        """Undefine a filter (a missing one, or one a guest still uses, is left alone)."""
        if self.is_test:
            (self._nwfilter_dir() / f"{name}.xml").unlink(missing_ok=True)
            return
        with contextlib.suppress(libvirt.libvirtError):
            self.conn.nwfilterLookupByName(name).undefine()

    def nwfilter_xml(self, name: str) -> str | None:
        """The XML of a defined filter, or None."""
        if self.is_test:
            path = self._nwfilter_dir() / f"{name}.xml"
            return path.read_text() if path.exists() else None
        try:
            return str(self.conn.nwfilterLookupByName(name).XMLDesc(0))
        except libvirt.libvirtError:
            return None

    def nwfilter_names(self) -> list[str]:
        """The filters this host defined for ports (``cloudcore-port-*``)."""
        if self.is_test:
            return sorted(p.stem for p in self._nwfilter_dir().glob("*.xml"))
        return sorted(f.name() for f in self.conn.listAllNWFilters() if f.name().startswith("cloudcore-port-"))

    def refresh_port_filters(self, *, instance: Any, network_info: list[dict[str, Any]], **_kw: Any) -> None:
        """Redefine the filters of the guest's ports from their security groups now (rules or
        membership changed); a guest that is not on this host is left alone."""
        with self._lock:
            try:
                self.conn.lookupByName(self.domain_name(instance))
            except libvirt.libvirtError:
                return
            for vif in network_info:
                if has_filter(vif):
                    self.nwfilter_define(port_filter_xml(vif))

    def _write_config_drive(self, instance: Any, network_info: list[dict[str, Any]]) -> None:
        """(Re)build the config drive from what the API says about the server now, when it gets one."""
        drive = self.instance_dir(instance) / CONFIG_DRIVE_FILE
        if config_drive_required(instance):
            write_config_drive(config_drive_files(instance, network_info), drive)
        else:
            drive.unlink(missing_ok=True)

    def _boot_files(self, instance: Any) -> tuple[str | None, str | None]:
        """The kernel and ramdisk copies spawn left in the instance directory (direct kernel boot)."""
        workdir = self.instance_dir(instance)
        kernel, ramdisk = workdir / "kernel", workdir / "ramdisk"
        if not kernel.exists():
            return None, None
        return str(kernel), str(ramdisk) if ramdisk.exists() else None

    def _fetch_boot_files(self, instance: Any, image_meta: dict[str, Any] | None) -> None:
        """Copy the kernel and ramdisk into the instance directory, as Nova's libvirt driver does:
        from the image's ``kernel_id``/``ramdisk_id`` (build) or else the instance's own (which
        it keeps from its original image: an unshelve spawns from a snapshot that has none)."""
        workdir = self.instance_dir(instance)
        for kind in ("kernel", "ramdisk"):
            source = (image_meta or {}).get(f"{kind}_path")
            if not source and getattr(instance, f"{kind}_id", ""):
                source = str(image_data_path(str(getattr(instance, f"{kind}_id"))))
            target = workdir / kind
            if source and Path(source).is_file():
                shutil.copyfile(source, target)
                target.chmod(0o644)
            elif source:
                raise VirtDriverError(host=self.host, reason=f"the {kind} image file {source} is missing")

    def spawn(self, *, instance: Any, image_meta: dict[str, Any] | None, network_info: list[dict[str, Any]] | None,
              block_device_info: dict[str, Any] | None = None, admin_password: str | None = None, **_kw: Any) -> None:
        with self._lock:
            workdir = self.instance_dir(instance)
            workdir.mkdir(parents=True, exist_ok=True)
            disk = None
            if image_meta and image_meta.get("path"):
                disk = self._create_disk(instance, image_meta, "disk")
            if not self.is_test:
                self._fetch_boot_files(instance, image_meta)
            local_disks = self._create_local_disks(instance, block_device_info)
            self._write_config_drive(instance, network_info or [])
            self._plug_vifs(network_info or [])
            with self._serial_port_claim():
                xml = self._domain_xml(instance, disk, image_meta, network_info or [], block_device_info, local_disks)
                dom = self._redefine(instance, xml)
            try:
                try:
                    dom.create()
                except libvirt.libvirtError:
                    # another host on this daemon may have removed the network its last guest left
                    self._plug_vifs(network_info or [])
                    dom.create()
            except libvirt.libvirtError as exc:
                raise VirtDriverError(host=self.host, reason=str(exc)) from exc
            if self.is_test:
                self._write_boot_log(instance)

    def _serial_port_claim(self) -> contextlib.AbstractContextManager[None]:
        """``serial_ports_claimed()`` where the domain XML picks a TCP serial port (a real guest with
        the serial console on); nothing otherwise."""
        if self.is_test or not settings.SERIAL_CONSOLE_ENABLED:
            return contextlib.nullcontext()
        return serial_ports_claimed()

    def _redefine(self, instance: Any, xml: str) -> Any:
        """Define ``xml`` as the instance's domain, in place of the one of that name (stopped and
        undefined first) if there is one."""
        try:
            old = self.conn.lookupByName(self.domain_name(instance))
            if old.isActive():
                old.destroy()
            _undefine(old)
        except libvirt.libvirtError:
            pass
        try:
            return self.conn.defineXML(xml)
        except libvirt.libvirtError as exc:
            raise VirtDriverError(host=self.host, reason=str(exc)) from exc

    def destroy(self, *, instance: Any, destroy_disks: bool = True, block_device_info: Any = None, **_kw: Any) -> None:
        """Stop and undefine the guest; then its ports' filters and the libvirt networks it was on
        go too once no other domain of this daemon uses them."""
        with self._lock:
            self._stop_test_consoles(instance)
            try:
                dom = self.conn.lookupByName(self.domain_name(instance))
                networks, filters = _nic_references(dom.XMLDesc(libvirt.VIR_DOMAIN_XML_INACTIVE))
                if dom.isActive():
                    dom.destroy()
                _undefine(dom)
            except libvirt.libvirtError:
                networks, filters = set(), set()  # already gone
            self._release_nic_references(networks, filters)
            if destroy_disks:
                shutil.rmtree(self.instance_dir(instance), ignore_errors=True)

    def power_off(self, *, instance: Any, **_kw: Any) -> None:
        self._stop_test_consoles(instance)
        dom = self._domain(instance)
        if dom.isActive():
            dom.destroy()

    def power_on(self, *, instance: Any, **_kw: Any) -> None:
        dom = self._domain(instance)
        if not dom.isActive():
            dom.create()

    def reboot(self, *, instance: Any, reboot_type: str = "SOFT", **_kw: Any) -> None:
        dom = self._domain(instance)
        if reboot_type == "SOFT" and dom.isActive():
            try:
                dom.reboot(0)
                return
            except libvirt.libvirtError:
                pass
        if dom.isActive():
            dom.destroy()
        if dom.hasManagedSaveImage(0):
            dom.managedSaveRemove(0)  # a hard reboot of a suspended guest boots it afresh
        dom.create()

    def snapshot(self, *, instance: Any, target_path: Path, **_kw: Any) -> None:
        """The root disk as one standalone file in the format snapshots are declared with
        (``SNAPSHOT_DISK_FORMAT``, raw: the image service checks the upload against it); a qcow2
        overlay is flattened with its cached base."""
        self._domain(instance)
        disk = self.instance_dir(instance) / "disk"
        formats = self._disk_formats(instance)
        if disk.exists() and formats.get("disk") == "qcow2":
            flatten(disk, Path(target_path), SNAPSHOT_DISK_FORMAT, host=self.host)
        elif disk.exists():
            shutil.copyfile(disk, target_path)
        else:
            Path(target_path).write_bytes(b"")

    def attach_volume(self, *, instance: Any, connection_info: dict[str, Any], mountpoint: str, **_kw: Any) -> None:
        """Add the volume's disk to the domain's definition and, when it runs, to the live guest."""
        dom = self._domain(instance)
        if self.is_test:
            return  # the test driver's domains take no device changes; the attachment is bookkeeping
        dev = self._volume_target(dom, mountpoint)
        self._guest_call(instance, lambda d: d.attachDeviceFlags(volume_disk_xml(connection_info, dev),
                                                                 _config_and_live(d)))

    def detach_volume(self, *, instance: Any, connection_info: dict[str, Any], mountpoint: str, **_kw: Any) -> None:
        """Remove the volume's disk (found by its source) from the definition and the live guest."""
        dom = self._domain(instance)
        if self.is_test:
            return
        path = str(connection_info.get("data", {}).get("device_path"))
        for disk in _domain_tree(dom).findall("./devices/disk"):
            source = disk.find("source")
            if source is not None and path in (source.get("file"), source.get("dev")):
                self._guest_call(instance, lambda d, disk=disk: d.detachDeviceFlags(ET.tostring(disk, "unicode"),
                                                                                      _config_and_live(d)))
                return

    def extend_volume(self, *, instance: Any, connection_info: dict[str, Any], new_size: int, **_kw: Any) -> None:
        """Tell a running guest its volume grew to ``new_size`` bytes (``virDomainBlockResize`` on
        the disk whose source is the volume); a stopped guest sees the new size when it boots."""
        dom = self._domain(instance)
        if self.is_test or not dom.isActive():
            return
        path = str(connection_info.get("data", {}).get("device_path"))
        for disk in _domain_tree(dom).findall("./devices/disk"):
            source, target = disk.find("source"), disk.find("target")
            if source is not None and target is not None and path in (source.get("file"), source.get("dev")):
                dev = str(target.get("dev"))
                self._guest_call(instance, lambda d, dev=dev: d.blockResize(
                    dev, int(new_size), libvirt.VIR_DOMAIN_BLOCK_RESIZE_BYTES))
                return

    def _volume_target(self, dom: Any, mountpoint: str) -> str:
        """The volume's device name: its mountpoint's, or the next free one when that is taken."""
        taken = {t.get("dev") for t in _domain_tree(dom).findall("./devices/disk/target")}
        return next_free_target(mountpoint.rsplit("/", 1)[-1], {str(t) for t in taken if t})

    def attach_interface(self, *, instance: Any, vif: dict[str, Any], **_kw: Any) -> None:
        """Plug the port into the guest: its libvirt network and security group filter first, then
        its NIC into the domain's definition and, when the guest runs, into the live guest (hot-plug,
        as Nova's libvirt driver does). The test driver's domains take no device changes: there the
        port's VIF is the record."""
        self._domain(instance)
        if self.is_test:
            return
        self._plug_vifs([vif])
        self._guest_call(instance, lambda d: d.attachDeviceFlags(_interface_xml(vif), _config_and_live(d)))

    def detach_interface(self, *, instance: Any, vif: dict[str, Any], **_kw: Any) -> None:
        """Unplug the port's NIC (found by its MAC) from the definition and the live guest, then
        release its filter if nothing else uses it (its network stays until the guest goes: the
        guest may still be letting the device go)."""
        dom = self._domain(instance)
        if self.is_test:
            return
        for nic in _domain_tree(dom).findall("./devices/interface"):
            mac = nic.find("mac")
            if mac is not None and str(mac.get("address", "")).lower() == str(vif["address"]).lower():
                self._guest_call(instance, lambda d, nic=nic: d.detachDeviceFlags(ET.tostring(nic, "unicode"),
                                                                                    _config_and_live(d)))
                break
        with self._lock:
            self._release_nic_references(set(), {filter_name(str(vif["id"]))})

    def can_connect_volume(self, *, connection_info: dict[str, Any]) -> bool:
        path = connection_info.get("data", {}).get("device_path")
        return bool(path) and Path(path).exists()

    # -- pause, suspend, rescue, crash dump ------------------------------------------------------
    def _guest_call(self, instance: Any, call: Any) -> None:
        try:
            call(self._domain(instance))
        except libvirt.libvirtError as exc:
            raise VirtDriverError(host=self.host, reason=str(exc)) from exc

    def pause(self, *, instance: Any, **_kw: Any) -> None:
        """The guest's vCPUs stop (``virDomainSuspend``); its memory stays where it is."""
        self._guest_call(instance, lambda dom: dom.suspend())

    def unpause(self, *, instance: Any, **_kw: Any) -> None:
        self._guest_call(instance, lambda dom: dom.resume())

    def suspend(self, *, instance: Any, **_kw: Any) -> None:
        """Save the guest's memory with the domain (a managed save) and stop it."""
        self._guest_call(instance, lambda dom: dom.managedSave(0) if dom.isActive() else None)

    def resume(self, *, instance: Any, network_info: Any = None, **_kw: Any) -> None:
        """Start the domain: libvirt restores it from its managed save."""
        self._guest_call(instance, lambda dom: None if dom.isActive() else dom.create())

    def rescue(self, *, instance: Any, rescue_image_meta: dict[str, Any] | None, network_info: Any = None,
               admin_password: str | None = None, **_kw: Any) -> None:
        """Boot a rescue domain: the rescue image's copy (``disk.rescue``) first, the server's own
        disk second. The domain as it was is kept in ``unrescue.xml`` for ``unrescue``. On the test
        driver the rescue domain is the guest redefined with the title ``rescue``."""
        with self._lock:
            dom = self._domain(instance)
            workdir = self.instance_dir(instance)
            workdir.mkdir(parents=True, exist_ok=True)
            (workdir / "unrescue.xml").write_text(dom.XMLDesc(0))
            rescue_disk = None
            if rescue_image_meta and rescue_image_meta.get("path"):
                (workdir / "disk.rescue").unlink(missing_ok=True)
                rescue_disk = self._create_disk(instance, rescue_image_meta, "disk.rescue")
            with self._serial_port_claim():
                xml = self._domain_xml(instance, rescue_disk, rescue_image_meta, network_info or [])
                own_disk = workdir / "disk"
                if not self.is_test and own_disk.exists():
                    xml = xml.replace("<serial ", self._disk_xml(instance, own_disk, "vdb") + "<serial ", 1)
                xml = xml.replace("</name>", "</name><title>rescue</title>", 1)
                try:
                    if dom.isActive():
                        dom.destroy()
                    _undefine(dom)
                    rescue_dom = self.conn.defineXML(xml)
                except libvirt.libvirtError as exc:
                    raise VirtDriverError(host=self.host, reason=str(exc)) from exc
            try:
                rescue_dom.create()
            except libvirt.libvirtError as exc:
                raise VirtDriverError(host=self.host, reason=str(exc)) from exc

    def unrescue(self, *, instance: Any, **_kw: Any) -> None:
        """Drop the rescue domain and its disk; define and start the domain kept by ``rescue``."""
        with self._lock:
            workdir = self.instance_dir(instance)
            saved = workdir / "unrescue.xml"
            if not saved.exists():
                raise VirtDriverError(host=self.host, reason=f"no unrescue.xml for {instance.uuid}: not rescued")
            dom = self._domain(instance)
            try:
                if dom.isActive():
                    dom.destroy()
                _undefine(dom)
                self.conn.defineXML(saved.read_text()).create()
            except libvirt.libvirtError as exc:
                raise VirtDriverError(host=self.host, reason=str(exc)) from exc
            saved.unlink()
            (workdir / "disk.rescue").unlink(missing_ok=True)

    def trigger_crash_dump(self, *, instance: Any, **_kw: Any) -> None:
        """An NMI to the guest (``virDomainInjectNMI``)."""
        dom = self._domain(instance)
        try:
            dom.injectNMI(0)
        except libvirt.libvirtError as exc:
            if exc.get_error_code() == libvirt.VIR_ERR_NO_SUPPORT:
                raise TriggerCrashDumpNotSupported(host=self.host) from exc
            if exc.get_error_code() == libvirt.VIR_ERR_OPERATION_INVALID:
                raise InstanceNotRunning(instance_uuid=instance.uuid, host=self.host) from exc
            raise VirtDriverError(host=self.host, reason=str(exc)) from exc

    def set_admin_password(self, *, instance: Any, user: str, password: str, **_kw: Any) -> None:
        """``user``'s password in the guest, set by its QEMU guest agent (``virDomainSetUserPassword``).
        An agent that does not answer is ``AdminPasswordNotImplemented``: nothing was set."""
        dom = self._domain(instance)
        try:
            dom.setUserPassword(user, password, 0)
        except libvirt.libvirtError as exc:
            if exc.get_error_code() in (libvirt.VIR_ERR_AGENT_UNRESPONSIVE, libvirt.VIR_ERR_NO_SUPPORT):
                raise AdminPasswordNotImplemented(host=self.host) from exc
            if exc.get_error_code() == libvirt.VIR_ERR_OPERATION_INVALID:
                raise InstanceNotRunning(instance_uuid=instance.uuid, host=self.host) from exc
            raise VirtDriverError(host=self.host, reason=f"setting the password of user {user!r}: "
                                                         f"[error code {exc.get_error_code()}] {exc}") from exc

    # -- consoles ------------------------------------------------------------------------------
    def _write_boot_log(self, instance: Any) -> None:
        """The test driver's guest "boots": it writes a few serial console lines of its own, as a
        real guest's kernel and init would (``console.log``, where a real guest's serial goes)."""
        name = getattr(instance, "hostname", "") or getattr(instance, "display_name", "") or "guest"
        lines = [f"[    0.000000] Linux version 6.1.0-cloudcore-test (cloudcore test driver on {self.host})",
                 "[    0.000000] Command line: console=ttyS0",
                 f"[    0.412000] cloudcore-test: instance {instance.uuid}",
                 "[    1.020000] Run /init as init process",
                 f"{name} login: "]
        with (self.instance_dir(instance) / "console.log").open("a") as log:
            log.write("\n".join(lines) + "\n")

    def get_console_output(self, *, instance: Any, **_kw: Any) -> bytes:
        """The guest's serial console log, whole (the caller tails it)."""
        self._domain(instance)
        log = self.instance_dir(instance) / "console.log"
        try:
            return log.read_bytes()
        except OSError:
            raise ConsoleNotAvailable(host=self.host, reason="no console log") from None

    def _test_console_port(self, instance: Any, offset: int) -> int:
        """The port a test driver's guest's console prefers, derived from its uuid (where
        ``get_serial_console`` / ``get_vnc_console`` stand up its model, testconsoles, when it is
        free): VNC in 20000-29999, serial in 10000-19999, both below Linux's ephemeral range (32768
        up), so no client socket of another process can hold one."""
        return 20000 + offset + int(str(instance.uuid).replace("-", ""), 16) % 10000

    def _console(self, instance: Any, console_type: str, *, enabled: bool, test_offset: int, path: str,
                 attribute: str) -> dict[str, Any]:
        """``{"host", "port"}`` of a running guest's console, as the console proxy reaches it: on a
        real guest the port its domain XML names (``attribute`` of the element at ``path``)."""
        dom = self._domain(instance)
        if not enabled or not dom.isActive():
            raise ConsoleTypeUnavailable(host=self.host, console_type=console_type)
        if self.is_test:
            port = self._test_console_port(instance, test_offset)
        else:
            port = _xml_int(dom.XMLDesc(0), path, attribute)
        if not port or port < 0:
            raise ConsoleTypeUnavailable(host=self.host, console_type=console_type)
        return {"host": settings.CONSOLE_PROXYCLIENT_ADDRESS, "port": port, "internal_access_path": None}

    def get_vnc_console(self, *, instance: Any, **_kw: Any) -> dict[str, Any]:
        """The guest's VNC server (``<graphics type='vnc'>``, its port chosen by libvirt)."""
        where = self._console(instance, "novnc", enabled=settings.VNC_ENABLED, test_offset=0,
                              path="./devices/graphics[@type='vnc']", attribute="port")
        if self.is_test:
            name = getattr(instance, "display_name", "") or "guest"
            where["port"] = self._serve_test_console(
                instance, "novnc", where["port"],
                lambda port: testconsoles.VncScreen(name, host=settings.VNC_SERVER_LISTEN, port=port))
        return where

    def get_serial_console(self, *, instance: Any, **_kw: Any) -> dict[str, Any]:
        """The guest's first TCP serial port (``<serial type='tcp'>``); a guest whose serial port
        is its log file only (the default domain here) has none."""
        where = self._console(instance, "serial", enabled=settings.SERIAL_CONSOLE_ENABLED, test_offset=-10000,
                              path="./devices/serial[@type='tcp']/source", attribute="service")
        if self.is_test:
            log = self.instance_dir(instance) / "console.log"

            def append(data: bytes) -> None:
                with log.open("ab") as out:
                    out.write(data)

            where["port"] = self._serve_test_console(
                instance, "serial", where["port"],
                lambda port: testconsoles.SerialLine(lambda: log.read_bytes() if log.exists() else b"", append,
                                                     host=settings.SERIAL_CONSOLE_LISTEN, port=port))
        return where

    def _serve_test_console(self, instance: Any, console_type: str, preferred: int,
                            start: Callable[[int], testconsoles.TCPConsole]) -> int:
        """The port of a test guest's console server (``start(port)``), started the first time its
        console is asked for (QEMU would have opened it when the guest started): at ``preferred``,
        or, when another process holds that one (another cloud's guest on this machine with the
        same uuid remainder, any server), at a port the kernel picks. The port handed out is always
        one this server holds: the console proxy must never be sent to another process's socket."""
        with self._lock:
            server = self._test_consoles.get((instance.uuid, console_type))
            if server is None:
                try:
                    server = start(preferred)
                except OSError:
                    server = start(0)
                self._test_consoles[(instance.uuid, console_type)] = server
            return int(server.port)

    def _stop_test_consoles(self, instance: Any) -> None:
        """The guest stopped: so do its console servers (test mode)."""
        for console_type in ("novnc", "serial"):
            server = self._test_consoles.pop((instance.uuid, console_type), None)
            if server is not None:
                server.close()

    def get_info(self, instance: Any) -> dict[str, Any]:
        dom = self._domain(instance)
        state, max_mem, mem, vcpus, _cpu = dom.info()
        return {"state": state, "power_state": _POWER.get(state, PowerState.NOSTATE), "max_mem_kb": max_mem,
                "mem_kb": mem, "num_cpu": vcpus}

    def get_instance_diagnostics(self, instance: Any) -> dict[str, Any]:
        """Nova's standardized diagnostics of the guest (2.48+)."""
        hypervisor = "test" if self.is_test else self._virt_type()
        return diagnostics.standardized(self._domain(instance), hypervisor=hypervisor,
                                        launched_at=getattr(instance, "launched_at", None))

    def get_diagnostics(self, instance: Any) -> dict[str, Any]:
        """libvirt's diagnostics of the guest as Nova answered them before 2.48."""
        return diagnostics.legacy(self._domain(instance))


class TriggerCrashDumpNotSupported(VirtDriverError):
    message = "Triggering crash dump is not supported on %(host)s"


class AdminPasswordNotImplemented(VirtDriverError):
    """The guest has no agent that answers (Nova: ``NotImplementedError``, the API's 501)."""

    code = 501
    message = "The guest agent of the instance on %(host)s does not answer"


class InstanceNotRunning(VirtDriverError):
    message = "Instance %(instance_uuid)s is not running on %(host)s."


def wants_guest_agent(instance: Any, image_meta: dict[str, Any] | None = None) -> bool:
    """The image's ``hw_qemu_guest_agent`` property (the request's image, else the one the server
    keeps in its system metadata), read as Nova reads a boolean property."""
    properties = (image_meta or {}).get("properties")
    if properties is not None and "hw_qemu_guest_agent" in properties:
        value = properties["hw_qemu_guest_agent"]
    else:
        value = (getattr(instance, "system_metadata", None) or {}).get("image_hw_qemu_guest_agent")
    return str(value).strip().lower() in ("1", "t", "true", "on", "y", "yes")


def _guest_agent_xml(instance: Any, image_meta: dict[str, Any] | None) -> str:
    """The virtio channel the QEMU guest agent listens on (libvirt picks the socket's path)."""
    if not wants_guest_agent(instance, image_meta):
        return ""
    return "<channel type='unix'><target type='virtio' name='org.qemu.guest_agent.0'/></channel>"


def libvirt_network_name(network_id: str) -> str:
    """The libvirt network of a cloudcore network."""
    return f"cloudcore-{network_id}"


def bridge_name(network_id: str) -> str:
    """Its bridge: ``ccbr`` and the network id's first 11 hex digits (a Linux interface name has at
    most 15 characters)."""
    return "ccbr" + network_id.replace("-", "")[:11]


def _interface_xml(vif: dict[str, Any]) -> str:
    """A virtio NIC with the port's MAC on its network's libvirt network, filtered by the port's
    security groups when it has port security."""
    network = libvirt_network_name(str((vif.get("network") or {})["id"]))
    return (f"<interface type='network'><mac address='{escape(vif['address'])}'/>"
            f"<source network='{escape(network)}'/><target dev='{escape(tap_name(vif['id']))}'/>"
            f"<model type='virtio'/>{filterref_xml(vif)}</interface>")


def _nic_references(domain_xml: str) -> tuple[set[str], set[str]]:
    """The libvirt networks and the port filters (``cloudcore-port-*``) a domain's NICs refer to."""
    root = ElementTree.fromstring(domain_xml)  # noqa: S314 - libvirt's own XML
    networks, filters = set(), set()
    for nic in root.findall("./devices/interface"):
        source, ref = nic.find("source"), nic.find("filterref")
        if source is not None and source.get("network"):
            networks.add(str(source.get("network")))
        if ref is not None and str(ref.get("filter", "")).startswith(filter_name("")):
            filters.add(str(ref.get("filter")))
    return networks, filters


def next_free_target(wanted: str, taken: set[str]) -> str:
    """``wanted`` (``vdb``) unless taken, else the first free ``vd<letter>``."""
    if wanted not in taken:
        return wanted
    return next(f"vd{c}" for c in "abcdefghijklmnopqrstuvwxyz" if f"vd{c}" not in taken)


def volume_disk_xml(connection_info: dict[str, Any], dev: str) -> str:
    """A volume as a raw virtio disk: a block device (an LVM or iSCSI volume) or a file (the
    directory pool), with the volume id as its serial. A multiattach volume (the attachment's
    ``connection_info`` says so) is ``<shareable/>``: libvirt then neither locks it for this guest
    alone nor relabels it away from the other guests that use it."""
    data = connection_info.get("data") or {}
    path = str(data.get("device_path") or "")
    serial = f"<serial>{escape(str(connection_info.get('serial') or data.get('volume_id') or ''))}</serial>"
    flags = ("<readonly/>" if data.get("access_mode") == "ro" else "") + (
        "<shareable/>" if connection_info.get("multiattach") else "")
    if Path(path).is_block_device():
        source = f"<disk type='block' device='disk'><driver name='qemu' type='raw'/><source dev='{escape(path)}'/>"
    else:
        source = f"<disk type='file' device='disk'><driver name='qemu' type='raw'/><source file='{escape(path)}'/>"
    return f"{source}<target dev='{escape(dev)}' bus='virtio'/>{serial}{flags}</disk>"


def volumes_xml(block_device_info: dict[str, Any] | None, *, taken: set[str]) -> str:
    """The server's connected volumes (``block_device_info``), each at its mount device unless an
    image disk already holds it (then the next free one)."""
    out = []
    used = set(taken)
    for bdm in (block_device_info or {}).get("block_device_mapping") or []:
        if not ((bdm.get("connection_info") or {}).get("data") or {}).get("device_path"):
            continue
        dev = next_free_target(str(bdm.get("mount_device") or "/dev/vdb").rsplit("/", 1)[-1], used)
        used.add(dev)
        out.append(volume_disk_xml(bdm["connection_info"], dev))
    return "".join(out)


def _domain_tree(dom: Any) -> ET.Element:
    return ET.fromstring(dom.XMLDesc(0))  # noqa: S314 - libvirt's own description of the domain


def _config_and_live(dom: Any) -> int:
    """Change the persistent definition, and the running guest too when there is one."""
    flags = libvirt.VIR_DOMAIN_AFFECT_CONFIG
    return flags | libvirt.VIR_DOMAIN_AFFECT_LIVE if dom.isActive() else flags


def _xml_int(xml: str, path: str, attribute: str) -> int | None:
    """An integer attribute of the first element at ``path`` of a domain's XML, or None."""
    element = ElementTree.fromstring(xml).find(path)  # noqa: S314  (libvirt's own XML)
    try:
        return int(element.get(attribute, "")) if element is not None else None
    except ValueError:
        return None


def _undefine(dom: Any) -> None:
    """Undefine a domain with its managed save image (a suspended guest's memory), if it has one."""
    dom.undefineFlags(libvirt.VIR_DOMAIN_UNDEFINE_MANAGED_SAVE)


def host_uptime() -> str:
    """``uptime``'s line for this machine, e.g. `` 08:32:11 up 93 days, 18:25,  2 users,  load average:
    0.20, 0.12, 0.14``; built from /proc when the command is missing."""
    try:
        out = subprocess.run(["uptime"], capture_output=True, text=True, timeout=5, env={"LANG": "C"}).stdout
        if out.strip():
            return out.rstrip("\n")
    except (OSError, subprocess.SubprocessError):
        pass
    seconds = float(Path("/proc/uptime").read_text().split()[0])
    days, rest = divmod(int(seconds), 86400)
    hours, minutes = rest // 3600, rest % 3600 // 60
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return f" {time.strftime('%H:%M:%S')} up {days} days, {hours:2d}:{minutes:02d},  load average: {load}"
