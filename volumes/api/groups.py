"""Cinder's generic volume groups (``volumes.groups``): ``/group_types`` and their
``group_specs`` (3.11), ``/groups`` (3.13; ``create-from-src`` 3.14, ``reset_status`` 3.20) and
``/group_snapshots`` (3.14; ``reset_status`` 3.19). Below its microversion each is a 404, as
Cinder answers a method the request's version does not have. Creates of group types, specs,
groups and group snapshots answer 202 with the summary (``id``, ``name``), as Cinder does."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rest_framework.request import Request
from rest_framework.response import Response

from cloudcore.core.api.validation import as_bool, validate
from cloudcore.core.api.versioned import Field, present
from cloudcore.core.api.versioned import timestamp as _ts
from cloudcore.core.exceptions import Invalid, NotFound
from cloudcore.core.policy import can

from .. import groups
from ..models import GroupSnapshot, GroupType, Volume, VolumeGroup
from ..presenter import VOLUME_FEATURES
from .types import _BOOL, _SPECS, _is_public_param
from .views import VolumeAPIView, _int_param, _sort_param

_NAME = {"type": ["string", "null"], "maxLength": 255}
TYPE_CREATE_SCHEMA = {"type": "object", "required": ["group_type"], "additionalProperties": False, "properties": {
    "group_type": {"type": "object", "required": ["name"], "additionalProperties": False, "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 255}, "description": _NAME,
        "is_public": _BOOL, "group_specs": {"anyOf": [_SPECS, {"type": "null"}]}}}}}
TYPE_UPDATE_SCHEMA = {"type": "object", "required": ["group_type"], "additionalProperties": False, "properties": {
    "group_type": {"type": "object", "additionalProperties": False, "minProperties": 1, "properties": {
        "name": {"type": ["string", "null"], "minLength": 1, "maxLength": 255}, "description": _NAME,
        "is_public": _BOOL}}}}
SPECS_SCHEMA = {"type": "object", "required": ["group_specs"], "additionalProperties": False,
                "properties": {"group_specs": _SPECS}}
GROUP_CREATE_SCHEMA = {"type": "object", "required": ["group"], "additionalProperties": False, "properties": {
    "group": {"type": "object", "required": ["group_type", "volume_types"], "additionalProperties": False,
              "properties": {"name": _NAME, "description": _NAME, "availability_zone": _NAME,
                             "group_type": {"type": "string", "minLength": 1, "maxLength": 255},
                             "volume_types": {"type": "array", "minItems": 1,
                                              "items": {"type": "string", "minLength": 1, "maxLength": 255}}}}}}
GROUP_UPDATE_SCHEMA = {"type": "object", "required": ["group"], "additionalProperties": False, "properties": {
    "group": {"type": "object", "additionalProperties": False, "properties": {
        "name": _NAME, "description": _NAME, "add_volumes": {"type": ["string", "null"]},
        "remove_volumes": {"type": ["string", "null"]}}}}}
FROM_SRC_SCHEMA = {"type": "object", "additionalProperties": False, "properties": {
    "name": _NAME, "description": _NAME, "group_snapshot_id": {"type": ["string", "null"]},
    "source_group_id": {"type": ["string", "null"]}}}
DELETE_SCHEMA = {"type": "object", "additionalProperties": False, "properties": {"delete-volumes": _BOOL}}
STATUS_SCHEMA = {"type": "object", "required": ["status"], "additionalProperties": False,
                 "properties": {"status": {"type": "string"}}}
GSNAP_CREATE_SCHEMA = {"type": "object", "required": ["group_snapshot"], "additionalProperties": False,
                       "properties": {"group_snapshot": {
                           "type": "object", "required": ["group_id"], "additionalProperties": False,
                           "properties": {"group_id": {"type": "string"}, "name": _NAME, "description": _NAME}}}}


@dataclass(frozen=True)
class ShownGroup:
    group: VolumeGroup
    list_volume: bool = False


#: A group (``{"group": ...}``): 3.14 its sources, 3.25 ``volumes`` (with ``list_volume``), 3.38
#: ``replication_status``, 3.58 ``project_id``.
GROUP_FIELDS: tuple[Field[ShownGroup], ...] = (
    Field("id", lambda v: v.group.id), Field("status", lambda v: v.group.status),
    Field("availability_zone", lambda v: v.group.availability_zone),
    Field("created_at", lambda v: _ts(v.group.created_at)),
    Field("name", lambda v: v.group.name), Field("description", lambda v: v.group.description),
    Field("group_type", lambda v: v.group.group_type_id),
    Field("volume_types", lambda v: list(v.group.volume_type_ids or [])),
    Field("group_snapshot_id", lambda v: v.group.group_snapshot_id, since=(3, 14)),
    Field("source_group_id", lambda v: v.group.source_group_id, since=(3, 14)),
    Field("volumes", lambda v: list(Volume.objects.filter(group_id=v.group.id).values_list("id", flat=True)),
          since=(3, 25), when=lambda v: v.list_volume),
    Field("replication_status", lambda v: "disabled", since=(3, 38)),
    Field("project_id", lambda v: v.group.project_id, since=(3, 58)),
)
#: A group snapshot (``{"group_snapshot": ...}``): 3.58 ``project_id``.
GROUP_SNAPSHOT_FIELDS: tuple[Field[GroupSnapshot], ...] = (
    Field("id", lambda g: g.id), Field("group_id", lambda g: g.group_id), Field("status", lambda g: g.status),
    Field("created_at", lambda g: _ts(g.created_at)), Field("name", lambda g: g.name),
    Field("description", lambda g: g.description), Field("group_type_id", lambda g: g.group_type_id),
    Field("project_id", lambda g: g.project_id, since=(3, 58)),
)


class GroupAPIView(VolumeAPIView):
    #: The ``VOLUME_FEATURES`` name the resource needs (404 below it).
    feature = "groups"

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        if not VOLUME_FEATURES.has(self.feature, self.v):
            raise NotFound("The resource could not be found.")

    def page(self) -> dict[str, Any]:
        params = self.request.query_params
        return {"limit": _int_param(params.get("limit"), "limit"), "marker": params.get("marker"),
                "offset": _int_param(params.get("offset"), "offset") or 0, "sort": _sort_param(params)}


# -- group types ------------------------------------------------------------------------------
class GroupTypeAPIView(GroupAPIView):
    feature = "group_types"

    def body_of(self, gt: GroupType) -> dict[str, Any]:
        body: dict[str, Any] = {"id": gt.id, "name": gt.name, "description": gt.description,
                                "is_public": gt.is_public}
        if can(self.ctx, "group:access_group_types_specs", {"project_id": self.ctx.project_id,
                                                            "user_id": self.ctx.user_id}):
            body["group_specs"] = dict(gt.group_specs or {})
        return body


class GroupTypesView(GroupTypeAPIView):
    def get(self, request: Request, **_kw: Any) -> Response:
        found = groups.group_type_list(self.ctx, is_public=_is_public_param(request.query_params.get("is_public")),
                                       **self.page())
        return Response({"group_types": [self.body_of(t) for t in found]})

    def post(self, request: Request, **_kw: Any) -> Response:
        body = validate(self.body(), TYPE_CREATE_SCHEMA)["group_type"]
        gt = groups.group_type_create(self.ctx, name=body["name"], description=body.get("description"),
                                      is_public=as_bool(body.get("is_public", True)),
                                      group_specs=body.get("group_specs"))
        return Response({"group_type": self.body_of(gt)}, status=202)


class GroupTypeView(GroupTypeAPIView):
    def get(self, request: Request, type_id: str, **_kw: Any) -> Response:
        return Response({"group_type": self.body_of(groups.group_type_get(self.ctx, type_id))})

    def put(self, request: Request, type_id: str, **_kw: Any) -> Response:
        changes = validate(self.body(), TYPE_UPDATE_SCHEMA)["group_type"]
        if "is_public" in changes:
            changes["is_public"] = as_bool(changes["is_public"])
        gt = groups.group_type_update(self.ctx, groups.group_type_get(self.ctx, type_id), changes=changes)
        return Response({"group_type": self.body_of(gt)})

    def delete(self, request: Request, type_id: str, **_kw: Any) -> Response:
        groups.group_type_delete(self.ctx, groups.group_type_get(self.ctx, type_id))
        return Response(status=202)


class GroupSpecsView(GroupTypeAPIView):
    def get(self, request: Request, type_id: str, **_kw: Any) -> Response:
        return Response({"group_specs": groups.group_specs_get(self.ctx, groups.group_type_get(self.ctx, type_id))})

    def post(self, request: Request, type_id: str, **_kw: Any) -> Response:
        specs = validate(self.body(), SPECS_SCHEMA)["group_specs"]
        groups.group_specs_set(self.ctx, groups.group_type_get(self.ctx, type_id), specs=specs)
        return Response({"group_specs": specs}, status=202)


class GroupSpecView(GroupTypeAPIView):
    def get(self, request: Request, type_id: str, key: str, **_kw: Any) -> Response:
        gt = groups.group_type_get(self.ctx, type_id)
        specs = groups.group_specs_get(self.ctx, gt)
        if key not in specs:
            raise NotFound(f"Group Type {gt.id} has no specs with key {key}.")
        return Response({key: specs[key]})

    def put(self, request: Request, type_id: str, key: str, **_kw: Any) -> Response:
        body = validate(self.body(), _SPECS)
        if key not in body:
            raise Invalid("Request body and URI mismatch")
        if len(body) > 1:
            raise Invalid("Request body contains too many items")
        groups.group_specs_set(self.ctx, groups.group_type_get(self.ctx, type_id), specs=body)
        return Response(body)

    def delete(self, request: Request, type_id: str, key: str, **_kw: Any) -> Response:
        groups.group_spec_delete(self.ctx, groups.group_type_get(self.ctx, type_id), key=key)
        return Response(status=202)


# -- groups -----------------------------------------------------------------------------------
class GroupsBaseView(GroupAPIView):
    def shown(self, group: VolumeGroup) -> dict[str, Any]:
        list_volume = as_bool(self.request.query_params.get("list_volume", False))
        return present(GROUP_FIELDS, ShownGroup(group, list_volume=list_volume), self.v)

    def summary(self, group: VolumeGroup) -> dict[str, Any]:
        return {"id": group.id, "name": group.name}


class GroupsView(GroupsBaseView):
    detail = False

    def get(self, request: Request, **_kw: Any) -> Response:
        found = groups.group_list(self.ctx, all_tenants=as_bool(request.query_params.get("all_tenants", False)),
                                  **self.page())
        return Response({"groups": [self.shown(g) if self.detail else {"id": g.id, "name": g.name}
                                    for g in found]})

    def post(self, request: Request, **_kw: Any) -> Response:
        body = validate(self.body(), GROUP_CREATE_SCHEMA)["group"]
        group = groups.group_create(self.ctx, group_type=body["group_type"], volume_types=body["volume_types"],
                                    name=body.get("name"), description=body.get("description"),
                                    availability_zone=body.get("availability_zone"))
        return Response({"group": self.summary(group)}, status=202)


class GroupsDetailView(GroupsView):
    detail = True


class GroupView(GroupsBaseView):
    def get(self, request: Request, group_id: str, **_kw: Any) -> Response:
        return Response({"group": self.shown(groups.group_get(self.ctx, group_id))})

    def put(self, request: Request, group_id: str, **_kw: Any) -> Response:
        body = validate(self.body(), GROUP_UPDATE_SCHEMA)["group"]
        groups.group_update(self.ctx, group_id, name=body.get("name"), description=body.get("description"),
                            changes={k for k in ("name", "description") if k in body},
                            add_volumes=body.get("add_volumes"), remove_volumes=body.get("remove_volumes"))
        return Response(status=202)


class GroupActionView(GroupsBaseView):
    """``delete`` (with ``delete-volumes``) and an admin's ``reset_status`` (3.20)."""

    def post(self, request: Request, group_id: str, **_kw: Any) -> Response:
        action, args = self.requested_action()
        if action == "delete":
            flag = validate(args, DELETE_SCHEMA).get("delete-volumes", False)
            groups.group_delete(self.ctx, group_id, delete_volumes=as_bool(flag))
        elif action == "reset_status" and VOLUME_FEATURES.has("group_reset_status", self.v):
            groups.group_reset_status(self.ctx, group_id, status=validate(args, STATUS_SCHEMA)["status"])
        else:
            raise Invalid(f"There is no such action: {action}")
        return Response(status=202)


