"""Weighers: each gives every host a raw value, normalised to 0..1 over the hosts being weighed
(all equal -> all 0), times its multiplier; a host's weight is the sum. Highest weight first.

``CrossCellWeigher`` makes a move prefer hosts in the instance's current cell (raw 1 there, 0
elsewhere) with ``CROSS_CELL_MOVE_WEIGHT_MULTIPLIER`` (default 1000000.0); a negative multiplier
drains the source cell instead.
"""
from __future__ import annotations

from collections.abc import Iterable

from django.conf import settings

from .host_state import HostState, RequestView


class BaseWeigher:
    name = "BaseWeigher"
    setting = ""
    default_multiplier = 1.0

    def multiplier(self) -> float:
        return float(getattr(settings, self.setting, self.default_multiplier)) if self.setting \
            else self.default_multiplier

    def raw(self, host: HostState, request: RequestView) -> float:
        raise NotImplementedError

    def raws(self, hosts: list[HostState], request: RequestView) -> list[float]:
        """``raw`` of every host (weighers whose value is free capacity read it in one pass)."""
        return [self.raw(h, request) for h in hosts]


class _FreeWeigher(BaseWeigher):
    """Free capacity of one resource class (times ``scale``)."""

    resource_class = ""
    scale = 1

    def raw(self, host: HostState, request: RequestView) -> float:
        return float(host.free(self.resource_class) * self.scale)

    def raws(self, hosts: list[HostState], request: RequestView) -> list[float]:
        # one comprehension, no generator inside it (a generator's resume per host cost more
        # than the arithmetic at 1,000 hosts)
        rc, scale = self.resource_class, self.scale
        return [float((r["capacity"] - r["used"]) * scale) if (r := h.resources.get(rc)) is not None else 0.0
                for h in hosts]


class RAMWeigher(_FreeWeigher):
    """More free RAM first (spreading)."""

    name = "RAMWeigher"
    setting = "RAM_WEIGHT_MULTIPLIER"
    resource_class = "MEMORY_MB"


class DiskWeigher(_FreeWeigher):
    """More free disk first (in MiB, as ``HostState.free_disk_mb``)."""

    name = "DiskWeigher"
    setting = "DISK_WEIGHT_MULTIPLIER"
    resource_class = "DISK_GB"
    scale = 1024


class CPUWeigher(_FreeWeigher):
    name = "CPUWeigher"
    setting = "CPU_WEIGHT_MULTIPLIER"
    resource_class = "VCPU"


class CrossCellWeigher(BaseWeigher):
    """+1 for a host in the preferred (source) cell of a move, -1 for a host in any other cell,
    0 for every host when the request has no preferred cell (not a move)."""

    name = "CrossCellWeigher"
    setting = "CROSS_CELL_MOVE_WEIGHT_MULTIPLIER"
    default_multiplier = 1000000.0

    def raw(self, host: HostState, request: RequestView) -> float:
        source = request.source_cell
        if not source:
            return 0.0
        return 1.0 if host.cell_uuid == source else -1.0

    def raws(self, hosts: list[HostState], request: RequestView) -> list[float]:
        source = request.source_cell  # read once, not per host
        if not source:
            return [0.0] * len(hosts)
        return [1.0 if h.cell_uuid == source else -1.0 for h in hosts]


DEFAULT_WEIGHERS: tuple[BaseWeigher, ...] = (RAMWeigher(), DiskWeigher(), CPUWeigher(), CrossCellWeigher())


def normalize(values: list[float]) -> list[float]:
    if not values:
        return []
    low, high = min(values), max(values)
    if high == low:
        return [0.0] * len(values)
    return [(v - low) / (high - low) for v in values]


def weigh_hosts(
    hosts: Iterable[HostState], request: RequestView, weighers: Iterable[BaseWeigher] = DEFAULT_WEIGHERS,
    scores: dict[str, tuple[float, list[float]]] | None = None,
) -> list[HostState]:
    """Set ``host.weight`` on each host and return them best first (stable for equal weights).
    ``scores`` receives, per weigher, its multiplier and the normalised values in the order of
    ``hosts`` (a host's share is their product; kept as lists: no work per host)."""
    hosts = list(hosts)
    weights = [0.0] * len(hosts)
    for weigher in weighers:
        multiplier = weigher.multiplier()
        if not multiplier:
            continue
        values = normalize(weigher.raws(hosts, request))
        if any(values):  # all equal: every share is 0
            weights = [w + multiplier * v for w, v in zip(weights, values, strict=True)]
        if scores is not None:
            scores[weigher.name] = (multiplier, values)
    for host, weight in zip(hosts, weights, strict=True):
        host.weight = weight
    # highest weight first, equal weights in their order (a reversed sort keeps that order): the
    # positions sorted by the weights list, no key function called per host
    return [hosts[i] for i in sorted(range(len(hosts)), key=weights.__getitem__, reverse=True)]
