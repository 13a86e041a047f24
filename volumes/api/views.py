"""Cinder v3 subset (``/volume/v3`` and ``/volume/v3/<project_id>``), microversions 3.0–3.70:
volumes (+ ``os-extend``, ``os-reimage`` 3.68), attachments (3.27+), volume types (minimal)."""
from __future__ import annotations

import ast
import json
from typing import Any

from django.conf import settings
from rest_framework.request import Request
from rest_framework.response import Response

from cloudcore.core.api import microversion
from cloudcore.core.api.validation import validate, word_bool
from cloudcore.core.api.versioned import present
from cloudcore.core.api.versioned import timestamp as _ts
from cloudcore.core.api.views import OpenStackAPIView, PublicMixin
from cloudcore.core.exceptions import Invalid, NotFound
from cloudcore.core.policy import authorize, can

from .. import actions, quotas, retype, services
from ..models import Volume, VolumeAttachment
from ..presenter import VOLUME_FEATURES, VOLUME_FIELDS, ShownVolume, volume_type_body


def _base(request: Request) -> str:
    return request.build_absolute_uri("/volume").rstrip("/")


def volume_body(request: Request, vol: Volume, version: tuple[int, int], *, admin: bool = False,
                extended: bool = True, host_attrs: bool = False) -> dict[str, Any]:
    """Cinder's volume view (``volumes.presenter.VOLUME_FIELDS``). ``extended`` (show and list
    detail, not create or update) adds what Cinder's extensions add there: ``volume_image_metadata``
    and, where ``admin`` (the policy ``volume_extension:volume_tenant_attribute``: readers of the
    volume's project and admins, Cinder's default since Xena) allows, ``os-vol-tenant-attr:tenant_id``."""
    return present(VOLUME_FIELDS, ShownVolume(vol, _base(request), admin=admin, extended=extended,
                                              host_attrs=host_attrs), version)


def attachment_body(att: VolumeAttachment) -> dict[str, Any]:
    return {"id": att.id, "volume_id": att.volume_id, "instance": att.instance_uuid, "status": att.attach_status,
            "attach_mode": att.attach_mode, "attached_at": _ts(att.attach_time),
            "detached_at": _ts(att.detach_time), "connection_info": att.connection_info or {}}


class VolumeVersionsView(PublicMixin, OpenStackAPIView):
    version_range = None

    def get(self, request: Request, **_kw: Any) -> Response:
        v3 = {"id": "v3.0", "status": "CURRENT", "version": "3.70", "min_version": "3.0",
              "updated": "2023-08-31T00:00:00Z", "links": [{"rel": "self", "href": f"{_base(request)}/v3/"}],
              "media-types": [{"base": "application/json",
                               "type": "application/vnd.openstack.volume+json;version=3"}]}
        if request.path.rstrip("/").endswith("v3"):
            return Response({"versions": [v3]})
        return Response({"versions": [v3]}, status=300)


class VolumeAPIView(OpenStackAPIView):
    version_range = microversion.VOLUME

    @property
    def v(self) -> tuple[int, int]:
        return (self.version[0], self.version[1])

    def requested_action(self) -> tuple[str, Any]:
        """The one action a ``/action`` body names, and its arguments (``{}`` for null)."""
        body = self.body() or {}
        if not isinstance(body, dict) or len(body) != 1:
            raise Invalid("Invalid request body: exactly one action is expected.")
        (action, args), = body.items()
        return action, {} if args is None else args

    def authorize(self, rule: str, project_id: str | None = None) -> None:
        authorize(self.ctx, rule, {"project_id": project_id or self.ctx.project_id, "user_id": self.ctx.user_id})

    def shows_tenant(self, vol: Volume) -> bool:
        """Whether the caller sees the volume's ``os-vol-tenant-attr:tenant_id``."""
        return can(self.ctx, "volume_extension:volume_tenant_attribute",
                   {"project_id": vol.project_id, "user_id": self.ctx.user_id})

    def shows_host(self) -> bool:
        """Whether the caller sees volumes' ``os-vol-host-attr:host`` and migration status."""
        return can(self.ctx, "volume_extension:volume_host_attribute",
                   {"project_id": self.ctx.project_id, "user_id": self.ctx.user_id})

    def error_body(self, code: int, message: str) -> dict[str, Any]:
        """Cinder's fault body; its quota errors (413) also say when to retry."""
        body = super().error_body(code, message)
        if code == 413:
            body["overLimit"]["retryAfter"] = "0"
        return body


