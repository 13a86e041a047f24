"""Glance v2 subset: ``/image/`` versions, ``/image/v2/images`` CRUD, data upload/download,
``glance-direct`` import (stage, import, ``/v2/info/import``), members, json-patch updates, tags
and the image and member schemas (what python-openstackclient/openstacksdk use). The metadata
definitions API is ``metadefs``."""
from __future__ import annotations

import json
import uuid as uuidlib
from typing import Any

from django.conf import settings
from django.http import FileResponse
from rest_framework.parsers import BaseParser, JSONParser
from rest_framework.request import Request
from rest_framework.response import Response

from cloudcore.core.api.views import PublicMixin, UnversionedAPIView
from cloudcore.core.exceptions import Invalid

from .. import services
from ..models import Image, ImageMember, ImageTask
from . import metadef_schemas

PATCH_MEDIA = "application/openstack-images-v2.1-json-patch"
#: Glance's older patch format: ``{"replace": "/name", "value": ...}`` instead of ``op``/``path``
PATCH_MEDIA_20 = "application/openstack-images-v2.0-json-patch"
PATCH_OPS = ("add", "replace", "remove")


def _base() -> str:
    return settings.PUBLIC_URL.rstrip("/") + "/image"


def _ts(value: Any) -> str | None:
    return value.strftime("%Y-%m-%dT%H:%M:%SZ") if value else None


def present(image: Image) -> dict[str, Any]:
    body: dict[str, Any] = dict(image.properties or {})
    body.update({
        "id": image.id, "name": image.name, "status": image.status, "visibility": image.visibility,
        "protected": image.protected, "os_hidden": image.os_hidden, "checksum": image.checksum,
        "os_hash_algo": image.os_hash_algo, "os_hash_value": image.os_hash_value, "owner": image.owner,
        "size": image.size, "virtual_size": image.virtual_size, "min_ram": image.min_ram,
        "min_disk": image.min_disk, "disk_format": image.disk_format, "container_format": image.container_format,
        "created_at": _ts(image.created_at), "updated_at": _ts(image.updated_at or image.created_at),
        "tags": list(image.tags or []), "self": f"/v2/images/{image.id}", "file": f"/v2/images/{image.id}/file",
        "schema": "/v2/schemas/image",
    })
    return body


class JSONPatchParser(JSONParser):
    media_type = PATCH_MEDIA


class JSONPatch20Parser(JSONParser):
    media_type = PATCH_MEDIA_20


def _patch_change(op: Any, media_type: str) -> tuple[str, str, Any]:
    """One json-patch operation as ``(op, name, value)``, in either of Glance's two formats."""
    if not isinstance(op, dict):
        raise Invalid("Unable to find `op` or `path` in JSON Schema change.")
    if media_type.startswith(PATCH_MEDIA_20):
        names = [k for k in PATCH_OPS if k in op]
        if len(names) != 1 or not str(op[names[0]]).startswith("/"):
            raise Invalid("Operation objects must contain exactly one member named \"add\", \"remove\", "
                          "or \"replace\".")
        return names[0], str(op[names[0]]).lstrip("/"), op.get("value")
    if "op" not in op or "path" not in op or not str(op["path"]).startswith("/"):
        raise Invalid("Unable to find `op` or `path` in JSON Schema change.")
    return op["op"], str(op["path"]).lstrip("/"), op.get("value")


class RawParser(BaseParser):
    media_type = "*/*"

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        return stream


class ImageVersionsView(PublicMixin, UnversionedAPIView):
    def get(self, request: Request) -> Response:
        versions = [{"id": v, "status": "CURRENT" if v == "v2.16" else "SUPPORTED",
                     "links": [{"rel": "self", "href": f"{_base()}/v2/"}]}
                    for v in ("v2.16", "v2.15", "v2.9", "v2.7", "v2.6", "v2.5", "v2.4", "v2.3", "v2.2", "v2.1", "v2.0")]
        return Response({"versions": versions}, status=300 if request.path.rstrip("/").endswith("image") else 200)


#: the query parameters of Glance's image list that are not custom property filters
_LIST_PARAMS = frozenset({"name", "status", "owner", "visibility", "disk_format", "container_format", "tag", "id",
                          "os_hidden", "limit", "marker", "sort_key", "sort_dir", "sort", "member_status",
                          "protected", "size_min", "size_max", "created_at", "updated_at", "checksum",
                          "os_hash_value"})


def _limit(value: str | None) -> int | None:
    """A list's ``limit`` query parameter (Glance's 400s for one that is not a positive integer)."""
    try:
        limit = int(value) if value else None
    except ValueError:
        raise Invalid("limit param must be an integer") from None
    if limit is not None and limit < 0:
        raise Invalid("limit param must be positive")
    return limit


