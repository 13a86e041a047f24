"""Per-project quotas for instances, cores and RAM (Nova's defaults, from settings).

Usage is counted from the cells (live, non-hidden instances, so a server in VERIFY_RESIZE of a
cross-cell move counts once) plus the build requests not yet scheduled.
"""
from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.db.models import Count, Sum

from cells.scatter import failed, scatter_gather
from cloudcore.core.exceptions import QuotaExceeded

from ..models import BuildRequest, Instance


@dataclass(frozen=True)
class Usage:
    instances: int = 0
    cores: int = 0
    ram: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.instances + other.instances, self.cores + other.cores, self.ram + other.ram)


def quota_limits(project_id: str | None = None) -> dict[str, int]:
    return {
        "instances": settings.QUOTA_INSTANCES,
        "cores": settings.QUOTA_CORES,
        "ram": settings.QUOTA_RAM,
    }


def quota_usage(project_id: str) -> Usage:
    """Instances, cores and RAM in use by ``project_id`` across every cell."""

    def count(_cell: object) -> Usage:
        agg = Instance.objects.filter(project_id=project_id, hidden=False).aggregate(
            n=Count("id"), cores=Sum("vcpus"), ram=Sum("memory_mb")
        )
        return Usage(agg["n"] or 0, agg["cores"] or 0, agg["ram"] or 0)

    total = Usage()
    for result in scatter_gather(count).values():
        if not failed(result):
            total = total + result  # type: ignore[operator]
    for br in BuildRequest.objects.filter(project_id=project_id).only("instance"):
        flavor = br.instance.get("flavor", {})
        total = total + Usage(1, int(flavor.get("vcpus", 0)), int(flavor.get("memory_mb", 0)))
    return total


def quota_check(*, project_id: str, instances: int, cores: int, ram: int) -> None:
    """Raise QuotaExceeded (403) if adding this much would pass a limit (-1 = unlimited)."""
    limits = quota_limits(project_id)
    usage = quota_usage(project_id)
    wanted = {"instances": instances, "cores": cores, "ram": ram}
    used = {"instances": usage.instances, "cores": usage.cores, "ram": usage.ram}
    over = [r for r, n in wanted.items() if n and limits[r] >= 0 and used[r] + n > limits[r]]
    if over:
        # Nova's TooManyInstances text, e.g. "Quota exceeded for instances: Requested 1, but
        # already used 10 of 10 instances".
        overs = ", ".join(over)
        req = ", ".join(str(wanted[r]) for r in over)
        used_s = ", ".join(str(used[r]) for r in over)
        allowed = ", ".join(str(limits[r]) for r in over)
        raise QuotaExceeded(
            f"Quota exceeded for {overs}: Requested {req}, but already used {used_s} of {allowed} {overs}"
        )