def _int_param(value: str | None, name: str) -> int | None:
    if value is None:
        return None
    if not value.isdigit():
        raise Invalid(f"Invalid input received: {name} must be a non-negative integer.")
    return int(value)


def _json_param(value: str, name: str) -> Any:
    """A dict-valued query parameter: JSON, or the Python repr some clients send (Cinder reads both)."""
    try:
        return json.loads(value)
    except ValueError:
        pass
    try:
        return ast.literal_eval(value)
    except (ValueError, SyntaxError):
        raise Invalid(f"Invalid input received: invalid {name} filter.") from None


def _sort_key(key: str) -> str:
    """Cinder takes ``display_name`` as an alias of ``name`` in sort keys."""
    return "name" if key == "display_name" else key


def _sort_param(params: Any) -> list[tuple[str, str]] | None:
    """Cinder's ``sort=key:dir,key2`` or the older ``sort_key``/``sort_dir`` pair."""
    if params.get("sort"):
        out = []
        for part in params["sort"].split(","):
            key, _, direction = part.strip().partition(":")
            out.append((_sort_key(key), direction or "desc"))
        return out
    if params.get("sort_key") or params.get("sort_dir"):
        return [(_sort_key(params.get("sort_key", "created_at")), params.get("sort_dir", "desc"))]
    return None


CREATE_SCHEMA = {"type": "object", "required": ["volume"], "properties": {"volume": {
    "type": "object", "properties": {
        "size": {"type": ["integer", "string", "null"]}, "name": {"type": ["string", "null"]},
        "description": {"type": ["string", "null"]}, "imageRef": {"type": ["string", "null"]},
        "multiattach": {"type": ["boolean", "null"]}, "availability_zone": {"type": ["string", "null"]},
        # Cinder accepts null metadata (the openstack CLI sends it when no --property is given)
        "metadata": {"type": ["object", "null"]}, "volume_type": {"type": ["string", "null"]},
        "snapshot_id": {"type": ["string", "null"]}, "source_volid": {"type": ["string", "null"]},
        "consistencygroup_id": {"type": ["string", "null"]}, "backup_id": {"type": ["string", "null"]},
        "group_id": {"type": ["string", "null"]}}}}}


class VolumeSummaryView(VolumeAPIView):
    """``GET /volumes/summary`` (3.12; ``metadata`` from 3.36)."""

    def get(self, request: Request, **_kw: Any) -> Response:
        if not VOLUME_FEATURES.has("summary", self.v):
            raise NotFound("Volume summary could not be found.")
        summary = services.volume_summary(self.ctx, all_tenants=bool(request.query_params.get("all_tenants")))
        if not VOLUME_FEATURES.has("summary_metadata", self.v):
            summary.pop("metadata")
        return Response({"volume-summary": summary})


class VolumesView(VolumeAPIView):
    def get(self, request: Request, detail: bool = False, **_kw: Any) -> Response:
        self.authorize("volume:get_all")
        params = request.query_params
        filters: dict[str, Any] = {k: params[k] for k in ("name", "status", "bootable", "availability_zone",
                                                          "project_id") if k in params}
        if "metadata" in params:
            filters["metadata"] = _json_param(params["metadata"], "metadata")
        limit = _int_param(params.get("limit"), "limit")
        vols = services.volume_list(self.ctx, all_tenants=bool(params.get("all_tenants")), filters=filters,
                                    limit=limit, marker=params.get("marker"), sort=_sort_param(params))
        if detail:
            body: dict[str, Any] = {"volumes": [volume_body(request, v, self.v, admin=self.shows_tenant(v),
                                                                             host_attrs=self.shows_host())
                                                for v in vols]}
        else:
            body = {"volumes": [{"id": v.id, "name": v.name, "links": volume_body(request, v, self.v)["links"]}
                                for v in vols]}
        if limit and len(vols) == limit:
            # A full page: Cinder links the next one (the same query, the marker moved to its last item).
            query = request.query_params.copy()
            query["marker"] = vols[-1].id
            body["volumes_links"] = [{"rel": "next",
                                      "href": f"{request.build_absolute_uri(request.path)}?{query.urlencode()}"}]
        return Response(body)

    def post(self, request: Request, **_kw: Any) -> Response:
        body = validate(self.body(), CREATE_SCHEMA)["volume"]
        if body.get("backup_id"):
            raise Invalid("Creating a volume from a backup is not supported.")
        size = body.get("size")
        if size is not None:
            try:
                size = int(size)
            except (TypeError, ValueError):
                raise Invalid(f"Invalid input received: Volume size '{size}' must be an integer and greater "
                              "than 0.") from None
        zone = body.get("availability_zone")
        if zone and zone != VOLUME_ZONE:
            raise Invalid(f"Invalid input received: Availability zone '{zone}' is invalid.")
        vol = services.volume_create(self.ctx, size=size, name=body.get("name"), description=body.get("description"),
                                     image_id=body.get("imageRef"), multiattach=bool(body.get("multiattach")),
                                     availability_zone=body.get("availability_zone"),
                                     metadata=body.get("metadata"), volume_type=body.get("volume_type"),
                                     snapshot_id=body.get("snapshot_id"), source_volid=body.get("source_volid"),
                                     group_id=body.get("group_id") if VOLUME_FEATURES.has("groups", self.v) else None)
        return Response({"volume": volume_body(request, vol, self.v, extended=False)}, status=202)


