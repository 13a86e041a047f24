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
import json
import os
import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Any
from xml.etree import ElementTree
from xml.sax.saxutils import escape

import libvirt
from django.conf import settings

from images.services import image_data_path
from servers.choices import PowerState

from .driver import ConsoleNotAvailable, ConsoleTypeUnavailable, InstanceNotFoundOnHypervisor, VirtDriverError

# libvirt's domain states -> Nova's power states
_POWER = {0: PowerState.NOSTATE, 1: PowerState.RUNNING, 2: PowerState.RUNNING, 3: PowerState.PAUSED,
          4: PowerState.SHUTDOWN, 5: PowerState.SHUTDOWN, 6: PowerState.CRASHED, 7: PowerState.SUSPENDED}

libvirt.registerErrorHandler(lambda *_args: None, None)  # errors come back as exceptions, not stderr


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
    capabilities = {"supports_rebuild_bfv": True, "supports_attach_volume": True}

    def __init__(self, *, host: str, uri: str, state_path: Path, virt_type: str | None = None) -> None:
        self.host = host
        #: "kvm", "qemu" (TCG) or "auto" (kvm when /dev/kvm exists): settings.LIBVIRT_VIRT_TYPE
        self.virt_type = virt_type or getattr(settings, "LIBVIRT_VIRT_TYPE", "auto")
        self.uri = uri
        self.state_path = Path(state_path)
        self._lock = threading.RLock()
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

    def instance_dir(self, instance: Any) -> Path:
        return self.state_path / "instances" / str(instance.uuid)

    def _domain_xml(self, instance: Any, disk: Path | None, image_meta: dict[str, Any] | None,
                    network_info: list[dict[str, Any]]) -> str:
        name = escape(self.domain_name(instance))
        memory = max(int(instance.memory_mb or 64), 16)
        vcpus = max(int(instance.vcpus or 1), 1)
        if self.is_test:
            return (f"<domain type='test'><name>{name}</name><uuid>{instance.uuid}</uuid>"
                    f"<memory unit='MiB'>{memory}</memory><vcpu>{vcpus}</vcpu><os><type>hvm</type></os>"
                    f"<description>host={escape(self.host)}</description></domain>")
        kernel, ramdisk = self._boot_files(instance)
        boot = "<boot dev='hd'/>"
        if kernel:
            boot = f"<kernel>{escape(kernel)}</kernel>"
            if ramdisk:
                boot += f"<initrd>{escape(ramdisk)}</initrd>"
            boot += "<cmdline>console=ttyS0</cmdline>"
        virt_type = self.virt_type
        if virt_type == "auto":
            virt_type = "kvm" if Path("/dev/kvm").exists() else "qemu"
        log = self.instance_dir(instance) / "console.log"
        disks = ""
        if disk is not None:
            disks = ("<disk type='file' device='disk'><driver name='qemu' type='raw'/>"
                     f"<source file='{escape(str(disk))}'/><target dev='vda' bus='virtio'/></disk>")
        return (f"<domain type='{virt_type}'><name>{name}</name><uuid>{instance.uuid}</uuid>"
                f"<memory unit='MiB'>{memory}</memory><vcpu>{vcpus}</vcpu>"
                f"<description>host={escape(self.host)}</description>"
                f"<os><type arch='x86_64'>hvm</type>{boot}</os><features><acpi/></features>"
                f"<devices>{disks}{self._serial_xml(log)}{self._graphics_xml()}</devices></domain>")

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
                disk = workdir / "disk"
                if not disk.exists():
                    source = Path(image_meta["path"])
                    if source.exists():
                        shutil.copyfile(source, disk)
                    else:
                        disk.write_bytes(b"")
            if not self.is_test:
                self._fetch_boot_files(instance, image_meta)
            xml = self._domain_xml(instance, disk, image_meta, network_info or [])
            try:
                try:
                    old = self.conn.lookupByName(self.domain_name(instance))
                    if old.isActive():
                        old.destroy()
                    _undefine(old)
                except libvirt.libvirtError:
                    pass
                dom = self.conn.defineXML(xml)
                dom.create()
            except libvirt.libvirtError as exc:
                raise VirtDriverError(host=self.host, reason=str(exc)) from exc
            if self.is_test:
                self._write_boot_log(instance)

    def destroy(self, *, instance: Any, destroy_disks: bool = True, block_device_info: Any = None, **_kw: Any) -> None:
        with self._lock:
            try:
                dom = self.conn.lookupByName(self.domain_name(instance))
                if dom.isActive():
                    dom.destroy()
                _undefine(dom)
            except libvirt.libvirtError:
                pass  # already gone
            if destroy_disks:
                shutil.rmtree(self.instance_dir(instance), ignore_errors=True)

    def power_off(self, *, instance: Any, **_kw: Any) -> None:
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
        self._domain(instance)
        disk = self.instance_dir(instance) / "disk"
        if disk.exists():
            shutil.copyfile(disk, target_path)
        else:
            Path(target_path).write_bytes(b"")

    def attach_volume(self, *, instance: Any, connection_info: dict[str, Any], mountpoint: str, **_kw: Any) -> None:
        dom = self._domain(instance)
        if self.is_test:
            return  # the test driver keeps no devices; the attachment is bookkeeping only
        path = connection_info.get("data", {}).get("device_path")
        dev = mountpoint.rsplit("/", 1)[-1]
        dom.attachDeviceFlags(f"<disk type='file' device='disk'><source file='{escape(str(path))}'/>"
                              f"<target dev='{escape(dev)}' bus='virtio'/></disk>",
                              libvirt.VIR_DOMAIN_AFFECT_CONFIG)

    def detach_volume(self, *, instance: Any, connection_info: dict[str, Any], mountpoint: str, **_kw: Any) -> None:
        self._domain(instance)

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
                rescue_disk = workdir / "disk.rescue"
                source = Path(rescue_image_meta["path"])
                if source.exists():
                    shutil.copyfile(source, rescue_disk)
                else:
                    rescue_disk.write_bytes(b"")
            xml = self._domain_xml(instance, rescue_disk, rescue_image_meta, network_info or [])
            own_disk = workdir / "disk"
            if not self.is_test and own_disk.exists():
                xml = xml.replace("<serial ", "<disk type='file' device='disk'><driver name='qemu' type='raw'/>"
                                  f"<source file='{escape(str(own_disk))}'/><target dev='vdb' bus='virtio'/>"
                                  "</disk><serial ", 1)
            xml = xml.replace("</name>", "</name><title>rescue</title>", 1)
            try:
                if dom.isActive():
                    dom.destroy()
                _undefine(dom)
                self.conn.defineXML(xml).create()
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
        """The test driver runs no console server: its guests' consoles are at fixed ports derived
        from the uuid (nothing listens there unless a test stands a server up)."""
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
        return self._console(instance, "novnc", enabled=settings.VNC_ENABLED, test_offset=0,
                             path="./devices/graphics[@type='vnc']", attribute="port")

    def get_serial_console(self, *, instance: Any, **_kw: Any) -> dict[str, Any]:
        """The guest's first TCP serial port (``<serial type='tcp'>``); a guest whose serial port
        is its log file only (the default domain here) has none."""
        return self._console(instance, "serial", enabled=settings.SERIAL_CONSOLE_ENABLED, test_offset=10000,
                             path="./devices/serial[@type='tcp']/source", attribute="service")

    def get_info(self, instance: Any) -> dict[str, Any]:
        dom = self._domain(instance)
        state, max_mem, mem, vcpus, _cpu = dom.info()
        return {"state": state, "power_state": _POWER.get(state, PowerState.NOSTATE), "max_mem_kb": max_mem,
                "mem_kb": mem, "num_cpu": vcpus}


class TriggerCrashDumpNotSupported(VirtDriverError):
    message = "Triggering crash dump is not supported on %(host)s"


class InstanceNotRunning(VirtDriverError):
    message = "Instance %(instance_uuid)s is not running on %(host)s."


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
