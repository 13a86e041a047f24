"""The libvirt driver against libvirt's test driver: each simulated host its own node definition."""
from __future__ import annotations

import fcntl
import socket
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from cloudcore.core.exceptions import InvalidNodeConfiguration
from compute import identity
from compute.consoles import tail_lines
from compute.virt import libvirt as libvirt_driver
from compute.virt.driver import ConsoleTypeUnavailable, InstanceNotFoundOnHypervisor, VirtDriverError
from compute.virt.libvirt import LibvirtDriver, write_test_node
from servers.choices import PowerState


def driver(tmp_path: Path, host: str = "h1", vcpus: int = 4, memory_mb: int = 8192, disk_gb: int = 40) -> LibvirtDriver:
    state = tmp_path / host
    node = write_test_node(state, hostname=host, vcpus=vcpus, memory_mb=memory_mb, disk_gb=disk_gb)
    return LibvirtDriver(host=host, uri=f"test://{node}", state_path=state)


def server(**kw: object) -> SimpleNamespace:
    return SimpleNamespace(uuid=str(uuid.uuid4()), memory_mb=128, vcpus=1, **kw)


def test_each_simulated_host_reports_its_own_size(tmp_path: Path) -> None:
    small, big = driver(tmp_path, "small", 2, 2048, 10), driver(tmp_path, "big", 16, 65536, 500)
    assert (small.get_available_resource()["vcpus"], small.get_available_resource()["memory_mb"]) == (2, 2048)
    res = big.get_available_resource()
    assert (res["vcpus"], res["memory_mb"], res["local_gb"], res["hypervisor_hostname"]) == (16, 65536, 500, "big")


def test_spawn_power_reboot_snapshot_destroy(tmp_path: Path) -> None:
    d = driver(tmp_path)
    image = tmp_path / "image.raw"
    image.write_bytes(b"IMAGE-BYTES")
    inst = server()
    d.spawn(instance=inst, image_meta={"path": str(image)}, network_info=[])
    assert d.list_instance_uuids() == [inst.uuid]
    assert d.get_info(inst)["power_state"] == PowerState.RUNNING
    assert (d.instance_dir(inst) / "disk").read_bytes() == b"IMAGE-BYTES"
    d.power_off(instance=inst)
    assert d.get_info(inst)["power_state"] == PowerState.SHUTDOWN
    d.power_on(instance=inst)
    d.reboot(instance=inst, reboot_type="HARD")
    assert d.get_info(inst)["power_state"] == PowerState.RUNNING
    snap = tmp_path / "snap"
    d.snapshot(instance=inst, target_path=snap)
    assert snap.read_bytes() == b"IMAGE-BYTES"
    used = d.get_available_resource()
    assert used["vcpus_used"] == 1 and used["memory_mb_used"] == 128
    d.destroy(instance=inst, destroy_disks=False)
    assert d.list_instance_uuids() == [] and (d.instance_dir(inst) / "disk").exists()
    d.spawn(instance=inst, image_meta={"path": str(image)}, network_info=[])
    d.destroy(instance=inst, destroy_disks=True)
    assert not d.instance_dir(inst).exists()
    with pytest.raises(InstanceNotFoundOnHypervisor):
        d.get_info(inst)


def test_a_qcow2_image_spawns_a_raw_disk_and_snapshots_raw(tmp_path: Path) -> None:
    import subprocess

    # given a qcow2 image holding a guest disk that starts with a marker
    raw = tmp_path / "guest.raw"
    raw.write_bytes(b"GUEST-DISK" + bytes(65536 - 10))  # whole sectors: qemu-img keeps the size
    image = tmp_path / "image.qcow2"
    subprocess.run(["qemu-img", "convert", "-f", "raw", "-O", "qcow2", str(raw), str(image)],  # noqa: S607
                   check=True, capture_output=True)
    d, inst = driver(tmp_path), server()
    # when a guest is spawned from it
    d.spawn(instance=inst, image_meta={"path": str(image), "disk_format": "qcow2"}, network_info=[])
    # then its disk is the raw guest disk (converted, as Nova's force_raw_images), and so is a snapshot
    disk = (d.instance_dir(inst) / "disk").read_bytes()
    assert disk.startswith(b"GUEST-DISK") and len(disk) == raw.stat().st_size
    snap = tmp_path / "snap"
    d.snapshot(instance=inst, target_path=snap)
    assert snap.read_bytes() == disk


def test_identity_file_read_write(tmp_path: Path) -> None:
    assert identity.read_node_uuid(tmp_path) is None
    value = str(uuid.uuid4())
    identity.write_node_uuid(tmp_path, value)
    assert identity.read_node_uuid(tmp_path) == value
    with pytest.raises(InvalidNodeConfiguration, match="appeared unexpectedly"):
        identity.write_node_uuid(tmp_path, value)
    (tmp_path / "compute_id").write_text(f"   {value.upper()}  \n")
    assert identity.read_node_uuid(tmp_path) == value  # stripped and canonical
    (tmp_path / "compute_id").write_text("garbage")
    with pytest.raises(InvalidNodeConfiguration, match="Unable to parse UUID"):
        identity.read_node_uuid(tmp_path)


