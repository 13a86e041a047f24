"""``/os-instance_usage_audit_log`` and ``/os-instance_usage_audit_log/{before_timestamp}`` (admin)."""
from __future__ import annotations

from rest_framework.request import Request
from rest_framework.response import Response

from cloudcore.core.api.views import ComputeAPIView

from ..services import usage_audit as svc


class UsageAuditLogsView(ComputeAPIView):
    def get(self, request: Request) -> Response:
        return Response({"instance_usage_audit_logs": svc.audit_log(actor=self.ctx, before=None, rule="list")})


class UsageAuditLogView(ComputeAPIView):
    def get(self, request: Request, before: str) -> Response:
        log = svc.audit_log(actor=self.ctx, before=svc.parse_before(before), rule="show")
        return Response({"instance_usage_audit_log": log})
