"""Compute API views owned by scheduling: ``os-aggregates`` (admin) and ``os-availability-zone``.

Thin views over ``scheduling.services.aggregates`` (writes through ``aggregate_admin``); shapes per
microversion in ``AGGREGATE_FIELDS`` (2.41 adds ``uuid``).
"""
from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from operator import itemgetter
from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from cloudcore.core.api.microversion import Version
from cloudcore.core.api.validation import validate
from cloudcore.core.api.versioned import Field, present
from cloudcore.core.api.views import ComputeAPIView
from cloudcore.core.exceptions import Invalid
from cloudcore.core.policy import authorize

from ..models import Aggregate
from ..services import aggregate_admin as admin
from ..services import aggregates as svc


def _ts(value: datetime | None) -> str | None:
    return value.replace(tzinfo=None).strftime("%Y-%m-%dT%H:%M:%S.%f") if value else None


def _members(data: dict[str, Any]) -> bool:
    return bool(data.get("_with_members"))


#: The aggregate body, keys in Nova's (sorted) order: 2.41 adds ``uuid``; ``hosts`` and
#: ``metadata`` are left out of the create answer.
AGGREGATE_FIELDS: tuple[Field[dict[str, Any]], ...] = (
    Field("availability_zone", itemgetter("availability_zone")),
    Field("created_at", lambda d: _ts(d["created_at"])),
    Field("deleted", itemgetter("deleted")),
    Field("deleted_at", lambda d: _ts(d["deleted_at"])),
    Field("hosts", itemgetter("hosts"), when=_members),
    Field("id", itemgetter("id")),
    Field("metadata", itemgetter("metadata"), when=_members),
    Field("name", itemgetter("name")),
    Field("updated_at", lambda d: _ts(d["updated_at"])),
    Field("uuid", itemgetter("uuid"), since=(2, 41)),
)


def present_aggregate(aggregate: Aggregate, version: Version, *, with_members: bool = True) -> dict[str, Any]:
    return present(AGGREGATE_FIELDS, {**svc.aggregate_to_dict(aggregate), "_with_members": with_members}, version)


_NAME = {"type": "string", "minLength": 1, "maxLength": 255, "pattern": r"^(?!\s)[\s\S]*(?<!\s)$"}
_AZ = {"type": ["string", "null"], "minLength": 1, "maxLength": 255, "pattern": r"^(?!\s)[^:]*(?<!\s)$"}
AGGREGATE_CREATE = {
    "type": "object",
    "properties": {"aggregate": {"type": "object", "properties": {"name": _NAME, "availability_zone": _AZ},
                                 "required": ["name"], "additionalProperties": False}},
    "required": ["aggregate"], "additionalProperties": False,
}
AGGREGATE_UPDATE = {
    "type": "object",
    "properties": {"aggregate": {"type": "object", "properties": {"name": _NAME, "availability_zone": _AZ},
                                 "minProperties": 1, "additionalProperties": False}},
    "required": ["aggregate"], "additionalProperties": False,
}
_HOST = {"type": "object", "properties": {"host": {"type": "string", "minLength": 1, "maxLength": 255}},
         "required": ["host"], "additionalProperties": False}
_METADATA = {
    "type": "object",
    "properties": {"metadata": {
        "type": "object",
        "patternProperties": {r"^[a-zA-Z0-9-_:. ]{1,255}$": {"type": ["string", "null"], "maxLength": 255}},
        "additionalProperties": False,
    }},
    "required": ["metadata"], "additionalProperties": False,
}
AGGREGATE_ACTIONS = {"add_host": _HOST, "remove_host": _HOST, "set_metadata": _METADATA}


class AggregatesView(ComputeAPIView):
    @extend_schema(responses={200: dict}, summary="List host aggregates (admin)")
    def get(self, request: Request) -> Response:
        authorize(self.ctx, "os_compute_api:os-aggregates:index")
        return Response({"aggregates": [present_aggregate(a, self.version) for a in svc.aggregate_list()]})

    @extend_schema(request=dict, responses={200: dict}, summary="Create a host aggregate (admin)")
    def post(self, request: Request) -> Response:
        data = validate(self.body(), AGGREGATE_CREATE)["aggregate"]
        aggregate = admin.aggregate_create(actor=self.ctx, name=data["name"],
                                           availability_zone=data.get("availability_zone"))
        return Response({"aggregate": present_aggregate(aggregate, self.version, with_members=False)})


class AggregateView(ComputeAPIView):
    @extend_schema(responses={200: dict}, summary="Show a host aggregate (admin)")
    def get(self, request: Request, aggregate_id: str) -> Response:
        authorize(self.ctx, "os_compute_api:os-aggregates:show")
        return Response({"aggregate": present_aggregate(admin.aggregate_by_api_id(aggregate_id), self.version)})

    @extend_schema(request=dict, responses={200: dict}, summary="Update a host aggregate (admin)")
    def put(self, request: Request, aggregate_id: str) -> Response:
        data = validate(self.body(), AGGREGATE_UPDATE)["aggregate"]
        kwargs: dict[str, Any] = {"name": data.get("name")}
        if "availability_zone" in data:
            kwargs["availability_zone"] = data["availability_zone"]
        aggregate = admin.aggregate_update(actor=self.ctx, aggregate_id=aggregate_id, **kwargs)
        return Response({"aggregate": present_aggregate(aggregate, self.version)})

    @extend_schema(responses={200: None}, summary="Delete an empty host aggregate (admin)")
    def delete(self, request: Request, aggregate_id: str) -> Response:
        admin.aggregate_delete(actor=self.ctx, aggregate_id=aggregate_id)
        return Response(status=200)


