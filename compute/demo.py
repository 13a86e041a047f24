"""The four demo compute hosts (DESIGN.md section 9): compute1-2 in cell1 (az1), compute3-4 in
cell2 (az2), each a separate ``manage.py compute`` process with its own state path and its own
simulated hypervisor (libvirt test driver) of a different size.

With ``CLOUDCORE_DEMO_LIBVIRT_URI`` (e.g. ``qemu:///system``) the four hosts drive that real
libvirt daemon instead, all sharing it: each host's ``hypervisor.json`` gives its node its own
name (compute1..4) and each host only sees the domains it created.

With ``CLOUDCORE_COMPUTE_ISOLATION`` the four processes run isolated: each gets its cell's database
URL and no API database URL (``cells.agent``).
"""
from __future__ import annotations

import sys
from collections.abc import Callable

from django.conf import settings

from cells.agent import API_ONLY_ENV, isolated_environment
from cells.selectors import cell_list, host_mapping_get
from cloudcore.core.demo import DemoProcess
from cloudcore.core.exceptions import InvalidConfiguration

from . import rpc
from .virt.libvirt import write_hypervisor_sidecar, write_test_node

#: (host, cell, vCPUs, MiB, GiB): one small and one big host per cell, big enough for a cell's resize
#: to find the other host with room while clients (Tempest at concurrency 2 keeps some 30 servers)
#: fill them; with half these sizes a resize found no valid host under such load
HOSTS = (
    ("compute1", "cell1", 8, 16384, 160),
    ("compute2", "cell1", 16, 32768, 320),
    ("compute3", "cell2", 8, 16384, 160),
    ("compute4", "cell2", 16, 32768, 320),
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
    """One ``manage.py compute`` per host. With ``COMPUTE_ISOLATION`` each is isolated: its
    environment names its cell and that cell's database only (``cells.agent``), with the URL of
    ``DEMO_COMPUTE_DATABASES`` for its cell if given, and has no API database URL."""
    uri = ["--libvirt-uri", real_uri()] if real_uri() else []
    cells = {cell.name: cell for cell in cell_list(cell0=False)} if settings.COMPUTE_ISOLATION else {}
    procs = []
    for host, cell_name, *_size in HOSTS:
        argv = [sys.executable, "manage.py", "compute", "--host", host, "--cell", cell_name,
                "--state-path", str(settings.STATE_PATH / host), *uri]
        keep = {"CLOUDCORE_DB_CONN_MAX_AGE": env.get("CLOUDCORE_DB_CONN_MAX_AGE", "300")}
        # its task threads', its heartbeat's and its start-up's, to its cell's database
        proc = DemoProcess(host, argv, env=keep, queues=[rpc.queue_for(host)],
                           connections=lambda _cells: settings.COMPUTE_CONCURRENCY + 2)
        if settings.COMPUTE_ISOLATION:
            if cell_name not in cells:
                raise InvalidConfiguration(f"{host}'s cell {cell_name} is not mapped (run the demo setup first)")
            proc.env = {**isolated_environment(env, cell=cells[cell_name],
                                               database_url=settings.DEMO_COMPUTE_DATABASES.get(cell_name)), **keep}
            proc.unset = API_ONLY_ENV
        procs.append(proc)
    return procs


def not_ready() -> str | None:
    """The demo hosts not mapped to their cell yet. A host's resource provider is in placement
    before the conductor has mapped it (``conductor.hosts``); a server scheduled to it in between
    has the conductor map it first (``conductor.build``), but the banner waits for all four."""
    missing = [host for host, *_ in HOSTS if host_mapping_get(host) is None]
    return f"compute hosts not mapped to their cells yet: {', '.join(missing)}" if missing else None