class VolumesDetailView(VolumesView):
    def get(self, request: Request, detail: bool = True, **_kw: Any) -> Response:
        return super().get(request, detail=True)


class VolumeView(VolumeAPIView):
    def get(self, request: Request, volume_id: str, **_kw: Any) -> Response:
        vol = services.volume_get(self.ctx, volume_id)
        self.authorize("volume:get", vol.project_id)
        return Response({"volume": volume_body(request, vol, self.v, admin=self.shows_tenant(vol),
                                               host_attrs=self.shows_host())})

    def put(self, request: Request, volume_id: str, **_kw: Any) -> Response:
        vol = services.volume_get(self.ctx, volume_id)
        body = validate(self.body(), {"type": "object", "required": ["volume"], "properties": {"volume": {
            "type": "object", "properties": {"name": {"type": ["string", "null"]},
                                             "description": {"type": ["string", "null"]},
                                             "metadata": {"type": ["object", "null"]}}}}})["volume"]
        vol = services.volume_update(self.ctx, vol, changes=body)
        return Response({"volume": volume_body(request, vol, self.v, extended=False)})

    def delete(self, request: Request, volume_id: str, **_kw: Any) -> Response:
        vol = services.volume_get(self.ctx, volume_id)
        cascade = request.query_params.get("cascade", "false").lower()
        services.volume_delete(self.ctx, vol, cascade=word_bool(
            cascade, invalid=f"Invalid input received: Invalid value '{cascade}' for cascade."))
        return Response(status=202)


EXTEND_SCHEMA = {"type": "object", "required": ["new_size"], "additionalProperties": False, "properties": {
    "new_size": {"type": ["integer", "string"], "pattern": "^[0-9]+$", "minimum": 1, "maximum": 0x7FFFFFFF}}}


RETYPE_SCHEMA = {"type": "object", "required": ["new_type"], "additionalProperties": False, "properties": {
    "new_type": {"type": "string", "minLength": 1, "maxLength": 255},
    "migration_policy": {"type": ["string", "null"], "enum": ["never", "on-demand", None]}}}


