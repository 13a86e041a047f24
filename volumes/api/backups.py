"""Cinder's ``/backups`` (create, list and detail, show, update 3.9, delete, restore, the admin's
``export_record``/``import_record``, ``os-force_delete`` and ``os-reset_status``) and the admin-only
``/os-hosts`` (the block storage hosts, and one host's volumes and snapshots per project)."""
from __future__ import annotations

import socket
from typing import Any

from django.db.models import Count, Sum
from django.utils import timezone
from rest_framework.request import Request
from rest_framework.response import Response

from cloudcore.core.api.validation import validate
from cloudcore.core.api.versioned import present
from cloudcore.core.api.versioned import timestamp as _ts
from cloudcore.core.exceptions import NotFound
from cloudcore.core.policy import can

from .. import backups, services
from ..models import Backup, Snapshot, Volume
from ..owned import LIST_FILTERS
from ..presenter import BACKUP_FIELDS, ShownBackup
from .snapshots import _flag
from .views import VOLUME_ZONE, VolumeAPIView, _base, _int_param, _sort_param

CREATE_SCHEMA = {"type": "object", "required": ["backup"], "additionalProperties": False, "properties": {
    "backup": {"type": "object", "required": ["volume_id"], "additionalProperties": False, "properties": {
        "volume_id": {"type": "string"}, "container": {"type": ["string", "null"], "maxLength": 255},
        "name": {"type": ["string", "null"], "maxLength": 255}, "description": {"type": ["string", "null"]},
        "incremental": {"type": ["boolean", "string", "null"]}, "force": {"type": ["boolean", "string", "null"]},
        "snapshot_id": {"type": ["string", "null"]}, "metadata": {"type": ["object", "null"]},
        "availability_zone": {"type": ["string", "null"]}}}}}
_NAME = {"type": ["string", "null"], "maxLength": 255}
#: Backup update (3.9): name and description; metadata from 3.43 (anything else is a 400).
UPDATE_SCHEMAS = {
    (3, 9): {"type": "object", "required": ["backup"], "additionalProperties": False, "properties": {
        "backup": {"type": "object", "additionalProperties": False, "properties": {
            "name": _NAME, "description": {"type": ["string", "null"], "maxLength": 255}}}}},
    (3, 43): {"type": "object", "required": ["backup"], "additionalProperties": False, "properties": {
        "backup": {"type": "object", "additionalProperties": False, "properties": {
            "name": _NAME, "description": {"type": ["string", "null"], "maxLength": 255},
            "metadata": {"type": ["object", "null"]}}}}},
}
IMPORT_SCHEMA = {"type": "object", "required": ["backup-record"], "properties": {
    "backup-record": {"type": "object", "required": ["backup_service", "backup_url"], "additionalProperties": False,
                      "properties": {"backup_service": {"type": "string", "minLength": 1, "maxLength": 255},
                                     "backup_url": {"type": "string", "minLength": 1}}}}}
RESET_SCHEMA = {"type": "object", "required": ["status"], "additionalProperties": False, "properties": {
    "status": {"type": "string"}}}
RESTORE_SCHEMA = {"type": "object", "required": ["restore"], "properties": {
    "restore": {"type": ["object", "null"], "properties": {
        "volume_id": {"type": ["string", "null"]}, "name": {"type": ["string", "null"], "maxLength": 255}}}}}


class BackupAPIView(VolumeAPIView):
    def shown(self, request: Request, backup: Backup, *, extended: bool = True) -> dict[str, Any]:
        admin = can(self.ctx, "backup:backup_project_attribute",
                    {"project_id": backup.project_id, "user_id": backup.user_id})
        return present(BACKUP_FIELDS, ShownBackup(backup, _base(request), admin=admin, extended=extended), self.v)


class BackupsView(BackupAPIView):
    def get(self, request: Request, detail: bool = False, **_kw: Any) -> Response:
        params = request.query_params
        found = backups.backup_list(
            self.ctx, all_tenants=bool(params.get("all_tenants")),
            filters={k: params[k] for k in LIST_FILTERS if k in params},
            limit=_int_param(params.get("limit"), "limit"), offset=_int_param(params.get("offset"), "offset") or 0,
            marker=params.get("marker"), sort=_sort_param(params))
        return Response({"backups": [self.shown(request, b, extended=detail) for b in found]})

    def post(self, request: Request, **_kw: Any) -> Response:
        body = validate(self.body(), CREATE_SCHEMA)["backup"]
        volume = services.volume_get(self.ctx, body["volume_id"])
        backup = backups.backup_create(
            self.ctx, volume=volume, name=body.get("name"), description=body.get("description"),
            force=_flag(body.get("force")), incremental=_flag(body.get("incremental")),
            container=body.get("container"), snapshot_id=body.get("snapshot_id"), metadata=body.get("metadata"))
        return Response({"backup": self.shown(request, backup, extended=False)}, status=202)


