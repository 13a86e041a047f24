"""An in-process test cloud for functional tests through the HTTP API.

``cloud`` (pytest fixture; import it in your conftest: ``from tests.cloud import cloud  # noqa: F401``)
maps cell0/cell1/cell2 and builds:

- compute hosts ``compute1``/``compute2`` in cell1 (zone ``az1``) and ``compute3``/``compute4`` in
  cell2 (zone ``az2``): Service + ComputeNode rows, HostMappings, placement resource providers with
  inventories (VCPU 4, MEMORY_MB 8192, DISK_GB 40 unless ``Cloud(...)`` is given other sizes);
- one libvirt ``test:///default`` virt driver per host registered in-process
  (``compute.drivers.register_driver``), so that builds define and start real test-driver
  domains named ``instance-<uuid>``; ``cloud.driver("compute1").fail_spawns = 2`` makes the next
  two spawns on that host fail (fault injection at the driver, not a mock of the service);
- the demo flavors (m1.tiny .. m1.large), the ``tiny`` image (public, active) and the shared
  ``demo-net`` network with subnet 10.0.0.0/24.

Tasks run eagerly (CELERY_TASK_ALWAYS_EAGER) and the API enqueues them on commit: every request
made through ``cloud.post/get/put/delete`` (and ``create_server``) runs inside
``captureOnCommitCallbacks(execute=True)``, so a whole build happens inside the POST.

Interface (kept stable for other helpers):
    cloud.member(name="demo", project="demo") -> APIClient      cloud.admin() -> APIClient
    cloud.get/post/put/delete(client, path, body=None, version=None) -> Response
        (path relative to /compute/v2.1/, e.g. "servers/detail"; an absolute path is used as is)
    cloud.action(client, server_id, {"reboot": {"type": "SOFT"}}, version=...) -> Response
    cloud.notifications(event_type=None) -> list of recorded notification envelopes
    cloud.create_server(client, name="vm1", flavor="m1.tiny", image="tiny", networks="auto",
                        version="2.90", expect=202, hints=None, **server_fields) -> dict (the ``server``
                        body, or the whole body e.g. with return_reservation_id); networks="demo-net"
                        means [{"uuid": demo-net}]
    cloud.show(client, server_id, version=None) -> dict      cloud.wait_for_status(client, id, "ACTIVE")
    cloud.flavor(name, vcpus=, ram=, disk=) -> Flavor        cloud.image_id, cloud.network_id
    cloud.driver(host) -> TestVirtDriver    cloud.domain(uuid) -> libvirt domain or None
    cloud.instance(uuid) -> Instance (read from its cell)   cloud.cells, cloud.hosts
    build_cloud(cells, vcpus=4, memory_mb=8192, disk_gb=40, driver_factory=None) -> Cloud (other sizes or
        another virt driver; call ``.teardown()`` when done)
"""
from __future__ import annotations

import threading
import uuid as uuidlib
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.test import TestCase
from django.utils import timezone

from cloudcore.core.exceptions import CloudcoreError
from compute.virt.driver import ConsoleNotAvailable, ConsoleTypeUnavailable
from compute.virt.testconsoles import SerialLine, VncScreen

DEFAULT_VERSION = "2.90"


class VirtDriverError(CloudcoreError):
    message = "Virt driver failure on %(host)s: %(reason)s"


_conn_lock = threading.Lock()
_conn: Any = None


def libvirt_connection() -> Any:
    """The process-wide ``test:///default`` connection (its domains are shared by all hosts)."""
    global _conn
    import libvirt

    with _conn_lock:
        if _conn is None:
            libvirt.registerErrorHandler(lambda *_args: None, None)
            _conn = libvirt.open("test:///default")
        return _conn


