"""Cinder's ``/types/{type_id}/encryption`` (admins): show the spec (``{}`` without one), one item
of it, create, update and delete (``volumes.encryption``)."""
from __future__ import annotations

from typing import Any

from rest_framework.request import Request
from rest_framework.response import Response

from cloudcore.core.api.validation import validate
from cloudcore.core.api.versioned import timestamp as _ts

from .. import encryption, types
from ..models import VolumeTypeEncryption
from .views import VolumeAPIView

_SPEC_PROPERTIES = {
    "provider": {"type": "string", "minLength": 1, "maxLength": 255},
    "cipher": {"type": ["string", "null"], "maxLength": 255},
    "key_size": {"type": ["integer", "null"], "minimum": 0},
    "control_location": {"type": "string", "enum": list(encryption.CONTROL_LOCATIONS)},
}
CREATE_SCHEMA = {"type": "object", "required": ["encryption"], "additionalProperties": False, "properties": {
    "encryption": {"type": "object", "required": ["provider"], "additionalProperties": False,
                   "properties": _SPEC_PROPERTIES}}}
UPDATE_SCHEMA = {"type": "object", "required": ["encryption"], "additionalProperties": False, "properties": {
    "encryption": {"type": "object", "minProperties": 1, "additionalProperties": False,
                   "properties": _SPEC_PROPERTIES}}}


def _created(enc: VolumeTypeEncryption) -> dict[str, Any]:
    return {"volume_type_id": enc.volume_type_id, "encryption_id": enc.id, "provider": enc.provider,
            "cipher": enc.cipher, "key_size": enc.key_size, "control_location": enc.control_location}


def _shown(enc: VolumeTypeEncryption) -> dict[str, Any]:
    return {**_created(enc), "created_at": _ts(enc.created_at), "updated_at": _ts(enc.updated_at),
            "deleted": False, "deleted_at": None}


class EncryptionView(VolumeAPIView):
    def get(self, request: Request, type_id: str, **_kw: Any) -> Response:
        enc = encryption.encryption_get(self.ctx, types.volume_type_get(self.ctx, type_id))
        return Response(_shown(enc) if enc is not None else {})

    def post(self, request: Request, type_id: str, **_kw: Any) -> Response:
        vt = types.volume_type_get(self.ctx, type_id)
        spec = validate(self.body(), CREATE_SCHEMA)["encryption"]
        return Response({"encryption": _created(encryption.encryption_create(self.ctx, vt, spec=spec))})


class EncryptionItemView(VolumeAPIView):
    """``/types/{type_id}/encryption/{key}``: one field of the spec (GET); the spec itself for PUT
    and DELETE, whatever the last segment names (Cinder's ``encryption_id``)."""

    def get(self, request: Request, type_id: str, key: str, **_kw: Any) -> Response:
        vt = types.volume_type_get(self.ctx, type_id)
        enc = encryption.encryption_get(self.ctx, vt)
        shown = _shown(enc) if enc is not None else {}
        if key not in shown:
            raise encryption.EncryptionNotFound(type_id=vt.id)
        return Response({key: shown[key]})

    def put(self, request: Request, type_id: str, key: str, **_kw: Any) -> Response:
        vt = types.volume_type_get(self.ctx, type_id)
        spec = validate(self.body(), UPDATE_SCHEMA)["encryption"]
        encryption.encryption_update(self.ctx, vt, spec=spec)
        return Response({"encryption": spec})

    def delete(self, request: Request, type_id: str, key: str, **_kw: Any) -> Response:
        encryption.encryption_delete(self.ctx, types.volume_type_get(self.ctx, type_id))
        return Response(status=202)
