"""Cinder's ``/types``: list and show (any reader, private types only to their projects and
admins), create/update/delete (admins), ``/types/{id}/extra_specs``, the ``addProjectAccess`` /
``removeProjectAccess`` actions and ``/types/{id}/os-volume-type-access``."""
from __future__ import annotations

from typing import Any

from rest_framework.request import Request
from rest_framework.response import Response

from cloudcore.core.api.validation import as_bool, validate, word_bool
from cloudcore.core.exceptions import Invalid, NotFound

from .. import types
from ..presenter import volume_type_body
from .views import VolumeAPIView

_BOOL = {"type": ["boolean", "string"],
         "enum": [True, False, "true", "false", "True", "False", "1", "0", "yes", "no", "on", "off"]}
_SPECS = {"type": "object", "patternProperties": {r"^[a-zA-Z0-9-_:. /]{1,255}$": {"type": "string", "maxLength": 255}},
          "additionalProperties": False}
CREATE_SCHEMA = {"type": "object", "required": ["volume_type"], "additionalProperties": False, "properties": {
    "volume_type": {"type": "object", "required": ["name"], "additionalProperties": False, "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 255},
        "description": {"type": ["string", "null"], "maxLength": 255},
        "extra_specs": {"anyOf": [_SPECS, {"type": "null"}]},
        "os-volume-type-access:is_public": _BOOL}}}}
UPDATE_SCHEMA = {"type": "object", "required": ["volume_type"], "additionalProperties": False, "properties": {
    "volume_type": {"type": "object", "additionalProperties": False, "minProperties": 1, "properties": {
        "name": {"type": ["string", "null"], "minLength": 1, "maxLength": 255},
        "description": {"type": ["string", "null"], "maxLength": 255}, "is_public": _BOOL}}}}
SPECS_SCHEMA = {"type": "object", "required": ["extra_specs"], "additionalProperties": False,
                "properties": {"extra_specs": _SPECS}}
ACCESS_SCHEMA = {"type": "object", "required": ["project"], "additionalProperties": False,
                 "properties": {"project": {"type": "string", "minLength": 1, "maxLength": 255}}}


def _is_public_param(value: str | None) -> bool | None:
    """Cinder's ``is_public`` filter: absent is true, ``none`` is every type, else a boolean."""
    if value is None:
        return True
    if value.lower() == "none":
        return None
    return word_bool(value, invalid=f"Invalid is_public filter [{value}]")


class TypesView(VolumeAPIView):
    def get(self, request: Request, **_kw: Any) -> Response:
        found = types.volume_type_list(self.ctx, is_public=_is_public_param(request.query_params.get("is_public")))
        return Response({"volume_types": [volume_type_body(self.ctx, t) for t in found]})

    def post(self, request: Request, **_kw: Any) -> Response:
        body = validate(self.body(), CREATE_SCHEMA)["volume_type"]
        vt = types.volume_type_create(self.ctx, name=body["name"], description=body.get("description"),
                                      is_public=as_bool(body.get("os-volume-type-access:is_public", True)),
                                      extra_specs=body.get("extra_specs"))
        return Response({"volume_type": volume_type_body(self.ctx, vt, qos=False)})


class TypeView(VolumeAPIView):
    def get(self, request: Request, type_id: str, **_kw: Any) -> Response:
        return Response({"volume_type": volume_type_body(self.ctx, types.volume_type_get(self.ctx, type_id))})

    def put(self, request: Request, type_id: str, **_kw: Any) -> Response:
        vt = types.volume_type_get(self.ctx, type_id)
        body = validate(self.body(), UPDATE_SCHEMA)["volume_type"]
        if "is_public" in body:
            body["is_public"] = as_bool(body["is_public"])
        vt = types.volume_type_update(self.ctx, vt, changes=body)
        return Response({"volume_type": volume_type_body(self.ctx, vt, access_extension=False, qos=False)})

    def delete(self, request: Request, type_id: str, **_kw: Any) -> Response:
        types.volume_type_delete(self.ctx, types.volume_type_get(self.ctx, type_id))
        return Response(status=202)


class TypeExtraSpecsView(VolumeAPIView):
    def get(self, request: Request, type_id: str, **_kw: Any) -> Response:
        vt = types.volume_type_get(self.ctx, type_id)
        return Response({"extra_specs": types.volume_type_extra_specs_get(self.ctx, vt)})

    def post(self, request: Request, type_id: str, **_kw: Any) -> Response:
        vt = types.volume_type_get(self.ctx, type_id)
        specs = validate(self.body(), SPECS_SCHEMA)["extra_specs"]
        return Response({"extra_specs": types.volume_type_extra_specs_set(self.ctx, vt, specs=specs)})


class TypeExtraSpecView(VolumeAPIView):
    """``/types/{id}/extra_specs/{key}``: show, update (the body names the one key), delete."""

    def get(self, request: Request, type_id: str, key: str, **_kw: Any) -> Response:
        vt = types.volume_type_get(self.ctx, type_id)
        self.authorize("volume_extension:types_extra_specs:show")
        specs = types.visible_extra_specs(self.ctx, vt)
        if key not in specs:
            raise NotFound(f"Volume Type {vt.id} has no extra specs with key {key}.")
        return Response({key: specs[key]})

    def put(self, request: Request, type_id: str, key: str, **_kw: Any) -> Response:
        vt = types.volume_type_get(self.ctx, type_id)
        body = validate(self.body(), _SPECS)
        if key not in body:
            raise Invalid("Request body and URI mismatch")
        if len(body) > 1:
            raise Invalid("Request body contains too many items")
        return Response(types.volume_type_extra_specs_set(self.ctx, vt, specs=body, one_item=True))

    def delete(self, request: Request, type_id: str, key: str, **_kw: Any) -> Response:
        types.volume_type_extra_specs_delete(self.ctx, types.volume_type_get(self.ctx, type_id), key=key)
        return Response(status=202)


class TypeActionView(VolumeAPIView):
    """``addProjectAccess`` / ``removeProjectAccess`` (``{"project": id}``) on a private type."""

    def post(self, request: Request, type_id: str, **_kw: Any) -> Response:
        vt = types.volume_type_get(self.ctx, type_id)
        action, args = self.requested_action()
        if action == "addProjectAccess":
            project = validate(args, ACCESS_SCHEMA)["project"]
            types.volume_type_access_add(self.ctx, vt, project_id=project)
        elif action == "removeProjectAccess":
            project = validate(args, ACCESS_SCHEMA)["project"]
            types.volume_type_access_remove(self.ctx, vt, project_id=project)
        else:
            raise Invalid(f"There is no such action: {action}")
        return Response(status=202)


class TypeAccessView(VolumeAPIView):
    def get(self, request: Request, type_id: str, **_kw: Any) -> Response:
        vt = types.volume_type_get(self.ctx, type_id)
        return Response({"volume_type_access": [{"volume_type_id": vt.id, "project_id": project}
                                                for project in types.volume_type_access_list(self.ctx, vt)]})
