"""The ``/placement`` API subset (Placement 1.0-1.39 microversions, ``OpenStack-API-Version:
placement X.Y``), admin only, with Placement's error body
``{"errors": [{"status", "title", "detail", "code", "request_id"}]}``.

Thin views over ``scheduling.placement.services``: parse and validate, call one service,
present per microversion.
"""
from __future__ import annotations

from typing import Any

import jsonschema
from rest_framework.request import Request
from rest_framework.response import Response

from cloudcore.core.api import microversion
from cloudcore.core.api.views import OpenStackAPIView, PublicMixin
from cloudcore.core.exceptions import Forbidden
from cloudcore.core.policy import can

from ..models import ResourceProvider
from ..placement import services as placement
from ..placement.exceptions import UNDEFINED, PlacementInvalid, PlacementNotFound

TITLES = {400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed",
          406: "Not Acceptable", 409: "Conflict", 415: "Unsupported Media Type", 500: "Internal Server Error"}
MAX_INT = placement.MAX_INT


class PlacementPolicyNotAuthorized(Forbidden):
    message = "Policy does not allow %(action)s to be performed."


def _int_schema(minimum: int) -> dict[str, Any]:
    return {"type": "integer", "minimum": minimum, "maximum": MAX_INT}


INVENTORY_FIELDS: dict[str, Any] = {
    "total": _int_schema(1), "reserved": _int_schema(0), "min_unit": _int_schema(1),
    "max_unit": _int_schema(1), "step_size": _int_schema(1),
    "allocation_ratio": {"type": "number", "minimum": 0, "exclusiveMinimum": 0, "maximum": 3.40282e38},
}
INVENTORY = {"type": "object", "properties": INVENTORY_FIELDS, "required": ["total"], "additionalProperties": False}
GENERATION = {"type": "integer"}


def _validate(body: Any, schema: dict[str, Any]) -> Any:
    try:
        jsonschema.validate(body, schema)
    except jsonschema.ValidationError as exc:
        raise PlacementInvalid(f"JSON does not validate: {exc.message}") from None
    return body


class PlacementView(OpenStackAPIView):
    """Base of every placement view: placement microversions, admin-only policy, error body."""

    version_range = microversion.PLACEMENT
    rule: str | dict[str, str] = ""
    min_version = "1.0"
    _exc: Exception | None = None

    def handle_exception(self, exc: Exception) -> Response:
        self._exc = exc
        return super().handle_exception(exc)

    def error_body(self, code: int, message: str) -> dict[str, Any]:
        error_code = getattr(self._exc, "placement_code", UNDEFINED)
        request_id = getattr(getattr(self.request, "_request", None), "request_id", None)
        return {"errors": [{"status": code, "title": TITLES.get(code, "Error"), "detail": message,
                            "code": error_code, "request_id": request_id}]}

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        if not self.at(self.min_version):
            raise PlacementNotFound("The resource could not be found.")
        rule = self.rule.get(request.method or "GET", "") if isinstance(self.rule, dict) else self.rule
        if rule and not can(self.ctx, rule, {"project_id": self.ctx.project_id, "user_id": self.ctx.user_id}):
            raise PlacementPolicyNotAuthorized(action=rule)

    # -- helpers ------------------------------------------------------------------------------
    def at(self, version: str) -> bool:
        return microversion.at_least(self.version, version)

    def require(self, version: str) -> None:
        if not self.at(version):
            raise PlacementNotFound("The resource could not be found.")

    def json_body(self) -> Any:
        body = self.body()
        if body is None:
            raise PlacementInvalid("Malformed JSON: the request has no body.")
        return body

    def query(self, allowed: set[str]) -> dict[str, list[str]]:
        params = {k: self.request.query_params.getlist(k) for k in self.request.query_params}
        unknown = sorted(set(params) - allowed)
        if unknown:
            raise PlacementInvalid(
                f"Invalid query string parameters: Additional properties are not allowed ({', '.join(unknown)})"
            )
        return params

    def root(self) -> str:
        return "/placement"

    def location(self, path: str) -> dict[str, str]:
        """A ``Location`` header: absolute, as Placement's WSGI stack sends it (clients GET it)."""
        return {"Location": self.request.build_absolute_uri(f"{self.root()}{path}")}

    def provider_body(self, rp: ResourceProvider) -> dict[str, Any]:
        base = f"{self.root()}/resource_providers/{rp.uuid}"
        links = [{"rel": "self", "href": base}, {"rel": "inventories", "href": f"{base}/inventories"},
                 {"rel": "usages", "href": f"{base}/usages"}]
        if self.at("1.1"):
            links.append({"rel": "aggregates", "href": f"{base}/aggregates"})
        if self.at("1.6"):
            links.append({"rel": "traits", "href": f"{base}/traits"})
        if self.at("1.11"):
            links.append({"rel": "allocations", "href": f"{base}/allocations"})
        body: dict[str, Any] = {"uuid": rp.uuid, "name": rp.name, "generation": rp.generation, "links": links}
        if self.at("1.14"):
            body["parent_provider_uuid"] = rp.parent.uuid if rp.parent_id else None
            body["root_provider_uuid"] = rp.root.uuid if rp.root_id else rp.uuid
        return body


