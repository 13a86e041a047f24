"""A real guest through ``qemu:///system`` (issue 4's opt-in test; it runs whenever QEMU, a kernel
and busybox are installed, as the Makefile does): cloudcore's libvirt driver boots a kernel with a
tiny initramfs by direct kernel boot, under TCG, and the test reads the marker the guest prints on
its serial console; then power off, power on and destroy."""
from __future__ import annotations

import fcntl
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from types import SimpleNamespace

import pytest

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
MARKER = "CLOUDCORE-GUEST-OK"


def _kernel() -> Path | None:
    kernels = sorted(Path("/boot").glob("vmlinuz-*"))
    return kernels[-1] if kernels else None


def real_guest_skip_reason() -> str | None:
    """Why real guests cannot run here (None: QEMU, a kernel, busybox and libvirt-python are there)."""
    if not shutil.which("qemu-system-x86_64") or _kernel() is None or not shutil.which("busybox"):
        return "QEMU, a kernel under /boot or busybox is not installed (make installs them)"
    try:
        import libvirt  # noqa: F401
    except ImportError:
        return "libvirt-python is not installed"
    return None


def _daemon_running(daemon: str) -> bool:
    return subprocess.run(["pgrep", "-x", daemon], capture_output=True).returncode == 0


@contextmanager
def system_libvirt() -> Iterator[object]:
    """``qemu:///system`` usable for the duration: virtlogd and libvirtd are started (as root) when
    they are not running, and only those, by their pid files, are stopped afterwards. Skips the
    test when real guests cannot run here. Yields the ``libvirt`` module.

    One test at a time on the machine (an exclusive ``flock``, waited for): the slow tier runs two
    test processes, and one's daemons stopped under the other's guests would fail or skip it."""
    reason = real_guest_skip_reason()
    if reason:
        pytest.skip(reason)
    import libvirt

    started: list[int] = []
    lock = open(Path(tempfile.gettempdir()) / "cloudcore-system-libvirt.lock", "w")  # noqa: SIM115 - held to the end
    fcntl.flock(lock, fcntl.LOCK_EX)
    try:
        if os.geteuid() == 0:
            for daemon in ("virtlogd", "libvirtd"):
                if not _daemon_running(daemon) and shutil.which(daemon):
                    pidfile = Path(f"/run/{daemon}.pid")
                    subprocess.run([daemon, "-d"], capture_output=True, timeout=30)
                    deadline = time.monotonic() + 10
                    while time.monotonic() < deadline and not pidfile.exists():
                        time.sleep(0.1)
                    if pidfile.exists():
                        started.append(int(pidfile.read_text().split()[0]))
            time.sleep(1)
        try:
            conn = libvirt.open("qemu:///system")
        except libvirt.libvirtError as exc:
            pytest.skip(f"qemu:///system is not usable here: {exc}")
        conn.close()
        yield libvirt
    finally:
        for pid in reversed(started):  # leave the machine as the test found it
            _stop_pid(pid)
        lock.close()  # the lock goes with the file


def _stop_pid(pid: int, timeout: float = 15) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    with suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def build_initramfs(target: Path, marker: str = MARKER, *, with_drivers: bool = False) -> Path:
    """A tiny busybox initramfs whose /init prints ``marker`` on the serial console (world-readable:
    qemu runs as its own user under qemu:///system); ``with_drivers``: with the kernel's cdrom,
    iso9660 and virtio modules, so that it also prints its NICs and its config drive."""
    argv = [str(ROOT / "scripts/real_guest/build-initramfs.sh"), str(target), marker]
    if with_drivers:
        argv.append(kernel_path().name.removeprefix("vmlinuz-"))
    subprocess.run(argv, check=True, capture_output=True, timeout=60)
    target.chmod(0o644)
    return target


def qcow2_image(work: Path, marker: bytes) -> Path:
    """A 1 MiB qcow2 image (world-readable) whose first line is ``marker``."""
    raw = work / "image.raw"
    raw.write_bytes(marker + b"\n" + bytes(1024 * 1024))
    image = work / "image.qcow2"
    subprocess.run(["qemu-img", "convert", "-q", "-f", "raw", "-O", "qcow2", str(raw), str(image)], check=True)
    image.chmod(0o644)
    return image


def kernel_path() -> Path:
    kernel = _kernel()
    assert kernel is not None
    return kernel