class DaemonDriver(LibvirtDriver):
    """The driver's real-daemon ownership rules (several hosts on one libvirtd) over a test connection."""

    @property
    def is_test(self) -> bool:
        return False


def test_on_a_shared_daemon_a_renamed_host_still_sees_its_machines_guests(tmp_path: Path) -> None:
    # given a guest spawned by host h1 (its files under h1's state path) on a daemon shared with h2
    d = driver(tmp_path, "h1")
    inst = server()
    d.spawn(instance=inst, image_meta=None, network_info=[])
    as_h1 = DaemonDriver(host="h1", uri=d.uri, state_path=d.state_path)
    renamed = DaemonDriver(host="h1-renamed", uri=d.uri, state_path=d.state_path)
    neighbour = DaemonDriver(host="h2", uri=d.uri, state_path=tmp_path / "h2")
    for other in (as_h1, renamed, neighbour):
        other.conn = d.conn
    # then the same machine under a new name counts the guest (seed 2's "existing instances" check),
    # and the neighbour, whose state path differs, does not
    assert as_h1.list_instance_uuids() == [inst.uuid]
    assert renamed.list_instance_uuids() == [inst.uuid]
    assert neighbour.list_instance_uuids() == []


def test_pause_suspend_rescue_and_crash_dump_on_the_test_driver(tmp_path: Path) -> None:
    # given a running guest with a disk
    d = driver(tmp_path)
    image = tmp_path / "image.raw"
    image.write_bytes(b"IMAGE-BYTES")
    rescue_image = tmp_path / "rescue.raw"
    rescue_image.write_bytes(b"RESCUE-BYTES")
    inst = server()
    d.spawn(instance=inst, image_meta={"path": str(image)}, network_info=[])
    # when it is paused and unpaused: the vCPUs stop and run again
    d.pause(instance=inst)
    assert d.get_info(inst)["power_state"] == PowerState.PAUSED
    d.unpause(instance=inst)
    assert d.get_info(inst)["power_state"] == PowerState.RUNNING
    # when it is suspended: a managed save, the domain is off; resume starts it from the save
    d.suspend(instance=inst)
    dom = d.conn.lookupByName(d.domain_name(inst))
    assert d.get_info(inst)["power_state"] == PowerState.SHUTDOWN and dom.hasManagedSaveImage(0)
    d.resume(instance=inst)
    assert d.get_info(inst)["power_state"] == PowerState.RUNNING and not dom.hasManagedSaveImage(0)
    # when it is rescued: a rescue domain with the rescue image's copy, the old one kept aside
    d.rescue(instance=inst, rescue_image_meta={"path": str(rescue_image)}, network_info=[])
    rescued = d.conn.lookupByName(d.domain_name(inst))
    assert "<title>rescue</title>" in rescued.XMLDesc(0) and rescued.isActive()
    assert (d.instance_dir(inst) / "disk.rescue").read_bytes() == b"RESCUE-BYTES"
    assert (d.instance_dir(inst) / "disk").read_bytes() == b"IMAGE-BYTES"
    d.trigger_crash_dump(instance=inst)
    # then unrescue boots the kept domain again and drops the rescue disk
    d.unrescue(instance=inst)
    back = d.conn.lookupByName(d.domain_name(inst))
    assert "rescue" not in back.XMLDesc(0) and back.isActive()
    assert not (d.instance_dir(inst) / "disk.rescue").exists()
    with pytest.raises(VirtDriverError, match="not rescued"):
        d.unrescue(instance=inst)


def test_a_suspended_guest_is_destroyed_with_its_managed_save(tmp_path: Path) -> None:
    d = driver(tmp_path)
    inst = server()
    d.spawn(instance=inst, image_meta=None, network_info=[])
    d.suspend(instance=inst)
    d.destroy(instance=inst, destroy_disks=True)
    assert d.list_instance_uuids() == []


