"""The compute API's image proxy (``/images``, ``/images/detail``, ``/images/{id}``), deprecated in
Nova and gone from 2.36 on (404), as in Nova: a view of the image service's images for clients that
still use it (Tempest's compute image tests, old novaclient scripts)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.conf import settings
from rest_framework.request import Request
from rest_framework.response import Response

from cloudcore.core.api.validation import validate
from cloudcore.core.api.views import ComputeAPIView, ComputeProxyAPIView
from cloudcore.core.exceptions import Invalid, NotFound
from images import services as images

from ..presenter import links
from ..services.quotas import quota_check_metadata

if TYPE_CHECKING:
    from images.models import Image

#: Glance status -> the proxy's status and progress (Nova's tables)
STATUS = {"active": ("ACTIVE", 100), "queued": ("SAVING", 25), "saving": ("SAVING", 50),
          "deleted": ("DELETED", 0), "pending_delete": ("DELETED", 0), "killed": ("ERROR", 0)}


def _ts(value: Any) -> str | None:
    return value.strftime("%Y-%m-%dT%H:%M:%SZ") if value else None


def _links(image: Image) -> list[dict[str, str]]:
    return [*links("images", image.id),
            {"rel": "alternate", "type": "application/vnd.openstack.image",
             "href": f"{settings.PUBLIC_URL.rstrip('/')}/image/images/{image.id}"}]


def image_body(image: Image) -> dict[str, Any]:
    status, progress = STATUS.get(image.status, ("UNKNOWN", 0))
    properties = dict(image.properties or {})
    body: dict[str, Any] = {
        "id": image.id, "name": image.name, "minRam": image.min_ram or 0, "minDisk": image.min_disk or 0,
        "metadata": properties, "created": _ts(image.created_at),
        "updated": _ts(image.updated_at or image.created_at),
        "status": status, "progress": progress, "OS-EXT-IMG-SIZE:size": image.size, "links": _links(image),
    }
    if properties.get("instance_uuid"):
        body["server"] = {"id": properties["instance_uuid"], "links": links("servers", properties["instance_uuid"])}
    return body


_PROPERTY_FILTERS = {"server", "type"}


class ImagesView(ComputeProxyAPIView):
    detail = False

    def get(self, request: Request) -> Response:
        params = request.query_params
        filters = {k: params[k] for k in ("name",) if params.get(k)}
        limit = int(params["limit"]) if params.get("limit", "").isdigit() else None
        found = images.image_list(self.ctx, filters=filters, limit=None if _PROPERTY_FILTERS & set(params) else limit,
                                  marker=params.get("marker"))
        wanted = params.get("status")
        if wanted:
            found = [i for i in found if STATUS.get(i.status, ("UNKNOWN", 0))[0] == wanted.upper()]
        for param, prop in (("server", "instance_uuid"), ("type", "image_type")):
            if params.get(param):  # a server is named by its id or its URL, as Nova's proxy takes it
                value = params[param].rstrip("/").rsplit("/", 1)[-1]
                found = [i for i in found if (i.properties or {}).get(prop) == value]
        if _PROPERTY_FILTERS & set(params) and limit:
            found = found[:limit]
        if self.detail:
            return Response({"images": [image_body(i) for i in found]})
        return Response({"images": [{"id": i.id, "name": i.name, "links": _links(i)} for i in found]})


class ImagesDetailView(ImagesView):
    detail = True


class ImageView(ComputeProxyAPIView):
    def get(self, request: Request, image_id: str) -> Response:
        return Response({"image": image_body(_image(self, image_id))})

    def delete(self, request: Request, image_id: str) -> Response:
        images.image_delete(self.ctx, _image(self, image_id))
        return Response(status=204)


def _image(view: ComputeAPIView, image_id: str) -> Image:
    try:
        return images.image_get(view.ctx, image_id)
    except NotFound:
        raise NotFound("Image not found.") from None


# --- /images/{id}/metadata: the image's properties (Nova's proxy, also gone from 2.36) --------------

_META = {"type": "object", "patternProperties": {"^.{1,255}$": {"type": "string", "maxLength": 255}},
         "additionalProperties": False}
METADATA_BODY = {"type": "object", "properties": {"metadata": _META}, "required": ["metadata"],
                 "additionalProperties": False}
META_BODY = {"type": "object", "properties": {"meta": {**_META, "minProperties": 1}}, "required": ["meta"],
             "additionalProperties": False}


def _set_properties(view: ComputeAPIView, image: Image, wanted: dict[str, str]) -> dict[str, str]:
    """Make the image's properties ``wanted`` (metadata items quota checked first, as Nova does)."""
    quota_check_metadata(project_id=view.ctx.project_id, count=len(wanted))
    current = dict(image.properties or {})
    changes = [("remove", key, None) for key in current if key not in wanted]
    changes += [("replace" if key in current else "add", key, value) for key, value in wanted.items()]
    return dict(images.image_update(view.ctx, image, changes).properties or {})


class ImageMetadataView(ComputeProxyAPIView):
    def get(self, request: Request, image_id: str) -> Response:
        return Response({"metadata": dict(_image(self, image_id).properties or {})})

    def post(self, request: Request, image_id: str) -> Response:
        body = self.body()
        validate(body, METADATA_BODY)
        image = _image(self, image_id)
        return Response({"metadata": _set_properties(self, image, {**(image.properties or {}),
                                                                   **body["metadata"]})})

    def put(self, request: Request, image_id: str) -> Response:
        body = self.body()
        validate(body, METADATA_BODY)
        return Response({"metadata": _set_properties(self, _image(self, image_id), dict(body["metadata"]))})


class ImageMetadataItemView(ComputeProxyAPIView):
    def get(self, request: Request, image_id: str, key: str) -> Response:
        properties = _image(self, image_id).properties or {}
        if key not in properties:
            raise NotFound("Invalid metadata key")
        return Response({"meta": {key: properties[key]}})

    def put(self, request: Request, image_id: str, key: str) -> Response:
        body = self.body()
        validate(body, META_BODY)
        if len(body["meta"]) > 1:
            raise Invalid("Request body contains too many items")
        if key not in body["meta"]:
            raise Invalid("Request body and URI mismatch")
        image = _image(self, image_id)
        _set_properties(self, image, {**(image.properties or {}), key: body["meta"][key]})
        return Response({"meta": {key: body["meta"][key]}})

    def delete(self, request: Request, image_id: str, key: str) -> Response:
        image = _image(self, image_id)
        properties = dict(image.properties or {})
        if key not in properties:
            raise NotFound("Invalid metadata key")
        properties.pop(key)
        _set_properties(self, image, properties)
        return Response(status=204)