class TestVirtDriver:
    """A virt driver over libvirt's test driver for one simulated host.

    Fault hooks: ``fail_spawns`` (int, how many next spawns fail), ``fail_spawn_reason``;
    ``fail_destroys``, ``fail_power_offs``, ``fail_snapshots``, ``fail_pauses``, ``fail_rescues`` and
    ``fail_interface_attaches`` likewise for those calls;
    ``fail_volume_connects``: how many next ``can_connect_volume`` checks answer False.
    Consoles: each spawned guest "prints" a boot log (``console_logs``, appended to by tests);
    its VNC and serial consoles are at ``console_ports[(uuid, "novnc"|"serial")]`` (default 5900 /
    10000) on 127.0.0.1, where nothing listens unless ``serve_consoles`` stands them up.
    """

    __test__ = False  # not a pytest test class

    def __init__(self, host: str) -> None:
        self.host = host
        self.conn = libvirt_connection()
        self.fail_spawns = 0
        self.fail_destroys = 0
        self.fail_power_offs = 0
        self.fail_snapshots = 0
        self.fail_volume_connects = 0
        self.fail_pauses = 0
        self.fail_rescues = 0
        self.fail_interface_attaches = 0
        #: what the host's libvirt can do (the real driver's flags); a test may take one away
        self.capabilities: dict[str, bool] = {"supports_multiattach": True}
        #: the ports plugged by attach_interface, per server (detach_interface unplugs them)
        self.plugged: dict[str, list[str]] = {}
        #: the security group refreshes cast to this host, per server (``refresh_port_filters``)
        self.filter_refreshes: dict[str, list[dict[str, Any]]] = {}
        #: what rescue kept: the guest's own XML, the rescue image booted; NMIs sent
        self.unrescue_xml: dict[str, str] = {}
        self.rescue_images: dict[str, str | None] = {}
        self.crash_dumps: list[str] = []
        #: the passwords set by the guest agent, per server: (user, password); the next
        #: ``fail_set_passwords`` calls fail as ``set_password_error`` says (see set_admin_password)
        self.passwords: dict[str, tuple[str, str]] = {}
        self.fail_set_passwords = 0
        self.set_password_error = "error"
        self.fail_spawn_reason = "injected spawn failure"
        self.spawned: list[str] = []
        self.console_logs: dict[str, bytes] = {}
        self.console_ports: dict[tuple[str, str], int] = {}
        self.console_servers: list[Any] = []

    #: the simulated host's size (set by Cloud.add_host)
    resources: dict[str, int] = {}  # noqa: RUF012 - replaced per instance

    def get_available_resource(self) -> dict[str, Any]:
        return dict(self.resources)

    def get_host_uptime(self) -> str:
        return " 12:00:00 up 1 day,  2:03,  0 users,  load average: 0.00, 0.00, 0.00"

    @staticmethod
    def domain_name(instance: Any) -> str:
        return f"instance-{instance.uuid}"

    def spawn(self, *, instance: Any, image_meta: Any = None, network_info: Any = None,
              block_device_info: Any = None, admin_password: str | None = None, **_kw: Any) -> None:
        if self.fail_spawns:
            self.fail_spawns -= 1
            raise VirtDriverError(host=self.host, reason=self.fail_spawn_reason)
        xml = (
            "<domain type='test'>"
            f"<name>{self.domain_name(instance)}</name><uuid>{instance.uuid}</uuid>"
            f"<memory unit='MiB'>{max(int(instance.memory_mb or 64), 1)}</memory>"
            f"<vcpu>{max(int(instance.vcpus or 1), 1)}</vcpu>"
            "<os><type>hvm</type></os>"
            f"<description>host={self.host}</description>"
            "</domain>"
        )
        dom = self.conn.defineXML(xml)
        if dom.isActive():  # another host's guest of this server on the shared connection (a live
            dom.destroy()   # migration's destination): replaced, as the real driver's spawn does
        dom.create()
        self.spawned.append(instance.uuid)
        self.console_logs[instance.uuid] = (f"[    0.000000] booting {instance.uuid} on {self.host}\n"
                                            "[    1.000000] Run /init as init process\nlogin: ").encode()

    def serve_consoles(self, instance_uuid: str, name: str = "guest") -> None:
        """Stand up the guest's serial line and VNC screen (compute/virt/testconsoles.py) and point its
        console ports at them; ``stop_consoles`` (Cloud.teardown) takes them down."""
        def append(data: bytes) -> None:
            self.console_logs[instance_uuid] = self.console_logs.get(instance_uuid, b"") + data

        serial = SerialLine(lambda: self.console_logs.get(instance_uuid, b""), append)
        vnc = VncScreen(name)
        self.console_servers += [serial, vnc]
        self.console_ports[(instance_uuid, "serial")] = serial.port
        self.console_ports[(instance_uuid, "novnc")] = vnc.port

    def stop_consoles(self) -> None:
        for server in self.console_servers:
            server.close()
        self.console_servers.clear()

    def _inject(self, counter: str, what: str) -> None:
        if getattr(self, counter):
            setattr(self, counter, getattr(self, counter) - 1)
            raise VirtDriverError(host=self.host, reason=f"injected {what} failure")

    def destroy(self, *, instance: Any, destroy_disks: bool = True, **_kw: Any) -> None:
        import libvirt

        self._inject("fail_destroys", "destroy")
        try:
            dom = self.conn.lookupByName(self.domain_name(instance))
        except libvirt.libvirtError:
            return
        if "<description>host=" in dom.XMLDesc(0) and f"<description>host={self.host}<" not in dom.XMLDesc(0):
            return  # every host shares one test:/// connection: another host's guest is not ours
        if dom.isActive():
            dom.destroy()
        dom.undefineFlags(libvirt.VIR_DOMAIN_UNDEFINE_MANAGED_SAVE)  # a suspended guest's save goes too

    def _domain(self, instance: Any) -> Any:
        return self.conn.lookupByName(self.domain_name(instance))

    def power_off(self, *, instance: Any, **_kw: Any) -> None:
        self._inject("fail_power_offs", "power off")
        dom = self._domain(instance)
        if dom.isActive():
            dom.destroy()

    def power_on(self, *, instance: Any, **_kw: Any) -> None:
        dom = self._domain(instance)
        if not dom.isActive():
            dom.create()

    def reboot(self, *, instance: Any, reboot_type: str = "SOFT", **_kw: Any) -> None:
        dom = self._domain(instance)
        if dom.isActive():
            dom.destroy()
        dom.create()

    def pause(self, *, instance: Any, **_kw: Any) -> None:
        self._inject("fail_pauses", "pause")
        self._domain(instance).suspend()

    def unpause(self, *, instance: Any, **_kw: Any) -> None:
        self._domain(instance).resume()

    def suspend(self, *, instance: Any, **_kw: Any) -> None:
        dom = self._domain(instance)
        if dom.isActive():
            dom.managedSave(0)

    def resume(self, *, instance: Any, **_kw: Any) -> None:
        dom = self._domain(instance)
        if not dom.isActive():
            dom.create()

    def rescue(self, *, instance: Any, rescue_image_meta: Any = None, **_kw: Any) -> None:
        """The guest redefined as the rescue domain (title ``rescue``); its own XML kept for unrescue."""
        import libvirt

        self._inject("fail_rescues", "rescue")
        dom = self._domain(instance)
        xml = dom.XMLDesc(libvirt.VIR_DOMAIN_XML_INACTIVE)
        self.unrescue_xml[instance.uuid] = xml
        self.rescue_images[instance.uuid] = (rescue_image_meta or {}).get("id")
        if dom.isActive():
            dom.destroy()
        dom.undefine()
        self.conn.defineXML(xml.replace("</name>", "</name><title>rescue</title>", 1)).create()

    def unrescue(self, *, instance: Any, **_kw: Any) -> None:
        dom = self._domain(instance)
        if dom.isActive():
            dom.destroy()
        dom.undefine()
        self.conn.defineXML(self.unrescue_xml.pop(instance.uuid)).create()
        self.rescue_images.pop(instance.uuid, None)

    def trigger_crash_dump(self, *, instance: Any, **_kw: Any) -> None:
        self._domain(instance).injectNMI(0)
        self.crash_dumps.append(instance.uuid)

    def set_admin_password(self, *, instance: Any, user: str, password: str, **_kw: Any) -> None:
        """libvirt's test driver takes any user and password; recorded. An injected failure is
        what the real driver raises for ``set_password_error``: ``unresponsive`` (the agent does
        not answer) or ``error`` (any other libvirt error)."""
        from compute.virt.driver import VirtDriverError
        from compute.virt.libvirt import AdminPasswordNotImplemented

        dom = self._domain(instance)
        if self.fail_set_passwords:
            self.fail_set_passwords -= 1
            if self.set_password_error == "unresponsive":
                raise AdminPasswordNotImplemented(host=self.host)
            raise VirtDriverError(host=self.host, reason="injected set password failure")
        dom.setUserPassword(user, password, 0)
        self.passwords[instance.uuid] = (user, password)

    def snapshot(self, *, instance: Any, target_path: Any, **_kw: Any) -> None:
        from pathlib import Path

        self._inject("fail_snapshots", "snapshot")
        self._domain(instance)  # the guest must exist
        Path(target_path).write_bytes(b"snapshot of " + instance.uuid.encode())

    def attach_interface(self, *, instance: Any, vif: dict[str, Any], **_kw: Any) -> None:
        self._inject("fail_interface_attaches", "interface attach")
        self._domain(instance)  # the guest must exist
        self.plugged.setdefault(instance.uuid, []).append(vif["id"])

    def detach_interface(self, *, instance: Any, vif: dict[str, Any], **_kw: Any) -> None:
        self._domain(instance)
        plugged = self.plugged.get(instance.uuid, [])
        if vif["id"] in plugged:  # a port of the build was never hot-plugged
            plugged.remove(vif["id"])

    def refresh_port_filters(self, *, instance: Any, network_info: list[dict[str, Any]], **_kw: Any) -> None:
        """Records the refresh: ``filter_refreshes[uuid]`` is the last ``network_info`` it came with."""
        self.filter_refreshes[instance.uuid] = network_info

    def can_connect_volume(self, *, connection_info: dict[str, Any]) -> bool:
        if self.fail_volume_connects:
            self.fail_volume_connects -= 1
            return False
        return bool(connection_info)

    def get_console_output(self, *, instance: Any, **_kw: Any) -> bytes:
        self._domain(instance)
        if instance.uuid not in self.console_logs:
            raise ConsoleNotAvailable(host=self.host, reason="no log")
        return self.console_logs[instance.uuid]

    def _console(self, instance: Any, console_type: str, default_port: int) -> dict[str, Any]:
        if not self._domain(instance).isActive():
            raise ConsoleTypeUnavailable(host=self.host, console_type=console_type)
        return {"host": "127.0.0.1", "port": self.console_ports.get((instance.uuid, console_type), default_port),
                "internal_access_path": None}

    def get_vnc_console(self, *, instance: Any, **_kw: Any) -> dict[str, Any]:
        return self._console(instance, "novnc", 5900)

    def get_serial_console(self, *, instance: Any, **_kw: Any) -> dict[str, Any]:
        return self._console(instance, "serial", 10000)

    def get_info(self, instance: Any) -> dict[str, Any]:
        dom = self.conn.lookupByName(self.domain_name(instance))
        state, max_mem, mem, vcpus, _cpu = dom.info()
        return {"state": state, "max_mem_kb": max_mem, "mem_kb": mem, "num_cpu": vcpus}

    def get_instance_diagnostics(self, instance: Any) -> dict[str, Any]:
        from compute.virt import diagnostics

        return diagnostics.standardized(self._domain(instance), hypervisor="test",
                                        launched_at=getattr(instance, "launched_at", None))

    def get_diagnostics(self, instance: Any) -> dict[str, Any]:
        from compute.virt import diagnostics

        return diagnostics.legacy(self._domain(instance))