def test_consoles_of_a_test_driver_guest(tmp_path: Path) -> None:
    # given a guest spawned on the test driver
    d = driver(tmp_path)
    inst, other = server(hostname="vm-a"), server(hostname="vm-b")
    d.spawn(instance=inst, image_meta=None, network_info=[])
    d.spawn(instance=other, image_meta=None, network_info=[])
    # then its console log is the boot it "printed": its own uuid, its host, its login prompt
    log = d.get_console_output(instance=inst).decode()
    assert f"instance {inst.uuid}" in log and "on h1" in log and log.endswith("vm-a login: \n")
    assert inst.uuid not in d.get_console_output(instance=other).decode()
    # its VNC and serial consoles are at fixed ports derived from its uuid
    vnc, serial = d.get_vnc_console(instance=inst), d.get_serial_console(instance=inst)
    assert vnc["host"] == serial["host"] == "127.0.0.1"
    n = int(inst.uuid.replace("-", ""), 16) % 10000
    assert (vnc["port"], serial["port"]) == (20000 + n, 10000 + n)
    # and its console servers listen there: the serial line replays its log and echoes what is typed
    with socket.create_connection(("127.0.0.1", serial["port"]), timeout=10) as line:
        assert _recv_until(line, b"vm-a login: \n").endswith(b"vm-a login: \n")
        line.sendall(b"root\r")
        assert _recv_until(line, b"root\r\n") == b"root\r\n"
    assert d.get_console_output(instance=inst).endswith(b"vm-a login: \nroot\r\n")
    # the VNC server speaks RFB 3.8
    with socket.create_connection(("127.0.0.1", vnc["port"]), timeout=10) as screen:
        assert _recv_until(screen, b"\n") == b"RFB 003.008\n"
    # a stopped guest has no console to open (its servers are gone); a guest that is gone has no log
    d.power_off(instance=inst)
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", serial["port"]), timeout=5).close()
    with pytest.raises(ConsoleTypeUnavailable):
        d.get_vnc_console(instance=inst)
    d.destroy(instance=inst, destroy_disks=True)
    with pytest.raises(InstanceNotFoundOnHypervisor):
        d.get_console_output(instance=inst)


def test_a_test_guest_whose_console_port_another_process_holds_is_served_elsewhere(tmp_path: Path) -> None:
    # given a guest of the test driver, and something else (another cloud's guest on this machine,
    # any server) listening on the ports its consoles prefer (derived from its uuid)
    d = driver(tmp_path)
    inst = server(hostname="vm-a")
    d.spawn(instance=inst, image_meta=None, network_info=[])
    n = int(inst.uuid.replace("-", ""), 16) % 10000
    with socket.create_server(("127.0.0.1", 10000 + n)), socket.create_server(("127.0.0.1", 20000 + n)):
        # when its consoles are asked for
        serial, vnc = d.get_serial_console(instance=inst), d.get_vnc_console(instance=inst)
        # then they are handed out at other ports, where its own console servers answer (a proxy sent
        # to the preferred ports would have reached the other process)
        assert serial["port"] != 10000 + n and vnc["port"] != 20000 + n
        with socket.create_connection(("127.0.0.1", serial["port"]), timeout=10) as line:
            assert _recv_until(line, b"vm-a login: \n").endswith(b"vm-a login: \n")
        with socket.create_connection(("127.0.0.1", vnc["port"]), timeout=10) as screen:
            assert _recv_until(screen, b"\n") == b"RFB 003.008\n"
        # and asked again, the same servers at the same ports
        assert d.get_serial_console(instance=inst) == serial and d.get_vnc_console(instance=inst) == vnc
    d.destroy(instance=inst, destroy_disks=True)


def test_a_real_guests_serial_port_is_one_no_domain_names_and_nothing_listens_on(
        tmp_path: Path, settings: Any) -> None:
    # given a port range whose first port a defined domain of the daemon names and whose second
    # something listens on
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        low = int(probe.getsockname()[1])
    settings.SERIAL_CONSOLE_PORT_RANGE = (low, low + 2)
    d = driver(tmp_path)
    d.conn.defineXML(
        "<domain type='test'><name>other</name><memory unit='MiB'>64</memory><os><type>hvm</type></os>"
        f"<devices><serial type='tcp'><source mode='bind' host='127.0.0.1' service='{low}'/>"
        "<protocol type='raw'/><target port='0'/></serial></devices></domain>")
    try:
        with socket.create_server(("127.0.0.1", low + 1)):
            # then the port picked is the third
            assert d._free_serial_port() == low + 2
    except OSError:
        pytest.skip("another process took a port of the range meanwhile")


def test_serial_port_picking_is_one_process_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # given the machine-wide lock of the serial ports (its own file here)
    lock = tmp_path / "serial-ports.lock"
    monkeypatch.setattr(libvirt_driver, "SERIAL_PORTS_LOCK", lock)
    # when a compute holds it (between picking a real guest's serial port and defining the guest)
    with libvirt_driver.serial_ports_claimed():
        # then no other holder gets it (flock: another open file, as another process's would be)
        with lock.open() as other:
            with pytest.raises(BlockingIOError):
                fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
    # and once the guest is defined, the next one does
    with lock.open() as other:
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)


def test_console_log_tail() -> None:
    log = b"one\ntwo\nthree"
    assert tail_lines(log, None) == log
    assert tail_lines(log, 0) == b""
    assert tail_lines(log, 2) == b"two\nthree"
    assert tail_lines(log, 10) == log