def _provider(uuid: str) -> ResourceProvider:
    rp = ResourceProvider.objects.select_related("parent", "root").filter(uuid=uuid).first()
    if rp is None:
        raise placement.ResourceProviderNotFound(uuid=uuid)
    return rp


# --- parsing of query values -------------------------------------------------------------------------
def parse_resources(value: str) -> dict[str, int]:
    resources: dict[str, int] = {}
    try:
        for item in filter(None, value.split(",")):
            rc, _, amount = item.partition(":")
            resources[rc.strip()] = int(amount)
            if resources[rc.strip()] < 0 or not rc.strip():
                raise ValueError(item)
    except ValueError:
        raise PlacementInvalid(
            "Badly formed resources parameter. Expected resources query string parameter in form: "
            f"?resources=VCPU:2,MEMORY_MB:1024. Got: {value}."
        ) from None
    if not resources:
        raise PlacementInvalid("Badly formed resources parameter. Expected resources query string parameter in "
                               "form: ?resources=VCPU:2,MEMORY_MB:1024. Got: empty string.")
    return resources


def parse_member_of(values: list[str], allow_many: bool, allow_forbidden: bool) -> tuple[list[list[str]], list[str]]:
    """``member_of`` values -> (any-of groups, forbidden aggregates). ``in:a,b`` is any of
    (1.3), repeated parameters AND together (1.24), ``!a`` / ``!in:a,b`` forbid (1.32)."""
    if len(values) > 1 and not allow_many:
        raise PlacementInvalid("Multiple member_of parameters are not supported")
    groups: list[list[str]] = []
    forbidden: list[str] = []
    for value in values:
        negative = value.startswith("!")
        if negative and not allow_forbidden:
            raise PlacementInvalid(f"Invalid query string parameters: Expected 'member_of' parameter to contain "
                                   f"valid UUID(s). Got: {value}")
        raw = value[1:] if negative else value
        uuids = raw[3:].split(",") if raw.startswith("in:") else [raw]
        if not all(uuids):
            raise PlacementInvalid(f"Invalid query string parameters: Expected 'member_of' parameter to contain "
                                   f"valid UUID(s). Got: {value}")
        if negative:
            forbidden += uuids
        else:
            groups.append(uuids)
    return groups, forbidden


def parse_required(values: list[str], allow_forbidden: bool,
                   allow_any: bool = False) -> tuple[list[str], list[str], list[list[str]]]:
    """``required`` values -> (required, forbidden, any-of groups): ``A,!B`` (``!`` from 1.22),
    ``in:A,B`` any of (1.39)."""
    required: list[str] = []
    forbidden: list[str] = []
    any_of: list[list[str]] = []
    for value in values:
        if value.startswith("in:"):
            if not allow_any:
                raise PlacementInvalid(f"Invalid query string parameters: No such trait(s): {value}")
            any_of.append([n for n in value[3:].split(",") if n])
            continue
        for name in filter(None, value.split(",")):
            if name.startswith("!"):
                if not allow_forbidden:
                    raise PlacementInvalid(f"Invalid query string parameters: No such trait(s): {name}")
                forbidden.append(name[1:])
            else:
                required.append(name)
    if not required and not forbidden and not any_of and values:
        raise PlacementInvalid("Invalid query string parameters: Expected 'required' parameter value of the form: "
                               "HW_CPU_X86_VMX,CUSTOM_MAGIC.")
    return required, forbidden, any_of


