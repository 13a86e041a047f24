"""Cinder's ``/qos-specs`` (admins): create, list, show, set keys (``PUT``), ``delete_keys``,
delete (``?force=``), and the ``associate`` / ``disassociate`` / ``disassociate_all`` /
``associations`` sub-resources (GETs with ``?vol_type_id=``, as Cinder has them)."""
from __future__ import annotations

from typing import Any

from rest_framework.request import Request
from rest_framework.response import Response

from cloudcore.core.api.validation import validate
from cloudcore.core.exceptions import Invalid

from .. import qos
from ..models import QosSpecs
from .views import VolumeAPIView, _base

CREATE_SCHEMA = {"type": "object", "required": ["qos_specs"], "additionalProperties": False, "properties": {
    "qos_specs": {"type": "object", "required": ["name"], "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 255},
        "consumer": {"type": "string"}},
        "additionalProperties": {"type": ["string", "number"]}}}}
UPDATE_SCHEMA = {"type": "object", "required": ["qos_specs"], "additionalProperties": False, "properties": {
    "qos_specs": {"type": "object", "minProperties": 1, "additionalProperties": {"type": ["string", "number"]}}}}
DELETE_KEYS_SCHEMA = {"type": "object", "required": ["keys"], "additionalProperties": False, "properties": {
    "keys": {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1, "maxLength": 255}}}}

_TRUE = ("true", "1", "yes", "on", "y", "t")
_FALSE = ("false", "0", "no", "off", "n", "f")


def _force(value: str | None) -> bool:
    if value is None:
        return False
    if value.lower() not in _TRUE + _FALSE:
        raise Invalid(f"Invalid value '{value}' for force.")
    return value.lower() in _TRUE


def qos_body(specs: QosSpecs) -> dict[str, Any]:
    return {"id": specs.id, "name": specs.name, "consumer": specs.consumer, "specs": specs.specs or {}}


class QosView(VolumeAPIView):
    def links(self, specs: QosSpecs) -> list[dict[str, str]]:
        base = _base(self.request)
        return [{"rel": "self", "href": f"{base}/v3/{self.ctx.project_id}/qos-specs/{specs.id}"},
                {"rel": "bookmark", "href": f"{base}/{self.ctx.project_id}/qos-specs/{specs.id}"}]

    def detail(self, specs: QosSpecs) -> Response:
        return Response({"qos_specs": qos_body(specs), "links": self.links(specs)})


class QosSpecsView(QosView):
    def get(self, request: Request, **_kw: Any) -> Response:
        return Response({"qos_specs": [qos_body(s) for s in qos.qos_specs_list(self.ctx)]})

    def post(self, request: Request, **_kw: Any) -> Response:
        body = dict(validate(self.body(), CREATE_SCHEMA)["qos_specs"])
        name, consumer = body.pop("name"), body.pop("consumer", "back-end")
        return self.detail(qos.qos_specs_create(self.ctx, name=name, consumer=consumer, specs=body))


class QosSpecView(QosView):
    def get(self, request: Request, specs_id: str, **_kw: Any) -> Response:
        return self.detail(qos.qos_specs_get(self.ctx, specs_id))

    def put(self, request: Request, specs_id: str, **_kw: Any) -> Response:
        specs = qos.qos_specs_get(self.ctx, specs_id)
        body = validate(self.body(), UPDATE_SCHEMA)["qos_specs"]
        return Response({"qos_specs": qos.qos_specs_update(self.ctx, specs, specs=body)})

    def delete(self, request: Request, specs_id: str, **_kw: Any) -> Response:
        specs = qos.qos_specs_get(self.ctx, specs_id)
        qos.qos_specs_delete(self.ctx, specs, force=_force(request.query_params.get("force")))
        return Response(status=202)


class QosDeleteKeysView(QosView):
    def put(self, request: Request, specs_id: str, **_kw: Any) -> Response:
        specs = qos.qos_specs_get(self.ctx, specs_id)
        qos.qos_specs_delete_keys(self.ctx, specs, keys=validate(self.body(), DELETE_KEYS_SCHEMA)["keys"])
        return Response(status=202)


class QosAssociationsView(QosView):
    def get(self, request: Request, specs_id: str, **_kw: Any) -> Response:
        specs = qos.qos_specs_get(self.ctx, specs_id)
        return Response({"qos_associations": [{"association_type": "volume_type", "name": vt.name, "id": vt.id}
                                              for vt in qos.qos_specs_associations(self.ctx, specs)]})


class QosAssociateView(QosView):
    """``associate`` / ``disassociate`` (``?vol_type_id=``) and ``disassociate_all``."""

    operation = "associate"

    def get(self, request: Request, specs_id: str, **_kw: Any) -> Response:
        specs = qos.qos_specs_get(self.ctx, specs_id)
        type_id = request.query_params.get("vol_type_id")
        if self.operation == "associate":
            qos.qos_specs_associate(self.ctx, specs, type_id=type_id)
        elif self.operation == "disassociate":
            qos.qos_specs_disassociate(self.ctx, specs, type_id=type_id)
        else:
            qos.qos_specs_disassociate_all(self.ctx, specs)
        return Response(status=202)
