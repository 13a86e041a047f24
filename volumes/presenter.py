"""Bodies of the Cinder v3 subset per microversion (STYLE rule 15), as tables: 3.48
``service_uuid`` / ``shared_targets``, 3.61 ``cluster_name``, 3.63 ``volume_type_id``."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cloudcore.core.api.versioned import Field, Since
from cloudcore.core.api.versioned import timestamp as _ts
from cloudcore.core.context import RequestContext
from cloudcore.core.policy import can

from .models import Backup, Snapshot, Volume, VolumeType
from .servicegroup import VOLUME_BINARY, worker_hosts
from .types import visible_extra_specs

#: 3.27 the attachments API, 3.44 attachment ``os-complete``, 3.68 volume ``os-reimage``; generic
#: volume groups: 3.11 group types, 3.13 groups, 3.14 group snapshots and groups from a source,
#: 3.19 / 3.20 their ``reset_status``.
VOLUME_FEATURES = Since({"summary": (3, 12), "summary_metadata": (3, 36), "attachments": (3, 27),
                         "attachment_complete": (3, 44), "reimage": (3, 68),
                         "group_types": (3, 11), "groups": (3, 13), "group_snapshots": (3, 14),
                         "group_snapshot_reset_status": (3, 19), "group_reset_status": (3, 20)})


@dataclass(frozen=True)
class ShownVolume:
    volume: Volume
    #: ``http://host/volume``: links are absolute, as the request saw the endpoint.
    base_url: str
    #: The actor may see the owner (``volume_extension:volume_tenant_attribute``).
    admin: bool = False
    #: Show and list detail (not create or update): Cinder's extensions' attributes are added.
    extended: bool = True
    #: The actor may see the volume's back-end host and migration status (admins: Cinder's
    #: ``volume_extension:volume_host_attribute``, which governs both here).
    host_attrs: bool = False


def _attachments(v: ShownVolume) -> list[dict[str, Any]]:
    return [{"id": a.volume_id, "attachment_id": a.id, "volume_id": a.volume_id, "server_id": a.instance_uuid,
             "host_name": a.attached_host, "device": a.mountpoint, "attached_at": _ts(a.attach_time)}
            for a in v.volume.attachments.filter(deleted=False, attach_status="attached")]


def _host(vol: Volume) -> str | None:
    """Cinder's ``host@backend#pool`` of a volume the back end allocated (None before)."""
    if not vol.provider_location:
        return None
    return f"{dict(worker_hosts())[VOLUME_BINARY]}#{vol.backend_name}"


def _vol(name: str) -> Field[ShownVolume]:
    return Field(name, lambda v: getattr(v.volume, name))


VOLUME_FIELDS: tuple[Field[ShownVolume], ...] = (
    _vol("id"), _vol("name"), _vol("description"), _vol("size"), _vol("status"), _vol("availability_zone"),
    Field("bootable", lambda v: "true" if v.volume.bootable else "false"),
    _vol("multiattach"), _vol("encrypted"),
    Field("attachments", _attachments),
    Field("volume_type", lambda v: v.volume.volume_type.name if v.volume.volume_type else None),
    _vol("snapshot_id"), _vol("source_volid"),
    Field("metadata", lambda v: v.volume.metadata or {}),
    _vol("user_id"),
    Field("created_at", lambda v: _ts(v.volume.created_at)),
    Field("updated_at", lambda v: _ts(v.volume.updated_at)),
    Field("replication_status", lambda v: None),
    Field("consistencygroup_id", lambda v: None),
    Field("links", lambda v: [{"rel": "self",
                               "href": f"{v.base_url}/v3/{v.volume.project_id}/volumes/{v.volume.id}"}]),
    Field("os-vol-tenant-attr:tenant_id", lambda v: v.volume.project_id, when=lambda v: v.extended and v.admin),
    Field("os-vol-host-attr:host", lambda v: _host(v.volume), when=lambda v: v.extended and v.host_attrs),
    Field("os-vol-mig-status-attr:migstat", lambda v: v.volume.migration_status,
          when=lambda v: v.extended and v.host_attrs),
    Field("os-vol-mig-status-attr:name_id", lambda v: None, when=lambda v: v.extended and v.host_attrs),
    Field("migration_status", lambda v: v.volume.migration_status, when=lambda v: v.extended and v.host_attrs),
    Field("volume_image_metadata", lambda v: v.volume.volume_image_metadata,
          when=lambda v: v.extended and bool(v.volume.volume_image_metadata)),
    Field("service_uuid", lambda v: None, since=(3, 48)),
    Field("shared_targets", lambda v: False, since=(3, 48)),
    Field("volume_type_id", lambda v: v.volume.volume_type_id, since=(3, 63)),
    Field("cluster_name", lambda v: None, since=(3, 61)),
    Field("group_id", lambda v: v.volume.group_id, since=(3, 13)),
)