@pytest.fixture
def qemu_system() -> Iterator[object]:
    with system_libvirt() as libvirt:
        yield libvirt


def wait_console(console: Path, needle: str, timeout: float = 180) -> str:
    """The serial log once it contains ``needle`` (fails the test with its tail otherwise)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if console.exists() and needle.encode() in console.read_bytes():
            return console.read_bytes().decode(errors="replace")
        time.sleep(0.5)
    tail = console.read_bytes()[-3000:] if console.exists() else b""
    pytest.fail(f"no {needle!r} on the serial console:\n{tail!r}")


def test_real_guest_boots_prints_marker_and_powers(qemu_system: object) -> None:
    from compute.virt.libvirt import LibvirtDriver
    from servers.choices import PowerState

    work = Path(tempfile.mkdtemp(prefix="cloudcore-guest-", dir="/var/tmp"))
    work.chmod(0o755)  # the qemu process reads the kernel and initramfs from here
    try:
        initrd = build_initramfs(work / "initrd.gz")
        driver = LibvirtDriver(host="realguest", uri="qemu:///system", state_path=work / "state", virt_type="qemu")
        guest = SimpleNamespace(uuid=str(uuid.uuid4()), memory_mb=192, vcpus=1)
        driver.spawn(instance=guest, image_meta={"kernel_path": str(_kernel()), "ramdisk_path": str(initrd)},
                     network_info=[])
        try:
            wait_console(driver.instance_dir(guest) / "console.log", MARKER)
            assert driver.get_info(guest)["power_state"] == PowerState.RUNNING
            driver.power_off(instance=guest)
            assert driver.get_info(guest)["power_state"] == PowerState.SHUTDOWN
            driver.power_on(instance=guest)
            assert driver.get_info(guest)["power_state"] == PowerState.RUNNING
        finally:
            driver.destroy(instance=guest, destroy_disks=True)
        assert guest.uuid not in driver.list_instance_uuids()
    finally:
        shutil.rmtree(work, ignore_errors=True)


def test_real_guest_with_qcow2_disk_config_drive_nic_and_volumes(qemu_system: object) -> None:
    """The guest mounts the drive the driver built (ISO9660 ``config-2`` on an IDE cdrom) and
    prints its hostname, key and user data on the serial console; its port is a virtio NIC with the
    port's MAC, on the isolated libvirt network the driver defined for its network; its root disk is
    a qcow2 overlay on the host's cached copy of a qcow2 image, grown to the flavor's 1 GiB; the
    volume it was spawned with is a disk it reads, and one attached while it runs is hot-plugged
    (then detached)."""
    import base64

    import libvirt as libvirt_module

    from compute.virt.libvirt import LibvirtDriver

    work = Path(tempfile.mkdtemp(prefix="cloudcore-guest-", dir="/var/tmp"))
    work.chmod(0o755)
    key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIRealGuestKey e2e@cloudcore"
    try:
        initrd = build_initramfs(work / "initrd.gz", with_drivers=True)
        image = qcow2_image(work, b"QCOW2-ROOT-MARKER")
        volumes = {}
        for name, marker in (("data-vol", b"VOLUME-DATA-MARKER"), ("hot-vol", b"HOTPLUG-MARKER")):
            volumes[name] = work / f"volume-{name}"
            volumes[name].write_bytes(marker + b"\n" + bytes(1024 * 1024))
            volumes[name].chmod(0o644)

        def connection(name: str) -> dict[str, object]:
            return {"driver_volume_type": "file", "serial": name,
                    "data": {"device_path": str(volumes[name]), "volume_id": name, "access_mode": "rw"}}
        driver = LibvirtDriver(host="realguest", uri="qemu:///system", state_path=work / "state", virt_type="qemu")
        guest = SimpleNamespace(
            uuid=str(uuid.uuid4()), memory_mb=256, vcpus=1, root_gb=1, display_name="cd guest", hostname="cd-guest-1",
            key_name="e2e", key_data=key, config_drive="True", availability_zone="az1", project_id="p1",
            launch_index=0, metadata={}, user_data=base64.b64encode(b"echo USERDATA-MARKER-7").decode())
        net_id = str(uuid.uuid4())
        vif = {"id": str(uuid.uuid4()), "address": "fa:16:3e:7e:57:01",
               "network": {"id": net_id, "label": "e2e", "mtu": 1500, "subnets": [
                   {"cidr": "10.9.0.0/24", "gateway": None, "ips": [{"address": "10.9.0.5", "type": "fixed",
                                                                   "version": 4}]}]}}
        try:
            driver.spawn(instance=guest, network_info=[vif], image_meta={
                "id": "qcow2-image", "path": str(image), "disk_format": "qcow2",
                "kernel_path": str(_kernel()), "ramdisk_path": str(initrd)}, block_device_info={
                "block_device_mapping": [{"connection_info": connection("data-vol"), "mount_device": "/dev/vdb"}]})
            try:
                console = driver.instance_dir(guest) / "console.log"
                wait_console(console, "GUEST-DONE")
                driver.attach_volume(instance=guest, connection_info=connection("hot-vol"), mountpoint="/dev/vdc")
                log = wait_console(console, "GUEST-HOTPLUGGED serial=hot-vol head=HOTPLUG-MARKER", timeout=90)
                driver.detach_volume(instance=guest, connection_info=connection("hot-vol"), mountpoint="/dev/vdc")
                persistent = driver._domain(guest).XMLDesc(libvirt_module.VIR_DOMAIN_XML_INACTIVE)
                assert str(volumes["hot-vol"]) not in persistent and str(volumes["data-vol"]) in persistent
            finally:
                driver.destroy(instance=guest, destroy_disks=True)
        finally:
            with suppress(Exception):
                network = driver.conn.networkLookupByName(f"cloudcore-{net_id}")
                network.destroy()
                network.undefine()
        assert "GUEST-NIC fa:16:3e:7e:57:01" in log, log[-3000:]
        assert f"GUEST-DISK sectors={1024**3 // 512} head=QCOW2-ROOT-MARKER" in log, log[-3000:]
        assert "GUEST-VOLUME serial=data-vol head=VOLUME-DATA-MARKER" in log, log[-3000:]
        assert "GUEST-CONFIG-DRIVE" in log, log[-3000:]
        meta = log.split("BEGIN meta_data.json", 1)[1].split("END meta_data.json", 1)[0]
        assert '"hostname": "cd-guest-1"' in meta and key in meta and guest.uuid in meta
        assert "USERDATA-MARKER-7" in log.split("BEGIN user_data", 1)[1]
    finally:
        shutil.rmtree(work, ignore_errors=True)


def test_real_guest_local_disks_and_a_move_to_another_host_keep_their_data(qemu_system: object) -> None:
    """The flavor's ephemeral (ext4-formatted, 1 GiB) and swap (64 MiB) disks are virtio disks of
    their sizes in the guest (vdb, vdc); bytes written on the root disk (a qcow2 overlay) survive a
    resize to another host sharing the daemon: the source keeps its instance directory, the
    destination copies it and re-points the overlay at its own image cache, and the guest there
    reads the bytes from its root disk, grown to the new flavor's 2 GiB."""
    import json

    from compute.virt.libvirt import LibvirtDriver

    work = Path(tempfile.mkdtemp(prefix="cloudcore-guest-", dir="/var/tmp"))
    work.chmod(0o755)
    try:
        initrd = build_initramfs(work / "initrd.gz", with_drivers=True)
        image = qcow2_image(work, b"IMAGE-ROOT-MARKER")
        meta = {"id": "move-image", "path": str(image), "disk_format": "qcow2", "kernel_path": str(_kernel()),
                "ramdisk_path": str(initrd)}
        local = {"block_device_mapping": [], "root_device_name": "/dev/vda",
                 "ephemerals": [{"device_name": "/dev/vdb", "size": 1, "guest_format": "ext4"}],
                 "swap": {"device_name": "/dev/vdc", "swap_size": 64}}
        source = LibvirtDriver(host="movesrc", uri="qemu:///system", state_path=work / "src", virt_type="qemu")
        dest = LibvirtDriver(host="movedst", uri="qemu:///system", state_path=work / "dst", virt_type="qemu")
        guest = SimpleNamespace(uuid=str(uuid.uuid4()), memory_mb=256, vcpus=1, root_gb=1, config_drive="")
        try:
            source.spawn(instance=guest, image_meta=meta, network_info=[], block_device_info=local)
            log = wait_console(source.instance_dir(guest) / "console.log", "GUEST-DONE")
            assert f"GUEST-BLOCK vdb sectors={1024**3 // 512}" in log, log[-3000:]
            assert f"GUEST-BLOCK vdc sectors={64 * 1024**2 // 512}" in log, log[-3000:]
            source.power_off(instance=guest)
            # the guest's own bytes on its root disk (what a rebuild from the image would lose)
            subprocess.run(["qemu-io", "-f", "qcow2", "-c", "write -P 0x4d 0 512",
                            str(source.instance_dir(guest) / "disk")], check=True, capture_output=True)
            kept = source.migrate_disk_and_power_off(instance=guest)
            guest.root_gb = 2
            dest.finish_migration(instance=guest, disk_source=kept)
            dest.spawn(instance=guest, image_meta=meta, network_info=[], block_device_info=local)
            log = wait_console(dest.instance_dir(guest) / "console.log", "GUEST-DONE")
            info = json.loads(subprocess.run(["qemu-img", "info", "--output=json", "-U",
                                              str(dest.instance_dir(guest) / "disk")],
                                             check=True, capture_output=True, text=True).stdout)
            source.confirm_migration(instance=guest)
        finally:
            source.destroy(instance=guest, destroy_disks=True)
            dest.destroy(instance=guest, destroy_disks=True)
        assert f"GUEST-DISK sectors={2 * 1024**3 // 512} head={'M' * 32}" in log, log[-3000:]
        assert f"GUEST-BLOCK vdb sectors={1024**3 // 512}" in log, log[-3000:]
        assert info["backing-filename"] == str(work / "dst" / "_base" / "move-image")
        assert not Path(kept).exists()
    finally:
        shutil.rmtree(work, ignore_errors=True)