class VolumeActionView(VolumeAPIView):
    """Volume actions: ``os-extend`` (of an ``in-use`` volume from 3.42) and, from 3.68,
    ``os-reimage`` (``image_id``, ``reimage_reserved``). Reimaging destroys all data on the volume:
    every byte is replaced by the image."""

    def post(self, request: Request, volume_id: str, **_kw: Any) -> Response:
        vol = services.volume_get(self.ctx, volume_id)
        action, args = self.requested_action()
        if action == "os-extend":
            validate(args, EXTEND_SCHEMA)
            services.volume_extend(self.ctx, vol, new_size=int(args["new_size"]), version=self.v)
            return Response(status=202)
        if action == "os-set_bootable":
            validate(args, {"type": "object", "required": ["bootable"],
                            "properties": {"bootable": {"type": ["boolean", "string"]}}})
            flag = args["bootable"]
            services.volume_set_bootable(self.ctx, vol, bootable=flag if isinstance(flag, bool)
                                         else str(flag).lower() in ("true", "1", "yes"))
            return Response(status=200)
        if action == "os-update_readonly_flag":
            validate(args, {"type": "object", "required": ["readonly"],
                            "properties": {"readonly": {"type": "boolean"}}})
            services.volume_set_readonly(self.ctx, vol, readonly=args["readonly"])
            return Response(status=202)
        if action == "os-volume_upload_image":
            validate(args, {"type": "object", "required": ["image_name"], "properties": {
                "image_name": {"type": "string", "minLength": 1, "maxLength": 255},
                "disk_format": {"type": "string"}, "container_format": {"type": "string"},
                "force": {"type": ["boolean", "string"]}, "visibility": {"type": "string"},
                "protected": {"type": "boolean"}}})
            image = services.volume_upload_to_image(
                self.ctx, vol, image_name=args["image_name"], disk_format=args.get("disk_format", "raw"),
                container_format=args.get("container_format", "bare"),
                force=str(args.get("force", False)).lower() in ("true", "1"))
            return Response({"os-volume_upload_image": {
                "id": vol.id, "updated_at": _ts(vol.updated_at), "status": vol.status,
                "display_description": vol.description, "size": vol.size,
                "volume_type": volume_type_body(self.ctx, vol.volume_type, access_extension=False, qos=False)
                if vol.volume_type else None, "image_id": image.id,
                "container_format": image.container_format, "disk_format": image.disk_format,
                "image_name": image.name}}, status=202)
        if action == "os-retype":
            args = validate(args, RETYPE_SCHEMA)
            retype.volume_retype(self.ctx, vol, new_type=args["new_type"],
                                 migration_policy=args.get("migration_policy"))
            return Response(status=202)
        if action in ("os-reserve", "os-unreserve"):
            services.volume_reserve(self.ctx, vol, reserve=action == "os-reserve")
            return Response(status=202)
        if action in LEGACY_ACTIONS:
            return LEGACY_ACTIONS[action](self, vol, args)
        if action == "os-reimage" and VOLUME_FEATURES.has("reimage", self.v):
            validate(args, {"type": "object", "required": ["image_id"], "additionalProperties": False,
                            "properties": {"image_id": {"type": "string"}, "reimage_reserved": {"type": "boolean"}}})
            services.volume_reimage(self.ctx, volume_id=vol.id, image_id=args["image_id"],
                                    reimage_reserved=bool(args.get("reimage_reserved")))
            return Response(status=202)
        raise Invalid(f"There is no such action: {action}")


RESET_SCHEMA = {"type": "object", "additionalProperties": False, "properties": {
    "status": {"type": "string"}, "attach_status": {"type": "string"}, "migration_status": {"type": "string"}}}
LEGACY_ATTACH_SCHEMA = {"type": "object", "required": ["mountpoint"], "properties": {
    "instance_uuid": {"type": ["string", "null"]}, "host_name": {"type": ["string", "null"]},
    "mountpoint": {"type": "string", "minLength": 1}, "mode": {"type": "string"}}}
DETACH_SCHEMA = {"type": "object", "properties": {"attachment_id": {"type": ["string", "null"]},
                                                  "connector": {"type": ["object", "null"]}}}
IMAGE_METADATA_SCHEMA = {"type": "object", "required": ["metadata"], "properties": {"metadata": {
    "type": "object", "patternProperties": {"^.{1,255}$": {"type": "string", "maxLength": 255}},
    "additionalProperties": False}}}
UNSET_SCHEMA = {"type": "object", "required": ["key"], "properties": {"key": {"type": "string", "minLength": 1}}}


def _reset_status(view: VolumeAPIView, vol: Volume, args: Any) -> Response:
    validate(args, RESET_SCHEMA)
    actions.volume_reset_status(view.ctx, vol, **args)
    return Response(status=202)


def _force_delete(view: VolumeAPIView, vol: Volume, args: Any) -> Response:
    actions.volume_force_delete(view.ctx, vol)
    return Response(status=202)


def _attach(view: VolumeAPIView, vol: Volume, args: Any) -> Response:
    validate(args, LEGACY_ATTACH_SCHEMA)
    actions.volume_attach_legacy(view.ctx, vol, instance_uuid=args.get("instance_uuid"),
                                 host_name=args.get("host_name"), mountpoint=args["mountpoint"],
                                 mode=args.get("mode", "rw"))
    return Response(status=202)


def _detach(view: VolumeAPIView, vol: Volume, args: Any, *, force: bool = False) -> Response:
    validate(args, DETACH_SCHEMA)
    actions.volume_detach_legacy(view.ctx, vol, attachment_id=args.get("attachment_id"), force=force)
    return Response(status=202)


def _set_image_metadata(view: VolumeAPIView, vol: Volume, args: Any) -> Response:
    metadata = validate(args, IMAGE_METADATA_SCHEMA)["metadata"]
    return Response({"metadata": actions.volume_image_metadata_set(view.ctx, vol, metadata=metadata)})