def _page(collection: str, rows: list[Image] | list[ImageTask], shown: list[dict[str, Any]],
          limit: int | None) -> dict[str, Any]:
    """A page of Glance's ``collection`` (``images``, ``tasks``): ``shown`` (the ``rows`` presented),
    its first page and schema, and its next page when this one is full."""
    body: dict[str, Any] = {collection: shown, "first": f"/v2/{collection}", "schema": f"/v2/schemas/{collection}"}
    if limit and len(rows) == limit:
        body["next"] = f"/v2/{collection}?marker={rows[-1].id}&limit={limit}"
    return body


def _uuid_like(value: str) -> bool:
    try:
        uuidlib.UUID(value)
    except ValueError:
        return False
    return True


class ImagesView(UnversionedAPIView):
    def get(self, request: Request) -> Response:
        q = request.query_params
        limit = _limit(q.get("limit"))
        filters: dict[str, Any] = {k: q.get(k) for k in ("name", "status", "owner", "visibility", "disk_format",
                                                          "container_format", "tag", "id", "member_status")}
        if q.get("os_hidden") is not None:
            filters["os_hidden"] = q["os_hidden"].lower() == "true"
        # Glance: any other parameter filters on a custom property of that name
        filters["properties"] = {k: q[k] for k in q if k not in _LIST_PARAMS}
        images = services.image_list(self.ctx, filters=filters, limit=limit, marker=q.get("marker"),
                                     sort_key=q.get("sort_key", "created_at"), sort_dir=q.get("sort_dir", "desc"))
        return Response(_page("images", images, [present(i) for i in images], limit))

    def post(self, request: Request) -> Response:
        data = request.data
        if not isinstance(data, dict):
            raise Invalid("Image body must be a JSON object.")
        image = services.image_create(self.ctx, **data)
        response = Response(present(image), status=201)
        response["Location"] = f"{_base()}/v2/images/{image.id}"
        return response


class ImageView(UnversionedAPIView):
    parser_classes = [JSONPatchParser, JSONPatch20Parser, JSONParser]

    def get(self, request: Request, image_id: str) -> Response:
        return Response(present(services.image_get(self.ctx, image_id)))

    def patch(self, request: Request, image_id: str) -> Response:
        image = services.image_get(self.ctx, image_id)
        ops = request.data
        if not isinstance(ops, list):
            raise Invalid("Request body must be a JSON array of operation objects.")
        changes = [_patch_change(op, request.content_type or "") for op in ops]
        return Response(present(services.image_update(self.ctx, image, changes)))

    def delete(self, request: Request, image_id: str) -> Response:
        services.image_delete(self.ctx, services.image_get(self.ctx, image_id))
        return Response(status=204)


def _body_chunks(request: Request) -> Any:
    """The request body, streamed in 1 MiB blocks (an image is never held whole in memory).

    A body sent with ``Transfer-Encoding: chunked`` (Tempest's and glanceclient's uploads) has no
    ``Content-Length``: Django then reads it as empty, so it is read from the WSGI input, which the
    server (gunicorn) has de-chunked and ends at the body's end."""
    meta = request._request.META
    chunked = "chunked" in meta.get("HTTP_TRANSFER_ENCODING", "").lower() and not meta.get("CONTENT_LENGTH")
    stream = meta["wsgi.input"] if chunked else request._request
    while block := stream.read(1024 * 1024):
        yield block


class ImageFileView(UnversionedAPIView):
    parser_classes = [RawParser]

    def put(self, request: Request, image_id: str) -> Response:
        services.image_upload(self.ctx, services.image_get(self.ctx, image_id), _body_chunks(request))
        return Response(status=204)

    def get(self, request: Request, image_id: str) -> Any:
        image = services.image_get(self.ctx, image_id)
        path = services.image_download(self.ctx, image)
        if path is None:
            return Response(status=204)
        response = FileResponse(open(path, "rb"), content_type="application/octet-stream")  # noqa: SIM115
        if image.checksum:
            response["Content-MD5"] = image.checksum
        response["x-openstack-request-id"] = getattr(request._request, "request_id", "")
        return response


class ImageStageView(UnversionedAPIView):
    parser_classes = [RawParser]

    def put(self, request: Request, image_id: str) -> Response:
        services.image_stage(self.ctx, services.image_get(self.ctx, image_id), _body_chunks(request))
        return Response(status=204)


class ImageImportView(UnversionedAPIView):
    def post(self, request: Request, image_id: str) -> Response:
        image = services.image_get(self.ctx, image_id)
        body = request.data if isinstance(request.data, dict) else {}
        services.image_import(self.ctx, image, method=body.get("method"))
        return Response(status=202)


class ImageActionView(UnversionedAPIView):
    """``POST /v2/images/{id}/actions/deactivate`` and ``.../reactivate``: 204."""

    def post(self, request: Request, image_id: str, action: str) -> Response:
        services.image_deactivate(self.ctx, services.image_get(self.ctx, image_id), active=action == "reactivate")
        return Response(status=204)


