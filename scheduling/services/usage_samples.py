"""Placement usage over time, for the console's chart.

The control plane's periodic audit (the conductor's ``servers.periodic`` beat task) calls
``placement_usage_sample_take``: compute hosts reach placement over its HTTP API only, so the
sample is read where placement's tables are. A sample younger than
``PLACEMENT_USAGE_SAMPLE_INTERVAL`` makes the call a no-op, so the cloud gets one sample per
interval however often (and from however many conductors) the beat runs.

Each sample holds the used amount and capacity ((total - reserved) x allocation ratio) of VCPU,
MEMORY_MB and DISK_GB for the whole cloud and per cell; the oldest samples beyond
``PLACEMENT_USAGE_SAMPLES_KEPT`` are deleted when a sample is taken. Everything is in the API
database.
"""
from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from cells import selectors as cell_selectors

from ..models import STANDARD_RESOURCE_CLASSES, PlacementUsageSample
from ..placement import selectors as placement_selectors

#: The resource classes a sample holds (the console draws one chart per class).
SAMPLED_RESOURCE_CLASSES = STANDARD_RESOURCE_CLASSES

CLOUD = "cloud"


def placement_usage_now() -> dict[str, dict[str, list[int]]]:
    """``{"cloud": {"VCPU": [used, capacity], ...}, "<cell>": {...}}`` from placement's root
    providers (a provider whose host is not mapped counts for the cloud only)."""
    cells = cell_selectors.host_cell_names()
    usage: dict[str, dict[str, list[int]]] = {CLOUD: {rc: [0, 0] for rc in STANDARD_RESOURCE_CLASSES}}
    for root in placement_selectors.root_provider_usages():
        scopes = [CLOUD] + ([cells[root.name]] if cells.get(root.name) else [])
        for rc, (used, capacity) in root.resources.items():
            if rc not in STANDARD_RESOURCE_CLASSES:
                continue
            for scope in scopes:
                pair = usage.setdefault(scope, {r: [0, 0] for r in STANDARD_RESOURCE_CLASSES})[rc]
                pair[0] += used
                pair[1] += capacity
    return usage


def placement_usage_sample_take(*, now: datetime | None = None, force: bool = False) -> PlacementUsageSample | None:
    """Record placement's usage now, unless the newest sample is younger than
    ``PLACEMENT_USAGE_SAMPLE_INTERVAL`` (``force`` takes one anyway); None when not due. Deletes
    the samples beyond the newest ``PLACEMENT_USAGE_SAMPLES_KEPT``."""
    now = now or timezone.now()
    due_after = now - timedelta(seconds=settings.PLACEMENT_USAGE_SAMPLE_INTERVAL)
    if not force and PlacementUsageSample.objects.filter(taken_at__gt=due_after).exists():
        return None
    with transaction.atomic():
        sample = PlacementUsageSample.objects.create(taken_at=now, usage=placement_usage_now())
        stale = PlacementUsageSample.objects.order_by("-taken_at", "-id").values_list("id", flat=True)[
            settings.PLACEMENT_USAGE_SAMPLES_KEPT:]
        PlacementUsageSample.objects.filter(id__in=list(stale)).delete()
    return sample


def placement_usage_samples(*, limit: int | None = None) -> list[PlacementUsageSample]:
    """The newest ``limit`` samples (all kept ones by default), oldest first."""
    newest = PlacementUsageSample.objects.order_by("-taken_at", "-id")
    return list(reversed(newest[: limit or settings.PLACEMENT_USAGE_SAMPLES_KEPT]))
