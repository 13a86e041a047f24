"""Flavors API (``/flavors``, ``os-flavor-manage``, ``os-extra_specs``, ``os-flavor-access``).

Response shapes per microversion live in ``servers.presenter.FLAVOR_FIELDS``: 2.55 adds
``description`` (and ``PUT /flavors/{id}``), 2.61 ``extra_specs`` in flavor bodies (policy
permitting), 2.75 turns a zero ``swap`` from ``""`` into ``0`` and rejects unknown query parameters,
2.102 adds the list's ``name`` filter and drops ``rxtx_factor`` and ``OS-FLV-DISABLED:disabled``.
"""
from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from cloudcore.core.api.microversion import Version
from cloudcore.core.api.validation import BOOLEAN, VersionedSchema, as_bool, query_int, reject_unknown_params, validate
from cloudcore.core.api.versioned import present
from cloudcore.core.api.views import ComputeAPIView
from cloudcore.core.exceptions import Invalid, NotFound
from cloudcore.core.policy import authorize, can

from ..models import Flavor
from ..presenter import FLAVOR_BRIEF_FIELDS, FLAVOR_FIELDS, ShownFlavor, base_url
from ..services import flavors as svc
from .schemas import FLAVOR_FEATURES


def present_flavor(flavor: Flavor, version: Version, *, extra_specs: bool) -> dict[str, Any]:
    return present(FLAVOR_FIELDS, ShownFlavor(flavor, extra_specs), version)


def present_flavor_brief(flavor: Flavor, version: Version) -> dict[str, Any]:
    return present(FLAVOR_BRIEF_FIELDS, ShownFlavor(flavor), version)


# --- request schemas ------------------------------------------------------------------------------

_INT_POS = {"type": ["integer", "string"], "pattern": "^[0-9]*$", "minimum": 1, "maximum": 2147483647}
_INT_NON_NEG = {"type": ["integer", "string"], "pattern": "^[0-9]*$", "minimum": 0, "maximum": 2147483647}
_FLAVOR_PROPS: dict[str, Any] = {
    "name": {"type": "string", "minLength": 1, "maxLength": 255, "pattern": r"^(?!\s)[\S ]*(?<!\s)$"},
    # a number is taken too (clients send integer ids) and kept as its decimal string
    "id": {"type": ["string", "number", "null"], "minLength": 1, "maxLength": 255,
           "pattern": r"^(?! )[a-zA-Z0-9. _-]+(?<! )$"},
    "ram": _INT_POS,
    "vcpus": _INT_POS,
    "disk": _INT_NON_NEG,
    "OS-FLV-EXT-DATA:ephemeral": _INT_NON_NEG,
    "swap": _INT_NON_NEG,
    "rxtx_factor": {"type": ["number", "string"], "pattern": r"^[0-9]+(\.[0-9]+)?$", "exclusiveMinimum": 0,
                    "maximum": 3.40282e38},
    "os-flavor-access:is_public": BOOLEAN,
}
_DESCRIPTION = {"type": ["string", "null"], "minLength": 0, "maxLength": 65535,
                "pattern": r"^[^\x00-\x08\x0b\x0c\x0e-\x1f\x7f]*$"}


def _create_schema(props: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"flavor": {"type": "object", "properties": props, "required": ["name", "ram", "vcpus", "disk"],
                                  "additionalProperties": False}},
        "required": ["flavor"],
        "additionalProperties": False,
    }


_NO_RXTX = {k: v for k, v in _FLAVOR_PROPS.items() if k != "rxtx_factor"}
FLAVOR_CREATE = VersionedSchema(
    ("2.1", "2.54", _create_schema(_FLAVOR_PROPS)),
    ("2.55", "2.101", _create_schema({**_FLAVOR_PROPS, "description": _DESCRIPTION})),
    ("2.102", None, _create_schema({**_NO_RXTX, "description": _DESCRIPTION})),
)
FLAVOR_UPDATE = {
    "type": "object",
    "properties": {"flavor": {"type": "object", "properties": {"description": _DESCRIPTION},
                              "required": ["description"], "additionalProperties": False}},
    "required": ["flavor"],
    "additionalProperties": False,
}
_SPEC_VALUE = {"type": ["string", "number", "boolean"], "minLength": 0, "maxLength": 255}
_SPEC_KEYS = {"type": "object", "patternProperties": {r"^[a-zA-Z0-9-_:. ]{1,255}$": _SPEC_VALUE},
              "additionalProperties": False}
EXTRA_SPECS_CREATE = {"type": "object", "properties": {"extra_specs": _SPEC_KEYS}, "required": ["extra_specs"],
                      "additionalProperties": False}
EXTRA_SPEC_UPDATE = {**_SPEC_KEYS, "minProperties": 1, "maxProperties": 1}
_TENANT = {"type": "object", "properties": {"tenant": {"type": "string", "minLength": 1, "maxLength": 255}},
           "required": ["tenant"], "additionalProperties": False}