class ImageTasksView(UnversionedAPIView):
    """``GET /v2/images/{id}/tasks`` (2.12): the tasks that made the image (a tasks API ``import``;
    uploads and ``glance-direct`` imports finish inside their request, with no task)."""

    def get(self, request: Request, image_id: str) -> Response:
        image = services.image_get(self.ctx, image_id)
        return Response({"tasks": [present_image_task(t) for t in services.image_tasks_of(image)]})


def present_task(task: ImageTask, *, details: bool = True) -> dict[str, Any]:
    """A task as ``/v2/tasks`` shows it; a list leaves out ``input``, ``result`` and ``message``."""
    body: dict[str, Any] = {"id": task.id, "type": task.type, "status": task.status, "owner": task.owner,
                            "created_at": _ts(task.created_at), "updated_at": _ts(task.updated_at or task.created_at),
                            "self": f"/v2/tasks/{task.id}", "schema": "/v2/schemas/task"}
    if task.expires_at:
        body["expires_at"] = _ts(task.expires_at)
    if details:
        body.update({"input": task.input, "result": task.result, "message": task.message})
    return body


def present_image_task(task: ImageTask) -> dict[str, Any]:
    """A task as an image's task list (2.12) shows it: with its image, request and user."""
    return {"id": task.id, "type": task.type, "status": task.status, "owner": task.owner,
            "expires_at": _ts(task.expires_at), "created_at": _ts(task.created_at),
            "updated_at": _ts(task.updated_at or task.created_at), "deleted_at": _ts(task.deleted_at),
            "deleted": task.deleted, "image_id": task.image_id, "request_id": task.request_id,
            "user_id": task.user_id, "input": task.input, "result": task.result, "message": task.message}


class TasksView(UnversionedAPIView):
    """``GET /v2/tasks`` (``status``, ``type``, ``sort_key``, ``sort_dir``, ``limit``, ``marker``) and
    ``POST /v2/tasks`` (``{"type": "import", "input": {...}}``: 201, the task ``pending``)."""

    def get(self, request: Request) -> Response:
        q = request.query_params
        limit = _limit(q.get("limit"))
        marker = q.get("marker")
        if marker is not None and not _uuid_like(marker):
            raise Invalid("Invalid marker format")
        tasks = services.image_task_list(self.ctx, status=q.get("status"), task_type=q.get("type"), limit=limit,
                                         marker=marker, sort_key=q.get("sort_key", "created_at"),
                                         sort_dir=q.get("sort_dir", "desc"))
        return Response(_page("tasks", tasks, [present_task(t, details=False) for t in tasks], limit))

    def post(self, request: Request) -> Response:
        body = request.data
        if not isinstance(body, dict):
            raise Invalid("Body expected in request")
        for key in ("type", "input"):
            if key not in body:
                raise Invalid(f"Task '{key}' is required")
        task = services.image_task_create(self.ctx, task_type=body["type"], task_input=body["input"])
        response = Response(present_task(task), status=201)
        response["Location"] = f"{_base()}/v2/tasks/{task.id}"
        return response


class TaskView(UnversionedAPIView):
    def get(self, request: Request, task_id: str) -> Response:
        return Response(present_task(services.image_task_get(self.ctx, task_id)))


class ImportInfoView(UnversionedAPIView):
    """``GET /v2/info/import``: the import methods this cloud offers (glance-direct only)."""

    def get(self, request: Request) -> Response:
        return Response({"import-methods": {"description": "Import methods available.", "type": "array",
                                            "value": list(services.IMPORT_METHODS)}})


def present_member(member: ImageMember) -> dict[str, Any]:
    return {"image_id": member.image_id, "member_id": member.member, "status": member.status,
            "created_at": _ts(member.created_at), "updated_at": _ts(member.updated_at or member.created_at),
            "schema": "/v2/schemas/member"}


class ImageMembersView(UnversionedAPIView):
    def get(self, request: Request, image_id: str) -> Response:
        members = services.image_member_list(self.ctx, services.image_get(self.ctx, image_id))
        return Response({"members": [present_member(m) for m in members], "schema": "/v2/schemas/members"})

    def post(self, request: Request, image_id: str) -> Response:
        body = request.data if isinstance(request.data, dict) else {}
        member = services.image_member_create(self.ctx, services.image_get(self.ctx, image_id),
                                              member=body.get("member"))
        return Response(present_member(member))


