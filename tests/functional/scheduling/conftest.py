"""Fixtures for scheduling tests: compute hosts in cell1/cell2 with their resource providers."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.utils import timezone

from cells.models import HostMapping
from scheduling.placement import services as placement
from tests.cloud import cloud  # noqa: F401 - the in-process test cloud (explanation API tests)
from tests.factories import ComputeNodeFactory, ServiceFactory


def make_provider(name: str, *, vcpus: int = 8, memory_mb: int = 16384, disk_gb: int = 100,
                  uuid: str | None = None, cpu_ratio: float = 1.0, reserved_mb: int = 0) -> Any:
    rp = placement.provider_create(name=name, uuid=uuid)
    placement.inventories_set(rp=rp, inventories={
        "VCPU": {"total": vcpus, "allocation_ratio": cpu_ratio},
        "MEMORY_MB": {"total": memory_mb, "reserved": reserved_mb},
        "DISK_GB": {"total": disk_gb},
    })
    return rp


@pytest.fixture
def compute_host(cells: dict) -> Callable[..., Any]:
    """``compute_host("compute1", cell="cell1", vcpus=.., memory_mb=.., disk_gb=..)``: a nova-compute
    Service and ComputeNode in the cell, a HostMapping and a resource provider (uuid = node uuid)."""

    def make(host: str, *, cell: str = "cell1", vcpus: int = 8, memory_mb: int = 16384, disk_gb: int = 100,
             disabled: bool = False, forced_down: bool = False, hypervisor_type: str = "QEMU",
             cpu_info: str = '{"arch": "x86_64"}') -> Any:
        service = ServiceFactory(cell=cells[cell], host=host, disabled=disabled, forced_down=forced_down,
                                 last_seen_up=timezone.now())
        node = ComputeNodeFactory(cell=cells[cell], host=host, service=service, vcpus=vcpus, memory_mb=memory_mb,
                                  local_gb=disk_gb, hypervisor_type=hypervisor_type, cpu_info=cpu_info)
        HostMapping.objects.create(host=host, cell=cells[cell])
        make_provider(host, uuid=node.uuid, vcpus=vcpus, memory_mb=memory_mb, disk_gb=disk_gb)
        return node

    return make
