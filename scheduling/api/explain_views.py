"""cloudcore's scheduling explanation, under the compute API (issue 22; Nova has no such API).

``GET /servers/{id}/os-scheduling-explanation[?request_id=R]``: the trace of the server's latest
scheduling decision (or of request ``R``), as stored by the scheduler, with its text. Rule
``cloudcore:os-scheduling-explanation:show`` (admin by default: the trace names hosts).

``POST /os-scheduling-explanation`` with ``{"explain": {"flavorRef", "imageRef",
"availability_zone", "scheduler_hints", "server_id"}}``: the dry run (``scheduling.explain``):
would it fit now, on which hosts, and if not what to change. A ``group`` hint is honoured as on
boot (400 for a group that is not found). With ``server_id`` the server's own request spec is used
(what a PENDING server waits for). Nothing is allocated. Rule
``cloudcore:os-scheduling-explanation:dry_run`` (admin by default).
"""
from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from cloudcore.core.api.validation import validate
from cloudcore.core.api.views import ComputeAPIView
from cloudcore.core.policy import authorize
from servers.api.servers import get_server

from ..services import explanations as svc

SHOW_RULE = "cloudcore:os-scheduling-explanation:show"
DRY_RUN_RULE = "cloudcore:os-scheduling-explanation:dry_run"

_REF = {"type": "string", "minLength": 1, "maxLength": 255}
EXPLAIN_BODY = {
    "type": "object",
    "properties": {"explain": {
        "type": "object",
        "properties": {
            "flavorRef": _REF, "imageRef": _REF, "server_id": _REF,
            "availability_zone": {"type": ["string", "null"], "maxLength": 255},
            "scheduler_hints": {"type": "object"},
        },
        "anyOf": [{"required": ["flavorRef"]}, {"required": ["server_id"]}],
        "additionalProperties": False,
    }},
    "required": ["explain"], "additionalProperties": False,
}


class ServerSchedulingExplanationView(ComputeAPIView):
    query_parameters = frozenset({"request_id"})

    @extend_schema(
        summary="Why a server was scheduled where it was, or not at all (cloudcore, admin)",
        description="The trace of the server's latest scheduling decision: placement's candidate count and "
                    "shortfall, each filter's rejected hosts with a reason, the weights, the chosen host and "
                    "its alternates. Policy rule cloudcore:os-scheduling-explanation:show (admin by default).",
        parameters=[OpenApiParameter("request_id", OpenApiTypes.STR, description="a request id of the server's "
                                     "instance actions (default: the latest decision)")],
        responses={200: OpenApiResponse(dict, description='{"scheduling_explanation": {...}}'),
                   404: OpenApiResponse(description="no such server, or no trace kept for it")},
    )
    def get(self, request: Request, server_id: str) -> Response:
        record = get_server(self.ctx, server_id, SHOW_RULE, self.version)
        found = svc.server_explanation(instance_uuid=record.uuid, request_id=request.query_params.get("request_id"))
        return Response({"scheduling_explanation": found})


class SchedulingDryRunView(ComputeAPIView):
    @extend_schema(
        summary="Would a server fit now, where, and if not what to change (cloudcore, admin)",
        description="Dry run of a boot request: body {\"explain\": {\"flavorRef\", \"imageRef\", "
                    "\"availability_zone\", \"scheduler_hints\"}} or {\"explain\": {\"server_id\"}} (that server's "
                    "request spec). A group hint is honoured as on boot: its affinity or anti-affinity policy "
                    "filters the hosts, a soft policy orders them. Answers fits, the hosts that fit best first, "
                    "and otherwise the suggestions: per host the changes (resources to free with the servers to "
                    "free, a compute service to enable, a trait to add, a zone, the group members in the way, "
                    "listed in group_members) and the disabled hosts that would fit. Nothing is allocated. "
                    "Policy rule cloudcore:os-scheduling-explanation:dry_run (admin by default).",
        request=dict,
        responses={200: OpenApiResponse(dict, description='{"scheduling_dry_run": {...}}')},
    )
    def post(self, request: Request) -> Response:
        authorize(self.ctx, DRY_RUN_RULE)
        data: dict[str, Any] = validate(self.body(), EXPLAIN_BODY)["explain"]
        if data.get("server_id"):
            record = get_server(self.ctx, str(data["server_id"]))
            answer = svc.server_dry_run(instance_uuid=record.uuid)
        else:
            answer = svc.request_dry_run(
                actor=self.ctx, flavor_ref=str(data["flavorRef"]), image_ref=data.get("imageRef"),
                availability_zone=data.get("availability_zone"), hints=dict(data.get("scheduler_hints") or {}))
        return Response({"scheduling_dry_run": answer})
