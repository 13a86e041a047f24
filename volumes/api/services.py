"""Cinder's ``/os-services`` (admins): list the block storage services (``?host=``, ``?binary=``)
and ``PUT /os-services/{enable,disable,disable-log-reason}``."""
from __future__ import annotations

from typing import Any

from django.utils import timezone
from rest_framework.request import Request
from rest_framework.response import Response

from cloudcore.core.api.validation import validate
from cloudcore.core.api.versioned import timestamp as _ts

from .. import servicegroup
from ..models import VolumeService
from .views import VolumeAPIView

UPDATE_SCHEMA = {"type": "object", "properties": {
    "host": {"type": ["string", "null"]}, "binary": {"type": ["string", "null"]},
    "disabled_reason": {"type": ["string", "null"]}}}


def service_body(svc: VolumeService, version: tuple[int, int], *, now: Any) -> dict[str, Any]:
    up = servicegroup.volume_service_is_up(svc, now=now)
    body: dict[str, Any] = {
        "binary": svc.binary, "host": svc.host, "zone": svc.availability_zone,
        "status": "disabled" if svc.disabled else "enabled", "state": "up" if up else "down",
        "updated_at": _ts(svc.last_seen_up or svc.updated_at), "disabled_reason": svc.disabled_reason}
    if svc.binary == servicegroup.VOLUME_BINARY:
        body.update(replication_status="disabled", active_backend_id=None, frozen=False)
    if version >= (3, 7):
        body["cluster"] = None
    if version >= (3, 49) and svc.binary == servicegroup.VOLUME_BINARY:
        body["backend_state"] = "up" if up else "down"
    return body


class ServicesView(VolumeAPIView):
    def get(self, request: Request, **_kw: Any) -> Response:
        found = servicegroup.volume_service_list(self.ctx, host=request.query_params.get("host"),
                                                 binary=request.query_params.get("binary"))
        now = timezone.now()
        return Response({"services": [service_body(svc, self.v, now=now) for svc in found]})


class ServiceActionView(VolumeAPIView):
    def put(self, request: Request, action: str, **_kw: Any) -> Response:
        body = validate(self.body() or {}, UPDATE_SCHEMA)
        done = servicegroup.volume_service_update(self.ctx, action=action, host=body.get("host"),
                                                  binary=body.get("binary"), reason=body.get("disabled_reason"))
        answer: dict[str, Any] = {"host": done.host, "binary": done.binary, "disabled": done.disabled,
                                  "status": "disabled" if done.disabled else "enabled"}
        if action == "disable-log-reason":
            answer["disabled_reason"] = done.disabled_reason
        return Response(answer)


#: what a capability property means, as Cinder's drivers describe theirs
PROPERTIES = {"thin_provisioning": {"title": "Thin Provisioning", "description": "Sets thin provisioning.",
                                    "type": "boolean"}}
_TRUE = ("true", "1", "yes", "on", "y", "t")


class PoolsView(VolumeAPIView):
    """``GET /scheduler-stats/get_pools`` (admins): the pools' names, with ``?detail=true`` their
    capabilities; from 3.28 filtered by ``name`` and ``volume_type``."""

    def get(self, request: Request, **_kw: Any) -> Response:
        params = request.query_params
        filters = {"name": params.get("name"), "volume_type": params.get("volume_type")} if self.v >= (3, 28) else {}
        detail = str(params.get("detail", "false")).lower() in _TRUE
        pools = servicegroup.pool_list(self.ctx, **filters)
        return Response({"pools": [{"name": name, "capabilities": caps} if detail else {"name": name}
                                   for name, caps in pools]})


class CapabilitiesView(VolumeAPIView):
    """``GET /capabilities/{host}`` (admins): what the back end of a ``cinder-volume`` host reports."""

    def get(self, request: Request, host: str, **_kw: Any) -> Response:
        svc, caps = servicegroup.capabilities_get(self.ctx, host)
        return Response({
            "namespace": f"OS::Storage::Capabilities::{svc.host}", "vendor_name": caps.get("vendor_name"),
            "volume_backend_name": caps.get("volume_backend_name"), "pool_name": caps.get("pool_name"),
            "driver_version": caps.get("driver_version"), "storage_protocol": caps.get("storage_protocol"),
            "display_name": None, "description": None, "visibility": None, "replication_targets": [],
            "properties": PROPERTIES if caps.get("thin_provisioning_support") else {}})
