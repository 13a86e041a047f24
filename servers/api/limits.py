"""``GET /limits``: absolute limits and usage of the project (``servers.services.quotas``).

2.36 drops the network-proxy fields (security groups, floating IPs); 2.57 drops the personality
ones; ``tenant_id`` (admins only, ``os_compute_api:limits:other_project``) reads another project.
"""
from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from cloudcore.core.api.validation import reject_unknown_params
from cloudcore.core.api.views import ComputeAPIView
from cloudcore.core.policy import authorize, can

from ..services.quotas import quota_limits, quota_usage

V236, V257, V275 = (2, 36), (2, 57), (2, 75)

#: (field, quota resource, removed at): the project's limits as ``GET /limits`` names them.
QUOTA_FIELDS: list[tuple[str, str, tuple[int, int] | None]] = [
    ("maxTotalInstances", "instances", None),
    ("maxTotalCores", "cores", None),
    ("maxTotalRAMSize", "ram", None),
    ("maxServerMeta", "metadata_items", None),
    ("maxPersonality", "injected_files", V257),
    ("maxPersonalitySize", "injected_file_content_bytes", V257),
    ("maxTotalKeypairs", "key_pairs", None),
    ("maxServerGroups", "server_groups", None),
    ("maxServerGroupMembers", "server_group_members", None),
]

#: (field, value, removed at): Nova's fixed answers for what Neutron, Glance or nobody meters.
FIXED_LIMITS: list[tuple[str, int, tuple[int, int] | None]] = [
    ("maxImageMeta", 128, None),
    ("maxSecurityGroups", -1, V236),
    ("maxSecurityGroupRules", -1, V236),
    ("maxTotalFloatingIps", -1, V236),
    ("totalFloatingIpsUsed", 0, V236),
    ("totalSecurityGroupsUsed", 0, V236),
    ("totalServerGroupsUsed", 0, None),
]


def absolute_limits(project_id: str, version: tuple[int, int]) -> dict[str, Any]:
    limits = quota_limits(project_id)
    usage = quota_usage(project_id)
    body: dict[str, Any] = {
        "totalInstancesUsed": usage.instances,
        "totalCoresUsed": usage.cores,
        "totalRAMUsed": usage.ram,
    }
    for name, resource, removed in QUOTA_FIELDS:
        if removed is None or version < removed:
            body[name] = limits[resource]
    for name, value, removed in FIXED_LIMITS:
        if removed is None or version < removed:
            body[name] = value
    return dict(sorted(body.items()))


class LimitsView(ComputeAPIView):
    @extend_schema(responses={200: dict}, summary="Show rate and absolute limits")
    def get(self, request: Request) -> Response:
        authorize(self.ctx, "os_compute_api:limits")
        params = request.query_params
        if self.version >= V275:
            reject_unknown_params(params, {"tenant_id"})
        project_id = self.ctx.project_id or ""
        asked = params.get("tenant_id")
        # As Nova: a non-admin asking for another project silently gets its own limits.
        if asked and asked != project_id and can(self.ctx, "os_compute_api:limits:other_project",
                                                 {"project_id": asked}):
            project_id = asked
        return Response({"limits": {"rate": [], "absolute": absolute_limits(project_id, self.version)}})
