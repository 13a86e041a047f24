"""``GET /limits``: absolute limits and usage of the project (``servers.services.quotas``).

2.36 drops the network-proxy fields (security groups, floating IPs); 2.57 drops the personality
ones; ``tenant_id`` (admins only, ``os_compute_api:limits:other_project``) reads another project.
"""
from __future__ import annotations

from operator import itemgetter
from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from cloudcore.core.api.validation import reject_unknown_params
from cloudcore.core.api.versioned import Field, Since, present
from cloudcore.core.api.views import ComputeAPIView
from cloudcore.core.policy import authorize, can

from ..services.quotas import quota_limits, quota_usage

#: The project's limits as ``GET /limits`` names them, from its quota resources (2.57 drops the
#: personality limits).
QUOTA_FIELDS: tuple[Field[dict[str, int]], ...] = (
    Field("maxTotalInstances", itemgetter("instances")),
    Field("maxTotalCores", itemgetter("cores")),
    Field("maxTotalRAMSize", itemgetter("ram")),
    Field("maxServerMeta", itemgetter("metadata_items")),
    Field("maxPersonality", itemgetter("injected_files"), until=(2, 56)),
    Field("maxPersonalitySize", itemgetter("injected_file_content_bytes"), until=(2, 56)),
    Field("maxTotalKeypairs", itemgetter("key_pairs")),
    Field("maxServerGroups", itemgetter("server_groups")),
    Field("maxServerGroupMembers", itemgetter("server_group_members")),
    Field("maxSecurityGroups", itemgetter("security_groups"), until=(2, 35)),
    Field("maxSecurityGroupRules", itemgetter("security_group_rules"), until=(2, 35)),
    Field("maxTotalFloatingIps", itemgetter("floating_ips"), until=(2, 35)),
)
#: Nova's fixed answers for what Neutron, Glance or nobody meters (2.36 drops the network proxies).
FIXED_LIMITS: tuple[Field[None], ...] = (
    Field("maxImageMeta", lambda _: 128),
    Field("totalFloatingIpsUsed", lambda _: 0, until=(2, 35)),
    Field("totalSecurityGroupsUsed", lambda _: 0, until=(2, 35)),
    Field("totalServerGroupsUsed", lambda _: 0),
)
#: 2.75: query parameters other than ``tenant_id`` are a 400.
LIMITS_FEATURES = Since({"strict_query": (2, 75)})


def absolute_limits(project_id: str, version: tuple[int, int]) -> dict[str, Any]:
    usage = quota_usage(project_id)
    body: dict[str, Any] = {
        "totalInstancesUsed": usage.instances,
        "totalCoresUsed": usage.cores,
        "totalRAMUsed": usage.ram,
        **present(QUOTA_FIELDS, quota_limits(project_id), version),
        **present(FIXED_LIMITS, None, version),
    }
    return dict(sorted(body.items()))


class LimitsView(ComputeAPIView):
    query_parameters = frozenset({"tenant_id"})

    @extend_schema(responses={200: dict}, summary="Show rate and absolute limits")
    def get(self, request: Request) -> Response:
        authorize(self.ctx, "os_compute_api:limits")
        params = request.query_params
        if LIMITS_FEATURES.has("strict_query", self.version):
            reject_unknown_params(params, {"tenant_id"})
        project_id = self.ctx.project_id or ""
        asked = params.get("tenant_id")
        # As Nova: a non-admin asking for another project silently gets its own limits.
        if asked and asked != project_id and can(self.ctx, "os_compute_api:limits:other_project",
                                                 {"project_id": asked}):
            project_id = asked
        return Response({"limits": {"rate": [], "absolute": absolute_limits(project_id, self.version)}})