class AggregateActionView(ComputeAPIView):
    """``POST /os-aggregates/{id}/action``: ``add_host``, ``remove_host``, ``set_metadata``."""

    @extend_schema(request=dict, responses={200: dict}, summary="Add/remove a host or set metadata (admin)")
    def post(self, request: Request, aggregate_id: str) -> Response:
        body = self.body()
        if not isinstance(body, dict) or len(body) != 1:
            raise Invalid("Invalid request body: exactly one action is expected.")
        action, args = next(iter(body.items()))
        if action not in AGGREGATE_ACTIONS:
            raise Invalid(f"There is no such action: {action}")
        validate(body, {"type": "object", "properties": {action: AGGREGATE_ACTIONS[action]},
                        "required": [action], "additionalProperties": False})
        if action == "add_host":
            aggregate = admin.aggregate_add_host(actor=self.ctx, aggregate_id=aggregate_id, host=args["host"])
        elif action == "remove_host":
            aggregate = admin.aggregate_remove_host(actor=self.ctx, aggregate_id=aggregate_id, host=args["host"])
        else:
            aggregate = admin.aggregate_set_metadata(actor=self.ctx, aggregate_id=aggregate_id,
                                                     metadata=args["metadata"])
        return Response({"aggregate": present_aggregate(aggregate, self.version)})


#: ``POST /os-aggregates/{id}/images`` (2.81): the images to pre-cache, each once
AGGREGATE_IMAGES = {
    "type": "object", "required": ["cache"], "additionalProperties": False,
    "properties": {"cache": {"type": "array", "minItems": 1, "items": {
        "type": "object", "required": ["id"], "additionalProperties": False,
        "properties": {"id": {"type": "string", "format": "uuid"}}}}},
}


class AggregateImagesView(ComputeAPIView):
    """``POST /os-aggregates/{id}/images`` (2.81+): the aggregate's hosts fetch the images into
    their image caches in the background (202; ``aggregate.cache_images.*`` notifications)."""

    available_from = (2, 81)

    @extend_schema(request=dict, responses={202: None}, summary="Pre-cache images on an aggregate's hosts (admin)")
    def post(self, request: Request, aggregate_id: str) -> Response:
        body = self.body()
        validate(body, AGGREGATE_IMAGES)
        admin.aggregate_cache_images(actor=self.ctx, aggregate_id=aggregate_id,
                                     image_ids=[str(image["id"]) for image in body["cache"]])
        return Response(status=202)


class AvailabilityZonesView(ComputeAPIView):
    """``GET /os-availability-zone``: zones of compute services, available when one is enabled
    (the internal zone of non-compute services is not listed)."""

    @extend_schema(responses={200: dict}, summary="List availability zones")
    def get(self, request: Request) -> Response:
        authorize(self.ctx, "os_compute_api:os-availability-zone:list")
        zones: dict[str, bool] = {}
        for service in svc.zone_services():
            if service.binary != "nova-compute" or service.zone == svc.internal_zone():
                continue
            zones[service.zone] = zones.get(service.zone, False) or service.available
        info = [{"zoneName": zone, "zoneState": {"available": zones[zone]}, "hosts": None}
                for zone in sorted(zones, key=lambda z: (not zones[z], z))]
        return Response({"availabilityZoneInfo": info})


class AvailabilityZonesDetailView(ComputeAPIView):
    """``GET /os-availability-zone/detail`` (admin): every zone with its hosts' enabled services,
    their state (``active`` = heartbeat is recent) and last update; the internal zone included."""

    @extend_schema(responses={200: dict}, summary="List availability zones with hosts (admin)")
    def get(self, request: Request) -> Response:
        authorize(self.ctx, "os_compute_api:os-availability-zone:detail")
        hosts: dict[str, dict[str, dict[str, Any]]] = defaultdict(lambda: defaultdict(dict))
        disabled_only: set[str] = set()
        for service in svc.zone_services():
            if not service.available:
                disabled_only.add(service.zone)
                continue
            hosts[service.zone][service.host][service.binary] = {
                "available": True, "active": service.active, "updated_at": _ts(service.updated_at),
            }
        info: list[dict[str, Any]] = [
            {"zoneName": zone, "zoneState": {"available": True},
             "hosts": {host: dict(binaries) for host, binaries in sorted(hosts[zone].items())}}
            for zone in sorted(hosts)
        ]
        info += [{"zoneName": zone, "zoneState": {"available": False}, "hosts": None}
                 for zone in sorted(disabled_only - set(hosts))]
        return Response({"availabilityZoneInfo": info})
