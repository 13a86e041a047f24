"""Glance's metadata definitions catalogue (``/v2/metadefs``): which properties and tags resources
may carry, their types and constraints; never the values themselves (those stay on the images,
flavors, volumes ... they describe).

A namespace (``MetadefNamespace``) groups property definitions, objects (named groups of property
definitions), tag definitions and the resource types it applies to. Names are unique: a namespace
in the whole cloud, everything else within its namespace (409 otherwise).

Who sees what, as Glance's defaults (``images.policies``): a ``public`` namespace is read by every
project, a ``private`` one by its owner's project only; cloud admins read everything. A namespace
the actor may not read does not exist for it (404, also for a write). Every write is for cloud
admins (403). A ``protected`` namespace refuses every delete, of itself or of anything in it (403),
until it is unprotected.

Input is checked here, not in the views: a field a kind of record does not have is a 400 (never
dropped), as is a value of the wrong type or length; nothing is written when one is refused. Rows
are deleted for good (Glance keeps no deleted metadefs). Everything lives in the API database.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from django.db import IntegrityError, transaction
from django.db.models import Q, QuerySet

from cloudcore.core import policy
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Conflict, Forbidden, Invalid, NotFound

from .models import (
    MetadefNamespace,
    MetadefObject,
    MetadefProperty,
    MetadefResourceType,
    MetadefResourceTypeAssociation,
    MetadefTag,
)

VISIBILITIES = ("public", "private")
#: the JSON types a property definition (or its array's ``items``) may have
PROPERTY_TYPES = ("array", "boolean", "integer", "number", "object", "string")
NAMESPACE_SORT_KEYS = ("created_at", "updated_at", "namespace", "display_name", "visibility", "owner")
ITEM_SORT_KEYS = ("created_at", "updated_at", "name")
#: Glance's page size when a list names no ``limit`` (``limit_param_default``), and its largest
DEFAULT_LIMIT = 25
MAX_LIMIT = 1000
#: what every kind of record shows and a client may not set
READ_ONLY = frozenset({"created_at", "updated_at", "self", "schema"})
NAMESPACE_FIELDS = frozenset({"namespace", "display_name", "description", "visibility", "protected", "owner"})
NAMESPACE_CONTENTS = frozenset({"resource_type_associations", "objects", "properties", "tags"})
OBJECT_FIELDS = frozenset({"name", "description", "required", "properties"})
ASSOCIATION_FIELDS = frozenset({"name", "prefix", "properties_target"})
#: a property definition's attributes (a subset of JSON schema), with the check of each value
_COUNT = "a non-negative integer"
PROPERTY_ATTRIBUTES: dict[str, str] = {
    "title": "a string", "type": "one of " + ", ".join(PROPERTY_TYPES), "description": "a string",
    "default": "any value", "enum": "an array", "operators": "an array of strings", "readonly": "a boolean",
    "minimum": "a number", "maximum": "a number", "minLength": _COUNT, "maxLength": _COUNT,
    "pattern": "a regular expression", "items": "an object with 'type' and 'enum'", "uniqueItems": "a boolean",
    "minItems": _COUNT, "maxItems": _COUNT, "additionalItems": "a boolean",
}


class MetadefNamespaceNotFound(NotFound):
    message = "Metadata definition namespace %(namespace)s was not found."


class MetadefItemNotFound(NotFound):
    message = "Metadata definition %(kind)s %(name)s was not found in namespace %(namespace)s."


# --- access -----------------------------------------------------------------------------------


def _target(namespace: MetadefNamespace) -> dict[str, Any]:
    return {"project_id": namespace.owner, "visibility": namespace.visibility}


def _authorize(actor: RequestContext, rule: str, namespace: MetadefNamespace | None = None) -> None:
    """Glance's 403 for a rule the actor fails (on ``namespace``, else on its own project)."""
    if not policy.can(actor, rule, _target(namespace) if namespace is not None else None):
        raise Forbidden(f"You are not authorized to complete {rule} action.")


