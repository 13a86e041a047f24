"""Reads of placement for the other apps (which never query ``scheduling.models`` themselves)."""
from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Sum

from ..models import Allocation, Inventory, ResourceProvider


@dataclass
class ProviderUsage:
    """A root provider (a compute node) and, per resource class, (used, capacity); ``reserved``
    holds the inventory's reserved amount per resource class (kept out of the capacity)."""

    name: str
    uuid: str
    resources: dict[str, tuple[int, int]] = field(default_factory=dict)
    reserved: dict[str, int] = field(default_factory=dict)


def root_provider_usages() -> list[ProviderUsage]:
    """Every root provider by name with its usage and capacity ((total - reserved) x ratio) per
    resource class of its inventory; three queries."""
    used = {
        (row["resource_provider_id"], row["resource_class__name"]): row["used"]
        for row in Allocation.objects.values("resource_provider_id", "resource_class__name").annotate(used=Sum("used"))
    }
    roots = {rp.id: ProviderUsage(rp.name, rp.uuid)
             for rp in ResourceProvider.objects.filter(parent__isnull=True).order_by("name")}
    for inv in Inventory.objects.select_related("resource_class").filter(resource_provider_id__in=roots):
        name = inv.resource_class.name
        roots[inv.resource_provider_id].resources[name] = (
            used.get((inv.resource_provider_id, name), 0), int((inv.total - inv.reserved) * inv.allocation_ratio),
        )
        roots[inv.resource_provider_id].reserved[name] = inv.reserved
    return list(roots.values())
