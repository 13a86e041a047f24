"""A real guest through the API (issue 10 item 2): ``manage.py run_cloud`` with every process
real and the four demo compute hosts driving ``qemu:///system`` (``CLOUDCORE_DEMO_LIBVIRT_URI``;
TCG, the hosts share the one daemon, each owning the domains it created). A kernel, a busybox
initramfs and a root disk are uploaded with the openstack CLI (image API), the root image
naming the other two as ``kernel_id``/``ramdisk_id``; the server is then driven through the
compute API: boot (the guest prints its marker on the serial console), stop, start (marker
again), shelve, shelve-offload, unshelve to the *other* host of its cell at 2.91 (admin, the
guest boots there from the shelved snapshot with the instance's kernel and ramdisk) and
delete, checking the libvirt domain ``instance-<uuid>`` at each step. Then security groups: two
servers whose guests ping each other until the rule that lets ICMP in is deleted.

Skipped when QEMU, a kernel, busybox or libvirtd are missing; libvirtd/virtlogd are started
when not running and then stopped again.
"""
from __future__ import annotations

import base64
import json
import re
import shutil
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from .cloud import LiveCloud, free_port, make_env
from .test_cli_consoles import open_console, token_of
from .test_real_guest import MARKER, build_initramfs, kernel_path, system_libvirt, wait_console

pytestmark = [pytest.mark.slow, pytest.mark.e2e]

#: the other host of the same cell (compute1-2 in cell1, compute3-4 in cell2)
OTHER_HOST = {"compute1": "compute2", "compute2": "compute1", "compute3": "compute4", "compute4": "compute3"}
DEMO_HOSTS = tuple(OTHER_HOST)
MICROVERSION = "2.91"


class ApiError(AssertionError):
    pass