def _readable(actor: RequestContext, namespace: MetadefNamespace, rule: str = "get_metadef_namespace") -> bool:
    visible = actor.is_admin or namespace.visibility == "public" or namespace.owner == actor.project_id
    return visible and policy.can(actor, rule, _target(namespace))


def metadef_namespace_get(*, actor: RequestContext, name: str, rule: str = "get_metadef_namespace") -> MetadefNamespace:
    """The namespace ``name`` if ``actor`` may read it (visibility, then ``rule``, a read rule: the
    namespace's own or the one of the contents read); MetadefNamespaceNotFound (404) otherwise."""
    namespace = MetadefNamespace.objects.filter(namespace=name).first()
    if namespace is None or not _readable(actor, namespace, rule):
        raise MetadefNamespaceNotFound(namespace=name)
    return namespace


def _writable(actor: RequestContext, name: str, rule: str) -> MetadefNamespace:
    """The namespace ``name`` for a write under ``rule``: 404 where the actor may not read it, then
    403 where ``rule`` refuses it."""
    namespace = metadef_namespace_get(actor=actor, name=name)
    _authorize(actor, rule, namespace)
    return namespace


def _unprotected(namespace: MetadefNamespace, what: str) -> None:
    if namespace.protected:
        raise Forbidden(f"{what} cannot be deleted: namespace {namespace.namespace} is protected.")


# --- validation -------------------------------------------------------------------------------


def _body(body: Any, what: str) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise Invalid(f"The {what} must be a JSON object.")
    return body


def _known(body: dict[str, Any], allowed: Iterable[str], what: str) -> None:
    """A 400 for a key ``what`` does not have (a read-only one says so)."""
    allowed = frozenset(allowed)
    for key in sorted(body):
        if key in allowed:
            continue
        if key in READ_ONLY:
            raise Invalid(f"Attribute '{key}' of a {what} is read-only.")
        raise Invalid(f"A {what} has no attribute '{key}'.")


def _name(value: Any, what: str, max_length: int) -> str:
    if not isinstance(value, str) or not value.strip():
        raise Invalid(f"The {what} must be a non-empty string.")
    if len(value) > max_length:
        raise Invalid(f"The {what} must be at most {max_length} characters long.")
    if "/" in value:
        raise Invalid(f"The {what} may not contain '/'.")
    return value


