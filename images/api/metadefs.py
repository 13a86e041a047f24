"""Glance's metadata definitions API (``/image/v2/metadefs``): namespaces, their objects, property
and tag definitions and resource type associations, and the resource types. Thin views over
``images.metadefs`` (which checks input and policy); this module only presents the records as
Glance does: a field with no value is left out, a namespace's contents only when it has some."""
from __future__ import annotations

from typing import Any
from urllib.parse import quote, urlencode

from rest_framework.request import Request
from rest_framework.response import Response

from cloudcore.core.api.views import UnversionedAPIView
from cloudcore.core.exceptions import Invalid

from .. import metadefs
from ..models import (
    MetadefNamespace,
    MetadefObject,
    MetadefProperty,
    MetadefResourceType,
    MetadefResourceTypeAssociation,
    MetadefTag,
)
from .views import _base, _limit, _ts

NAMESPACES = "/v2/metadefs/namespaces"


def _href(namespace: str, *parts: str) -> str:
    return "/".join([NAMESPACES, quote(namespace, safe=":"), *(quote(p, safe=":") for p in parts)])


def _present(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` without the fields that have no value (Glance leaves them out)."""
    return {k: v for k, v in body.items() if v is not None}


def _times(row: Any) -> dict[str, Any]:
    return {"created_at": _ts(row.created_at), "updated_at": _ts(row.updated_at or row.created_at)}


def present_association(association: MetadefResourceTypeAssociation) -> dict[str, Any]:
    return _present({"name": association.resource_type.name, "prefix": association.prefix,
                     "properties_target": association.properties_target, **_times(association)})


def _prefixed(properties: dict[str, Any], prefix: str) -> dict[str, Any]:
    return {f"{prefix}{name}": definition for name, definition in properties.items()}


def present_object(obj: MetadefObject, *, namespace: str, prefix: str = "") -> dict[str, Any]:
    return _present({"name": obj.name, "description": obj.description,
                     "required": [f"{prefix}{r}" for r in obj.required or []],
                     "properties": _prefixed(obj.properties or {}, prefix), **_times(obj),
                     "self": _href(namespace, "objects", obj.name), "schema": "/v2/schemas/metadefs/object"})


def present_property(prop: MetadefProperty, *, prefix: str = "") -> dict[str, Any]:
    return {"name": f"{prefix}{prop.name}", **prop.definition}


def present_tag(tag: MetadefTag) -> dict[str, Any]:
    return {"name": tag.name, **_times(tag)}


def present_namespace(namespace: MetadefNamespace, *, contents: bool = False,
                      resource_type: str | None = None) -> dict[str, Any]:
    """A namespace with its resource type associations; with ``contents`` (a show) also its property
    definitions, objects and tags, the property names prefixed as ``resource_type`` names them."""
    body = _present({
        "namespace": namespace.namespace, "display_name": namespace.display_name,
        "description": namespace.description, "visibility": namespace.visibility,
        "protected": namespace.protected, "owner": namespace.owner, **_times(namespace),
        "self": _href(namespace.namespace), "schema": "/v2/schemas/metadefs/namespace",
    })
    associations = list(namespace.resource_type_associations.select_related("resource_type").order_by("id"))
    if associations:
        body["resource_type_associations"] = [present_association(a) for a in associations]
    if not contents:
        return body
    prefix = metadefs.association_prefix(namespace, resource_type)
    properties = {p.name: p.definition for p in namespace.property_definitions.order_by("name")}
    if properties:
        body["properties"] = _prefixed(properties, prefix)
    objects = list(namespace.object_definitions.order_by("created_at", "id"))
    if objects:
        body["objects"] = [present_object(o, namespace=namespace.namespace, prefix=prefix) for o in objects]
    tags = list(namespace.tag_definitions.order_by("created_at", "id"))
    if tags:
        body["tags"] = [{"name": t.name} for t in tags]
    return body


def _sorting(request: Request) -> dict[str, Any]:
    q = request.query_params
    return {"limit": _limit(q.get("limit")), "marker": q.get("marker"),
            "sort_key": q.get("sort_key", "created_at"), "sort_dir": q.get("sort_dir", "desc")}


def _created(body: dict[str, Any], location: str) -> Response:
    response = Response(body, status=201)
    response["Location"] = f"{_base()}{location}"
    return response


class MetadefNamespacesView(UnversionedAPIView):
    """``GET /v2/metadefs/namespaces`` (``visibility``, ``resource_types`` comma-separated, ``limit``,
    ``marker``, ``sort_key``, ``sort_dir``; a ``next`` link when the page is full) and ``POST``."""

    def get(self, request: Request) -> Response:
        q = request.query_params
        types = [t for t in (q.get("resource_types") or "").split(",") if t]
        sorting = _sorting(request)
        rows = metadefs.metadef_namespace_list(actor=self.ctx, visibility=q.get("visibility"),
                                               resource_types=types, **sorting)
        body: dict[str, Any] = {"namespaces": [present_namespace(ns) for ns in rows], "first": NAMESPACES,
                                "schema": "/v2/schemas/metadefs/namespaces"}
        limit = metadefs.page_limit(sorting["limit"])
        if rows and len(rows) == limit:
            params = {k: v for k, v in q.items() if k not in ("marker", "limit")}
            body["next"] = f"{NAMESPACES}?{urlencode({**params, 'marker': rows[-1].namespace, 'limit': limit})}"
        return Response(body)

    def post(self, request: Request) -> Response:
        namespace = metadefs.metadef_namespace_create(actor=self.ctx, body=self.body())
        return _created(present_namespace(namespace, contents=True), _href(namespace.namespace))


class MetadefNamespaceView(UnversionedAPIView):
    """``GET`` (with its contents; ``resource_type`` prefixes the property names as that type
    names them), ``PUT`` (replaces its attributes) and ``DELETE`` of a namespace."""

    def get(self, request: Request, namespace: str) -> Response:
        found = metadefs.metadef_namespace_get(actor=self.ctx, name=namespace)
        return Response(present_namespace(found, contents=True,
                                          resource_type=request.query_params.get("resource_type")))

    def put(self, request: Request, namespace: str) -> Response:
        updated = metadefs.metadef_namespace_update(actor=self.ctx, name=namespace, body=self.body())
        return Response(present_namespace(updated))

    def delete(self, request: Request, namespace: str) -> Response:
        metadefs.metadef_namespace_delete(actor=self.ctx, name=namespace)
        return Response(status=204)


class MetadefObjectsView(UnversionedAPIView):
    """``GET``, ``POST`` and ``DELETE`` (all of them) of a namespace's objects."""

    def get(self, request: Request, namespace: str) -> Response:
        rows = metadefs.metadef_object_list(actor=self.ctx, name=namespace, **_sorting(request))
        return Response({"objects": [present_object(o, namespace=namespace) for o in rows],
                         "first": _href(namespace, "objects"), "schema": "/v2/schemas/metadefs/objects"})

    def post(self, request: Request, namespace: str) -> Response:
        obj = metadefs.metadef_object_create(actor=self.ctx, name=namespace, body=self.body())
        return _created(present_object(obj, namespace=namespace), _href(namespace, "objects", obj.name))

    def delete(self, request: Request, namespace: str) -> Response:
        metadefs.metadef_namespace_contents_delete(actor=self.ctx, name=namespace, kind="objects")
        return Response(status=204)


class MetadefObjectView(UnversionedAPIView):
    def get(self, request: Request, namespace: str, object_name: str) -> Response:
        obj = metadefs.metadef_object_get(actor=self.ctx, name=namespace, object_name=object_name)
        return Response(present_object(obj, namespace=namespace))

    def put(self, request: Request, namespace: str, object_name: str) -> Response:
        obj = metadefs.metadef_object_update(actor=self.ctx, name=namespace, object_name=object_name,
                                             body=self.body())
        return Response(present_object(obj, namespace=namespace))

    def delete(self, request: Request, namespace: str, object_name: str) -> Response:
        metadefs.metadef_object_delete(actor=self.ctx, name=namespace, object_name=object_name)
        return Response(status=204)


class MetadefPropertiesView(UnversionedAPIView):
    """``GET`` (``{"properties": {name: definition}}``), ``POST`` and ``DELETE`` (all of them) of a
    namespace's property definitions."""

    def get(self, request: Request, namespace: str) -> Response:
        rows = metadefs.metadef_property_list(actor=self.ctx, name=namespace)
        return Response({"properties": {p.name: p.definition for p in rows}})

    def post(self, request: Request, namespace: str) -> Response:
        prop = metadefs.metadef_property_create(actor=self.ctx, name=namespace, body=self.body())
        return _created(present_property(prop), _href(namespace, "properties", prop.name))

    def delete(self, request: Request, namespace: str) -> Response:
        metadefs.metadef_namespace_contents_delete(actor=self.ctx, name=namespace, kind="properties")
        return Response(status=204)


class MetadefPropertyView(UnversionedAPIView):
    """A property definition; ``GET`` with ``resource_type`` takes the name that type gives it."""

    def get(self, request: Request, namespace: str, property_name: str) -> Response:
        resource_type = request.query_params.get("resource_type")
        prop = metadefs.metadef_property_get(actor=self.ctx, name=namespace, property_name=property_name,
                                             resource_type=resource_type)
        prefix = property_name[:len(property_name) - len(prop.name)] if resource_type else ""
        return Response(present_property(prop, prefix=prefix))

    def put(self, request: Request, namespace: str, property_name: str) -> Response:
        prop = metadefs.metadef_property_update(actor=self.ctx, name=namespace, property_name=property_name,
                                                body=self.body())
        return Response(present_property(prop))

    def delete(self, request: Request, namespace: str, property_name: str) -> Response:
        metadefs.metadef_property_delete(actor=self.ctx, name=namespace, property_name=property_name)
        return Response(status=204)


def _append(request: Request) -> bool:
    value = request.headers.get("X-Openstack-Append", "false").strip().lower()
    if value not in ("true", "false"):
        raise Invalid(f"X-Openstack-Append must be true or false, not {value!r}.")
    return value == "true"


class MetadefTagsView(UnversionedAPIView):
    """``GET``, ``POST`` (several at once: they replace the namespace's tags, or are added to them
    with ``X-Openstack-Append: true``) and ``DELETE`` (all of them) of a namespace's tags."""

    def get(self, request: Request, namespace: str) -> Response:
        rows = metadefs.metadef_tag_list(actor=self.ctx, name=namespace, **_sorting(request))
        return Response({"tags": [present_tag(t) for t in rows]})

    def post(self, request: Request, namespace: str) -> Response:
        rows = metadefs.metadef_tags_create(actor=self.ctx, name=namespace, body=self.body(),
                                            append=_append(request))
        return Response({"tags": [{"name": t.name} for t in rows]}, status=201)

    def delete(self, request: Request, namespace: str) -> Response:
        metadefs.metadef_namespace_contents_delete(actor=self.ctx, name=namespace, kind="tags")
        return Response(status=204)


class MetadefTagView(UnversionedAPIView):
    """A tag definition: ``POST`` creates the one the URL names (no body), ``PUT`` renames it."""

    def get(self, request: Request, namespace: str, tag_name: str) -> Response:
        return Response(present_tag(metadefs.metadef_tag_get(actor=self.ctx, name=namespace, tag_name=tag_name)))

    def post(self, request: Request, namespace: str, tag_name: str) -> Response:
        tag = metadefs.metadef_tag_create(actor=self.ctx, name=namespace, tag_name=tag_name, body=self.body())
        return _created(present_tag(tag), _href(namespace, "tags", tag.name))

    def put(self, request: Request, namespace: str, tag_name: str) -> Response:
        tag = metadefs.metadef_tag_update(actor=self.ctx, name=namespace, tag_name=tag_name, body=self.body())
        return Response(present_tag(tag))

    def delete(self, request: Request, namespace: str, tag_name: str) -> Response:
        metadefs.metadef_tag_delete(actor=self.ctx, name=namespace, tag_name=tag_name)
        return Response(status=204)


def present_resource_type(resource_type: MetadefResourceType) -> dict[str, Any]:
    return {"name": resource_type.name, **_times(resource_type)}


class MetadefResourceTypesView(UnversionedAPIView):
    """``GET /v2/metadefs/resource_types``: every resource type."""

    def get(self, request: Request) -> Response:
        rows = metadefs.metadef_resource_type_list(actor=self.ctx)
        return Response({"resource_types": [present_resource_type(t) for t in rows]})


class MetadefAssociationsView(UnversionedAPIView):
    """``GET`` and ``POST`` of a namespace's resource type associations."""

    def get(self, request: Request, namespace: str) -> Response:
        rows = metadefs.metadef_association_list(actor=self.ctx, name=namespace)
        return Response({"resource_type_associations": [present_association(a) for a in rows]})

    def post(self, request: Request, namespace: str) -> Response:
        association = metadefs.metadef_association_create(actor=self.ctx, name=namespace, body=self.body())
        return _created(present_association(association),
                        _href(namespace, "resource_types", association.resource_type.name))


class MetadefAssociationView(UnversionedAPIView):
    def delete(self, request: Request, namespace: str, resource_type: str) -> Response:
        metadefs.metadef_association_delete(actor=self.ctx, name=namespace, resource_type=resource_type)
        return Response(status=204)
