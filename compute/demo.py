"""The four demo compute hosts (DESIGN.md section 9): compute1-2 in cell1 (az1), compute3-4 in
cell2 (az2), each a separate ``manage.py compute`` process with its own state path and its own
simulated hypervisor (libvirt test driver) of a different size.

With ``CLOUDCORE_DEMO_LIBVIRT_URI`` (e.g. ``qemu:///system``) the four hosts drive that real
libvirt daemon instead, all sharing it: each host's ``hypervisor.json`` gives its node its own
name (compute1..4) and each host only sees the domains it created.
"""
from __future__ import annotations

import sys
from collections.abc import Callable

from django.conf import settings

from cloudcore.core.demo import DemoProcess

from . import rpc
from .virt.libvirt import write_hypervisor_sidecar, write_test_node

HOSTS = (
    ("compute1", "cell1", 4, 8192, 40),
    ("compute2", "cell1", 8, 16384, 80),
    ("compute3", "cell2", 4, 8192, 40),
    ("compute4", "cell2", 8, 16384, 80),
)


def real_uri() -> str:
    """The real libvirt URI the demo hosts drive ("" = the simulated test driver)."""
    uri = str(getattr(settings, "DEMO_LIBVIRT_URI", "") or "")
    return "" if uri.startswith("test://") else uri


def setup(out: Callable[[str], None]) -> None:
    for host, _cell, vcpus, memory_mb, disk_gb in HOSTS:
        state = settings.STATE_PATH / host
        if real_uri():
            if not (state / "hypervisor.json").exists():
                write_hypervisor_sidecar(state, hostname=host)
                out(f"hosts: {host} drives {real_uri()} (node {host})")
            continue
        if not (state / "node.xml").exists():
            write_test_node(state, hostname=host, vcpus=vcpus, memory_mb=memory_mb, disk_gb=disk_gb)
            out(f"hosts: simulated hypervisor for {host} ({vcpus} vCPU, {memory_mb} MiB, {disk_gb} GiB)")


def processes(env: dict[str, str]) -> list[DemoProcess]:
    uri = ["--libvirt-uri", real_uri()] if real_uri() else []
    return [
        DemoProcess(host, [sys.executable, "manage.py", "compute", "--host", host, "--cell", cell,
                           "--state-path", str(settings.STATE_PATH / host), *uri], queues=[rpc.queue_for(host)])
        for host, cell, *_size in HOSTS
    ]