class GroupsActionView(GroupsBaseView):
    """``POST /groups/action`` ``create-from-src`` (3.14): a group from a group snapshot or a group."""

    feature = "group_snapshots"

    def post(self, request: Request, **_kw: Any) -> Response:
        action, args = self.requested_action()
        if action != "create-from-src":
            raise Invalid(f"There is no such action: {action}")
        body = validate(args, FROM_SRC_SCHEMA)
        group = groups.group_create_from_source(
            self.ctx, group_snapshot_id=body.get("group_snapshot_id"), source_group_id=body.get("source_group_id"),
            name=body.get("name"), description=body.get("description"))
        return Response({"group": self.summary(group)}, status=202)


# -- group snapshots --------------------------------------------------------------------------
class GroupSnapshotsView(GroupAPIView):
    feature = "group_snapshots"
    detail = False

    def get(self, request: Request, **_kw: Any) -> Response:
        found = groups.group_snapshot_list(
            self.ctx, all_tenants=as_bool(request.query_params.get("all_tenants", False)),
            group_id=request.query_params.get("group_id"), **self.page())
        return Response({"group_snapshots": [present(GROUP_SNAPSHOT_FIELDS, g, self.v) if self.detail
                                             else {"id": g.id, "name": g.name} for g in found]})

    def post(self, request: Request, **_kw: Any) -> Response:
        body = validate(self.body(), GSNAP_CREATE_SCHEMA)["group_snapshot"]
        gsnap = groups.group_snapshot_create(self.ctx, group_id=body["group_id"], name=body.get("name"),
                                             description=body.get("description"))
        return Response({"group_snapshot": {"id": gsnap.id, "name": gsnap.name,
                                            "group_type_id": gsnap.group_type_id}}, status=202)


class GroupSnapshotsDetailView(GroupSnapshotsView):
    detail = True


class GroupSnapshotView(GroupAPIView):
    feature = "group_snapshots"

    def get(self, request: Request, group_snapshot_id: str, **_kw: Any) -> Response:
        gsnap = groups.group_snapshot_get(self.ctx, group_snapshot_id)
        return Response({"group_snapshot": present(GROUP_SNAPSHOT_FIELDS, gsnap, self.v)})

    def delete(self, request: Request, group_snapshot_id: str, **_kw: Any) -> Response:
        groups.group_snapshot_delete(self.ctx, group_snapshot_id)
        return Response(status=202)


class GroupSnapshotActionView(GroupAPIView):
    """An admin's ``reset_status`` (3.19)."""

    feature = "group_snapshot_reset_status"

    def post(self, request: Request, group_snapshot_id: str, **_kw: Any) -> Response:
        action, args = self.requested_action()
        if action != "reset_status":
            raise Invalid(f"There is no such action: {action}")
        groups.group_snapshot_reset_status(self.ctx, group_snapshot_id,
                                           status=validate(args, STATUS_SCHEMA)["status"])
        return Response(status=202)