@dataclass
class Cloud:
    cells: dict[str, Any]
    hosts: dict[str, dict[str, Any]] = field(default_factory=dict)
    drivers: dict[str, Any] = field(default_factory=dict)
    image_id: str = ""
    network_id: str = ""
    subnet_id: str = ""
    #: ``driver_factory(host) -> driver`` (default: TestVirtDriver over ``test:///default``); the
    #: hosts app may pass its real libvirt driver class here.
    driver_factory: Any = None

    # -- set-up ---------------------------------------------------------------------------------
    def add_host(self, host: str, *, cell: str, zone: str | None, vcpus: int = 4, memory_mb: int = 8192,
                 disk_gb: int = 40) -> Any:
        from cells.models import HostMapping
        from compute.drivers import register_driver
        from compute.startup import SERVICE_VERSION
        from scheduling.placement import services as placement
        from tests.factories import ComputeNodeFactory, ServiceFactory

        service = ServiceFactory(cell=self.cells[cell], host=host, last_seen_up=timezone.now(),
                                 version=SERVICE_VERSION)
        node = ComputeNodeFactory(cell=self.cells[cell], host=host, service=service, vcpus=vcpus,
                                  memory_mb=memory_mb, local_gb=disk_gb, cpu_info='{"arch": "x86_64"}')
        HostMapping.objects.get_or_create(host=host, defaults={"cell": self.cells[cell]})
        rp = placement.provider_create(name=host, uuid=node.uuid)
        placement.inventories_set(rp=rp, inventories={
            "VCPU": {"total": vcpus}, "MEMORY_MB": {"total": memory_mb}, "DISK_GB": {"total": disk_gb},
        })
        if zone:
            from scheduling.models import Aggregate
            from scheduling.services import aggregates

            agg = Aggregate.objects.filter(name=zone).first() or aggregates.aggregate_create(
                name=zone, availability_zone=zone)
            aggregates.aggregate_add_host(aggregate=agg, host=host)
        driver = (self.driver_factory or TestVirtDriver)(host)
        driver.resources = {"vcpus": vcpus, "memory_mb": memory_mb, "local_gb": disk_gb}
        register_driver(host, driver)
        self.drivers[host] = driver
        self.hosts[host] = {"cell": cell, "zone": zone, "node_uuid": node.uuid}
        return node

    def add_demo_objects(self) -> None:
        from images.models import Image
        from networks.models import Network, Subnet
        from servers import demo

        demo.setup(lambda _msg: None)
        image = Image.objects.create(name="tiny", status="active", visibility="public", disk_format="qcow2",
                                     container_format="bare", size=1024 * 1024, min_disk=0, min_ram=0,
                                     owner="admin")
        self.image_id = image.id
        net = Network.objects.create(name="demo-net", project_id="admin", shared=True)
        subnet = Subnet.objects.create(network=net, name="demo-subnet", project_id="admin", ip_version=4,
                                       cidr="10.0.0.0/24", gateway_ip="10.0.0.1")
        self.network_id, self.subnet_id = net.id, subnet.id

    def teardown(self) -> None:
        import libvirt

        from compute.drivers import unregister_driver

        for host, driver in list(self.drivers.items()):
            unregister_driver(host)
            if hasattr(driver, "stop_consoles"):
                driver.stop_consoles()
        conn = libvirt_connection()
        for dom in conn.listAllDomains():
            if dom.name().startswith("instance-"):
                if dom.isActive():
                    dom.destroy()
                dom.undefineFlags(libvirt.VIR_DOMAIN_UNDEFINE_MANAGED_SAVE)

    # -- clients --------------------------------------------------------------------------------
    def member(self, name: str = "demo", project: str = "demo", roles: tuple[str, ...] = ("member",)) -> Any:
        from tests.apihelpers import auth_client, make_identity

        user, proj = make_identity(name, project=project, roles=list(roles))
        return auth_client(user, proj)

    def admin(self) -> Any:
        from tests.apihelpers import admin_client

        return admin_client()

    # -- requests -------------------------------------------------------------------------------
    def _call(self, client: Any, method: str, path: str, body: Any = None, version: str | None = None) -> Any:
        extra: dict[str, Any] = {}
        if version:
            extra["HTTP_OPENSTACK_API_VERSION"] = f"compute {version}"
        url = path if path.startswith("/") else f"/compute/v2.1/{path}"
        with TestCase.captureOnCommitCallbacks(using="default", execute=True):
            fn = getattr(client, method)
            if body is None:
                return fn(url, **extra)
            return fn(url, body, format="json", **extra)

    def get(self, client: Any, path: str, version: str | None = None) -> Any:
        return self._call(client, "get", path, version=version)

    def post(self, client: Any, path: str, body: Any = None, version: str | None = None) -> Any:
        return self._call(client, "post", path, body if body is not None else {}, version=version)

    def put(self, client: Any, path: str, body: Any = None, version: str | None = None) -> Any:
        return self._call(client, "put", path, body if body is not None else {}, version=version)

    def delete(self, client: Any, path: str, version: str | None = None) -> Any:
        return self._call(client, "delete", path, version=version)

    # -- servers --------------------------------------------------------------------------------
    def create_server(self, client: Any, name: str = "vm1", *, flavor: str = "m1.tiny", image: str | None = "tiny",
                      networks: Any = "auto", version: str = DEFAULT_VERSION, expect: int = 202,
                      hints: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
        """POST /servers; returns the response body's ``server`` (or the whole body when it has none)."""
        from servers.models import Flavor

        flavor_row = Flavor.objects.filter(name=flavor).first()
        server: dict[str, Any] = {"name": name, "flavorRef": flavor_row.flavorid if flavor_row else flavor}
        if image == "tiny":
            server["imageRef"] = self.image_id
        elif image:
            server["imageRef"] = image
        if networks == "demo-net":
            networks = [{"uuid": self.network_id}]
        if networks is not None:
            server["networks"] = networks
        server.update(fields)
        body: dict[str, Any] = {"server": server}
        if hints:
            body["os:scheduler_hints"] = hints
        response = self.post(client, "servers", body, version=version)
        assert response.status_code == expect, (response.status_code, response.content[:2000])
        data = response.json()
        return data.get("server", data)

    def action(self, client: Any, server_id: str, body: dict[str, Any], version: str | None = DEFAULT_VERSION
               ) -> Any:
        """POST /servers/{id}/action (tasks it enqueues run inside the request)."""
        return self.post(client, f"servers/{server_id}/action", body, version=version)

    def notifications(self, event_type: str | None = None) -> list[dict[str, Any]]:
        """Versioned notifications recorded so far (envelopes), oldest first."""
        from cloudcore.core.models import NotificationRecord

        qs = NotificationRecord.objects.order_by("id")
        if event_type:
            qs = qs.filter(event_type=event_type)
        return [r.payload for r in qs]

    def show(self, client: Any, server_id: str, version: str | None = DEFAULT_VERSION) -> dict[str, Any]:
        response = self.get(client, f"servers/{server_id}", version=version)
        assert response.status_code == 200, (response.status_code, response.content[:2000])
        return response.json()["server"]

    def wait_for_status(self, client: Any, server_id: str, status: str, version: str | None = DEFAULT_VERSION
                        ) -> dict[str, Any]:
        """Tasks are eager: the server must already be in ``status``."""
        server = self.show(client, server_id, version=version)
        assert server["status"] == status, (server["status"], server.get("fault"))
        return server

    def flavor(self, name: str, *, vcpus: int = 1, ram: int = 512, disk: int = 1, flavorid: str | None = None) -> Any:
        from servers.models import Flavor

        return Flavor.objects.create(flavorid=flavorid or str(uuidlib.uuid4()), name=name, vcpus=vcpus,
                                     memory_mb=ram, root_gb=disk)

    def instance(self, instance_uuid: str) -> Any:
        from cells.context import target_cell
        from cells.models import InstanceMapping
        from servers.models import Instance

        mapping = InstanceMapping.objects.select_related("cell").get(instance_uuid=instance_uuid)
        if mapping.cell is None:
            return None
        with target_cell(mapping.cell):
            return Instance.all_objects.filter(uuid=instance_uuid).first()

    def cell_of(self, instance_uuid: str) -> str | None:
        from cells.models import InstanceMapping

        mapping = InstanceMapping.objects.select_related("cell").get(instance_uuid=instance_uuid)
        return mapping.cell.name if mapping.cell else None

    def driver(self, host: str) -> TestVirtDriver:
        return self.drivers[host]

    def domain(self, instance_uuid: str) -> Any:
        import libvirt

        try:
            return libvirt_connection().lookupByName(f"instance-{instance_uuid}")
        except libvirt.libvirtError:
            return None


def build_cloud(cells: dict[str, Any], *, vcpus: int = 4, memory_mb: int = 8192, disk_gb: int = 40,
                driver_factory: Any = None) -> Cloud:
    c = Cloud(cells=cells, driver_factory=driver_factory)
    for host, cell, zone in (("compute1", "cell1", "az1"), ("compute2", "cell1", "az1"),
                             ("compute3", "cell2", "az2"), ("compute4", "cell2", "az2")):
        c.add_host(host, cell=cell, zone=zone, vcpus=vcpus, memory_mb=memory_mb, disk_gb=disk_gb)
    c.add_demo_objects()
    return c


@pytest.fixture
def cloud(cells: dict[str, Any]) -> Any:
    """The four-host, two-cell test cloud (see module doc). Needs all four databases."""
    c = build_cloud(cells)
    yield c
    c.teardown()
