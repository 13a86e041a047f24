"""``/os-hosts`` (admin; gone from 2.43 as in Nova)."""
from __future__ import annotations

from dataclasses import asdict

from rest_framework.request import Request
from rest_framework.response import Response

from cloudcore.core.api.validation import validate
from cloudcore.core.api.views import ComputeAPIView

from ..services import legacy_hosts as svc

_ENABLE = ["enable", "disable", "Enable", "Disable", "ENABLE", "DISABLE"]
UPDATE = {"type": "object", "properties": {"status": {"type": "string", "enum": _ENABLE},
                                           "maintenance_mode": {"type": "string", "enum": _ENABLE}},
          "anyOf": [{"required": ["status"]}, {"required": ["maintenance_mode"]}], "additionalProperties": False}


class _HostsView(ComputeAPIView):
    available_until = (2, 42)


class HostsView(_HostsView):
    def get(self, request: Request) -> Response:
        hosts = svc.host_list(actor=self.ctx, zone=request.query_params.get("zone"))
        return Response({"hosts": [asdict(h) for h in hosts]})


class HostView(_HostsView):
    def get(self, request: Request, host: str) -> Response:
        return Response({"host": svc.host_resources(actor=self.ctx, host=host)})

    def put(self, request: Request, host: str) -> Response:
        body = self.body()
        validate(body, UPDATE)
        return Response(svc.host_update(actor=self.ctx, host=host, status=body.get("status"),
                                        maintenance_mode=body.get("maintenance_mode")))


class HostPowerView(_HostsView):
    action = ""

    def get(self, request: Request, host: str) -> Response:
        svc.host_power_action(actor=self.ctx, host=host, action=self.action)
        return Response(status=204)  # not reached: no driver here implements it
