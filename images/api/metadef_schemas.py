"""The JSON schemas of the metadata definitions API (``GET /v2/schemas/metadefs/<kind>``), served by
``views.ImageSchemaView``: what each record of ``/v2/metadefs`` holds, as ``images.metadefs``
checks it (glanceclient builds its models from them and validates answers against them)."""
from __future__ import annotations

import copy
from typing import Any

from ..metadefs import PROPERTY_TYPES, VISIBILITIES

_STRING = {"type": "string"}
_TIME = {"type": "string", "format": "date-time", "readOnly": True}
_COUNT = {"type": "integer", "minimum": 0}
_SELF_LINKS = [{"rel": "self", "href": "{self}"}, {"rel": "describedby", "href": "{schema}"}]
_LIST_LINKS = [{"rel": "first", "href": "{first}"}, {"rel": "next", "href": "{next}"},
               {"rel": "describedby", "href": "{schema}"}]


def _item(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` as an item of another (its name and links left out)."""
    return {"type": "object", **{k: v for k, v in schema.items() if k not in ("name", "links")}}

#: a property definition (a subset of JSON schema), as a namespace's and an object's properties hold them
PROPERTY_DEFINITION: dict[str, Any] = {
    "type": "object",
    "required": ["title", "type"],
    "additionalProperties": False,
    "properties": {
        "title": {"type": "string", "maxLength": 255}, "description": _STRING,
        "type": {"type": "string", "enum": list(PROPERTY_TYPES)},
        "default": {}, "enum": {"type": "array"}, "readonly": {"type": "boolean"},
        "operators": {"type": "array", "items": _STRING},
        "minimum": {"type": "number"}, "maximum": {"type": "number"},
        "minLength": _COUNT, "maxLength": _COUNT, "pattern": {"type": "string", "format": "regex"},
        "items": {"type": "object", "additionalProperties": False,
                  "properties": {"type": {"type": "string", "enum": list(PROPERTY_TYPES)}, "enum": {"type": "array"}}},
        "uniqueItems": {"type": "boolean"}, "minItems": _COUNT, "maxItems": _COUNT,
        "additionalItems": {"type": "boolean"},
    },
}
_PROPERTIES = {"type": "object", "additionalProperties": PROPERTY_DEFINITION}

def _record(name: str, required: str, properties: dict[str, Any]) -> dict[str, Any]:
    """The schema of one record of the API: ``properties`` with its timestamps, no other key."""
    return {"name": name, "required": [required], "additionalProperties": False,
            "properties": {**properties, "created_at": _TIME, "updated_at": _TIME}, "links": _SELF_LINKS}


RESOURCE_TYPE_ASSOCIATION = _record("resource_type_association", "name", {
    "name": {"type": "string", "maxLength": 80}, "prefix": {"type": "string", "maxLength": 80},
    "properties_target": {"type": "string", "maxLength": 80},
})
OBJECT = _record("object", "name", {
    "name": {"type": "string", "maxLength": 80}, "description": _STRING,
    "required": {"type": "array", "items": _STRING}, "properties": _PROPERTIES, "self": _STRING, "schema": _STRING,
})
TAG = _record("tag", "name", {"name": {"type": "string", "maxLength": 255}})
NAMESPACE = _record("namespace", "namespace", {
    "namespace": {"type": "string", "maxLength": 80}, "display_name": {"type": "string", "maxLength": 80},
    "description": {"type": "string", "maxLength": 500},
    "visibility": {"type": "string", "enum": list(VISIBILITIES)}, "protected": {"type": "boolean"},
    "owner": {"type": "string", "maxLength": 255}, "self": _STRING, "schema": _STRING,
    "resource_type_associations": {"type": "array", "items": _item(RESOURCE_TYPE_ASSOCIATION)},
    "properties": _PROPERTIES,
    "objects": {"type": "array", "items": _item(OBJECT)},
    "tags": {"type": "array", "items": {"type": "object", "properties": {"name": _STRING}}},
})
#: a property definition with its name (``GET .../properties/{name}``)
PROPERTY: dict[str, Any] = {
    "name": "property", **{k: v for k, v in copy.deepcopy(PROPERTY_DEFINITION).items() if k != "type"},
    "required": ["name", "title", "type"],
}
PROPERTY["properties"]["name"] = {"type": "string", "maxLength": 255}


def _collection(name: str, key: str, item: dict[str, Any], *, paged: bool) -> dict[str, Any]:
    properties: dict[str, Any] = {key: {"type": "array" if key != "properties" else "object"}, "schema": _STRING}
    if key == "properties":
        properties[key]["additionalProperties"] = PROPERTY_DEFINITION
    else:
        properties[key]["items"] = _item(item)
    if paged:
        properties.update({"first": _STRING, "next": _STRING})
    return {"name": name, "properties": properties,
            "links": _LIST_LINKS if paged else [{"rel": "describedby", "href": "{schema}"}]}


#: ``GET /v2/schemas/metadefs/<kind>``: each kind's schema
SCHEMAS: dict[str, dict[str, Any]] = {
    "namespace": NAMESPACE,
    "namespaces": _collection("namespaces", "namespaces", NAMESPACE, paged=True),
    "object": OBJECT,
    "objects": _collection("objects", "objects", OBJECT, paged=True),
    "property": PROPERTY,
    "properties": _collection("properties", "properties", PROPERTY, paged=False),
    "tag": TAG,
    "tags": _collection("tags", "tags", TAG, paged=False),
    "resource_type": RESOURCE_TYPE_ASSOCIATION,
    "resource_types": _collection("resource_type_associations", "resource_type_associations",
                                  RESOURCE_TYPE_ASSOCIATION, paged=False),
}
