"""What the tests of moves within cell1 (evacuate, live migration) share: a started server, the
other host of the cell, a consumer's allocations by resource provider."""
from __future__ import annotations

from typing import Any

from scheduling.placement.services import allocations_get
from tests.cloud import Cloud

TINY = {"VCPU": 1, "MEMORY_MB": 512, "DISK_GB": 1}


def allocs(consumer: str) -> dict[str, dict[str, int]]:
    return {rp: dict(a["resources"]) if isinstance(a, dict) and "resources" in a else dict(a)
            for rp, a in allocations_get(consumer_uuid=consumer).allocations.items()}


def node_of(cloud: Cloud, host: str) -> str:
    return cloud.hosts[host]["node_uuid"]


def other(host: str) -> str:
    return "compute2" if host == "compute1" else "compute1"


def started(cloud: Cloud, name: str = "vm1", **fields: Any) -> tuple[dict[str, Any], str]:
    """An ACTIVE server of the admin in az1 (cell1), and its host."""
    admin = cloud.admin()
    server = cloud.create_server(admin, name, availability_zone="az1", **fields)
    shown = cloud.wait_for_status(admin, server["id"], "ACTIVE")
    return server, shown["OS-EXT-SRV-ATTR:host"]


def migration_of(cloud: Cloud, server_id: str) -> dict[str, Any]:
    """The server's newest migration as ``GET /os-migrations`` (2.80) shows it."""
    found = cloud.get(cloud.admin(), f"os-migrations?instance_uuid={server_id}", version="2.80").json()
    return found["migrations"][0]
