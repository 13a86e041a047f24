"""Ordinary client traffic for soak tests: several clients at once (openstacksdk threads and
``openstack`` CLI processes) boot servers, act on them and delete them for a bounded time.

Every loop is bounded by a deadline and stops by itself; it only talks to the cloud on loopback.
What each client saw is kept in a ``Report``; ``leaks`` says what the cloud kept that it should not.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .cloud import LiveCloud

TERMINAL = ("ACTIVE", "SHUTOFF", "ERROR")


@dataclass
class Report:
    created: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    actions: int = 0
    #: (client, what went wrong)
    errors: list[tuple[str, str]] = field(default_factory=list)
    #: servers that ended ERROR: (id, fault)
    errored: list[tuple[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, attr: str, value: Any) -> None:
        with self.lock:
            getattr(self, attr).append(value)

    def count_action(self) -> None:
        with self.lock:
            self.actions += 1


def connect(cloud: LiveCloud, name: str) -> Any:
    import openstack.config
    from openstack.connection import Connection

    config = openstack.config.OpenStackConfig(config_files=[str(cloud.clouds_yaml)])
    return Connection(config=config.get_one(cloud=name))


def wait_for(conn: Any, server_id: str, wanted: tuple[str, ...], timeout: float = 180.0) -> Any:
    """The server once its status is one of ``wanted`` (or ERROR); AssertionError past ``timeout``."""
    deadline = time.monotonic() + timeout
    server = None
    while time.monotonic() < deadline:
        server = conn.compute.get_server(server_id)
        if server.status in wanted or server.status == "ERROR":
            return server
        time.sleep(1)
    raise AssertionError(f"server {server_id} stuck in {getattr(server, 'status', '?')}/"
                         f"{getattr(server, 'task_state', '?')} for {timeout:.0f} s")


def wait_gone(conn: Any, server_id: str, timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if conn.compute.find_server(server_id, ignore_missing=True) is None:
            return
        time.sleep(1)
    raise AssertionError(f"server {server_id} not deleted after {timeout:.0f} s")


def sdk_client(cloud: LiveCloud, cloud_name: str, label: str, deadline: float, report: Report,
               image_id: str, flavor_id: str, network_id: str) -> None:
    """Boot, act (stop/start or reboot), delete, until the deadline."""
    conn = connect(cloud, cloud_name)
    n = 0
    try:
        while time.monotonic() < deadline:
            n += 1
            try:
                server = conn.compute.create_server(name=f"soak-{label}-{n}", image_id=image_id,
                                                    flavor_id=flavor_id, networks=[{"uuid": network_id}])
                report.add("created", server.id)
                server = wait_for(conn, server.id, ("ACTIVE",))
                if server.status == "ERROR":
                    report.add("errored", (server.id, server.fault))
                elif n % 2:
                    conn.compute.stop_server(server)
                    wait_for(conn, server.id, ("SHUTOFF",))
                    conn.compute.start_server(server)
                    wait_for(conn, server.id, ("ACTIVE",))
                    report.count_action()
                else:
                    conn.compute.reboot_server(server, "SOFT")
                    wait_for(conn, server.id, ("ACTIVE",))
                    report.count_action()
                conn.compute.delete_server(server.id)
                wait_gone(conn, server.id)
                report.add("deleted", server.id)
            except Exception as exc:  # recorded, the test asserts on it
                report.add("errors", (label, f"{type(exc).__name__}: {exc}"))
                time.sleep(1)
    finally:
        conn.close()


def cli_client(cloud: LiveCloud, cloud_name: str, label: str, deadline: float, report: Report) -> None:
    """The CLI's everyday commands: create --wait, list, show, delete --wait."""
    n = 0
    while time.monotonic() < deadline:
        n += 1
        name = f"soak-{label}-{n}"
        try:
            created = cloud.openstack_json("server", "create", "--flavor", "m1.tiny", "--image", "tiny",
                                           "--network", "demo-net", "--wait", name, cloud=cloud_name)
            report.add("created", created["id"])
            cloud.openstack_json("server", "list", cloud=cloud_name)
            cloud.openstack_json("flavor", "list", cloud=cloud_name)
            shown = cloud.openstack_json("server", "show", created["id"], cloud=cloud_name)
            if shown["status"] == "ERROR":
                report.add("errored", (created["id"], shown.get("fault")))
            cloud.openstack("server", "delete", "--wait", created["id"], cloud=cloud_name)
            report.add("deleted", created["id"])
        except Exception as exc:
            report.add("errors", (label, f"{type(exc).__name__}: {str(exc)[:2000]}"))
            time.sleep(1)