class ImageMemberView(UnversionedAPIView):
    def get(self, request: Request, image_id: str, member_id: str) -> Response:
        image = services.image_get(self.ctx, image_id)
        return Response(present_member(services.image_member_get(self.ctx, image, member_id)))

    def put(self, request: Request, image_id: str, member_id: str) -> Response:
        body = request.data if isinstance(request.data, dict) else {}
        member = services.image_member_update(self.ctx, services.image_get(self.ctx, image_id), member_id,
                                              status=body.get("status"))
        return Response(present_member(member))

    def delete(self, request: Request, image_id: str, member_id: str) -> Response:
        services.image_member_delete(self.ctx, services.image_get(self.ctx, image_id), member_id)
        return Response(status=204)


class ImageTagView(UnversionedAPIView):
    def put(self, request: Request, image_id: str, tag: str) -> Response:
        services.image_tag(self.ctx, services.image_get(self.ctx, image_id), tag, add=True)
        return Response(status=204)

    def delete(self, request: Request, image_id: str, tag: str) -> Response:
        services.image_tag(self.ctx, services.image_get(self.ctx, image_id), tag, add=False)
        return Response(status=204)


IMAGE_SCHEMA = {
    "name": "image",
    "properties": {
        "id": {"type": "string"}, "name": {"type": ["null", "string"], "maxLength": 255},
        "visibility": {"type": "string", "enum": ["community", "public", "private", "shared"]},
        "status": {"type": "string"}, "protected": {"type": "boolean"}, "os_hidden": {"type": "boolean"},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 255}},
        "disk_format": {"type": ["null", "string"], "enum": [None, *services.DISK_FORMATS]},
        "container_format": {"type": ["null", "string"], "enum": [None, *services.CONTAINER_FORMATS]},
        "min_ram": {"type": "integer"}, "min_disk": {"type": "integer"}, "size": {"type": ["null", "integer"]},
        "virtual_size": {"type": ["null", "integer"]}, "checksum": {"type": ["null", "string"]},
        "owner": {"type": ["null", "string"]}, "created_at": {"type": "string"}, "updated_at": {"type": "string"},
        "self": {"type": "string"}, "file": {"type": "string"}, "schema": {"type": "string"},
    },
    "additionalProperties": {"type": "string"},
    "links": [{"rel": "self", "href": "{self}"}, {"rel": "enclosure", "href": "{file}"},
              {"rel": "describedby", "href": "{schema}"}],
}


MEMBER_SCHEMA = {
    "name": "member",
    "properties": {
        "image_id": {"type": "string"}, "member_id": {"type": "string"},
        "status": {"type": "string", "enum": list(services.MEMBER_STATUSES)},
        "created_at": {"type": "string"}, "updated_at": {"type": "string"}, "schema": {"type": "string"},
    },
}


TASK_SCHEMA = {
    "name": "task",
    "properties": {
        "id": {"type": "string"}, "type": {"type": "string", "enum": list(services.TASK_TYPES)},
        "status": {"type": "string", "enum": list(services.TASK_STATUSES)},
        "input": {"type": ["null", "object"]}, "result": {"type": ["null", "object"]},
        "owner": {"type": "string"}, "message": {"type": "string"}, "expires_at": {"type": ["null", "string"]},
        "created_at": {"type": "string"}, "updated_at": {"type": "string"},
        "self": {"type": "string"}, "schema": {"type": "string"},
    },
    "links": [{"rel": "self", "href": "{self}"}, {"rel": "describedby", "href": "{schema}"}],
}


class ImageSchemaView(UnversionedAPIView):
    """``GET /v2/schemas/<kind>``: the image, member and task schemas, and the metadata definitions'
    (``metadefs/<kind>``, ``metadef_schemas``)."""

    def get(self, request: Request, kind: str) -> Response:
        if kind.startswith("metadefs/"):
            return Response(metadef_schemas.SCHEMAS[kind.removeprefix("metadefs/")])
        if kind == "task":
            return Response(TASK_SCHEMA)
        if kind == "tasks":
            listed = {**TASK_SCHEMA, "properties": {k: v for k, v in TASK_SCHEMA["properties"].items()
                                                    if k not in ("input", "result", "message")}}
            return Response({"name": "tasks", "properties": {"tasks": {"type": "array", "items": listed},
                                                             "schema": {"type": "string"}},
                             "links": [{"rel": "first", "href": "{first}"}, {"rel": "next", "href": "{next}"},
                                       {"rel": "describedby", "href": "{schema}"}]})
        if kind == "member":
            return Response(MEMBER_SCHEMA)
        if kind == "members":
            return Response({"name": "members", "properties": {"members": {"type": "array", "items": MEMBER_SCHEMA},
                                                              "schema": {"type": "string"}},
                             "links": [{"rel": "describedby", "href": "{schema}"}]})
        if kind == "images":
            return Response({"name": "images", "properties": {"images": {"type": "array", "items": IMAGE_SCHEMA}},
                             "links": [{"rel": "first", "href": "{first}"}, {"rel": "next", "href": "{next}"}]})
        return Response(json.loads(json.dumps(IMAGE_SCHEMA)))
