"""``db online_data_migrations``: fill the links seed 2 added, in every cell.

- ``Instance.compute_id`` from (host, node), deleted rows included (Nova's
  ``populate_instance_compute_id``); rows whose node is gone are skipped and counted as errors;
- ``ComputeNode.service_id`` from the host's nova-compute Service.
"""
from __future__ import annotations

from dataclasses import dataclass

from cells.context import target_cell
from cells.selectors import cell_list
from servers.models import Instance

from ..models import ComputeNode, Service


@dataclass
class MigrationResult:
    found: int = 0
    done: int = 0
    errors: int = 0


def online_data_migrations(*, max_count: int | None = None) -> MigrationResult:

    result = MigrationResult()
    budget = max_count
    for cell in cell_list(cell0=False):
        with target_cell(cell):
            services = dict(Service.objects.filter(binary="nova-compute").values_list("host", "id"))
            for node in ComputeNode.all_objects.filter(service__isnull=True).exclude(host=None):
                if budget is not None and budget <= 0:
                    break
                result.found += 1
                if node.host in services:
                    ComputeNode.all_objects.filter(pk=node.pk).update(service=services[node.host])
                    result.done += 1
                else:
                    result.errors += 1
                if budget is not None:
                    budget -= 1
            nodes: dict[tuple[str | None, str | None], int] = {
                (n.host, n.hypervisor_hostname): n.id for n in ComputeNode.all_objects.all()}
            for inst in Instance.all_objects.filter(compute__isnull=True).exclude(node=None).only("id", "host", "node"):
                if budget is not None and budget <= 0:
                    break
                result.found += 1
                node_id = nodes.get((inst.host, inst.node))
                if node_id is None:
                    result.errors += 1
                else:
                    Instance.all_objects.filter(pk=inst.pk).update(compute=node_id)
                    result.done += 1
                if budget is not None:
                    budget -= 1
    return result


def remaining() -> int:

    total = 0
    for cell in cell_list(cell0=False):
        with target_cell(cell):
            total += Instance.all_objects.filter(compute__isnull=True).exclude(node=None).count()
            total += ComputeNode.all_objects.filter(service__isnull=True).exclude(host=None).count()
    return total
