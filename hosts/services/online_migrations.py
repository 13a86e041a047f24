"""``db online_data_migrations``: fill the links seed 2 added, in every cell.

- ``Instance.compute_id`` from (host, node), deleted rows included (Nova's
  ``populate_instance_compute_id``); rows whose node is gone are skipped and counted as errors;
- ``ComputeNode.service_id`` from the host's nova-compute Service.
"""
from __future__ import annotations

from dataclasses import dataclass

from cells.context import target_cell
from cells.selectors import cell_list
from servers import selectors as server_selectors
from servers.services.data_migrations import instance_compute_link

from ..models import ComputeNode, Service
from ..selectors import compute_node_ids_by_name


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
            nodes = compute_node_ids_by_name()
            for inst in server_selectors.instances_without_compute():
                if budget is not None and budget <= 0:
                    break
                result.found += 1
                node_id = nodes.get((inst.host, inst.node))
                if node_id is None:
                    result.errors += 1
                else:
                    instance_compute_link(instance_id=inst.pk, compute_id=node_id)
                    result.done += 1
                if budget is not None:
                    budget -= 1
    return result


def remaining() -> int:
    total = 0
    for cell in cell_list(cell0=False):
        with target_cell(cell):
            total += server_selectors.instances_without_compute_count()
            total += ComputeNode.all_objects.filter(service__isnull=True).exclude(host=None).count()
    return total
