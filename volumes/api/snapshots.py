"""Cinder's ``/snapshots``: create (``force`` before 3.66), list (and detail), show, update,
delete, ``/snapshots/{id}/metadata`` and ``/snapshots/{id}/action``."""
from __future__ import annotations

from typing import Any

from rest_framework.request import Request
from rest_framework.response import Response

from cloudcore.core.api.validation import validate, word_bool
from cloudcore.core.api.versioned import present
from cloudcore.core.exceptions import Invalid, NotFound

from .. import actions, services, snapshots
from ..models import Snapshot
from ..owned import LIST_FILTERS
from ..presenter import SNAPSHOT_FIELDS, ShownSnapshot
from .views import VolumeAPIView, _int_param, _sort_param

CREATE_SCHEMA = {"type": "object", "required": ["snapshot"], "additionalProperties": False, "properties": {
    "snapshot": {"type": "object", "required": ["volume_id"], "additionalProperties": False, "properties": {
        "volume_id": {"type": ["string", "null"]}, "name": {"type": ["string", "null"], "maxLength": 255},
        "display_name": {"type": ["string", "null"], "maxLength": 255},
        "description": {"type": ["string", "null"]}, "display_description": {"type": ["string", "null"]},
        "force": {"type": ["boolean", "string", "null"]}, "metadata": {"type": ["object", "null"]}}}}}
UPDATE_SCHEMA = {"type": "object", "required": ["snapshot"], "additionalProperties": False, "properties": {
    "snapshot": {"type": "object", "additionalProperties": False, "minProperties": 1, "properties": {
        "name": {"type": ["string", "null"], "maxLength": 255}, "display_name": {"type": ["string", "null"]},
        "description": {"type": ["string", "null"]}, "display_description": {"type": ["string", "null"]}}}}}
METADATA_SCHEMA = {"type": "object", "required": ["metadata"], "properties": {"metadata": {"type": "object"}}}
ITEM_SCHEMA = {"type": "object", "required": ["meta"], "properties": {
    "meta": {"type": "object", "minProperties": 1, "maxProperties": 1}}}


def _flag(value: Any) -> bool:
    if isinstance(value, bool) or value is None:
        return bool(value)
    return word_bool(value, invalid=f"Invalid input received: {value} is not a valid boolean value for force.")


class SnapshotAPIView(VolumeAPIView):
    def shown(self, snap: Snapshot, *, extended: bool = True) -> dict[str, Any]:
        return present(SNAPSHOT_FIELDS, ShownSnapshot(snap, extended=extended), self.v)


class SnapshotsView(SnapshotAPIView):
    def get(self, request: Request, detail: bool = False, **_kw: Any) -> Response:
        params = request.query_params
        snaps = snapshots.snapshot_list(
            self.ctx, all_tenants=bool(params.get("all_tenants")),
            filters={k: params[k] for k in LIST_FILTERS if k in params},
            limit=_int_param(params.get("limit"), "limit"), offset=_int_param(params.get("offset"), "offset") or 0,
            marker=params.get("marker"), sort=_sort_param(params))
        if detail:
            return Response({"snapshots": [self.shown(s) for s in snaps]})
        return Response({"snapshots": [self.shown(s, extended=False) for s in snaps]})

    def post(self, request: Request, **_kw: Any) -> Response:
        body = validate(self.body(), CREATE_SCHEMA)["snapshot"]
        # a missing volume, None included, is a 404 (Cinder)
        volume = services.volume_get(self.ctx, str(body["volume_id"]))
        snap = snapshots.snapshot_create(
            self.ctx, volume=volume, name=body.get("name", body.get("display_name")),
            description=body.get("description", body.get("display_description")), force=_flag(body.get("force")),
            metadata=body.get("metadata"), version=self.v)
        return Response({"snapshot": self.shown(snap, extended=False)}, status=202)


class SnapshotsDetailView(SnapshotsView):
    def get(self, request: Request, detail: bool = True, **_kw: Any) -> Response:
        return super().get(request, detail=True)