def run_traffic(cloud: LiveCloud, seconds: float, *, sdk_clients: int = 3, cli_clients: int = 1,
                during: Callable[[], None] | None = None, during_after: float = 0.0) -> Report:
    """Start the clients, optionally call ``during`` once ``during_after`` seconds in, and wait for all
    of them (each finishes the server it is working on after the deadline)."""
    admin = connect(cloud, "cloudcore-admin")
    try:
        image = admin.image.find_image("tiny")
        flavor = admin.compute.find_flavor("m1.tiny")
        network = admin.network.find_network("demo-net")
        ids = (image.id, flavor.id, network.id)
    finally:
        admin.close()
    report = Report()
    deadline = time.monotonic() + seconds
    threads = [threading.Thread(target=sdk_client, args=(cloud, ("cloudcore-demo", "cloudcore-demo-admin")[i % 2],
                                                         f"sdk{i}", deadline, report, *ids), daemon=True)
               for i in range(sdk_clients)]
    threads += [threading.Thread(target=cli_client, args=(cloud, "cloudcore-demo", f"cli{i}", deadline, report),
                                 daemon=True) for i in range(cli_clients)]
    for thread in threads:
        thread.start()
    if during is not None:
        time.sleep(during_after)
        during()
    for thread in threads:
        thread.join(timeout=seconds + 600)
        assert not thread.is_alive(), "a traffic client did not finish"
    return report


def leaks(cloud: Any) -> dict[str, Any]:
    """What is left once every server is gone: servers, allocations, compute ports, volume
    attachments, BuildRequests, queued or unacknowledged broker messages. Empty values = no leak."""
    admin = connect(cloud, "cloudcore-admin")
    try:
        servers = [s.id for s in admin.compute.servers(all_projects=True)]
        usages = {}
        for rp in admin.placement.get("/resource_providers", microversion="1.14").json()["resource_providers"]:
            used = admin.placement.get(f"/resource_providers/{rp['uuid']}/usages",
                                       microversion="1.14").json()["usages"]
            if any(used.values()):
                usages[rp["name"]] = used
        ports = [p.id for p in admin.network.ports() if (p.device_owner or "").startswith("compute:")]
        attachments = [a for a in admin.block_storage.get("/attachments?all_tenants=1",
                                                          microversion="3.27").json().get("attachments", [])]
    finally:
        admin.close()
    client = cloud.redis()
    queues = {q: client.llen(q) for q in ("conductor", "volume", "compute.compute1", "compute.compute2",
                                          "compute.compute3", "compute.compute4")}
    return {
        "servers": servers, "allocations": usages, "ports": ports, "attachments": attachments,
        "build_requests": cloud.api_db("SELECT instance_uuid FROM servers_buildrequest"),
        "queued": {q: n for q, n in queues.items() if n},
        "unacked": client.hlen("unacked"),
    }


def wait_no_leaks(cloud: Any, timeout: float = 120.0) -> dict[str, Any]:
    """``leaks`` once it is empty, or its last value after ``timeout`` (the caller asserts)."""
    deadline = time.monotonic() + timeout
    found = leaks(cloud)
    while any(found.values()) and time.monotonic() < deadline:
        time.sleep(3)
        found = leaks(cloud)
    return found
