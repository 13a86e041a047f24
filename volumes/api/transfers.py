"""Cinder's volume transfers: ``/os-volume-transfer`` and, from 3.55, ``/volume-transfers`` (same
resource; 3.55 adds ``no_snapshots``, 3.57 ``source_project_id``, ``destination_project_id`` and
``accepted`` to create, show and the detailed list)."""
from __future__ import annotations

from typing import Any

from rest_framework.request import Request
from rest_framework.response import Response

from cloudcore.core.api.validation import validate
from cloudcore.core.api.versioned import Field, present
from cloudcore.core.api.versioned import timestamp as _ts
from cloudcore.core.exceptions import NotFound

from .. import services, transfers
from ..models import VolumeTransfer
from .views import VolumeAPIView, _base

#: from this microversion ``/volume-transfers`` exists and takes ``no_snapshots``
NEW_API = (3, 55)
CREATE_SCHEMA = {"type": "object", "required": ["transfer"], "additionalProperties": False, "properties": {
    "transfer": {"type": "object", "required": ["volume_id"], "additionalProperties": False, "properties": {
        "volume_id": {"type": "string", "minLength": 1}, "name": {"type": ["string", "null"], "maxLength": 255},
        "no_snapshots": {"type": ["boolean", "string"]}}}}}
ACCEPT_SCHEMA = {"type": "object", "required": ["accept"], "properties": {"accept": {
    "type": "object", "required": ["auth_key"], "properties": {"auth_key": {"type": "string"}}}}}


def _links(base: str, t: VolumeTransfer, path: str) -> list[dict[str, str]]:
    return [{"rel": "self", "href": f"{base}/v3/{t.source_project_id}/{path}/{t.id}"},
            {"rel": "bookmark", "href": f"{base}/{t.source_project_id}/{path}/{t.id}"}]


def _detail(name: str, get: Any, since: tuple[int, int]) -> Field[VolumeTransfer]:
    return Field(name, get, since=since)


#: the detailed transfer (create, show, list detail); the brief one is id, name, volume_id, links
DETAIL_FIELDS: tuple[Field[VolumeTransfer], ...] = (
    Field("id", lambda t: t.id), Field("created_at", lambda t: _ts(t.created_at)), Field("name", lambda t: t.name),
    Field("volume_id", lambda t: t.volume_id),
    _detail("no_snapshots", lambda t: t.no_snapshots, NEW_API),
    _detail("source_project_id", lambda t: t.source_project_id, (3, 57)),
    _detail("destination_project_id", lambda t: t.destination_project_id, (3, 57)),
    _detail("accepted", lambda t: t.accepted, (3, 57)),
)


class TransferAPIView(VolumeAPIView):
    #: the collection's path (``os-volume-transfer`` or ``volume-transfers``)
    path = "os-volume-transfer"

    def check_version(self) -> None:
        if self.path == "volume-transfers" and self.v < NEW_API:
            raise NotFound("The resource could not be found.")

    def brief(self, t: VolumeTransfer) -> dict[str, Any]:
        return {"id": t.id, "name": t.name, "volume_id": t.volume_id,
                "links": _links(_base(self.request), t, self.path)}

    def detail(self, t: VolumeTransfer) -> dict[str, Any]:
        return {**present(DETAIL_FIELDS, t, self.v), "links": _links(_base(self.request), t, self.path)}


class TransfersView(TransferAPIView):
    def get(self, request: Request, detail: bool = False, **_kw: Any) -> Response:
        self.check_version()
        found = transfers.transfer_list(self.ctx, all_tenants=bool(request.query_params.get("all_tenants")))
        return Response({"transfers": [self.detail(t) if detail else self.brief(t) for t in found]})

    def post(self, request: Request, **_kw: Any) -> Response:
        self.check_version()
        body = validate(self.body(), CREATE_SCHEMA)["transfer"]
        vol = services.volume_get(self.ctx, body["volume_id"])
        no_snapshots = body.get("no_snapshots", False) if self.v >= NEW_API else False
        transfer, key = transfers.transfer_create(
            self.ctx, vol, name=body.get("name"),
            no_snapshots=no_snapshots if isinstance(no_snapshots, bool) else str(no_snapshots).lower() == "true")
        return Response({"transfer": {**self.detail(transfer), "auth_key": key}}, status=202)


class TransfersDetailView(TransfersView):
    def get(self, request: Request, detail: bool = True, **_kw: Any) -> Response:
        return super().get(request, detail=True)


class TransferView(TransferAPIView):
    def get(self, request: Request, transfer_id: str, **_kw: Any) -> Response:
        self.check_version()
        return Response({"transfer": self.detail(transfers.transfer_get(self.ctx, transfer_id))})

    def delete(self, request: Request, transfer_id: str, **_kw: Any) -> Response:
        self.check_version()
        transfers.transfer_delete(self.ctx, transfer_id)
        return Response(status=202)


class TransferAcceptView(TransferAPIView):
    def post(self, request: Request, transfer_id: str, **_kw: Any) -> Response:
        self.check_version()
        key = validate(self.body(), ACCEPT_SCHEMA)["accept"]["auth_key"]
        return Response({"transfer": self.brief(transfers.transfer_accept(self.ctx, transfer_id, auth_key=key))},
                        status=202)