@dataclass
class Api:
    """The compute API as one user of the live cloud's clouds.yaml (Keystone token, microversion)."""

    cloud: LiveCloud
    name: str
    token: str = ""
    microversion: str = MICROVERSION

    def __post_init__(self) -> None:
        auth = yaml.safe_load(self.cloud.clouds_yaml.read_text())["clouds"][self.name]["auth"]
        body = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
            "name": auth["username"], "password": auth["password"], "domain": {"name": "Default"}}}},
            "scope": {"project": {"name": auth["project_name"], "domain": {"name": "Default"}}}}}
        request = urllib.request.Request(f"{self.cloud.url}/identity/v3/auth/tokens", method="POST",
                                         data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 - the local cloud
            self.token = response.headers["X-Subject-Token"]

    def request(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        request = urllib.request.Request(
            f"{self.cloud.url}/compute/v2.1{path}", method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"X-Auth-Token": self.token, "Content-Type": "application/json", "Accept": "application/json",
                     "OpenStack-API-Version": f"compute {self.microversion}"})
        try:
            with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310 - the local cloud
                status, raw = response.status, response.read()
        except urllib.error.HTTPError as exc:
            status, raw = exc.code, exc.read()
        try:
            return status, json.loads(raw) if raw else None
        except ValueError:
            return status, raw

    def call(self, method: str, path: str, body: Any = None) -> Any:
        status, data = self.request(method, path, body)
        if status not in (200, 201, 202, 204):
            raise ApiError(f"{method} {path} -> {status}: {str(data)[:2000]}\n{self.cloud.tail(30)}")
        return data

    def action(self, server_id: str, body: dict[str, Any]) -> None:
        self.call("POST", f"/servers/{server_id}/action", body)

    def wait_status(self, server_id: str, wanted: str, timeout: float = 120) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        server: dict[str, Any] = {}
        while time.monotonic() < deadline:
            server = self.call("GET", f"/servers/{server_id}")["server"]
            if server["status"] == wanted and not server.get("OS-EXT-STS:task_state"):
                return server
            if server["status"] == "ERROR" and wanted != "ERROR":
                break
            time.sleep(0.5)
        raise ApiError(f"server {server_id} is {server.get('status')} ({server.get('OS-EXT-STS:task_state')}), "
                       f"not {wanted}: {server.get('fault')}\n{self.cloud.tail(40)}")

    def wait_gone(self, server_id: str, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.request("GET", f"/servers/{server_id}")[0] == 404:
                return
            time.sleep(0.5)
        raise ApiError(f"server {server_id} was not deleted\n{self.cloud.tail(40)}")


@dataclass
class RealCloud:
    cloud: LiveCloud
    libvirt: Any
    work: Path

    def state(self, host: str) -> Path:
        return self.cloud.var_dir / "state" / host

    def console(self, host: str, server_id: str) -> Path:
        return self.state(host) / "instances" / server_id / "console.log"

    def domain(self, server_id: str) -> Any | None:
        conn = self.libvirt.open("qemu:///system")
        try:
            return conn.lookupByName(f"instance-{server_id}")
        except self.libvirt.libvirtError:
            return None
        finally:
            conn.close()

    def domain_host(self, dom: Any) -> str:
        return str(dom.metadata(self.libvirt.VIR_DOMAIN_METADATA_DESCRIPTION, None)).removeprefix("host=")

    def wait_marker(self, host: str, server_id: str, timeout: float = 150) -> None:
        console = self.console(host, server_id)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if console.exists() and MARKER.encode() in console.read_bytes():
                return
            time.sleep(0.5)
        tail = console.read_bytes()[-3000:] if console.exists() else b"(no console log)"
        pytest.fail(f"no marker on {host}'s serial console of {server_id}:\n{tail!r}")


def talk_through_proxy(proxy_port: int, token: str, line: str, timeout: float = 60) -> None:
    """Type ``line`` on the guest's serial console through the console proxy (a websocket) and read
    until the guest's initramfs answers it."""
    wanted = f"{MARKER}-ECHO {line}".encode()
    seen = b""
    ws = open_console(proxy_port, token)
    ws.socket.settimeout(3)
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and wanted not in seen:
            ws.send(f"{line}\n".encode())
            stop = time.monotonic() + 3
            while time.monotonic() < stop and wanted not in seen:
                with suppress(TimeoutError):
                    seen += ws.recv() or b""
    finally:
        ws.close()
    assert wanted in seen, seen[-2000:]


def _demo_domains(libvirt: Any) -> list[str]:
    """Domains on the daemon that belong to a demo host (left by an interrupted earlier run)."""
    conn = libvirt.open("qemu:///system")
    try:
        found = []
        for dom in conn.listAllDomains():
            try:
                owner = dom.metadata(libvirt.VIR_DOMAIN_METADATA_DESCRIPTION, None)
            except libvirt.libvirtError:
                continue
            if dom.name().startswith("instance-") and owner in {f"host={h}" for h in DEMO_HOSTS}:
                found.append(dom.name())
        return found
    finally:
        conn.close()


def _remove_domains(libvirt: Any, names: list[str]) -> None:
    conn = libvirt.open("qemu:///system")
    try:
        for name in names:
            try:
                dom = conn.lookupByName(name)
                if dom.isActive():
                    dom.destroy()
                dom.undefine()
            except libvirt.libvirtError:
                pass
    finally:
        conn.close()


def _cloudcore_networks(libvirt: Any) -> set[str]:
    """The libvirt networks compute hosts define for cloudcore networks (``cloudcore-<id>``)."""
    conn = libvirt.open("qemu:///system")
    try:
        return {n.name() for n in conn.listAllNetworks() if n.name().startswith("cloudcore-")}
    finally:
        conn.close()


def _remove_networks(libvirt: Any, names: set[str]) -> None:
    """Stop and undefine them (the bridge goes with them)."""
    conn = libvirt.open("qemu:///system")
    try:
        for name in names:
            try:
                network = conn.networkLookupByName(name)
                if network.isActive():
                    network.destroy()
                network.undefine()
            except libvirt.libvirtError:
                pass
    finally:
        conn.close()


@pytest.fixture(scope="module")
def real_cloud() -> Iterator[RealCloud]:
    with system_libvirt() as libvirt:
        leftovers = _demo_domains(libvirt)
        if leftovers:
            pytest.skip(f"qemu:///system already has demo-host domains {leftovers}: a new compute service "
                        "refuses to start over them (remove them with virsh)")
        # qemu runs as its own user and reads the kernel/ramdisk copies and disks under the state path
        work = Path(tempfile.mkdtemp(prefix="cloudcore-realapi-", dir="/var/tmp"))
        work.chmod(0o755)
        networks_before = _cloudcore_networks(libvirt)
        port = free_port()
        env = make_env(work, port, CLOUDCORE_DEMO_LIBVIRT_URI="qemu:///system", CLOUDCORE_LIBVIRT_VIRT_TYPE="qemu",
                       CLOUDCORE_SHELVED_OFFLOAD_TIME="-1")
        cloud = LiveCloud(var_dir=work, port=port, env=env)
        try:
            cloud.start()
            admin = Api(cloud, "cloudcore-admin")
            deadline = time.monotonic() + 90
            while True:
                services = admin.call("GET", "/os-services?binary=nova-compute")["services"]
                if sorted(s["host"] for s in services if s["state"] == "up") == sorted(DEMO_HOSTS):
                    break
                if time.monotonic() > deadline:
                    raise AssertionError(f"the compute hosts did not come up: {services}\n{cloud.tail()}")
                time.sleep(1)
            yield RealCloud(cloud=cloud, libvirt=libvirt, work=work)
        finally:
            try:
                _remove_domains(libvirt, _demo_domains(libvirt))  # whatever a failed step left running
            finally:
                cloud.stop()
                # the isolated networks the hosts defined for this run's cloud (its own network ids)
                _remove_networks(libvirt, _cloudcore_networks(libvirt) - networks_before)
                shutil.rmtree(work, ignore_errors=True)


def _upload_images(real: RealCloud, *, heads: tuple[bytes, ...] = (b"CLOUDCORE-REAL-ROOT",),
                   with_drivers: bool = False, name: str = "real") -> list[str]:
    """kernel (aki), ramdisk (ari; ``with_drivers``: the initramfs that loads the virtio and cdrom
    drivers) and a small raw root disk naming them per first line of ``heads``; returns the root
    images' ids."""
    files = real.work / f"upload-{name}"
    files.mkdir()
    initrd = build_initramfs(files / "initrd.gz", with_drivers=with_drivers)
    cli = real.cloud.openstack_json
    kernel = cli("image", "create", "--disk-format", "aki", "--container-format", "aki", "--file",
                 str(kernel_path()), f"{name}-kernel")
    ramdisk = cli("image", "create", "--disk-format", "ari", "--container-format", "ari", "--file", str(initrd),
                  f"{name}-ramdisk")
    images = []
    for index, head in enumerate(heads):
        root = files / f"root-{index}.img"
        root.write_bytes((head + b"\n").ljust(1024 * 1024, b"\0"))
        image = cli("image", "create", "--disk-format", "raw", "--container-format", "bare", "--file", str(root),
                    "--property", f"kernel_id={kernel['id']}", "--property", f"ramdisk_id={ramdisk['id']}",
                    f"{name}-root-{index}")
        shown = cli("image", "show", image["id"])
        assert shown["status"] == "active"
        assert shown["properties"]["kernel_id"] == kernel["id"]
        images.append(str(image["id"]))
    return images


def test_real_guest_through_the_api(real_cloud: RealCloud) -> None:
    real = real_cloud
    started = time.monotonic()
    (image_id,) = _upload_images(real)
    demo, admin = Api(real.cloud, "cloudcore-demo"), Api(real.cloud, "cloudcore-demo-admin")
    cloud_admin = Api(real.cloud, "cloudcore-admin")  # sees OS-EXT-SRV-ATTR:host

    # hypervisors: four nodes, one per host, all QEMU on the shared daemon
    hypervisors = cloud_admin.call("GET", "/os-hypervisors/detail")["hypervisors"]
    assert sorted(h["hypervisor_hostname"] for h in hypervisors) == sorted(DEMO_HOSTS)
    assert {h["hypervisor_type"] for h in hypervisors} == {"QEMU"}

    # boot
    server_id = demo.call("POST", "/servers", {"server": {
        "name": "real-guest", "imageRef": image_id, "flavorRef": "1", "networks": "auto"}})["server"]["id"]
    shown = cloud_admin.wait_status(server_id, "ACTIVE", timeout=180)
    host = shown["OS-EXT-SRV-ATTR:host"]
    assert host in OTHER_HOST
    assert shown["OS-EXT-SRV-ATTR:instance_name"] == f"instance-{server_id}"
    dom = real.domain(server_id)
    assert dom is not None and dom.isActive() and real.domain_host(dom) == host
    xml = dom.XMLDesc(0)
    assert "<domain type='qemu'" in xml or 'type="qemu"' in xml.split(">", 1)[0]  # TCG
    assert str(real.state(host) / "instances" / server_id / "kernel") in xml
    real.wait_marker(host, server_id)

    # consoles: the log through the API, and the guest's serial console through the serial proxy
    assert MARKER in demo.call("POST", f"/servers/{server_id}/action", {"os-getConsoleOutput": {}})["output"]
    url = demo.call("POST", f"/servers/{server_id}/remote-consoles",
                    {"remote_console": {"protocol": "serial", "type": "serial"}})["remote_console"]["url"]
    assert url.startswith(f"ws://127.0.0.1:{real.cloud.env['CLOUDCORE_SERIALPROXY_PORT']}/?token=")
    talk_through_proxy(int(real.cloud.env["CLOUDCORE_SERIALPROXY_PORT"]), token_of(url), "via-the-proxy")

    # stop / start: the domain goes down and comes back, printing the marker again
    demo.action(server_id, {"os-stop": None})
    assert demo.wait_status(server_id, "SHUTOFF")["OS-EXT-STS:power_state"] == 4
    dom = real.domain(server_id)
    assert dom is not None and not dom.isActive()
    console = real.console(host, server_id)
    console.write_bytes(b"")  # what follows comes from the second boot
    demo.action(server_id, {"os-start": None})
    assert demo.wait_status(server_id, "ACTIVE")["OS-EXT-STS:power_state"] == 1
    dom = real.domain(server_id)
    assert dom is not None and dom.isActive()
    real.wait_marker(host, server_id)

    # shelve (SHELVED_OFFLOAD_TIME -1: kept on the host, powered off), then offload (domain gone)
    demo.action(server_id, {"shelve": None})
    demo.wait_status(server_id, "SHELVED")
    dom = real.domain(server_id)
    assert dom is not None and not dom.isActive() and real.domain_host(dom) == host
    cloud_admin.action(server_id, {"shelveOffload": None})  # ADMIN (os-shelve:shelve_offload)
    shown = cloud_admin.wait_status(server_id, "SHELVED_OFFLOADED")
    assert shown["OS-EXT-SRV-ATTR:host"] is None
    assert real.domain(server_id) is None
    assert not (real.state(host) / "instances" / server_id).exists()

    # unshelve to the other host of the cell (2.91, admin): it boots there from the shelved snapshot
    other = OTHER_HOST[host]
    admin.action(server_id, {"unshelve": {"host": other}})  # project admin (os-shelve:unshelve_to_host)
    shown = cloud_admin.wait_status(server_id, "ACTIVE", timeout=180)
    assert shown["OS-EXT-SRV-ATTR:host"] == other
    dom = real.domain(server_id)
    assert dom is not None and dom.isActive() and real.domain_host(dom) == other
    assert str(real.state(other) / "instances" / server_id / "kernel") in dom.XMLDesc(0)
    real.wait_marker(other, server_id)

    # delete: the domain and its files go
    demo.call("DELETE", f"/servers/{server_id}")
    demo.wait_gone(server_id)
    assert real.domain(server_id) is None
    assert not (real.state(other) / "instances" / server_id).exists()
    assert time.monotonic() - started < 600


def _upload_guest_with_drivers(real: RealCloud) -> str:
    """kernel, an initramfs with the NIC and config drive drivers (it configures its fixed IP and
    pings what its user data names), and a root disk naming both; returns the root image id."""
    files = real.work / "upload-net"
    files.mkdir()
    initrd = build_initramfs(files / "initrd.gz", with_drivers=True)
    root = files / "root.img"
    root.write_bytes(b"CLOUDCORE-SG-ROOT\n".ljust(1024 * 1024, b"\0"))
    cli = real.cloud.openstack_json
    kernel = cli("image", "create", "--disk-format", "aki", "--container-format", "aki", "--file",
                 str(kernel_path()), "sg-kernel")
    ramdisk = cli("image", "create", "--disk-format", "ari", "--container-format", "ari", "--file", str(initrd),
                  "sg-ramdisk")
    image = cli("image", "create", "--disk-format", "raw", "--container-format", "bare", "--file", str(root),
                "--property", f"kernel_id={kernel['id']}", "--property", f"ramdisk_id={ramdisk['id']}", "sg-root")
    return str(image["id"])


def _pings(console: Path, after: int = 0) -> list[tuple[int, str]]:
    text = console.read_text(errors="replace") if console.exists() else ""
    return [(int(n), r) for n, r in re.findall(r"GUEST-PING (\d+) \S+ (ok|fail)", text) if int(n) > after]


def _wait_pings(console: Path, wanted: str, *, after: int, count: int, timeout: float) -> int:
    """Wait for ``count`` pings in a row numbered above ``after`` that answered ``wanted``; the last number."""
    deadline = time.monotonic() + timeout
    seen: list[tuple[int, str]] = []
    while time.monotonic() < deadline:
        seen = _pings(console, after)
        if len(seen) >= count and {r for _n, r in seen[-count:]} == {wanted}:
            return seen[-1][0]
        time.sleep(1)
    pytest.fail(f"no {count} pings in a row {wanted!r} after #{after} on {console}: {seen[-20:]}")


def test_security_group_rules_reach_real_guests_through_the_api(real_cloud: RealCloud) -> None:
    """Issue 20 item 2 through the API and the CLI: two servers in a group that lets ICMP in from its
    members; the second pings the first's fixed IP (its user data asks) and succeeds; the rule is
    deleted with the CLI, the network service casts the refresh to the hosts, and the pings fail."""
    real = real_cloud
    image_id = _upload_guest_with_drivers(real)
    demo = Api(real.cloud, "cloudcore-demo")
    cloud_admin = Api(real.cloud, "cloudcore-admin")
    cli = real.cloud.openstack_json
    group = cli("security", "group", "create", "pingers")
    rule = cli("security", "group", "rule", "create", "--ingress", "--protocol", "icmp", "--remote-group",
               group["id"], group["id"])
    servers: list[str] = []
    try:
        first = demo.call("POST", "/servers", {"server": {
            "name": "sg-first", "imageRef": image_id, "flavorRef": "1", "networks": "auto", "config_drive": True,
            "security_groups": [{"name": "pingers"}]}})["server"]["id"]
        servers.append(first)
        shown = cloud_admin.wait_status(first, "ACTIVE", timeout=240)
        (target,) = [a["addr"] for addrs in shown["addresses"].values() for a in addrs]
        user_data = base64.b64encode(f"CLOUDCORE-PING {target}\n".encode()).decode()
        second = demo.call("POST", "/servers", {"server": {
            "name": "sg-second", "imageRef": image_id, "flavorRef": "1", "networks": "auto", "config_drive": True,
            "security_groups": [{"name": "pingers"}], "user_data": user_data}})["server"]["id"]
        servers.append(second)
        host = cloud_admin.wait_status(second, "ACTIVE", timeout=240)["OS-EXT-SRV-ATTR:host"]
        console = real.console(host, second)
        # the second's pings of the first (let in: the second joined the group) are answered
        last = _wait_pings(console, "ok", after=0, count=3, timeout=300)
        # the ICMP rule is deleted: the hosts redefine the filters and the pings fail
        real.cloud.openstack("security", "group", "rule", "delete", rule["id"])
        _wait_pings(console, "fail", after=last + 3, count=5, timeout=120)
    finally:
        for server_id in servers:
            demo.request("DELETE", f"/servers/{server_id}")
        for server_id in servers:
            demo.wait_gone(server_id)


def _boot_from_volume(api: Api, name: str, image: str, user_data: bytes) -> str:
    """A server (m1.tiny, a config drive with ``user_data``) on a 1 GiB volume made from ``image``."""
    import base64

    return str(api.call("POST", "/servers", {"server": {
        "name": name, "flavorRef": "1", "networks": "auto", "config_drive": True,
        "user_data": base64.b64encode(user_data).decode(),
        "block_device_mapping_v2": [{"boot_index": 0, "uuid": image, "source_type": "image",
                                     "destination_type": "volume", "volume_size": 1,
                                     "delete_on_termination": True}]}})["server"]["id"])


def test_real_volume_backed_guest_writes_its_volume_and_a_2_93_rebuild_reimages_it(real_cloud: RealCloud) -> None:
    """Issue 17 item 12 on real QEMU: a server booted from a volume made from an image (direct
    kernel boot with the image's kernel and ramdisk) writes a marker on its root volume (its user
    data, run by the guest's init); the marker is there after a hard reboot; a rebuild at 2.93 with
    another image reimages the volume, and the guest then reads that image's first line on it."""
    real = real_cloud
    first, second = _upload_images(real, heads=(b"BFV-FIRST-IMAGE", b"BFV-REIMAGED-IMAGE"), with_drivers=True,
                                   name="bfv")
    script = b"#!/bin/sh\necho VOLUME-WRITTEN-BY-GUEST | dd of=/dev/vda conv=notrunc\nsync\n"
    demo = Api(real.cloud, "cloudcore-demo", microversion="2.93")
    cloud_admin = Api(real.cloud, "cloudcore-admin")
    server_id = _boot_from_volume(demo, "bfv-guest", first, script)
    disk = f"GUEST-DISK sectors={1024**3 // 512}"  # the root volume, as the guest's init reports it
    try:
        host = cloud_admin.wait_status(server_id, "ACTIVE", timeout=240)["OS-EXT-SRV-ATTR:host"]
        log = wait_console(real.console(host, server_id), "GUEST-USER-DATA-RAN")
        assert f"{disk} head=BFV-FIRST-IMAGE" in log, log[-3000:]
        # the guest's write is on the volume: the next boot reads it
        real.console(host, server_id).write_bytes(b"")
        demo.action(server_id, {"reboot": {"type": "HARD"}})
        demo.wait_status(server_id, "ACTIVE")
        log = wait_console(real.console(host, server_id), "GUEST-USER-DATA-RAN")
        assert f"{disk} head=VOLUME-WRITTEN-BY-GUEST" in log, log[-3000:]
        # a 2.93 rebuild reimages the root volume with the second image
        real.console(host, server_id).write_bytes(b"")
        demo.action(server_id, {"rebuild": {"imageRef": second}})
        host = cloud_admin.wait_status(server_id, "ACTIVE", timeout=240)["OS-EXT-SRV-ATTR:host"]
        log = wait_console(real.console(host, server_id), "GUEST-USER-DATA-RAN")
        # (what the boot reads before its user data writes the marker again)
        assert f"{disk} head=BFV-REIMAGED-IMAGE" in log, log[-3000:]
    finally:
        demo.call("DELETE", f"/servers/{server_id}")
        demo.wait_gone(server_id)


def test_real_volume_backed_guest_keeps_its_volume_data_across_a_cross_cell_resize(real_cloud: RealCloud) -> None:
    """Issue 17 item 12 on real QEMU: a volume-backed server in cell1 writes a marker on its root
    volume; resized into cell2 (the rule granted to the demo project, cell1's hosts disabled), the
    guest on a cell2 host reads the marker from the same volume; the resize is then confirmed."""
    import subprocess
    import sys

    from .cloud import ROOT

    real = real_cloud
    (image,) = _upload_images(real, heads=(b"BFV-XC-IMAGE",), with_drivers=True, name="xc")
    script = b"#!/bin/sh\necho CROSS-CELL-MARKER | dd of=/dev/vda conv=notrunc\nsync\n"
    demo, cloud_admin = Api(real.cloud, "cloudcore-demo"), Api(real.cloud, "cloudcore-admin")
    flavor = cloud_admin.call("POST", "/flavors", {"flavor": {"name": "xc.bfv", "ram": 384, "vcpus": 1,
                                                              "disk": 1}})["flavor"]["id"]
    granted = subprocess.run([sys.executable, "manage.py", "policy", "grant", "compute:servers:resize:cross_cell",
                              "--project", "demo"], cwd=ROOT, env=real.cloud.env, capture_output=True, text=True)
    assert granted.returncode == 0, granted.stderr

    def services(action: str, *hosts: str) -> None:
        for host in hosts:
            real.cloud.openstack("compute", "service", "set", f"--{action}", host, "nova-compute",
                                 cloud="cloudcore-admin")

    server_id = ""
    disk = f"GUEST-DISK sectors={1024**3 // 512}"  # the root volume, as the guest's init reports it
    services("disable", "compute3", "compute4")
    try:
        server_id = _boot_from_volume(demo, "xc-guest", image, script)
        source = cloud_admin.wait_status(server_id, "ACTIVE", timeout=240)["OS-EXT-SRV-ATTR:host"]
        assert source in ("compute1", "compute2")
        log = wait_console(real.console(source, server_id), "GUEST-USER-DATA-RAN")
        assert f"{disk} head=BFV-XC-IMAGE" in log, log[-3000:]
        # into cell2
        services("enable", "compute3", "compute4")
        services("disable", "compute1", "compute2")
        demo.action(server_id, {"resize": {"flavorRef": flavor}})
        dest = cloud_admin.wait_status(server_id, "VERIFY_RESIZE", timeout=300)["OS-EXT-SRV-ATTR:host"]
        assert dest in ("compute3", "compute4")
        log = wait_console(real.console(dest, server_id), "GUEST-USER-DATA-RAN")
        assert f"{disk} head=CROSS-CELL-MARKER" in log, log[-3000:]  # read before its user data writes
        demo.action(server_id, {"confirmResize": None})
        demo.wait_status(server_id, "ACTIVE")
    finally:
        services("enable", "compute1", "compute2", "compute3", "compute4")
        if server_id:
            demo.call("DELETE", f"/servers/{server_id}")
            demo.wait_gone(server_id)
