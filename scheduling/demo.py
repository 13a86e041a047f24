"""Demo cloud (DESIGN.md section 9): availability zones ``az1`` (compute1, compute2, cell1) and
``az2`` (compute3, compute4, cell2) as host aggregates. Idempotent; hosts that are not mapped yet
are accepted and their providers join the zones' placement aggregates when the resource
tracker creates them (``provider_ensure(host=...)``)."""
from __future__ import annotations

from collections.abc import Callable

from .models import Aggregate, AggregateHost
from .services import aggregates

DEMO_ZONES = {"az1": ["compute1", "compute2"], "az2": ["compute3", "compute4"]}


def setup(out: Callable[[str], None]) -> None:
    for zone, hosts in DEMO_ZONES.items():
        aggregate = Aggregate.objects.filter(name=zone).first()
        if aggregate is None:
            aggregate = aggregates.aggregate_create(name=zone, availability_zone=zone)
            out(f"scheduling: created availability zone {zone}")
        for host in hosts:
            if not AggregateHost.objects.filter(aggregate=aggregate, host=host).exists():
                aggregates.aggregate_add_host(aggregate=aggregate, host=host, require_mapped=False)
            aggregates.aggregates_sync_host(host)