def _unset_image_metadata(view: VolumeAPIView, vol: Volume, args: Any) -> Response:
    actions.volume_image_metadata_unset(view.ctx, vol, key=validate(args, UNSET_SCHEMA)["key"])
    return Response(status=200)


#: Cinder's admin actions and the legacy (non-Nova) attach actions on a volume
LEGACY_ACTIONS = {
    "os-reset_status": _reset_status, "os-force_delete": _force_delete, "os-attach": _attach,
    "os-detach": _detach, "os-force_detach": lambda view, vol, args: _detach(view, vol, args, force=True),
    "os-set_image_metadata": _set_image_metadata, "os-unset_image_metadata": _unset_image_metadata,
    "os-show_image_metadata": lambda view, vol, args: Response(
        {"metadata": actions.volume_image_metadata(view.ctx, vol)}),
}


ATTACH_SCHEMA = {"type": "object", "required": ["attachment"], "properties": {"attachment": {
    "type": "object", "required": ["volume_uuid"], "properties": {
        "volume_uuid": {"type": "string"}, "instance_uuid": {"type": ["string", "null"]},
        "connector": {"type": ["object", "null"]}, "mode": {"type": "string", "enum": ["rw", "ro"]}}}}}


def _require_attachments(view: VolumeAPIView) -> None:
    if not VOLUME_FEATURES.has("attachments", view.v):
        raise NotFound("The resource could not be found.")


class AttachmentsView(VolumeAPIView):
    def get(self, request: Request, **_kw: Any) -> Response:
        _require_attachments(self)
        qs = VolumeAttachment.objects.filter(deleted=False).select_related("volume")
        if not self.ctx.is_admin:
            qs = qs.filter(volume__project_id=self.ctx.project_id)
        return Response({"attachments": [attachment_body(a) for a in qs]})

    def post(self, request: Request, **_kw: Any) -> Response:
        _require_attachments(self)
        body = validate(self.body(), ATTACH_SCHEMA)["attachment"]
        att = services.attachment_create(self.ctx, volume_id=body["volume_uuid"],
                                         instance_uuid=body.get("instance_uuid"), connector=body.get("connector"),
                                         mode=body.get("mode", "rw"))
        return Response({"attachment": attachment_body(att)}, status=200)


class AttachmentView(VolumeAPIView):
    def get(self, request: Request, attachment_id: str, **_kw: Any) -> Response:
        _require_attachments(self)
        return Response({"attachment": attachment_body(services.attachment_get(self.ctx, attachment_id))})

    def put(self, request: Request, attachment_id: str, **_kw: Any) -> Response:
        _require_attachments(self)
        body = validate(self.body(), {"type": "object", "required": ["attachment"], "properties": {"attachment": {
            "type": "object", "required": ["connector"], "properties": {"connector": {"type": "object"}}}}})
        att = services.attachment_update(self.ctx, attachment_id=attachment_id,
                                         connector=body["attachment"]["connector"])
        return Response({"attachment": attachment_body(att)})

    def delete(self, request: Request, attachment_id: str, **_kw: Any) -> Response:
        _require_attachments(self)
        services.attachment_delete(self.ctx, attachment_id=attachment_id)
        return Response({"attachments": []})


class AttachmentActionView(VolumeAPIView):
    def post(self, request: Request, attachment_id: str, **_kw: Any) -> Response:
        if not VOLUME_FEATURES.has("attachment_complete", self.v):
            raise NotFound("The resource could not be found.")
        body = self.body() or {}
        if "os-complete" not in body:
            raise Invalid("Invalid request body: os-complete expected.")
        services.attachment_complete(self.ctx, attachment_id=attachment_id)
        return Response(status=204)


_ = settings  # settings are read by the services


#: the zone of the one storage backend (Cinder's ``storage_availability_zone`` default)
VOLUME_ZONE = "nova"

#: Cinder API extensions whose behaviour cloudcore implements (``GET /v3/{project}/extensions``)
EXTENSIONS = (
    ("os-availability-zone", "AvailabilityZones", "Describe Availability Zones."),
    ("os-vol-image-meta", "VolumeImageMetadata", "Show image metadata associated with the volume."),
    ("os-vol-tenant-attr", "VolumeTenantAttribute", "Expose the internal project_id as an attribute of a volume."),
    ("os-volume-actions", "VolumeActions", "Enable volume actions."),
    ("os-types-manage", "TypesManage", "Types manage support."),
    ("os-types-extra-specs", "TypesExtraSpecs", "Type extra specs support."),
    ("os-volume-type-access", "VolumeTypeAccess", "Volume type access support."),
    ("os-quota-sets", "Quotas", "Quota management support."),
    ("os-extended-snapshot-attributes", "ExtendedSnapshotAttributes", "Extended SnapshotAttributes support."),
    ("backups", "Backups", "Backups support."),
    ("os-backup-project-attr", "BackupProjectAttribute", "Expose the project_id of a backup as an attribute."),
    ("os-hosts", "Hosts", "Admin-only host administration."),
)


