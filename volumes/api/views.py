"""Cinder v3 subset (``/volume/v3`` and ``/volume/v3/<project_id>``), microversions 3.0–3.70:
volumes (+ ``os-extend``, ``os-reimage`` 3.68), attachments (3.27+), volume types (minimal)."""
from __future__ import annotations

from typing import Any

from django.conf import settings
from rest_framework.request import Request
from rest_framework.response import Response

from cloudcore.core.api import microversion
from cloudcore.core.api.validation import validate
from cloudcore.core.api.versioned import present
from cloudcore.core.api.versioned import timestamp as _ts
from cloudcore.core.api.views import OpenStackAPIView, PublicMixin
from cloudcore.core.exceptions import Invalid, NotFound
from cloudcore.core.policy import authorize

from .. import services
from ..models import Volume, VolumeAttachment, VolumeType
from ..presenter import VOLUME_FEATURES, VOLUME_FIELDS, ShownVolume


def _base(request: Request) -> str:
    return request.build_absolute_uri("/volume").rstrip("/")


def volume_body(request: Request, vol: Volume, version: tuple[int, int]) -> dict[str, Any]:
    return present(VOLUME_FIELDS, ShownVolume(vol, _base(request)), version)


def attachment_body(att: VolumeAttachment) -> dict[str, Any]:
    return {"id": att.id, "volume_id": att.volume_id, "instance": att.instance_uuid, "status": att.attach_status,
            "attach_mode": att.attach_mode, "attached_at": _ts(att.attach_time),
            "detached_at": _ts(att.detach_time), "connection_info": att.connection_info or {}}


def type_body(vt: VolumeType) -> dict[str, Any]:
    return {"id": vt.id, "name": vt.name, "description": vt.description, "is_public": vt.is_public,
            "extra_specs": vt.extra_specs or {}, "os-volume-type-access:is_public": vt.is_public,
            "qos_specs_id": None}


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

    def authorize(self, rule: str, project_id: str | None = None) -> None:
        authorize(self.ctx, rule, {"project_id": project_id or self.ctx.project_id, "user_id": self.ctx.user_id})


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


class VolumesView(VolumeAPIView):
    def get(self, request: Request, detail: bool = False, **_kw: Any) -> Response:
        self.authorize("volume:get_all")
        filters = {k: request.query_params[k] for k in ("name", "status", "bootable") if k in request.query_params}
        vols = services.volume_list(self.ctx, all_tenants=bool(request.query_params.get("all_tenants")),
                                    filters=filters)
        if detail:
            return Response({"volumes": [volume_body(request, v, self.v) for v in vols]})
        return Response({"volumes": [{"id": v.id, "name": v.name, "links": volume_body(request, v, self.v)["links"]}
                                     for v in vols]})

    def post(self, request: Request, **_kw: Any) -> Response:
        self.authorize("volume:create")
        body = validate(self.body(), CREATE_SCHEMA)["volume"]
        if body.get("snapshot_id") or body.get("source_volid") or body.get("backup_id"):
            raise Invalid("Creating a volume from a snapshot, another volume or a backup is not supported.")
        size = body.get("size")
        if size is not None:
            try:
                size = int(size)
            except (TypeError, ValueError):
                raise Invalid(f"Invalid input received: Volume size '{size}' must be an integer and greater "
                              "than 0.") from None
        vol = services.volume_create(self.ctx, size=size, name=body.get("name"), description=body.get("description"),
                                     image_id=body.get("imageRef"), multiattach=bool(body.get("multiattach")),
                                     availability_zone=body.get("availability_zone"),
                                     metadata=body.get("metadata"), volume_type=body.get("volume_type"))
        return Response({"volume": volume_body(request, vol, self.v)}, status=202)


class VolumesDetailView(VolumesView):
    def get(self, request: Request, detail: bool = True, **_kw: Any) -> Response:
        return super().get(request, detail=True)