def _recv_until(conn: socket.socket, end: bytes) -> bytes:
    data = b""
    while not data.endswith(end):
        chunk = conn.recv(4096)
        if not chunk:
            break
        data += chunk
    return data


def test_live_migration_copies_the_disks_and_each_side_cleans_only_its_own_guest(tmp_path: Path) -> None:
    # given a guest running on a source host
    source, dest = driver(tmp_path, "src"), driver(tmp_path, "dst")
    image = tmp_path / "image.raw"
    image.write_bytes(b"IMAGE-BYTES")
    inst = server()
    source.spawn(instance=inst, image_meta={"path": str(image)}, network_info=[])
    (source.instance_dir(inst) / "disk").write_bytes(b"WRITTEN-BY-THE-GUEST")
    # when the destination copies its disks and starts it, and the source cleans up
    dest.finish_migration(instance=inst, disk_source=str(source.instance_dir(inst)))
    dest.spawn(instance=inst, image_meta={"path": str(image)}, network_info=[])
    assert (dest.guest_host(inst), source.guest_host(inst)) == ("dst", "src")
    source.cleanup_live_migration_source(instance=inst)
    # then the guest runs on the destination only, on the source's data
    assert source.list_instance_uuids() == [] and not source.instance_dir(inst).exists()
    assert dest.get_info(inst)["power_state"] == PowerState.RUNNING
    assert (dest.instance_dir(inst) / "disk").read_bytes() == b"WRITTEN-BY-THE-GUEST"


class SharedDaemon(LibvirtDriver):
    """A host on a libvirt daemon another host uses too (qemu:///system on one machine)."""

    is_test = False  # type: ignore[assignment]


def test_on_a_shared_daemon_the_source_leaves_the_destinations_guest_alone(tmp_path: Path) -> None:
    # given the destination's guest, defined on the daemon both hosts use
    dest = driver(tmp_path, "dst")
    inst = server()
    dest.spawn(instance=inst, image_meta=None, network_info=[])
    state = tmp_path / "src"
    node = write_test_node(state, hostname="src", vcpus=4, memory_mb=8192, disk_gb=40)
    source = SharedDaemon(host="src", uri=f"test://{node}", state_path=state)
    source.conn = dest.conn
    source.instance_dir(inst).mkdir(parents=True)
    (source.instance_dir(inst) / "disk").write_bytes(b"OLD")
    # when the source cleans up after the move
    assert source.guest_host(inst) == "dst"
    source.cleanup_live_migration_source(instance=inst)
    # then only its own directory goes: the guest of that name is the destination's
    assert not source.instance_dir(inst).exists()
    assert dest.get_info(inst)["power_state"] == PowerState.RUNNING


def test_set_admin_password_through_the_agent_of_a_running_guest(tmp_path: Path) -> None:
    # given a running test guest
    d = driver(tmp_path)
    inst = server()
    d.spawn(instance=inst, image_meta=None, network_info=[])
    # when its password is set, then libvirt takes it (the test driver accepts any user)
    d.set_admin_password(instance=inst, user="root", password="x")
    # when the guest is shut off, then libvirt's "not running" is the driver's InstanceNotRunning
    d.power_off(instance=inst)
    with pytest.raises(libvirt_driver.InstanceNotRunning):
        d.set_admin_password(instance=inst, user="root", password="x")
    # and a guest the hypervisor does not know is InstanceNotFoundOnHypervisor
    with pytest.raises(InstanceNotFoundOnHypervisor):
        d.set_admin_password(instance=server(), user="root", password="x")


def test_a_real_guest_gets_the_agent_channel_when_its_image_asks(
        tmp_path: Path, settings: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # given the driver of a real hypervisor (the XML only is made) and no serial console
    settings.SERIAL_CONSOLE_ENABLED = False
    d = driver(tmp_path)
    monkeypatch.setattr(LibvirtDriver, "is_test", property(lambda _self: False))
    channel = "<channel type='unix'><target type='virtio' name='org.qemu.guest_agent.0'/></channel>"
    # when the image of the request asks for the agent, then the domain has its channel
    assert channel in d._domain_xml(server(), None, {"properties": {"hw_qemu_guest_agent": "yes"}}, [])
    # when it says no, or nothing and the server's kept image properties say nothing, then none
    assert channel not in d._domain_xml(server(), None, {"properties": {"hw_qemu_guest_agent": "no"}}, [])
    assert channel not in d._domain_xml(server(system_metadata={}), None, None, [])
    # when only the server's kept image properties ask (a volume-backed server, a reboot), then it has it
    kept = server(system_metadata={"image_hw_qemu_guest_agent": "True"})
    assert channel in d._domain_xml(kept, None, None, [])