class AvailabilityZonesView(VolumeAPIView):
    def get(self, request: Request, **_kw: Any) -> Response:
        return Response({"availabilityZoneInfo": [{"zoneName": VOLUME_ZONE, "zoneState": {"available": True}}]})


class ExtensionsView(VolumeAPIView):
    def get(self, request: Request, **_kw: Any) -> Response:
        return Response({"extensions": [
            {"alias": alias, "name": name, "description": description, "links": [],
             "updated": "2013-01-01T00:00:00+00:00"} for alias, name, description in EXTENSIONS]})


class VolumeMetadataView(VolumeAPIView):
    """``/volumes/{id}/metadata``: show, create (merge) and update (replace)."""

    def get(self, request: Request, volume_id: str, **_kw: Any) -> Response:
        vol = services.volume_get(self.ctx, volume_id)
        self.authorize("volume:get_volume_metadata", vol.project_id)
        return Response({"metadata": vol.metadata or {}})

    def _set(self, volume_id: str, *, replace: bool) -> Response:
        vol = services.volume_get(self.ctx, volume_id)
        body = validate(self.body(), {"type": "object", "required": ["metadata"],
                                      "properties": {"metadata": {"type": "object"}}})
        vol = services.volume_metadata_set(self.ctx, vol, metadata=body["metadata"], replace=replace)
        return Response({"metadata": vol.metadata})

    def post(self, request: Request, volume_id: str, **_kw: Any) -> Response:
        return self._set(volume_id, replace=False)

    def put(self, request: Request, volume_id: str, **_kw: Any) -> Response:
        return self._set(volume_id, replace=True)


class VolumeMetadataItemView(VolumeAPIView):
    """``/volumes/{id}/metadata/{key}``: show, update (the body names the one key), delete."""

    def get(self, request: Request, volume_id: str, key: str, **_kw: Any) -> Response:
        vol = services.volume_get(self.ctx, volume_id)
        self.authorize("volume:get_volume_metadata", vol.project_id)
        if key not in (vol.metadata or {}):
            raise NotFound(f"Metadata item was not found with key {key}.")
        return Response({"meta": {key: vol.metadata[key]}})

    def put(self, request: Request, volume_id: str, key: str, **_kw: Any) -> Response:
        vol = services.volume_get(self.ctx, volume_id)
        body = validate(self.body(), {"type": "object", "required": ["meta"], "properties": {
            "meta": {"type": "object", "minProperties": 1, "maxProperties": 1}}})
        if key not in body["meta"]:
            raise Invalid("Request body and URI mismatch")
        services.volume_metadata_set(self.ctx, vol, metadata=body["meta"], replace=False, one_item=True)
        return Response({"meta": body["meta"]})

    def delete(self, request: Request, volume_id: str, key: str, **_kw: Any) -> Response:
        vol = services.volume_get(self.ctx, volume_id)
        services.volume_metadata_delete(self.ctx, vol, key=key)
        return Response(status=200)


class LimitsView(VolumeAPIView):
    """``GET /limits`` (what ``openstack limits show`` reads next to Nova's): the project's block
    storage quotas and what it uses."""

    def get(self, request: Request, **_kw: Any) -> Response:
        self.authorize("limits_extension:used_limits")
        project = self.ctx.project_id or ""
        hard, used = quotas.limits(project), quotas.usage(project)
        absolute = {"maxTotalVolumes": hard["volumes"], "maxTotalSnapshots": hard["snapshots"],
                    "maxTotalVolumeGigabytes": hard["gigabytes"], "maxTotalBackups": hard["backups"],
                    "maxTotalBackupGigabytes": hard["backup_gigabytes"], "totalVolumesUsed": used["volumes"],
                    "totalGigabytesUsed": used["gigabytes"], "totalSnapshotsUsed": used["snapshots"],
                    "totalBackupsUsed": used["backups"], "totalBackupGigabytesUsed": used["backup_gigabytes"]}
        return Response({"limits": {"rate": [], "absolute": absolute}})