class VolumeView(VolumeAPIView):
    def get(self, request: Request, volume_id: str, **_kw: Any) -> Response:
        vol = services.volume_get(self.ctx, volume_id)
        self.authorize("volume:get", vol.project_id)
        return Response({"volume": volume_body(request, vol, self.v)})

    def put(self, request: Request, volume_id: str, **_kw: Any) -> Response:
        vol = services.volume_get(self.ctx, volume_id)
        self.authorize("volume:update", vol.project_id)
        body = validate(self.body(), {"type": "object", "required": ["volume"], "properties": {"volume": {
            "type": "object", "properties": {"name": {"type": ["string", "null"]},
                                             "description": {"type": ["string", "null"]},
                                             "metadata": {"type": ["object", "null"]}}}}})["volume"]
        vol = services.volume_update(self.ctx, vol, changes=body)
        return Response({"volume": volume_body(request, vol, self.v)})

    def delete(self, request: Request, volume_id: str, **_kw: Any) -> Response:
        vol = services.volume_get(self.ctx, volume_id)
        self.authorize("volume:delete", vol.project_id)
        services.volume_delete(self.ctx, vol)
        return Response(status=202)


class VolumeActionView(VolumeAPIView):
    """Volume actions: ``os-extend`` and, from 3.68, ``os-reimage`` (``image_id``,
    ``reimage_reserved``). Reimaging destroys all data on the volume: every byte is replaced by
    the image."""

    def post(self, request: Request, volume_id: str, **_kw: Any) -> Response:
        vol = services.volume_get(self.ctx, volume_id)
        body = self.body() or {}
        if not isinstance(body, dict) or len(body) != 1:
            raise Invalid("Invalid request body: exactly one action is expected.")
        (action, args), = body.items()
        args = args or {}
        if action == "os-extend":
            self.authorize("volume:extend", vol.project_id)
            if "new_size" not in args:
                raise Invalid("Invalid input received: 'new_size' is required.")
            services.volume_extend(self.ctx, vol, new_size=int(args["new_size"]))
            return Response(status=202)
        if action == "os-reimage" and VOLUME_FEATURES.has("reimage", self.v):
            self.authorize("volume:reimage", vol.project_id)
            validate(args, {"type": "object", "required": ["image_id"], "additionalProperties": False,
                            "properties": {"image_id": {"type": "string"}, "reimage_reserved": {"type": "boolean"}}})
            services.volume_reimage(self.ctx, volume_id=vol.id, image_id=args["image_id"],
                                    reimage_reserved=bool(args.get("reimage_reserved")))
            return Response(status=202)
        raise Invalid(f"There is no such action: {action}")


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
        self.authorize("volume:attachment_create")
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
        self.authorize("volume:attachment_update")
        body = validate(self.body(), {"type": "object", "required": ["attachment"], "properties": {"attachment": {
            "type": "object", "required": ["connector"], "properties": {"connector": {"type": "object"}}}}})
        att = services.attachment_update(self.ctx, attachment_id=attachment_id,
                                         connector=body["attachment"]["connector"])
        return Response({"attachment": attachment_body(att)})

    def delete(self, request: Request, attachment_id: str, **_kw: Any) -> Response:
        _require_attachments(self)
        self.authorize("volume:attachment_delete")
        services.attachment_delete(self.ctx, attachment_id=attachment_id)
        return Response({"attachments": []})


class AttachmentActionView(VolumeAPIView):
    def post(self, request: Request, attachment_id: str, **_kw: Any) -> Response:
        if not VOLUME_FEATURES.has("attachment_complete", self.v):
            raise NotFound("The resource could not be found.")
        body = self.body() or {}
        if "os-complete" not in body:
            raise Invalid("Invalid request body: os-complete expected.")
        self.authorize("volume:attachment_complete")
        services.attachment_complete(self.ctx, attachment_id=attachment_id)
        return Response(status=204)


class TypesView(VolumeAPIView):
    def get(self, request: Request, **_kw: Any) -> Response:
        services.default_volume_type()
        return Response({"volume_types": [type_body(t) for t in VolumeType.objects.order_by("name")]})


class TypeView(VolumeAPIView):
    def get(self, request: Request, type_id: str, **_kw: Any) -> Response:
        if type_id == "default":
            return Response({"volume_type": type_body(services.default_volume_type())})
        vt = VolumeType.objects.filter(pk=type_id).first()
        if vt is None:
            raise NotFound(f"Volume type {type_id} could not be found.")
        return Response({"volume_type": type_body(vt)})


_ = settings  # settings are read by the services