# --- root ---------------------------------------------------------------------------------------------
class RootView(PublicMixin, PlacementView):
    def get(self, request: Request) -> Response:
        rng = microversion.PLACEMENT
        return Response({"versions": [{
            "id": "v1.0", "max_version": microversion.fmt(rng.maximum), "min_version": microversion.fmt(rng.minimum),
            "status": "CURRENT", "links": [{"rel": "self", "href": ""}],
        }]})


class NotFoundView(PlacementView):
    """Any other path under /placement: Placement's 404 body."""

    def _missing(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        raise PlacementNotFound("The resource could not be found.")

    get = post = put = delete = patch = _missing


# --- resource providers -------------------------------------------------------------------------------
class ResourceProvidersView(PlacementView):
    rule = {"GET": "placement:resource_providers:list", "POST": "placement:resource_providers:create"}

    def get(self, request: Request) -> Response:
        allowed = {"name", "uuid"}
        for version, names in (("1.3", {"member_of"}), ("1.4", {"resources"}), ("1.14", {"in_tree"}),
                               ("1.18", {"required"})):
            if self.at(version):
                allowed |= names
        params = self.query(allowed)
        first = {k: v[-1] for k, v in params.items()}
        required, forbidden, any_of = parse_required(params.get("required", []), self.at("1.22"), self.at("1.39"))
        member_of, not_member_of = parse_member_of(params.get("member_of", []), self.at("1.24"), self.at("1.32"))
        providers = placement.provider_list(
            name=first.get("name"), uuid=first.get("uuid"), member_of=member_of,
            resources=parse_resources(first["resources"]) if "resources" in first else None,
            required_traits=required, forbidden_traits=forbidden, in_tree=first.get("in_tree"),
            required_any=any_of, forbidden_aggregates=not_member_of,
        )
        return Response({"resource_providers": [self.provider_body(rp) for rp in providers]})

    def post(self, request: Request) -> Response:
        props: dict[str, Any] = {"name": {"type": "string", "minLength": 1, "maxLength": 200},
                                 "uuid": {"type": "string", "minLength": 1, "maxLength": 36}}
        if self.at("1.14"):
            props["parent_provider_uuid"] = {"type": ["string", "null"]}
        body = _validate(self.json_body(), {"type": "object", "properties": props, "required": ["name"],
                                            "additionalProperties": False})
        rp = placement.provider_create(name=body["name"], uuid=body.get("uuid"),
                                       parent_uuid=body.get("parent_provider_uuid"))
        rp = _provider(rp.uuid)
        location = self.location(f"/resource_providers/{rp.uuid}")
        if self.at("1.20"):
            return Response(self.provider_body(rp), status=200, headers=location)
        return Response(status=201, headers=location)


class ResourceProviderView(PlacementView):
    rule = {"GET": "placement:resource_providers:show", "PUT": "placement:resource_providers:update",
            "DELETE": "placement:resource_providers:delete"}

    def get(self, request: Request, uuid: str) -> Response:
        return Response(self.provider_body(_provider(uuid)))

    def put(self, request: Request, uuid: str) -> Response:
        props: dict[str, Any] = {"name": {"type": "string", "minLength": 1, "maxLength": 200}}
        if self.at("1.14"):
            props["parent_provider_uuid"] = {"type": ["string", "null"]}
        body = _validate(self.json_body(), {"type": "object", "properties": props, "required": ["name"],
                                            "additionalProperties": False})
        rp = _provider(uuid)
        parent = body.get("parent_provider_uuid")
        if "parent_provider_uuid" in body and parent is None and rp.parent_id and not self.at("1.37"):
            raise PlacementInvalid("Un-parenting a provider is not currently allowed.")
        if parent and rp.parent_id and rp.parent.uuid != parent and not self.at("1.37"):
            raise PlacementInvalid("Re-parenting a provider is not currently allowed.")
        placement.provider_update(rp=rp, name=body["name"], parent_uuid=parent)
        return Response(self.provider_body(_provider(uuid)))

    def delete(self, request: Request, uuid: str) -> Response:
        placement.provider_delete(rp=uuid)
        return Response(status=204)


# --- inventories --------------------------------------------------------------------------------------
class InventoriesView(PlacementView):
    rule = {"GET": "placement:resource_providers:inventories:list",
            "POST": "placement:resource_providers:inventories:create",
            "PUT": "placement:resource_providers:inventories:update",
            "DELETE": "placement:resource_providers:inventories:delete"}

    def _answer(self, uuid: str, status: int = 200) -> Response:
        rp = _provider(uuid)
        return Response({"resource_provider_generation": rp.generation,
                         "inventories": placement.inventories_get(rp=rp)}, status=status)

    def get(self, request: Request, uuid: str) -> Response:
        return self._answer(uuid)

    def put(self, request: Request, uuid: str) -> Response:
        body = _validate(self.json_body(), {
            "type": "object", "required": ["resource_provider_generation", "inventories"],
            "additionalProperties": False,
            "properties": {"resource_provider_generation": GENERATION,
                           "inventories": {"type": "object", "additionalProperties": INVENTORY}},
        })
        placement.inventories_set(rp=uuid, inventories=body["inventories"],
                                  generation=body["resource_provider_generation"])
        return self._answer(uuid)

    def post(self, request: Request, uuid: str) -> Response:
        body = _validate(self.json_body(), {
            "type": "object", "required": ["resource_class", "total"], "additionalProperties": False,
            "properties": {"resource_class": {"type": "string"}, **INVENTORY_FIELDS},
        })
        rc = body.pop("resource_class")
        rp = placement.inventory_set_one(rp=uuid, resource_class=rc, data=body, create_only=True)
        inventory = placement.inventories_get(rp=rp)[rc]
        return Response({**inventory, "resource_provider_generation": rp.generation}, status=201,
                        headers=self.location(f"/resource_providers/{uuid}/inventories/{rc}"))

    def delete(self, request: Request, uuid: str) -> Response:
        self.require("1.5")
        placement.inventories_set(rp=uuid, inventories={})
        return Response(status=204)


class InventoryView(PlacementView):
    rule = {"GET": "placement:resource_providers:inventories:show",
            "PUT": "placement:resource_providers:inventories:update",
            "DELETE": "placement:resource_providers:inventories:delete"}

    def _answer(self, uuid: str, rc: str) -> Response:
        rp = _provider(uuid)
        inventory = placement.inventories_get(rp=rp).get(rc)
        if inventory is None:
            raise placement.InventoryNotFound(resource_class=rc, uuid=uuid)
        return Response({**inventory, "resource_provider_generation": rp.generation})

    def get(self, request: Request, uuid: str, rc: str) -> Response:
        return self._answer(uuid, rc)

    def put(self, request: Request, uuid: str, rc: str) -> Response:
        body = _validate(self.json_body(), {
            "type": "object", "required": ["resource_provider_generation", "total"], "additionalProperties": False,
            "properties": {"resource_provider_generation": GENERATION, **INVENTORY_FIELDS},
        })
        generation = body.pop("resource_provider_generation")
        current = placement.inventories_get(rp=uuid)
        current[rc] = body
        placement.inventories_set(rp=uuid, inventories=current, generation=generation)
        return self._answer(uuid, rc)

    def delete(self, request: Request, uuid: str, rc: str) -> Response:
        placement.inventory_delete(rp=uuid, resource_class=rc)
        return Response(status=204)


# --- provider traits / aggregates / usages / allocations ----------------------------------------------
class ProviderTraitsView(PlacementView):
    min_version = "1.6"
    rule = {"GET": "placement:resource_providers:traits:list", "PUT": "placement:resource_providers:traits:update",
            "DELETE": "placement:resource_providers:traits:delete"}

    def _answer(self, uuid: str) -> Response:
        rp = _provider(uuid)
        return Response({"traits": placement.traits_get(rp=rp), "resource_provider_generation": rp.generation})

    def get(self, request: Request, uuid: str) -> Response:
        return self._answer(uuid)

    def put(self, request: Request, uuid: str) -> Response:
        body = _validate(self.json_body(), {
            "type": "object", "required": ["traits", "resource_provider_generation"], "additionalProperties": False,
            "properties": {"traits": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
                           "resource_provider_generation": GENERATION},
        })
        placement.traits_set(rp=uuid, traits=body["traits"], generation=body["resource_provider_generation"])
        return self._answer(uuid)

    def delete(self, request: Request, uuid: str) -> Response:
        placement.traits_set(rp=uuid, traits=[])
        return Response(status=204)


class ProviderAggregatesView(PlacementView):
    min_version = "1.1"
    rule = {"GET": "placement:resource_providers:aggregates:list",
            "PUT": "placement:resource_providers:aggregates:update"}

    def _answer(self, uuid: str) -> Response:
        rp = _provider(uuid)
        body: dict[str, Any] = {"aggregates": placement.aggregates_get(rp=rp)}
        if self.at("1.19"):
            body["resource_provider_generation"] = rp.generation
        return Response(body)

    def get(self, request: Request, uuid: str) -> Response:
        return self._answer(uuid)

    def put(self, request: Request, uuid: str) -> Response:
        items = {"type": "array", "items": {"type": "string"}, "uniqueItems": True}
        generation = None
        if self.at("1.19"):
            body = _validate(self.json_body(), {
                "type": "object", "required": ["aggregates", "resource_provider_generation"],
                "additionalProperties": False,
                "properties": {"aggregates": items, "resource_provider_generation": GENERATION},
            })
            aggregates, generation = body["aggregates"], body["resource_provider_generation"]
        else:
            aggregates = _validate(self.json_body(), items)
        placement.aggregates_set(rp=uuid, aggregates=aggregates, generation=generation)
        return self._answer(uuid)


class ProviderUsagesView(PlacementView):
    rule = "placement:resource_providers:usages"

    def get(self, request: Request, uuid: str) -> Response:
        rp = _provider(uuid)
        return Response({"resource_provider_generation": rp.generation, "usages": placement.provider_usages(rp=rp)})


class ProviderAllocationsView(PlacementView):
    rule = "placement:resource_providers:allocations:list"

    def get(self, request: Request, uuid: str) -> Response:
        rp = _provider(uuid)
        return Response({
            "resource_provider_generation": rp.generation,
            "allocations": {c: {"resources": res} for c, res in placement.provider_allocations(rp=rp).items()},
        })


# --- traits and resource classes ----------------------------------------------------------------------
class TraitsView(PlacementView):
    min_version = "1.6"
    rule = "placement:traits:list"

    def get(self, request: Request) -> Response:
        params = self.query({"name", "associated"})
        names, startswith = None, None
        if "name" in params:
            value = params["name"][-1]
            if value.startswith("in:"):
                names = value[3:].split(",")
            elif value.startswith("startswith:"):
                startswith = value[len("startswith:"):]
            else:
                raise PlacementInvalid(f"Badly formatted name parameter. Expected name query string parameter in "
                                       f"form: ?name=[in|startswith]:[name1,name2|prefix]. Got: \"{value}\"")
        associated = None
        if "associated" in params:
            raw = params["associated"][-1].lower()
            if raw not in ("true", "false"):
                raise PlacementInvalid("Invalid query string parameters: 'associated' must be true or false")
            associated = raw == "true"
        return Response({"traits": placement.trait_list(names=names, startswith=startswith, associated=associated)})


class TraitView(PlacementView):
    min_version = "1.6"
    rule = {"GET": "placement:traits:show", "PUT": "placement:traits:update", "DELETE": "placement:traits:delete"}

    def get(self, request: Request, name: str) -> Response:
        if not placement.trait_exists(name=name):
            raise PlacementNotFound(f"No such trait(s): {name}")
        return Response(status=204)

    def put(self, request: Request, name: str) -> Response:
        created = placement.trait_create(name=name)
        return Response(status=201 if created else 204, headers=self.location(f"/traits/{name}"))

    def delete(self, request: Request, name: str) -> Response:
        placement.trait_delete(name=name)
        return Response(status=204)


class ResourceClassesView(PlacementView):
    min_version = "1.2"
    rule = "placement:resource_classes:list"

    def get(self, request: Request) -> Response:
        return Response({"resource_classes": [
            {"name": name, "links": [{"rel": "self", "href": f"{self.root()}/resource_classes/{name}"}]}
            for name in placement.resource_class_list()
        ]})


class ResourceClassView(PlacementView):
    min_version = "1.7"
    rule = "placement:resource_classes:update"

    def put(self, request: Request, name: str) -> Response:
        created = placement.resource_class_create(name=name)
        return Response(status=201 if created else 204,
                        headers=self.location(f"/resource_classes/{name}"))


# --- allocations ----------------------------------------------------------------------------------------
class AllocationsView(PlacementView):
    rule = {"GET": "placement:allocations:list", "PUT": "placement:allocations:update",
            "DELETE": "placement:allocations:delete"}

    def get(self, request: Request, consumer_uuid: str) -> Response:
        found = placement.allocations_get(consumer_uuid=consumer_uuid)
        body: dict[str, Any] = {"allocations": {
            rp: {"generation": found.generations[rp], "resources": res} for rp, res in found.allocations.items()
        }}
        if self.at("1.12") and found.allocations:
            body["project_id"], body["user_id"] = found.project_id, found.user_id
        if self.at("1.28") and found.allocations:
            body["consumer_generation"] = found.consumer_generation
        if self.at("1.38") and found.allocations:
            body["consumer_type"] = found.consumer_type
        return Response(body)

    def _schema(self) -> dict[str, Any]:
        resources = {"type": "object", "minProperties": 1,
                     "additionalProperties": {"type": "integer", "minimum": 1, "maximum": MAX_INT}}
        props: dict[str, Any] = {}
        required = ["allocations"]
        if self.at("1.12"):
            props["allocations"] = {"type": "object", "additionalProperties": {
                "type": "object", "required": ["resources"], "properties": {
                    "resources": resources, "generation": {}}, "additionalProperties": False}}
        else:
            props["allocations"] = {"type": "array", "minItems": 1, "items": {
                "type": "object", "required": ["resource_provider", "resources"], "additionalProperties": False,
                "properties": {"resource_provider": {"type": "object", "required": ["uuid"],
                                                     "properties": {"uuid": {"type": "string"}},
                                                     "additionalProperties": False},
                               "resources": resources}}}
        if self.at("1.8"):
            props["project_id"] = {"type": "string", "minLength": 1, "maxLength": 255}
            props["user_id"] = {"type": "string", "minLength": 1, "maxLength": 255}
            required += ["project_id", "user_id"]
        if self.at("1.28"):
            props["consumer_generation"] = {"type": ["integer", "null"]}
            required.append("consumer_generation")
        if self.at("1.38"):
            props["consumer_type"] = {"type": "string", "pattern": "^[A-Z0-9_]+$", "maxLength": 255}
            required.append("consumer_type")
        return {"type": "object", "properties": props, "required": required, "additionalProperties": False}

    def put(self, request: Request, consumer_uuid: str) -> Response:
        body = _validate(self.json_body(), self._schema())
        if self.at("1.12"):
            allocations = {rp: dict(entry["resources"]) for rp, entry in body["allocations"].items()}
        else:
            allocations = {entry["resource_provider"]["uuid"]: dict(entry["resources"])
                           for entry in body["allocations"]}
        placement.allocations_put(
            consumer_uuid=consumer_uuid, allocations=allocations,
            project_id=body.get("project_id") or self.ctx.project_id or "",
            user_id=body.get("user_id") or self.ctx.user_id or "",
            consumer_generation=body.get("consumer_generation"), enforce_consumer_generation=self.at("1.28"),
            consumer_type=body.get("consumer_type", "INSTANCE"),
        )
        return Response(status=204)

    def delete(self, request: Request, consumer_uuid: str) -> Response:
        placement.allocations_delete(consumer_uuid=consumer_uuid, missing_ok=False)
        return Response(status=204)


class AllocationsBatchView(PlacementView):
    """``POST /allocations`` (1.13): several consumers' allocations at once, atomically."""

    min_version = "1.13"
    rule = "placement:allocations:manage"

    def post(self, request: Request) -> Response:
        entry_props: dict[str, Any] = {
            "allocations": {"type": "object", "additionalProperties": {
                "type": "object", "required": ["resources"], "additionalProperties": False,
                "properties": {"resources": {"type": "object", "minProperties": 1, "additionalProperties": {
                    "type": "integer", "minimum": 1, "maximum": MAX_INT}}, "generation": {}}}},
            "project_id": {"type": "string", "minLength": 1, "maxLength": 255},
            "user_id": {"type": "string", "minLength": 1, "maxLength": 255},
        }
        required = ["allocations", "project_id", "user_id"]
        if self.at("1.28"):
            entry_props["consumer_generation"] = {"type": ["integer", "null"]}
            required.append("consumer_generation")
        if self.at("1.38"):
            entry_props["consumer_type"] = {"type": "string", "pattern": "^[A-Z0-9_]+$", "maxLength": 255}
            required.append("consumer_type")
        body = _validate(self.json_body(), {
            "type": "object", "minProperties": 1, "additionalProperties": {
                "type": "object", "properties": entry_props, "required": required, "additionalProperties": False}})
        consumers = {
            consumer: {**entry, "allocations": {rp: dict(a["resources"]) for rp, a in entry["allocations"].items()}}
            for consumer, entry in body.items()
        }
        placement.allocations_set_many(consumers=consumers, enforce_consumer_generation=self.at("1.28"))
        return Response(status=204)


class AllocationCandidatesView(PlacementView):
    min_version = "1.10"
    rule = "placement:allocation_candidates:list"

    def get(self, request: Request) -> Response:
        allowed = {"resources"}
        for version, names in (("1.16", {"limit"}), ("1.17", {"required"}), ("1.21", {"member_of"}),
                               ("1.31", {"in_tree"})):
            if self.at(version):
                allowed |= names
        params = self.query(allowed)
        if "resources" not in params:
            raise PlacementInvalid("Invalid query string parameters: 'resources' is a required property")
        limit = None
        if "limit" in params:
            try:
                limit = int(params["limit"][-1])
                if limit < 1:
                    raise ValueError
            except ValueError:
                raise PlacementInvalid("Invalid query string parameters: 'limit' must be a positive integer") \
                    from None
        required, forbidden, any_of = parse_required(params.get("required", []), self.at("1.22"), self.at("1.39"))
        member_of, not_member_of = parse_member_of(params.get("member_of", []), self.at("1.24"), self.at("1.32"))
        found = placement.allocation_candidates(
            resources=parse_resources(params["resources"][-1]), required_traits=required,
            forbidden_traits=forbidden, limit=limit, in_tree=params.get("in_tree", [None])[-1],
            member_of=member_of, required_any=any_of, forbidden_aggregates=not_member_of,
        )
        return Response({
            "allocation_requests": [self._request(r) for r in found.allocation_requests],
            "provider_summaries": {rp: self._summary(s) for rp, s in found.provider_summaries.items()},
        })

    def _request(self, request: dict[str, Any]) -> dict[str, Any]:
        if not self.at("1.12"):
            return {"allocations": [{"resource_provider": {"uuid": rp}, "resources": entry["resources"]}
                                    for rp, entry in request["allocations"].items()]}
        body: dict[str, Any] = {"allocations": request["allocations"]}
        if self.at("1.34"):
            body["mappings"] = {"": sorted(request["allocations"])}
        return body

    def _summary(self, summary: dict[str, Any]) -> dict[str, Any]:
        body: dict[str, Any] = {"resources": summary["resources"]}
        if self.at("1.17"):
            body["traits"] = summary["traits"]
        if self.at("1.29"):
            body["parent_provider_uuid"] = summary["parent_provider_uuid"]
            body["root_provider_uuid"] = summary["root_provider_uuid"]
        return body


class UsagesView(PlacementView):
    min_version = "1.9"
    rule = "placement:usages"

    def get(self, request: Request) -> Response:
        params = self.query({"project_id", "user_id", *({"consumer_type"} if self.at("1.38") else set())})
        if "project_id" not in params:
            raise PlacementInvalid("Invalid query string parameters: 'project_id' is a required property")
        project_id, user_id = params["project_id"][-1], params.get("user_id", [None])[-1]
        if self.at("1.38"):
            return Response({"usages": placement.project_usages_by_type(project_id=project_id, user_id=user_id)})
        return Response({"usages": placement.project_usages(project_id=project_id, user_id=user_id)})