class SnapshotView(SnapshotAPIView):
    def get(self, request: Request, snapshot_id: str, **_kw: Any) -> Response:
        return Response({"snapshot": self.shown(snapshots.snapshot_get(self.ctx, snapshot_id))})

    def put(self, request: Request, snapshot_id: str, **_kw: Any) -> Response:
        body = validate(self.body(), UPDATE_SCHEMA)["snapshot"]
        changes = {"name": body.get("name", body.get("display_name")),
                   "description": body.get("description", body.get("display_description"))}
        changes = {k: v for k, v in changes.items() if k in body or f"display_{k}" in body}
        snap = snapshots.snapshot_update(self.ctx, snapshot_id, changes=changes)
        return Response({"snapshot": self.shown(snap, extended=False)})

    def delete(self, request: Request, snapshot_id: str, **_kw: Any) -> Response:
        snapshots.snapshot_delete(self.ctx, snapshot_id)
        return Response(status=202)


SNAPSHOT_STATUS_SCHEMA = {"type": "object", "required": ["status"], "properties": {
    "status": {"type": "string"}, "progress": {"type": ["string", "null"]}}}


class SnapshotActionView(SnapshotAPIView):
    """An admin's ``os-reset_status`` and ``os-force_delete``, and ``os-update_snapshot_status``."""

    def post(self, request: Request, snapshot_id: str, **_kw: Any) -> Response:
        action, args = self.requested_action()
        if action == "os-reset_status":
            status = validate(args, SNAPSHOT_STATUS_SCHEMA)["status"]
            actions.snapshot_reset_status(self.ctx, snapshot_id, status=status)
        elif action == "os-force_delete":
            actions.snapshot_force_delete(self.ctx, snapshot_id)
        elif action == "os-update_snapshot_status":
            validate(args, SNAPSHOT_STATUS_SCHEMA)
            actions.snapshot_update_status(self.ctx, snapshot_id, status=args["status"], progress=args.get("progress"))
        else:
            raise Invalid(f"There is no such action: {action}")
        return Response(status=202)


class SnapshotMetadataView(SnapshotAPIView):
    def get(self, request: Request, snapshot_id: str, **_kw: Any) -> Response:
        return Response({"metadata": snapshots.snapshot_get(self.ctx, snapshot_id).metadata or {}})

    def post(self, request: Request, snapshot_id: str, **_kw: Any) -> Response:
        metadata = validate(self.body(), METADATA_SCHEMA)["metadata"]
        return Response({"metadata": snapshots.snapshot_metadata_set(self.ctx, snapshot_id, metadata=metadata,
                                                                     replace=False).metadata})

    def put(self, request: Request, snapshot_id: str, **_kw: Any) -> Response:
        metadata = validate(self.body(), METADATA_SCHEMA)["metadata"]
        return Response({"metadata": snapshots.snapshot_metadata_set(self.ctx, snapshot_id, metadata=metadata,
                                                                     replace=True).metadata})


class SnapshotMetadataItemView(SnapshotAPIView):
    """``/snapshots/{id}/metadata/{key}``: show, update (the body names the one key), delete."""

    def get(self, request: Request, snapshot_id: str, key: str, **_kw: Any) -> Response:
        metadata = snapshots.snapshot_get(self.ctx, snapshot_id).metadata or {}
        if key not in metadata:
            raise NotFound(f"Metadata item was not found with key {key}.")
        return Response({"meta": {key: metadata[key]}})

    def put(self, request: Request, snapshot_id: str, key: str, **_kw: Any) -> Response:
        meta = validate(self.body(), ITEM_SCHEMA)["meta"]
        if key not in meta:
            raise Invalid("Request body and URI mismatch")
        snapshots.snapshot_metadata_set(self.ctx, snapshot_id, metadata=meta, replace=False)
        return Response({"meta": {key: str(meta[key])}})

    def delete(self, request: Request, snapshot_id: str, key: str, **_kw: Any) -> Response:
        snapshots.snapshot_metadata_delete(self.ctx, snapshot_id, key=key)
        return Response(status=200)
