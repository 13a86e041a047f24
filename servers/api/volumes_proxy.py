"""Nova's volume proxy (``/os-volumes``, ``/os-snapshots``; gone from 2.36, as in Nova): the block
storage service's volumes and snapshots in the compute API's old shape (camelCase, ``displayName``),
for clients that still use it. Every call goes to the volume service's own services, which check
Cinder's policies and quotas after Nova's rules here."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rest_framework.request import Request
from rest_framework.response import Response

from cloudcore.core.api.paging import offset_page
from cloudcore.core.api.validation import METADATA, validate
from cloudcore.core.api.views import ComputeProxyAPIView
from cloudcore.core.policy import authorize
from volumes import services as volumes
from volumes import snapshots

if TYPE_CHECKING:  # annotations only: other apps read volumes through its services
    from volumes.models import Snapshot, Volume

_TEXT = {"type": ["string", "null"], "maxLength": 255}
VOLUME_CREATE = {"type": "object", "properties": {"volume": {
    "type": "object", "properties": {
        "volume_type": _TEXT, "metadata": METADATA, "snapshot_id": _TEXT, "availability_zone": _TEXT,
        "display_name": _TEXT, "display_description": _TEXT,
        "size": {"type": ["integer", "string"], "pattern": "^[0-9]+$", "minimum": 1}},
    "required": ["size"], "additionalProperties": False}}, "required": ["volume"], "additionalProperties": False}
SNAPSHOT_CREATE = {"type": "object", "properties": {"snapshot": {
    "type": "object", "properties": {
        "volume_id": {"type": "string", "minLength": 1}, "force": {"type": ["boolean", "string"]},
        "display_name": _TEXT, "display_description": _TEXT},
    "required": ["volume_id"], "additionalProperties": False}}, "required": ["snapshot"],
    "additionalProperties": False}


def _ts(value: Any) -> str | None:
    return value.strftime("%Y-%m-%dT%H:%M:%S.%f") if value else None


def volume_body(vol: Volume) -> dict[str, Any]:
    attachments = [{"id": vol.id, "volumeId": vol.id, "serverId": a.instance_uuid, "device": a.mountpoint}
                   for a in vol.attachments.all() if a.instance_uuid and a.attach_status == "attached"]
    return {"id": vol.id, "status": vol.status, "size": vol.size, "availabilityZone": vol.availability_zone,
            "createdAt": _ts(vol.created_at), "attachments": attachments or [{}], "displayName": vol.name,
            "displayDescription": vol.description,
            "volumeType": vol.volume_type.name if vol.volume_type is not None else None,
            "snapshotId": vol.snapshot_id, "metadata": dict(vol.metadata or {})}


def snapshot_body(snap: Snapshot) -> dict[str, Any]:
    return {"id": snap.id, "volumeId": snap.volume_id, "status": snap.status, "size": snap.size,
            "createdAt": _ts(snap.created_at), "displayName": snap.name, "displayDescription": snap.description}


class _ProxyView(ComputeProxyAPIView):

    def rule(self, name: str) -> None:
        authorize(self.ctx, f"os_compute_api:os-volumes:{name}", {"project_id": self.ctx.project_id})


class VolumesView(_ProxyView):
    detail = False

    def get(self, request: Request) -> Response:
        self.rule("detail" if self.detail else "list")
        found = volumes.volume_list(self.ctx)
        return Response({"volumes": [volume_body(v) for v in offset_page(found, request.query_params)]})

    def post(self, request: Request) -> Response:
        self.rule("create")
        body = self.body()
        validate(body, VOLUME_CREATE)
        spec = body["volume"]
        vol = volumes.volume_create(self.ctx, size=int(spec["size"]), name=spec.get("display_name"),
                                    description=spec.get("display_description"),
                                    availability_zone=spec.get("availability_zone"), metadata=spec.get("metadata"),
                                    volume_type=spec.get("volume_type"), snapshot_id=spec.get("snapshot_id"))
        return Response({"volume": volume_body(vol)})


class VolumesDetailView(VolumesView):
    detail = True


class VolumeView(_ProxyView):
    def get(self, request: Request, volume_id: str) -> Response:
        self.rule("show")
        return Response({"volume": volume_body(volumes.volume_get(self.ctx, volume_id))})

    def delete(self, request: Request, volume_id: str) -> Response:
        self.rule("delete")
        volumes.volume_delete(self.ctx, volumes.volume_get(self.ctx, volume_id))
        return Response(status=202)


class SnapshotsView(_ProxyView):
    detail = False

    def get(self, request: Request) -> Response:
        self.rule("snapshots:detail" if self.detail else "snapshots:list")
        found = snapshots.snapshot_list(self.ctx)
        return Response({"snapshots": [snapshot_body(s) for s in offset_page(found, request.query_params)]})

    def post(self, request: Request) -> Response:
        self.rule("snapshots:create")
        body = self.body()
        validate(body, SNAPSHOT_CREATE)
        spec = body["snapshot"]
        force = spec.get("force", False)
        force = force if isinstance(force, bool) else str(force).lower() in ("true", "1", "yes", "on")
        snap = snapshots.snapshot_create(self.ctx, volume=volumes.volume_get(self.ctx, str(spec["volume_id"])),
                                         name=spec.get("display_name"),
                                         description=spec.get("display_description"), force=force)
        return Response({"snapshot": snapshot_body(snap)})


class SnapshotsDetailView(SnapshotsView):
    detail = True


class SnapshotView(_ProxyView):
    def get(self, request: Request, snapshot_id: str) -> Response:
        self.rule("snapshots:show")
        return Response({"snapshot": snapshot_body(snapshots.snapshot_get(self.ctx, snapshot_id))})

    def delete(self, request: Request, snapshot_id: str) -> Response:
        self.rule("snapshots:delete")
        snapshots.snapshot_delete(self.ctx, snapshot_id)
        return Response(status=202)