def _text(body: dict[str, Any], key: str, what: str, max_length: int | None = None) -> str | None:
    value = body.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise Invalid(f"The {key} of a {what} must be a string.")
    if max_length is not None and len(value) > max_length:
        raise Invalid(f"The {key} of a {what} must be at most {max_length} characters long.")
    return value


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_pattern(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    try:
        re.compile(value)
    except re.error:
        return False
    return True


def _is_items(value: Any) -> bool:
    return (isinstance(value, dict) and set(value) <= {"type", "enum"}
            and value.get("type", "string") in PROPERTY_TYPES and isinstance(value.get("enum", []), list))


_ATTRIBUTE_CHECKS: dict[str, Callable[[Any], bool]] = {
    "title": lambda v: isinstance(v, str) and len(v) <= 255,
    "type": lambda v: v in PROPERTY_TYPES,
    "description": lambda v: v is None or isinstance(v, str),
    "default": lambda v: True,
    "enum": lambda v: isinstance(v, list),
    "operators": lambda v: isinstance(v, list) and all(isinstance(o, str) for o in v),
    "readonly": lambda v: isinstance(v, bool),
    "minimum": _is_number, "maximum": _is_number,
    "minLength": _is_count, "maxLength": _is_count, "minItems": _is_count, "maxItems": _is_count,
    "pattern": _is_pattern,
    "items": _is_items,
    "uniqueItems": lambda v: isinstance(v, bool),
    "additionalItems": lambda v: isinstance(v, bool),
}


def property_definition(body: Any, *, name: str) -> dict[str, Any]:
    """A property definition as stored (its attributes, the name apart), checked: ``title`` and
    ``type`` are required, every attribute is one of ``PROPERTY_ATTRIBUTES`` with a value of its
    kind (400 otherwise)."""
    body = _body(body, f"definition of property {name}")
    _known(body, PROPERTY_ATTRIBUTES, "property definition")
    for key in ("title", "type"):
        if body.get(key) is None:
            raise Invalid(f"Property {name} has no '{key}'; a property definition needs a title and a type.")
    for key, value in body.items():
        if not _ATTRIBUTE_CHECKS[key](value):
            raise Invalid(f"The '{key}' of property {name} must be {PROPERTY_ATTRIBUTES[key]}.")
    for low, high in (("minimum", "maximum"), ("minLength", "maxLength"), ("minItems", "maxItems")):
        if low in body and high in body and body[low] > body[high]:
            raise Invalid(f"The '{low}' of property {name} is greater than its '{high}'.")
    return dict(body)


def _property_definitions(value: Any, what: str) -> dict[str, dict[str, Any]]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise Invalid(f"The properties of a {what} must be a JSON object of property definitions.")
    return {_name(key, "property name", 255): property_definition(definition, name=key)
            for key, definition in value.items()}


def _object_values(body: Any) -> dict[str, Any]:
    """An object's columns from its body (``name`` required; the others empty when absent)."""
    body = _body(body, "object")
    _known(body, OBJECT_FIELDS, "object")
    required = body.get("required") or []
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        raise Invalid("The required of an object must be an array of property names.")
    return {"name": _name(body.get("name"), "object name", 80),
            "description": _text(body, "description", "object"),
            "required": required, "properties": _property_definitions(body.get("properties"), "object")}


def _namespace_values(actor: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    """A namespace's own columns from a create or update body: Glance's defaults for what it does
    not name (no display name or description, ``private``, unprotected, the actor's project)."""
    visibility = body.get("visibility") or "private"
    if visibility not in VISIBILITIES:
        raise Invalid(f"Invalid visibility value: {visibility}; must be public or private.")
    protected = body.get("protected")
    if protected is not None and not isinstance(protected, bool):
        raise Invalid("The protected of a namespace must be a boolean.")
    owner = _text(body, "owner", "namespace", 255) or actor.project_id
    if not owner:
        raise Invalid("A namespace needs an owner.")
    return {"namespace": _name(body.get("namespace"), "namespace", 80),
            "display_name": _text(body, "display_name", "namespace", 80),
            "description": _text(body, "description", "namespace", 500),
            "visibility": visibility, "protected": bool(protected), "owner": owner}


def _association_values(body: Any) -> dict[str, Any]:
    body = _body(body, "resource type association")
    _known(body, ASSOCIATION_FIELDS, "resource type association")
    return {"name": _name(body.get("name"), "resource type name", 80),
            "prefix": _text(body, "prefix", "resource type association", 80),
            "properties_target": _text(body, "properties_target", "resource type association", 80)}


def _tag_name(body: Any) -> str:
    body = _body(body, "tag")
    _known(body, ("name",), "tag")
    return _name(body.get("name"), "tag name", 255)


def page_limit(value: int | None) -> int:
    """A namespace list's page size: Glance's default when none is named, at most its largest."""
    if value is None:
        return DEFAULT_LIMIT
    if value < 1:
        raise Invalid("limit param must be positive")
    return min(value, MAX_LIMIT)


def _sorted(qs: QuerySet[Any], sort_key: str, sort_dir: str, keys: tuple[str, ...]) -> QuerySet[Any]:
    if sort_key not in keys:
        raise Invalid(f"Invalid sort key: {sort_key}. It must be one of: {', '.join(keys)}.")
    if sort_dir not in ("asc", "desc"):
        raise Invalid(f"Invalid sort direction: {sort_dir}")
    prefix = "-" if sort_dir == "desc" else ""
    return qs.order_by(f"{prefix}{sort_key}", f"{prefix}id")


def _page(rows: list[Any], key: Callable[[Any], str], marker: str | None, limit: int,
          missing: NotFound) -> list[Any]:
    """The rows after the one ``key`` names ``marker`` (``missing`` when none is), ``limit`` of them."""
    if marker is not None:
        keys = [key(row) for row in rows]
        if marker not in keys:
            raise missing
        rows = rows[keys.index(marker) + 1:]
    return rows[:limit]


def _unique(write: Callable[[], Any], conflict: Conflict) -> Any:
    """``write()`` in a savepoint; a unique constraint it breaks (a writer at the same time took the
    name) is ``conflict``."""
    try:
        with transaction.atomic():
            return write()
    except IntegrityError:
        raise conflict from None


# --- namespaces -------------------------------------------------------------------------------


def metadef_namespace_list(*, actor: RequestContext, visibility: str | None = None,
                           resource_types: list[str] | None = None, limit: int | None = None,
                           marker: str | None = None, sort_key: str = "created_at",
                           sort_dir: str = "desc") -> list[MetadefNamespace]:
    """The namespaces ``actor`` may read (``get_metadef_namespace`` on each), of ``visibility`` and
    associated with any of ``resource_types`` when given, sorted, and a page of them after the one
    named ``marker`` (404 when it names none the actor reads). Policy ``get_metadef_namespaces``."""
    _authorize(actor, "get_metadef_namespaces")
    qs = MetadefNamespace.objects.all()
    if not actor.is_admin:
        qs = qs.filter(Q(visibility="public") | Q(owner=actor.project_id))
    if visibility is not None:
        if visibility not in VISIBILITIES:
            raise Invalid(f"Invalid visibility value: {visibility}; must be public or private.")
        qs = qs.filter(visibility=visibility)
    if resource_types:
        qs = qs.filter(resource_type_associations__resource_type__name__in=resource_types).distinct()
    rows = [ns for ns in _sorted(qs, sort_key, sort_dir, NAMESPACE_SORT_KEYS) if _readable(actor, ns)]
    return _page(rows, lambda ns: ns.namespace, marker, page_limit(limit), MetadefNamespaceNotFound(namespace=marker))


def metadef_namespace_create(*, actor: RequestContext, body: Any) -> MetadefNamespace:
    """Create a namespace, with the resource type associations, objects, property and tag
    definitions its body may hold (each needs its own ``add_*`` rule too), all or nothing.

    409 when the name (or, inside it, an object, property or tag name, or a resource type given
    twice) is taken; 400 for bad input (``_namespace_values``, ``property_definition``, ...)."""
    _authorize(actor, "add_metadef_namespace")
    body = _body(body, "namespace")
    _known(body, NAMESPACE_FIELDS | NAMESPACE_CONTENTS, "namespace")
    for key, rule in (("resource_type_associations", "add_metadef_resource_type_association"),
                      ("objects", "add_metadef_object"), ("properties", "add_metadef_property"),
                      ("tags", "add_metadef_tag")):
        if body.get(key):
            _authorize(actor, rule)
    values = _namespace_values(actor, body)
    associations = [_association_values(a) for a in _list(body, "resource_type_associations")]
    objects = [_object_values(o) for o in _list(body, "objects")]
    properties = _property_definitions(body.get("properties"), "namespace")
    tags = [_tag_name(t) for t in _list(body, "tags")]
    taken = Conflict(f"Metadata definition namespace {values['namespace']} already exists.")
    with transaction.atomic():
        if MetadefNamespace.objects.filter(namespace=values["namespace"]).exists():
            raise taken
        namespace: MetadefNamespace = _unique(lambda: MetadefNamespace.objects.create(**values), taken)
        for association in associations:
            _associate(namespace, association)
        for obj in objects:
            _object_add(namespace, obj)
        for name, definition in properties.items():
            _definition_add(namespace, MetadefProperty, name, definition=definition)
        _tags_add(namespace, tags)
    return namespace


def _list(body: dict[str, Any], key: str) -> list[Any]:
    value = body.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise Invalid(f"The {key} of a namespace must be an array.")
    return value


def metadef_namespace_update(*, actor: RequestContext, name: str, body: Any) -> MetadefNamespace:
    """Replace a namespace's own attributes (Glance's PUT: what the body leaves out takes its
    default, ``_namespace_values``); ``namespace`` renames it (409 when taken). Its contents are
    changed through their own calls: naming them here is a 400. Policy ``modify_metadef_namespace``."""
    namespace = _writable(actor, name, "modify_metadef_namespace")
    body = _body(body, "namespace")
    contents = sorted(NAMESPACE_CONTENTS & set(body))
    if contents:
        raise Invalid(f"The {contents[0]} of a namespace are not changed by updating it: use their own API.")
    _known(body, NAMESPACE_FIELDS, "namespace")
    values = _namespace_values(actor, body)
    taken = Conflict(f"Metadata definition namespace {values['namespace']} already exists.")
    if values["namespace"] != namespace.namespace and \
            MetadefNamespace.objects.filter(namespace=values["namespace"]).exists():
        raise taken
    for key, value in values.items():
        setattr(namespace, key, value)
    _unique(namespace.save, taken)
    return namespace


def metadef_namespace_delete(*, actor: RequestContext, name: str) -> None:
    """Delete a namespace and everything in it; 403 while it is protected."""
    namespace = _writable(actor, name, "delete_metadef_namespace")
    if namespace.protected:
        raise Forbidden(f"Namespace {namespace.namespace} is protected and cannot be deleted.")
    namespace.delete()


def metadef_namespace_contents_delete(*, actor: RequestContext, name: str, kind: str) -> None:
    """Delete every ``objects``, ``properties`` or ``tags`` definition of a namespace (Glance's
    ``DELETE .../objects`` ...); 403 while it is protected. Policy ``delete_metadef_namespace``
    (and ``delete_metadef_tags`` for tags)."""
    namespace = _writable(actor, name, "delete_metadef_namespace")
    if kind == "tags":
        _authorize(actor, "delete_metadef_tags", namespace)
    _unprotected(namespace, f"The {kind} of namespace {namespace.namespace}")
    if kind == "objects":
        namespace.object_definitions.all().delete()
    elif kind == "properties":
        namespace.property_definitions.all().delete()
    else:
        namespace.tag_definitions.all().delete()


# --- resource types ---------------------------------------------------------------------------


def metadef_resource_type_list(*, actor: RequestContext) -> list[MetadefResourceType]:
    """Every resource type (policy ``list_metadef_resource_types``)."""
    _authorize(actor, "list_metadef_resource_types")
    return list(MetadefResourceType.objects.order_by("created_at", "id"))


def metadef_association_list(*, actor: RequestContext, name: str) -> list[MetadefResourceTypeAssociation]:
    namespace = metadef_namespace_get(actor=actor, name=name, rule="get_metadef_resource_type")
    return list(namespace.resource_type_associations.select_related("resource_type").order_by("created_at", "id"))


def _associate(namespace: MetadefNamespace, values: dict[str, Any]) -> MetadefResourceTypeAssociation:
    resource_type, _ = MetadefResourceType.objects.get_or_create(name=values["name"])
    taken = Conflict(f"Namespace {namespace.namespace} is already associated with resource type {values['name']}.")
    if namespace.resource_type_associations.filter(resource_type=resource_type).exists():
        raise taken
    association: MetadefResourceTypeAssociation = _unique(
        lambda: MetadefResourceTypeAssociation.objects.create(
            namespace=namespace, resource_type=resource_type, prefix=values["prefix"],
            properties_target=values["properties_target"]), taken)
    return association


def metadef_association_create(*, actor: RequestContext, name: str, body: Any) -> MetadefResourceTypeAssociation:
    """Associate a namespace with the resource type ``body`` names (made when no type has that
    name, as Glance does); 409 when it already is. Policy ``add_metadef_resource_type_association``."""
    namespace = _writable(actor, name, "add_metadef_resource_type_association")
    values = _association_values(body)
    with transaction.atomic():
        return _associate(namespace, values)


def metadef_association_delete(*, actor: RequestContext, name: str, resource_type: str) -> None:
    """Dissociate a namespace from a resource type (404 when it is not associated; 403 while the
    namespace is protected). Policy ``remove_metadef_resource_type_association``."""
    namespace = _writable(actor, name, "remove_metadef_resource_type_association")
    association = namespace.resource_type_associations.filter(resource_type__name=resource_type).first()
    if association is None:
        raise MetadefItemNotFound(kind="resource type association", name=resource_type,
                                  namespace=namespace.namespace)
    _unprotected(namespace, f"The association with {resource_type}")
    association.delete()


def association_prefix(namespace: MetadefNamespace, resource_type: str | None) -> str:
    """The prefix the namespace's properties take on ``resource_type`` ('' without one)."""
    if not resource_type:
        return ""
    association = namespace.resource_type_associations.filter(resource_type__name=resource_type).first()
    return (association.prefix or "") if association is not None else ""


# --- the definitions a namespace holds: objects, properties and tags, each unique by name in it ---

_Definition = TypeVar("_Definition", MetadefObject, MetadefProperty, MetadefTag)
#: the word errors name each kind of definition by
_KINDS: dict[type[Any], str] = {MetadefObject: "object", MetadefProperty: "property", MetadefTag: "tag"}


def _definitions(namespace: MetadefNamespace, model: type[_Definition]) -> QuerySet[_Definition]:
    return model.objects.filter(namespace=namespace)


def _definition_page(namespace: MetadefNamespace, model: type[_Definition], *, limit: int | None,
                     marker: str | None, sort_key: str, sort_dir: str) -> list[_Definition]:
    rows = list(_sorted(_definitions(namespace, model), sort_key, sort_dir, ITEM_SORT_KEYS))
    missing = MetadefItemNotFound(kind=_KINDS[model], name=marker, namespace=namespace.namespace)
    return _page(rows, lambda row: row.name, marker, limit or MAX_LIMIT, missing)


def _definition_in(namespace: MetadefNamespace, model: type[_Definition], name: str) -> _Definition:
    row = _definitions(namespace, model).filter(name=name).first()
    if row is None:
        raise MetadefItemNotFound(kind=_KINDS[model], name=name, namespace=namespace.namespace)
    return row


def _taken(namespace: MetadefNamespace, model: type[Any], name: str) -> Conflict:
    return Conflict(f"A {_KINDS[model]} named {name} already exists in namespace {namespace.namespace}.")


def _definition_add(namespace: MetadefNamespace, model: type[_Definition], name: str,
                    **values: Any) -> _Definition:
    """A new definition named ``name`` (409 when its namespace has one of that kind)."""
    taken = _taken(namespace, model, name)
    if _definitions(namespace, model).filter(name=name).exists():
        raise taken
    row: _Definition = _unique(lambda: model.objects.create(namespace=namespace, name=name, **values), taken)
    return row


def _definition_save(namespace: MetadefNamespace, row: _Definition, name: str, **values: Any) -> _Definition:
    """``row`` named ``name`` (409 when another of its kind has that name) and given ``values``."""
    taken = _taken(namespace, type(row), name)
    if name != row.name and _definitions(namespace, type(row)).filter(name=name).exists():
        raise taken
    row.name = name
    for key, value in values.items():
        setattr(row, key, value)
    _unique(row.save, taken)
    return row


def _definition_delete(namespace: MetadefNamespace, model: type[_Definition], name: str) -> None:
    """Delete a definition (404 when there is none of that name; 403 while the namespace is protected)."""
    row = _definition_in(namespace, model, name)
    _unprotected(namespace, f"{_KINDS[model].capitalize()} {name}")
    row.delete()


# --- objects ----------------------------------------------------------------------------------


def metadef_object_list(*, actor: RequestContext, name: str, limit: int | None = None, marker: str | None = None,
                        sort_key: str = "created_at", sort_dir: str = "desc") -> list[MetadefObject]:
    namespace = metadef_namespace_get(actor=actor, name=name, rule="get_metadef_objects")
    return _definition_page(namespace, MetadefObject, limit=limit, marker=marker, sort_key=sort_key,
                            sort_dir=sort_dir)


def metadef_object_get(*, actor: RequestContext, name: str, object_name: str) -> MetadefObject:
    namespace = metadef_namespace_get(actor=actor, name=name, rule="get_metadef_object")
    return _definition_in(namespace, MetadefObject, object_name)


def _object_add(namespace: MetadefNamespace, values: dict[str, Any]) -> MetadefObject:
    values = dict(values)
    return _definition_add(namespace, MetadefObject, values.pop("name"), **values)


def metadef_object_create(*, actor: RequestContext, name: str, body: Any) -> MetadefObject:
    """An object in a namespace (``_object_values``); 409 when the name is taken. Policy
    ``add_metadef_object``."""
    namespace = _writable(actor, name, "add_metadef_object")
    return _object_add(namespace, _object_values(body))


def metadef_object_update(*, actor: RequestContext, name: str, object_name: str, body: Any) -> MetadefObject:
    """Replace an object (Glance's PUT: what the body leaves out is emptied); a new ``name`` renames
    it (409 when taken). Policy ``modify_metadef_object``."""
    namespace = _writable(actor, name, "modify_metadef_object")
    obj = _definition_in(namespace, MetadefObject, object_name)
    values = _object_values(body)
    return _definition_save(namespace, obj, values.pop("name"), **values)


def metadef_object_delete(*, actor: RequestContext, name: str, object_name: str) -> None:
    """Delete an object (403 while its namespace is protected). Policy ``delete_metadef_object``."""
    _definition_delete(_writable(actor, name, "delete_metadef_object"), MetadefObject, object_name)


# --- properties -------------------------------------------------------------------------------


def metadef_property_list(*, actor: RequestContext, name: str) -> list[MetadefProperty]:
    namespace = metadef_namespace_get(actor=actor, name=name, rule="get_metadef_properties")
    return list(_definitions(namespace, MetadefProperty).order_by("name"))


def metadef_property_get(*, actor: RequestContext, name: str, property_name: str,
                         resource_type: str | None = None) -> MetadefProperty:
    """A property definition. With ``resource_type``, ``property_name`` is the name that type
    gives it (the association's prefix first: a name without it is a 404)."""
    namespace = metadef_namespace_get(actor=actor, name=name, rule="get_metadef_property")
    prefix = association_prefix(namespace, resource_type)
    if prefix:
        if not property_name.startswith(prefix):
            raise MetadefItemNotFound(kind="property", name=property_name, namespace=name)
        property_name = property_name[len(prefix):]
    return _definition_in(namespace, MetadefProperty, property_name)


def _named_definition(body: Any, default_name: str | None = None) -> tuple[str, dict[str, Any]]:
    body = dict(_body(body, "property"))
    property_name = _name(body.pop("name", default_name), "property name", 255)
    return property_name, property_definition(body, name=property_name)


def metadef_property_create(*, actor: RequestContext, name: str, body: Any) -> MetadefProperty:
    """A property definition (``name`` and ``property_definition``'s attributes); 409 when the name
    is taken. Policy ``add_metadef_property``."""
    namespace = _writable(actor, name, "add_metadef_property")
    property_name, definition = _named_definition(body)
    return _definition_add(namespace, MetadefProperty, property_name, definition=definition)


def metadef_property_update(*, actor: RequestContext, name: str, property_name: str, body: Any) -> MetadefProperty:
    """Replace a property definition; a new ``name`` renames it (409 when taken; without one it
    keeps its name). Policy ``modify_metadef_property``."""
    namespace = _writable(actor, name, "modify_metadef_property")
    prop = _definition_in(namespace, MetadefProperty, property_name)
    new_name, definition = _named_definition(body, default_name=property_name)
    return _definition_save(namespace, prop, new_name, definition=definition)


def metadef_property_delete(*, actor: RequestContext, name: str, property_name: str) -> None:
    """Delete a property definition (403 while its namespace is protected). Policy
    ``remove_metadef_property``."""
    _definition_delete(_writable(actor, name, "remove_metadef_property"), MetadefProperty, property_name)


# --- tags -------------------------------------------------------------------------------------


def metadef_tag_list(*, actor: RequestContext, name: str, limit: int | None = None, marker: str | None = None,
                     sort_key: str = "created_at", sort_dir: str = "desc") -> list[MetadefTag]:
    namespace = metadef_namespace_get(actor=actor, name=name, rule="get_metadef_tags")
    return _definition_page(namespace, MetadefTag, limit=limit, marker=marker, sort_key=sort_key,
                            sort_dir=sort_dir)


def metadef_tag_get(*, actor: RequestContext, name: str, tag_name: str) -> MetadefTag:
    namespace = metadef_namespace_get(actor=actor, name=name, rule="get_metadef_tag")
    return _definition_in(namespace, MetadefTag, tag_name)


def _tags_add(namespace: MetadefNamespace, names: list[str]) -> list[MetadefTag]:
    """Tags named ``names``, all or none (409 for a name given twice or already there)."""
    seen: set[str] = set()
    for tag_name in names:
        if tag_name in seen:
            raise Conflict(f"Tag {tag_name} is given more than once.")
        seen.add(tag_name)
    with transaction.atomic():
        return [_definition_add(namespace, MetadefTag, tag_name) for tag_name in names]


def metadef_tag_create(*, actor: RequestContext, name: str, tag_name: str, body: Any = None) -> MetadefTag:
    """A tag definition named by the URL (a body, which needs none, may only repeat that name: 400
    otherwise); 409 when it exists. Policy ``add_metadef_tag``."""
    namespace = _writable(actor, name, "add_metadef_tag")
    if body not in (None, {}) and _tag_name(body) != tag_name:
        raise Invalid(f"The tag is named by its URL ({tag_name}); its body may not name another.")
    return _definition_add(namespace, MetadefTag, _name(tag_name, "tag name", 255))


def metadef_tags_create(*, actor: RequestContext, name: str, body: Any, append: bool = False) -> list[MetadefTag]:
    """Several tag definitions (``{"tags": [{"name": ...}, ...]}``), all or none: they replace the
    namespace's tags, or are added to them with ``append`` (Glance's ``X-Openstack-Append``; a name
    already there is then a 409, as is a name given twice). Policy ``add_metadef_tags``, and
    ``delete_metadef_tags`` when replacing."""
    namespace = _writable(actor, name, "add_metadef_tags")
    body = _body(body, "tags request")
    _known(body, ("tags",), "tags request")
    tags = body.get("tags")
    if not isinstance(tags, list):
        raise Invalid("The tags request must name its tags: {\"tags\": [{\"name\": ...}, ...]}.")
    names = [_tag_name(t) for t in tags]
    with transaction.atomic():
        if not append:
            _authorize(actor, "delete_metadef_tags", namespace)
            namespace.tag_definitions.all().delete()
        return _tags_add(namespace, names)


def metadef_tag_update(*, actor: RequestContext, name: str, tag_name: str, body: Any) -> MetadefTag:
    """Rename a tag definition (409 when the new name is taken). Policy ``modify_metadef_tag``."""
    namespace = _writable(actor, name, "modify_metadef_tag")
    tag = _definition_in(namespace, MetadefTag, tag_name)
    return _definition_save(namespace, tag, _tag_name(body))


def metadef_tag_delete(*, actor: RequestContext, name: str, tag_name: str) -> None:
    """Delete a tag definition (403 while its namespace is protected). Policy ``delete_metadef_tag``."""
    _definition_delete(_writable(actor, name, "delete_metadef_tag"), MetadefTag, tag_name)
