"""``/os-simple-tenant-usage`` (list: admin; ``/{tenant_id}``: the project's readers): what each
project's servers used over a period, as Nova reports it (``openstack usage list/show``).

Hours are charged from ``launched_at`` (or the period's start) to ``terminated_at`` (or the
period's end); a server that never launched costs nothing. ``total_*_usage`` weigh the hours by
the flavor (vCPUs, MiB, root + ephemeral GiB). ``start`` and ``end`` default to now; from 2.40 the
servers are paged with ``limit`` and ``marker`` (a server uuid) and a ``*_links`` next link.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from django.utils import timezone
from rest_framework.request import Request
from rest_framework.response import Response

from cloudcore.core.api.paging import page_of
from cloudcore.core.api.validation import query_int
from cloudcore.core.api.versioned import timestamp
from cloudcore.core.api.views import ComputeAPIView
from cloudcore.core.exceptions import Invalid
from cloudcore.core.policy import authorize

from ..selectors import instances_active_between
from .servers import MAX_LIMIT

if TYPE_CHECKING:
    from ..models import Instance

_FORMATS = ("%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M:%S.%f", "%Y-%m-%d %H:%M:%S.%f")
_INVALID_INT = "Invalid input for query parameters %(name)s. Value: %(value)s."
PAGING = (2, 40)


def _when(raw: str | None) -> datetime:
    """A period bound as Nova parses it (three formats, naive = UTC); now when absent."""
    if raw is None:
        return timezone.now()
    for fmt in _FORMATS:
        try:
            return datetime.strptime(raw, fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    raise Invalid("Datetime is in invalid format")


def _hours(inst: Instance, start: datetime, stop: datetime) -> float:
    launched, terminated = inst.launched_at, inst.terminated_at
    if launched is None or launched > stop or (terminated is not None and terminated < start):
        return 0.0
    end = min(stop, terminated) if terminated is not None else stop
    return (end - max(launched, start)).total_seconds() / 3600.0


@dataclass
class _ProjectUsage:
    tenant_id: str
    start: datetime
    stop: datetime
    hours: float = 0.0
    gb: float = 0.0
    mb: float = 0.0
    vcpus: float = 0.0
    servers: list[dict[str, Any]] = field(default_factory=list)

    def add(self, inst: Instance, now: datetime) -> None:
        hours = _hours(inst, self.start, self.stop)
        local_gb = inst.root_gb + inst.ephemeral_gb
        self.hours += hours
        self.gb += local_gb * hours
        self.mb += inst.memory_mb * hours
        self.vcpus += inst.vcpus * hours
        ended = inst.terminated_at if inst.deleted else None
        launched = inst.launched_at or now
        self.servers.append({
            "instance_id": inst.uuid, "name": inst.display_name, "hours": hours,
            "memory_mb": inst.memory_mb, "local_gb": local_gb, "vcpus": inst.vcpus,
            "tenant_id": inst.project_id, "flavor": inst.flavor_name,
            "started_at": timestamp(inst.launched_at), "ended_at": timestamp(ended),
            "state": "terminated" if inst.deleted else inst.vm_state,
            "uptime": int(((ended or now) - launched).total_seconds()),
        })

    def body(self, *, detailed: bool) -> dict[str, Any]:
        out: dict[str, Any] = {
            "tenant_id": self.tenant_id, "start": timestamp(self.start), "stop": timestamp(self.stop),
            "total_hours": self.hours, "total_local_gb_usage": self.gb,
            "total_memory_mb_usage": self.mb, "total_vcpus_usage": self.vcpus,
        }
        if detailed:
            out["server_usages"] = self.servers
        return out


class _UsageView(ComputeAPIView):
    def report(self, request: Request, project_id: str | None) -> tuple[dict[str, _ProjectUsage], dict[str, Any]]:
        """The usage per project, and the paging link's query (empty when there is no next page)."""
        params = request.query_params
        start, stop = _when(params.get("start")), _when(params.get("end"))
        if not start < stop:
            raise Invalid("Invalid start time. The start time cannot occur after the end time.")
        instances = instances_active_between(start, stop, project_id=project_id)
        limit = None
        if self.version >= PAGING:
            limit = query_int(params, "limit", invalid=_INVALID_INT)
            limit = None if limit is None else min(limit, MAX_LIMIT)
            instances = page_of(instances, marker=params.get("marker"), limit=limit)
        now = timezone.now()
        usages: dict[str, _ProjectUsage] = {}
        for inst in instances:
            usages.setdefault(inst.project_id, _ProjectUsage(inst.project_id, start, stop)).add(inst, now)
        link: dict[str, Any] = {}
        if limit and len(instances) == limit:
            link = {**{k: v for k, v in params.items() if k != "marker"}, "marker": instances[-1].uuid}
        return usages, link

    def links(self, path: str, query: dict[str, Any]) -> list[dict[str, str]]:
        href = self.request.build_absolute_uri(f"/compute/v2.1/{path}?{urlencode(sorted(query.items()))}")
        return [{"href": href, "rel": "next"}]


class TenantUsagesView(_UsageView):
    query_parameters = frozenset({"start", "end", "detailed", "limit", "marker"})

    def get(self, request: Request) -> Response:
        authorize(self.ctx, "os_compute_api:os-simple-tenant-usage:list", {"project_id": self.ctx.project_id})
        detailed = request.query_params.get("detailed", "0") == "1"
        usages, link = self.report(request, None)
        body: dict[str, Any] = {"tenant_usages": [u.body(detailed=detailed) for u in usages.values()]}
        if link:
            body["tenant_usages_links"] = self.links("os-simple-tenant-usage", link)
        return Response(body)


class TenantUsageView(_UsageView):
    query_parameters = frozenset({"start", "end", "limit", "marker"})

    def get(self, request: Request, tenant_id: str) -> Response:
        authorize(self.ctx, "os_compute_api:os-simple-tenant-usage:show", {"project_id": tenant_id})
        usages, link = self.report(request, tenant_id)
        usage = usages.get(tenant_id)
        body: dict[str, Any] = {"tenant_usage": usage.body(detailed=True) if usage else {}}
        if link:
            body["tenant_usage_links"] = self.links(f"os-simple-tenant-usage/{tenant_id}", link)
        return Response(body)
