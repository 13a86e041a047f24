"""What the console shows: read models assembled from the cells, placement and notifications.

Each function returns plain dataclasses/dicts for templates; nothing here writes.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.db.models import QuerySet

from cells import selectors as cell_selectors
from cells.scatter import failed, scatter_gather
from cloudcore.core.models import NotificationRecord
from hosts import selectors as host_selectors
from hosts.services.servicegroup import service_is_up
from scheduling.placement import selectors as placement_selectors
from scheduling.services import usage_samples
from servers import selectors as server_selectors
from servers.status import status_from_state

if TYPE_CHECKING:
    from cells.models import CellMapping
    from servers.models import Migration


@dataclass
class CellStatus:
    name: str
    uuid: str
    up: bool
    servers: int = 0
    hosts: int = 0
    error: str = ""


LABELS = {"VCPU": "vCPU", "MEMORY_MB": "RAM", "DISK_GB": "Disk"}
UNITS = {"VCPU": "", "MEMORY_MB": " MB", "DISK_GB": " GB"}


class ResourceClassNamed:
    """A label and a unit for the ``resource_class`` of a dataclass row (``vCPU``, `` MB``)."""

    resource_class: str

    @property
    def label(self) -> str:
        return LABELS.get(self.resource_class, self.resource_class)

    @property
    def unit(self) -> str:
        return UNITS.get(self.resource_class, "")


@dataclass
class Capacity(ResourceClassNamed):
    """One resource class on a provider: ``used`` of ``total`` (= (inventory - reserved) x ratio),
    with ``reserved`` (the inventory's reserved amount) drawn beside them as a third segment."""

    resource_class: str
    used: int
    total: int
    reserved: int = 0

    @property
    def free(self) -> int:
        return max(0, self.total - self.used)

    @property
    def percent(self) -> int:
        """Used share of the capacity (what the colour warns about)."""
        return min(100, round(100 * self.used / self.total)) if self.total else 0

    def _share(self, amount: int) -> float:
        whole = self.used + self.reserved + self.free
        return round(100 * amount / whole, 2) if whole else 0.0

    @property
    def used_width(self) -> float:
        return self._share(self.used)

    @property
    def reserved_width(self) -> float:
        return self._share(self.reserved)

    @property
    def free_width(self) -> float:
        return self._share(self.free)


@dataclass
class HostCapacity:
    name: str
    uuid: str
    cell: str
    resources: list[Capacity] = field(default_factory=list)


def _count_cell(_cell: CellMapping) -> tuple[int, int]:
    servers = server_selectors.visible_instance_count()
    hosts = host_selectors.compute_service_count()
    return servers, hosts


def cell_statuses() -> list[CellStatus]:
    cells = cell_selectors.cell_list()
    results = scatter_gather(_count_cell, cells)
    out = []
    for cell in cells:
        result = results.get(cell.uuid)
        if result is None or failed(result):
            reason = getattr(result, "reason", "no answer")
            out.append(CellStatus(cell.name or cell.uuid, cell.uuid, False, error=str(reason)))
        else:
            servers, hosts = result  # type: ignore[misc]
            out.append(CellStatus(cell.name or cell.uuid, cell.uuid, True, servers, hosts))
    return out


def host_capacities() -> list[HostCapacity]:
    """Per compute node provider: VCPU, MEMORY_MB and DISK_GB used/total, from placement."""
    cells = cell_selectors.host_cell_names()
    hosts = [
        HostCapacity(root.name, root.uuid, cells.get(root.name) or "",
                     [Capacity(rc, used, total, root.reserved.get(rc, 0))
                      for rc, (used, total) in root.resources.items()])
        for root in placement_selectors.root_provider_usages()
    ]
    for host in hosts:
        host.resources.sort(key=lambda c: ("VCPU", "MEMORY_MB", "DISK_GB").index(c.resource_class)
                            if c.resource_class in ("VCPU", "MEMORY_MB", "DISK_GB") else 9)
    return hosts


def cell_capacities(hosts: list[HostCapacity]) -> dict[str, list[Capacity]]:
    totals: dict[str, dict[str, Capacity]] = {}
    for host in hosts:
        per = totals.setdefault(host.cell or "unmapped", {})
        for cap in host.resources:
            agg = per.setdefault(cap.resource_class, Capacity(cap.resource_class, 0, 0))
            agg.used += cap.used
            agg.total += cap.total
            agg.reserved += cap.reserved
    return {cell: list(per.values()) for cell, per in sorted(totals.items())}


def servers_by_status() -> dict[str, int]:
    """Count of servers per API status (latest microversion) across every cell."""
    def per_cell(_cell: CellMapping) -> list[dict[str, Any]]:
        return server_selectors.instance_state_counts()

    counts: dict[str, int] = {}
    for result in scatter_gather(per_cell).values():
        if failed(result):
            continue
        for row in result:  # type: ignore[union-attr]
            status = status_from_state(row["vm_state"], row["task_state"], (2, 105))
            counts[status] = counts.get(status, 0) + row["n"]

    builds = server_selectors.build_request_count()
    if builds:
        counts["BUILD"] = counts.get("BUILD", 0) + builds
    return dict(sorted(counts.items()))


@dataclass
class Failure:
    instance_uuid: str
    cell: str
    code: int
    message: str
    created_at: Any


def recent_failures(limit: int = 10) -> list[Failure]:
    def per_cell(cell: CellMapping) -> list[Failure]:
        return [
            Failure(f.instance_uuid, cell.name or cell.uuid, f.code, f.message, f.created_at)
            for f in server_selectors.latest_faults(limit)
        ]

    merged: list[Failure] = []
    for result in scatter_gather(per_cell).values():
        if not failed(result):
            merged.extend(result)  # type: ignore[arg-type]
    merged.sort(key=lambda f: f.created_at, reverse=True)
    return merged[:limit]


@dataclass
class HostRow:
    host: str
    cell: str
    binary: str
    up: bool
    disabled: bool
    disabled_reason: str | None
    forced_down: bool
    last_seen_up: Any
    service_uuid: str
    nodes: list[dict[str, str]] = field(default_factory=list)


def _service_up(service: Any) -> bool:
    return bool(service_is_up(service))


def host_rows() -> list[HostRow]:
    def per_cell(cell: CellMapping) -> list[HostRow]:
        nodes: dict[int | None, list[dict[str, str]]] = {}
        for node in host_selectors.compute_nodes():
            nodes.setdefault(node.service_id, []).append(
                {"uuid": node.uuid, "hypervisor_hostname": node.hypervisor_hostname}
            )
        return [
            HostRow(s.host, cell.name or cell.uuid, s.binary, _service_up(s), s.disabled, s.disabled_reason,
                    s.forced_down, s.last_seen_up, s.uuid, nodes.get(s.id, []))
            for s in host_selectors.service_list()
        ]

    rows: list[HostRow] = []
    for result in scatter_gather(per_cell).values():
        if not failed(result):
            rows.extend(result)  # type: ignore[arg-type]
    return sorted(rows, key=lambda r: (r.cell, r.host))


def notifications(event_type: str | None = None) -> QuerySet[NotificationRecord]:
    """Recorded notifications, newest first (the model's order), lazily: the page slices it."""
    qs = NotificationRecord.objects.all()
    if event_type:
        qs = qs.filter(event_type__startswith=event_type)
    return qs


def notification_types() -> list[str]:
    return sorted(set(NotificationRecord.objects.values_list("event_type", flat=True).distinct()))


@dataclass
class Share:
    """One row of a distribution bar: ``n`` of the whole, as a width in percent."""

    label: str
    n: int
    percent: float


def distribution(counts: dict[str, int]) -> list[Share]:
    """Counts as bar widths relative to the largest (so the biggest bar spans the track)."""
    top = max(counts.values(), default=0)
    return [Share(label, n, round(100 * n / top, 1) if top else 0.0) for label, n in counts.items()]


#: the steps a move walks through, for a progress figure (Nova's migration statuses in order)
MIGRATION_STEPS = ("accepted", "pre-migrating", "migrating", "post-migrating", "finished", "confirming")


@dataclass
class MovingServer:
    uuid: str
    instance_uuid: str
    migration_type: str
    status: str
    source: str
    dest: str
    cell: str
    created_at: Any
    percent: int


def _step_percent(migration: Migration) -> int:
    """Live migrations report copied memory; other moves count their finished steps."""
    if migration.memory_total:
        return min(100, round(100 * (migration.memory_processed or 0) / migration.memory_total))
    step = MIGRATION_STEPS.index(migration.status) if migration.status in MIGRATION_STEPS else 0
    return round(100 * (step + 1) / (len(MIGRATION_STEPS) + 1))


def migrations_in_flight() -> list[MovingServer]:
    """Every cell's migrations still under way (a cross-cell move shows once, from its target
    cell's copy when both answer), newest first."""
    def per_cell(cell: CellMapping) -> list[MovingServer]:
        return [
            MovingServer(m.uuid, m.instance_uuid, m.migration_type, m.status, m.source_compute or "",
                         m.dest_compute or "", cell.name or cell.uuid, m.created_at, _step_percent(m))
            for m in server_selectors.migrations_in_flight()
        ]

    seen: dict[str, MovingServer] = {}
    for result in scatter_gather(per_cell, cell_selectors.cell_list(cell0=False)).values():
        if not failed(result):
            for moving in result:  # type: ignore[union-attr]
                seen[moving.uuid] = moving
    return sorted(seen.values(), key=lambda m: m.created_at, reverse=True)


# --- placement usage over time (the overview's chart) -------------------------------------------

CHART_W, CHART_H = 300, 100


@dataclass
class UsageSeries(ResourceClassNamed):
    """One resource class of one scope over the kept samples, as SVG ``points`` in a
    ``CHART_W`` x ``CHART_H`` box (y grows down): ``used`` and ``capacity`` polylines and a
    ``dots`` entry (x, y, title) per sample for the used line."""

    resource_class: str
    used: str
    capacity: str
    dots: list[tuple[float, float, str]]
    latest_used: int
    latest_capacity: int
    top: int


@dataclass
class UsageChart:
    scope: str
    scopes: list[str]
    series: list[UsageSeries]
    samples: int
    first: Any = None
    last: Any = None


def usage_chart(scope: str = usage_samples.CLOUD) -> UsageChart:
    """The kept placement-usage samples of ``scope`` (the cloud or a cell's name) as one series
    per resource class (VCPU, RAM, disk), time on x (proportional), 0..max(capacity, used) on y."""
    samples = usage_samples.placement_usage_samples()
    scopes = sorted({s for sample in samples for s in sample.usage if s != usage_samples.CLOUD})
    chosen = [s for s in samples if scope in s.usage]
    if not chosen:
        return UsageChart(scope, [usage_samples.CLOUD, *scopes], [], 0)
    t0, t1 = chosen[0].taken_at, chosen[-1].taken_at
    span = (t1 - t0).total_seconds()

    def x(sample: Any) -> float:
        return round(CHART_W * (sample.taken_at - t0).total_seconds() / span, 1) if span else CHART_W / 2

    series = []
    for rc in usage_samples.SAMPLED_RESOURCE_CLASSES:
        pairs = [(sample, *sample.usage[scope].get(rc, [0, 0])) for sample in chosen]
        top = max(1, *(max(used, cap) for _, used, cap in pairs))

        def y(value: int, top: int = top) -> float:
            return round(CHART_H - CHART_H * value / top, 1)

        dots = [(x(s), y(used), f"{s.taken_at:%Y-%m-%d %H:%M} · {used} of {cap}") for s, used, cap in pairs]
        series.append(UsageSeries(
            rc, " ".join(f"{dx},{dy}" for dx, dy, _ in dots),
            " ".join(f"{x(s)},{y(cap)}" for s, _, cap in pairs), dots, pairs[-1][1], pairs[-1][2], top))
    return UsageChart(scope, [usage_samples.CLOUD, *scopes], series, len(chosen), t0, t1)