@dataclass(frozen=True)
class ShownSnapshot:
    snapshot: Snapshot
    #: Show and list detail: Cinder's extended snapshot attributes are added.
    extended: bool = True


def _snap(name: str) -> Field[ShownSnapshot]:
    return Field(name, lambda v: getattr(v.snapshot, name))


#: A snapshot (``{"snapshot": ...}``): 3.14 ``group_snapshot_id``, 3.41 ``user_id``, 3.65 ``consumes_quota``.
SNAPSHOT_FIELDS: tuple[Field[ShownSnapshot], ...] = (
    _snap("id"), _snap("name"), _snap("description"), _snap("volume_id"), _snap("size"), _snap("status"),
    Field("metadata", lambda v: v.snapshot.metadata or {}),
    Field("created_at", lambda v: _ts(v.snapshot.created_at)),
    Field("updated_at", lambda v: _ts(v.snapshot.updated_at)),
    Field("os-extended-snapshot-attributes:progress", lambda v: v.snapshot.progress, when=lambda v: v.extended),
    Field("os-extended-snapshot-attributes:project_id", lambda v: v.snapshot.project_id,
          when=lambda v: v.extended),
    Field("group_snapshot_id", lambda v: v.snapshot.group_snapshot_id, since=(3, 14)),
    Field("user_id", lambda v: v.snapshot.user_id, since=(3, 41)),
    Field("consumes_quota", lambda v: True, since=(3, 65)),
)


@dataclass(frozen=True)
class ShownBackup:
    backup: Backup
    base_url: str
    #: The actor may see the owner (``backup:backup_project_attribute``, admins).
    admin: bool = False
    #: Show and list detail; create and the plain list show only id, name and links (Cinder).
    extended: bool = True


def _backup(name: str) -> Field[ShownBackup]:
    return Field(name, lambda v: getattr(v.backup, name), when=lambda v: v.extended)


#: A backup (``{"backup": ...}``): 3.18 the owner for admins, 3.43 ``metadata``, 3.56 ``user_id``.
BACKUP_FIELDS: tuple[Field[ShownBackup], ...] = (
    _backup("availability_zone"), _backup("container"),
    Field("created_at", lambda v: _ts(v.backup.created_at), when=lambda v: v.extended),
    Field("data_timestamp", lambda v: _ts(v.backup.data_timestamp or v.backup.created_at),
          when=lambda v: v.extended),
    _backup("description"), _backup("fail_reason"),
    Field("has_dependent_backups", lambda v: Backup.objects.filter(parent_id=v.backup.id).exists(),
          when=lambda v: v.extended),
    Field("id", lambda v: v.backup.id),
    Field("is_incremental", lambda v: v.backup.is_incremental, when=lambda v: v.extended),
    Field("links", lambda v: [{"rel": "self",
                               "href": f"{v.base_url}/v3/{v.backup.project_id}/backups/{v.backup.id}"}]),
    Field("name", lambda v: v.backup.name),
    Field("object_count", lambda v: 1 if v.backup.status == "available" else 0, when=lambda v: v.extended),
    _backup("size"), _backup("snapshot_id"), _backup("status"),
    Field("updated_at", lambda v: _ts(v.backup.updated_at or v.backup.created_at), when=lambda v: v.extended),
    _backup("volume_id"),
    Field("os-backup-project-attr:project_id", lambda v: v.backup.project_id, since=(3, 18),
          when=lambda v: v.extended and v.admin),
    Field("metadata", lambda v: v.backup.metadata or {}, since=(3, 43), when=lambda v: v.extended),
    Field("user_id", lambda v: v.backup.user_id, since=(3, 56), when=lambda v: v.extended),
    Field("encryption_key_id", lambda v: None, since=(3, 64), when=lambda v: v.extended),
)


def volume_type_body(ctx: RequestContext, vt: VolumeType, *, access_extension: bool = True,
                     qos: bool = True) -> dict[str, Any]:
    """Cinder's volume type view: ``extra_specs`` (the user-visible ones only for non-admins) and,
    on show and list only (``qos``), ``qos_specs_id`` (admins) as their policies allow; the type
    access extension adds ``os-volume-type-access:is_public`` to show, list and create (not
    update). Create and update bodies carry no ``qos_specs_id``."""
    target = {"project_id": ctx.project_id, "user_id": ctx.user_id}
    body: dict[str, Any] = {"id": vt.id, "name": vt.name, "is_public": vt.is_public, "description": vt.description}
    if can(ctx, "volume_extension:access_types_extra_specs", target):
        body["extra_specs"] = visible_extra_specs(ctx, vt)
    if qos and can(ctx, "volume_extension:access_types_qos_specs_id", target):
        body["qos_specs_id"] = vt.qos_specs_id
    if access_extension and can(ctx, "volume_extension:volume_type_access", target):
        body["os-volume-type-access:is_public"] = vt.is_public
    return body