FLAVOR_ACTION = {
    "type": "object",
    "properties": {"addTenantAccess": _TENANT, "removeTenantAccess": _TENANT},
    "minProperties": 1, "maxProperties": 1, "additionalProperties": False,
}

LIST_PARAMS = ("is_public", "minRam", "minDisk", "limit", "marker", "sort_key", "sort_dir")


def _flavor_id(value: str | float | None) -> str | None:
    """The id a client asked for, as the string the flavor is stored and shown under."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return None if value is None else str(value)


def _spec_str(value: Any) -> str:
    return str(value)


class FlavorAPIView(ComputeAPIView):
    def flavor(self, flavor_id: str) -> Flavor:
        return svc.flavor_get(self.ctx, flavor_id)

    def show_specs(self) -> bool:
        return can(self.ctx, "os_compute_api:os-flavor-extra-specs:index", {"project_id": self.ctx.project_id})


class FlavorListMixin(FlavorAPIView):
    query_parameters = None

    def list_flavors(self, request: Request) -> tuple[list[Flavor], int | None]:
        params = request.query_params
        name_filter = FLAVOR_FEATURES.has("name_filter", self.version)
        if FLAVOR_FEATURES.has("strict_query", self.version):
            reject_unknown_params(params, (*LIST_PARAMS, "name") if name_filter else LIST_PARAMS)
        filters = svc.FlavorFilters(name=params.get("name") if name_filter else None)
        if self.ctx.is_admin:
            raw = params.get("is_public")
            if raw is None:
                filters.is_public = True
            elif raw.lower() == "none":
                filters.is_public = None
            elif raw.lower() in ("true", "false", "1", "0", "yes", "no", "on", "off", "t", "f", "y", "n"):
                filters.is_public = as_bool(raw) or raw.lower() in ("t", "y")
            else:
                raise Invalid(f"Invalid is_public filter [{raw}]")
        filters.min_ram = query_int(params, "minRam", invalid="Invalid minRam filter [%(value)s]")
        filters.min_disk = query_int(params, "minDisk", invalid="Invalid minDisk filter [%(value)s]")
        filters.limit = query_int(params, "limit", invalid="limit param must be an integer: %(value)s")
        filters.marker = params.get("marker")
        filters.sort_key = params.get("sort_key", "flavorid")
        filters.sort_dir = params.get("sort_dir", "asc")
        return svc.flavor_list(self.ctx, filters), filters.limit

    def paged(self, request: Request, items: list[Flavor], limit: int | None, body: dict[str, Any],
              path: str) -> dict[str, Any]:
        if limit and len(items) == limit:
            query = {k: v for k, v in request.query_params.items() if k != "marker"}
            query["marker"] = items[-1].flavorid
            body["flavors_links"] = [{"rel": "next", "href": f"{base_url()}/v2.1/{path}?{urlencode(query)}"}]
        return body


class FlavorsView(FlavorListMixin):
    """``GET /flavors`` (id, name, links) and ``POST /flavors`` (os-flavor-manage, admin)."""

    @extend_schema(responses={200: dict}, summary="List flavors")
    def get(self, request: Request) -> Response:
        flavors, limit = self.list_flavors(request)
        body = {"flavors": [present_flavor_brief(f, self.version) for f in flavors]}
        return Response(self.paged(request, flavors, limit, body, "flavors"))

    @extend_schema(request=dict, responses={200: dict}, summary="Create a flavor (admin)")
    def post(self, request: Request) -> Response:
        data = FLAVOR_CREATE.validate(self.body(), self.version)["flavor"]
        flavor = svc.flavor_create(
            actor=self.ctx, name=data["name"].strip(), flavorid=_flavor_id(data.get("id")), memory_mb=int(data["ram"]),
            vcpus=int(data["vcpus"]), root_gb=int(data["disk"]),
            ephemeral_gb=int(data.get("OS-FLV-EXT-DATA:ephemeral") or 0), swap=int(data.get("swap") or 0),
            rxtx_factor=float(data.get("rxtx_factor", 1.0)),
            is_public=as_bool(data.get("os-flavor-access:is_public", True)), description=data.get("description"),
        )
        return Response({"flavor": present_flavor(flavor, self.version, extra_specs=self.show_specs())})


class FlavorsDetailView(FlavorListMixin):
    @extend_schema(responses={200: dict}, summary="List flavors with details")
    def get(self, request: Request) -> Response:
        flavors, limit = self.list_flavors(request)
        specs = self.show_specs()
        body = {"flavors": [present_flavor(f, self.version, extra_specs=specs) for f in flavors]}
        return Response(self.paged(request, flavors, limit, body, "flavors/detail"))


class FlavorView(FlavorAPIView):
    @extend_schema(responses={200: dict}, summary="Show a flavor")
    def get(self, request: Request, flavor_id: str) -> Response:
        flavor = self.flavor(flavor_id)
        return Response({"flavor": present_flavor(flavor, self.version, extra_specs=self.show_specs())})

    @extend_schema(request=dict, responses={200: dict}, summary="Update a flavor's description (2.55+, admin)")
    def put(self, request: Request, flavor_id: str) -> Response:
        if not FLAVOR_FEATURES.has("update", self.version):
            raise NotFound("The resource could not be found.")
        data = validate(self.body(), FLAVOR_UPDATE)["flavor"]
        flavor = svc.flavor_update_description(actor=self.ctx, flavor_id=flavor_id,
                                               description=data["description"])
        return Response({"flavor": present_flavor(flavor, self.version, extra_specs=self.show_specs())})

    @extend_schema(responses={202: None}, summary="Delete a flavor (admin)")
    def delete(self, request: Request, flavor_id: str) -> Response:
        svc.flavor_delete(actor=self.ctx, flavor_id=flavor_id)
        return Response(status=202)


class FlavorExtraSpecsView(FlavorAPIView):
    @extend_schema(responses={200: dict}, summary="List a flavor's extra specs")
    def get(self, request: Request, flavor_id: str) -> Response:
        authorize(self.ctx, "os_compute_api:os-flavor-extra-specs:index", {"project_id": self.ctx.project_id})
        return Response({"extra_specs": svc.extra_specs_of(self.flavor(flavor_id))})

    @extend_schema(request=dict, responses={200: dict}, summary="Create or update extra specs (admin)")
    def post(self, request: Request, flavor_id: str) -> Response:
        specs = validate(self.body(), EXTRA_SPECS_CREATE)["extra_specs"]
        specs = {k: _spec_str(v) for k, v in specs.items()}
        svc.extra_specs_set(actor=self.ctx, flavor_id=flavor_id, specs=specs,
                            rule="os_compute_api:os-flavor-extra-specs:create")
        return Response({"extra_specs": specs})


class FlavorExtraSpecView(FlavorAPIView):
    @extend_schema(responses={200: dict}, summary="Show one extra spec")
    def get(self, request: Request, flavor_id: str, key: str) -> Response:
        authorize(self.ctx, "os_compute_api:os-flavor-extra-specs:show", {"project_id": self.ctx.project_id})
        specs = svc.extra_specs_of(self.flavor(flavor_id))
        if key not in specs:
            raise svc.FlavorExtraSpecNotFound(flavor_id=flavor_id, key=key)
        return Response({key: specs[key]})

    @extend_schema(request=dict, responses={200: dict}, summary="Update one extra spec (admin)")
    def put(self, request: Request, flavor_id: str, key: str) -> Response:
        body = validate(self.body(), EXTRA_SPEC_UPDATE)
        if key not in body:
            raise Invalid("Request body and URI mismatch")
        specs = {key: _spec_str(body[key])}
        svc.extra_specs_set(actor=self.ctx, flavor_id=flavor_id, specs=specs,
                            rule="os_compute_api:os-flavor-extra-specs:update")
        return Response(specs)

    @extend_schema(responses={202: None}, summary="Delete one extra spec (admin)")
    def delete(self, request: Request, flavor_id: str, key: str) -> Response:
        svc.extra_spec_delete(actor=self.ctx, flavor_id=flavor_id, key=key)
        return Response(status=200)  # Nova answers 200 here (202 for the flavor itself)


class FlavorAccessView(FlavorAPIView):
    @extend_schema(responses={200: dict}, summary="List projects with access to a private flavor (admin)")
    def get(self, request: Request, flavor_id: str) -> Response:
        authorize(self.ctx, "os_compute_api:os-flavor-access")
        flavor = svc.flavor_get_any(flavor_id)
        if flavor.is_public:
            raise NotFound("Access list not available for public flavors.")
        return Response({"flavor_access": svc.flavor_access_list(flavor)})


class FlavorActionView(FlavorAPIView):
    """``POST /flavors/{id}/action``: ``addTenantAccess`` / ``removeTenantAccess``."""

    @extend_schema(request=dict, responses={200: dict}, summary="Add or remove a project's flavor access (admin)")
    def post(self, request: Request, flavor_id: str) -> Response:
        body = self.body()
        if isinstance(body, dict) and len(body) == 1 and next(iter(body)) not in FLAVOR_ACTION["properties"]:
            raise Invalid(f"There is no such action: {next(iter(body))}")
        body = validate(body, FLAVOR_ACTION)
        action, args = next(iter(body.items()))
        if action == "addTenantAccess":
            access = svc.flavor_access_add(actor=self.ctx, flavor_id=flavor_id, project_id=args["tenant"])
        else:
            access = svc.flavor_access_remove(actor=self.ctx, flavor_id=flavor_id, project_id=args["tenant"])
        return Response({"flavor_access": access})