def talk_to_serial(host: str, port: int, line: str, timeout: float = 60) -> bytes:
    """Type ``line`` on a guest's serial console (a TCP server) and read until the guest's
    initramfs answers it (``<MARKER>-ECHO <line>``); what was read."""
    wanted = f"{MARKER}-ECHO {line}".encode()
    seen = b""
    deadline = time.monotonic() + timeout
    with socket.create_connection((host, port), timeout=5) as conn:
        while time.monotonic() < deadline and wanted not in seen:
            conn.sendall(f"{line}\n".encode())
            stop = time.monotonic() + 3
            while time.monotonic() < stop and wanted not in seen:
                with suppress(TimeoutError):
                    seen += conn.recv(4096)
    assert wanted in seen, seen[-2000:]
    return seen


def test_real_guest_serial_console_is_a_tcp_port_with_its_log(qemu_system: object) -> None:
    from compute.virt.libvirt import LibvirtDriver

    work = Path(tempfile.mkdtemp(prefix="cloudcore-guest-", dir="/var/tmp"))
    work.chmod(0o755)
    try:
        initrd = build_initramfs(work / "initrd.gz")
        driver = LibvirtDriver(host="realguest", uri="qemu:///system", state_path=work / "state", virt_type="qemu")
        guest = SimpleNamespace(uuid=str(uuid.uuid4()), memory_mb=192, vcpus=1)
        driver.spawn(instance=guest, image_meta={"kernel_path": str(_kernel()), "ramdisk_path": str(initrd)},
                     network_info=[])
        try:
            # given the guest booted: its marker is in the console log (virtlogd keeps it)
            deadline = time.monotonic() + 180
            while time.monotonic() < deadline and MARKER.encode() not in driver.get_console_output(instance=guest):
                time.sleep(0.5)
            assert MARKER.encode() in driver.get_console_output(instance=guest)
            # then its serial console is a TCP port on the host, and the guest answers what is typed
            serial = driver.get_serial_console(instance=guest)
            assert serial["host"] == "127.0.0.1" and 10000 <= serial["port"] <= 20000
            talk_to_serial(serial["host"], serial["port"], "hello-serial")
            # and what went over it is in the log too (virtlogd writes it a moment after the socket)
            echoed = f"{MARKER}-ECHO hello-serial".encode()
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and echoed not in driver.get_console_output(instance=guest):
                time.sleep(0.5)
            assert echoed in driver.get_console_output(instance=guest)
            # its VNC server is where the domain says
            assert driver.get_vnc_console(instance=guest)["port"] >= 5900
        finally:
            driver.destroy(instance=guest, destroy_disks=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
