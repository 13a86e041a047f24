"""A compute host that started: what the API database needs to know of it, written by the
conductor because a compute agent never opens that database.

Nova leaves the host mapping to ``nova-manage cell_v2 discover_hosts`` or the scheduler's periodic
discovery; cloudcore's computes cast ``compute_host_started`` once registered, so a new host is
mapped (and schedulable) as soon as it is up. Its resource providers then join the placement
aggregates of the host aggregates it was added to before it existed (the demo's zones).
"""
from __future__ import annotations

import logging

from cells import services as cell_services
from hosts.services.discovery import map_host
from scheduling.services.aggregates import aggregates_sync_host

log = logging.getLogger(__name__)


def compute_host_started(*, host: str, cell_uuid: str) -> None:
    outcome = map_host(host=host, cell=cell_services.get_cell(cell_uuid))
    if outcome is cell_services.HostMapOutcome.DUPLICATE:
        log.warning("compute host %s started in cell %s but is mapped to another cell", host, cell_uuid)
        return
    aggregates_sync_host(host)