class BackupsDetailView(BackupsView):
    def get(self, request: Request, detail: bool = True, **_kw: Any) -> Response:
        return super().get(request, detail=True)


class BackupView(BackupAPIView):
    def get(self, request: Request, backup_id: str, **_kw: Any) -> Response:
        return Response({"backup": self.shown(request, backups.backup_get(self.ctx, backup_id))})

    def put(self, request: Request, backup_id: str, **_kw: Any) -> Response:
        """Backup update (3.9; ``metadata`` 3.43): the summary view of the backup."""
        schema = next((s for since, s in sorted(UPDATE_SCHEMAS.items(), reverse=True) if self.v >= since), None)
        if schema is None:
            raise NotFound("The resource could not be found.")
        changes = validate(self.body(), schema)["backup"]
        backup = backups.backup_update(self.ctx, backup_id, changes=changes)
        return Response({"backup": self.shown(request, backup, extended=False)})

    def delete(self, request: Request, backup_id: str, **_kw: Any) -> Response:
        backups.backup_delete(self.ctx, backup_id)
        return Response(status=202)


class BackupExportView(BackupAPIView):
    def get(self, request: Request, backup_id: str, **_kw: Any) -> Response:
        return Response({"backup-record": backups.backup_export(self.ctx, backup_id)})


class BackupImportView(BackupAPIView):
    def post(self, request: Request, **_kw: Any) -> Response:
        record = validate(self.body(), IMPORT_SCHEMA)["backup-record"]
        backup = backups.backup_import(self.ctx, backup_service=record["backup_service"],
                                       backup_url=record["backup_url"])
        return Response({"backup": self.shown(request, backup, extended=False)}, status=201)


class BackupRestoreView(BackupAPIView):
    def post(self, request: Request, backup_id: str, **_kw: Any) -> Response:
        body = validate(self.body(), RESTORE_SCHEMA)["restore"] or {}
        restore = backups.backup_restore(self.ctx, backup_id, volume_id=body.get("volume_id"), name=body.get("name"))
        return Response({"restore": restore}, status=202)


class BackupActionView(BackupAPIView):
    def post(self, request: Request, backup_id: str, **_kw: Any) -> Response:
        action, args = self.requested_action()
        if action == "os-force_delete":
            backups.backup_delete(self.ctx, backup_id, force=True)
        elif action == "os-reset_status":
            backups.backup_reset_status(self.ctx, backup_id, status=validate(args, RESET_SCHEMA)["status"])
        else:
            raise NotFound("The resource could not be found.")
        return Response(status=202)


def volume_host() -> str:
    """The one block storage host: this machine, its one backend (Cinder's ``host@backend``)."""
    return f"{socket.gethostname()}@pool"


class HostsView(VolumeAPIView):
    """``GET /os-hosts``: the services of the block storage host (admins)."""

    def get(self, request: Request, **_kw: Any) -> Response:
        self.authorize("volume_extension:hosts")
        now = _ts(timezone.now())
        hosts = [{"service-status": "available", "service": service, "zone": VOLUME_ZONE, "service-state": "enabled",
                  "host_name": host, "last-update": now}
                 for service, host in (("cinder-volume", volume_host()), ("cinder-backup", socket.gethostname()))]
        return Response({"hosts": hosts})


class HostView(VolumeAPIView):
    """``GET /os-hosts/{host_name}``: the host's volumes and snapshots, in total and per project."""

    def get(self, request: Request, host_name: str, **_kw: Any) -> Response:
        self.authorize("volume_extension:hosts")
        if host_name not in (volume_host(), volume_host().split("@", 1)[0]):
            raise NotFound(f"Host {host_name} could not be found.")
        counts: dict[str, list[int]] = {}  # project -> [volumes, volume GB, snapshots, snapshot GB]
        for model, at in ((Volume, 0), (Snapshot, 2)):
            for row in model.objects.values("project_id").annotate(n=Count("id"), gb=Sum("size")):
                counts.setdefault(row["project_id"], [0, 0, 0, 0])[at:at + 2] = [row["n"], row["gb"] or 0]
        total = [sum(c[i] for c in counts.values()) for i in range(4)]

        def resource(project: str, c: list[int]) -> dict[str, Any]:
            return {"resource": {"volume_count": str(c[0]), "total_volume_gb": str(c[1]),
                                 "snapshot_count": str(c[2]), "total_snapshot_gb": str(c[3]),
                                 "project": project, "host": host_name}}

        return Response({"host": [resource("(total)", total), *(resource(p, counts[p]) for p in sorted(counts))]})
