"""``os-hosts`` (deprecated in Nova at 2.43, still called by older clients and Tempest): every
service's host with its topic and zone, a compute host's resources (what the node has, what its
hypervisor reports in use, what its servers' flavors add up to, and that per project), and the
host-level actions, of which cloudcore's drivers implement only enabling and disabling."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from cells.context import target_cell
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import NotFound, NotImplementedYet
from cloudcore.core.policy import authorize
from scheduling.services.aggregates import host_availability_zone
from servers import selectors as server_selectors

from ..selectors import COMPUTE_BINARY
from .services_admin import CellNode, node_list, service_list, service_update


class HostNotFound(NotFound):
    message = "Host %(host)s could not be found."


@dataclass(frozen=True)
class HostEntry:
    host_name: str
    service: str
    zone: str


def _topic(binary: str) -> str:
    return binary.removeprefix("nova-")


def host_list(*, actor: RequestContext, zone: str | None = None) -> list[HostEntry]:
    """One entry per service (its host, topic and zone: ``internal`` but for compute services);
    ``zone`` keeps those in that zone (an empty one keeps all)."""
    authorize(actor, "os_compute_api:os-hosts:list")
    entries = [HostEntry(cs.service.host, _topic(cs.service.binary),
                         host_availability_zone(cs.service.host) if cs.service.binary == COMPUTE_BINARY else "internal")
               for cs in service_list()]
    return [e for e in entries if not zone or e.zone == zone]


def _nodes_of(host: str) -> list[CellNode]:
    nodes = [cn for cn in node_list() if cn.node.host == host]
    if not nodes:
        raise HostNotFound(host=host)
    return nodes


def host_resources(*, actor: RequestContext, host: str) -> list[dict[str, Any]]:
    """``(total)``, ``(used_now)``, ``(used_max)`` and one row per project with servers on ``host``
    (cpu, memory_mb, disk_gb), in Nova's order."""
    authorize(actor, "os_compute_api:os-hosts:show")
    nodes = _nodes_of(host)
    rows: list[dict[str, Any]] = []

    def row(project: str, cpu: int, memory_mb: int, disk_gb: int) -> None:
        rows.append({"resource": {"host": host, "project": project, "cpu": cpu, "memory_mb": memory_mb,
                                  "disk_gb": disk_gb}})

    row("(total)", *(sum(getattr(cn.node, f) or 0 for cn in nodes) for f in ("vcpus", "memory_mb", "local_gb")))
    row("(used_now)", *(sum(getattr(cn.node, f) or 0 for cn in nodes)
                        for f in ("vcpus_used", "memory_mb_used", "local_gb_used")))
    per_project: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for cn in nodes:
        with target_cell(cn.cell):
            for inst in server_selectors.instances_on_node(cn.node.host, cn.node.hypervisor_hostname):
                used = per_project[inst.project_id]
                used[0] += inst.vcpus
                used[1] += inst.memory_mb
                used[2] += inst.root_gb + inst.ephemeral_gb
    row("(used_max)", *(sum(used[i] for used in per_project.values()) for i in range(3)))
    for project in sorted(per_project):
        row(project, *per_project[project])
    return rows


def host_update(*, actor: RequestContext, host: str, status: str | None,
                maintenance_mode: str | None) -> dict[str, str]:
    """``status`` enables or disables the host's compute service; maintenance mode is a driver
    feature cloudcore's drivers lack (501, as Nova's libvirt driver answers)."""
    authorize(actor, "os_compute_api:os-hosts:update")
    _nodes_of(host)
    if maintenance_mode is not None:
        raise NotImplementedYet("Virt driver does not implement host maintenance mode.")
    out = {"host": host}
    if status is not None:
        enabled = status.lower() == "enable"
        service_update(actor=actor, host=host, binary=COMPUTE_BINARY, status="enabled" if enabled else "disabled")
        out["status"] = "enabled" if enabled else "disabled"
    return out


def host_power_action(*, actor: RequestContext, host: str, action: str) -> None:
    """``reboot``, ``shutdown`` or ``startup`` of a whole compute host: not something a driver
    here can do (501 after the policy check and the lookup, as Nova answers for libvirt)."""
    authorize(actor, f"os_compute_api:os-hosts:{'start' if action == 'startup' else action}")
    _nodes_of(host)
    raise NotImplementedYet("Virt driver does not implement host power management.")
