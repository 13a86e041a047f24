"""Keystone v3 subset (DESIGN.md section 5): version discovery, tokens (password, token and
application credential methods), catalog, projects, users, application credentials, roles and
role assignments, answering Keystone's documents and ``{"error": {...}}`` bodies.

Thin views: they validate the request, call ``identity.services`` and present the result.
"""
from __future__ import annotations

from typing import Any, NamedTuple
from urllib.parse import quote

from django.db.models import prefetch_related_objects
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from cloudcore.core.api.validation import validate
from cloudcore.core.api.views import PublicMixin, UnversionedAPIView
from cloudcore.core.exceptions import Invalid
from cloudcore.core.policy import authorize

from .. import selectors
from ..models import (
    DEFAULT_DOMAIN_ID,
    PROJECT_OPTIONS,
    ApplicationCredential,
    Endpoint,
    Group,
    Project,
    Region,
    Role,
    Service,
    Token,
    User,
)
from ..services import (
    accounts,
    app_credentials,
    catalog_admin,
    groups,
    project_tags,
    regions,
    role_admin,
    roles,
    tokens,
)
from ..services.catalog import catalog, public_base

V3_ID = "v3.14"
V3_UPDATED = "2020-04-07T00:00:00Z"
MEDIA_TYPES = [{"base": "application/json", "type": "application/vnd.openstack.identity-v3+json"}]
TITLES = {400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed",
          409: "Conflict", 415: "Unsupported Media Type", 500: "Internal Server Error"}
TIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"


def v3_url(path: str = "") -> str:
    return f"{public_base()}/identity/v3{path}"


def v3_document() -> dict[str, Any]:
    return {
        "id": V3_ID, "status": "stable", "updated": V3_UPDATED,
        "links": [{"rel": "self", "href": v3_url("/")}],
        "media-types": MEDIA_TYPES,
    }


class IdentityView(UnversionedAPIView):
    """Base of the identity API: Keystone's error body."""

    schema_tags = ["identity"]

    def error_body(self, code: int, message: str) -> dict[str, Any]:
        return {"error": {"code": code, "message": message, "title": TITLES.get(code, "Error")}}

    def object_body(self, key: str) -> dict[str, Any]:
        data = self.request.data
        if not isinstance(data, dict) or not isinstance(data.get(key), dict):
            raise Invalid(f"Invalid input for field '{key}': '{key}' is a required property")
        return data[key]


class PublicIdentityView(PublicMixin, IdentityView):
    pass


# --- presenters ---------------------------------------------------------------------------------


def present_project(project: Project) -> dict[str, Any]:
    return {
        **project.extra, "id": project.id, "name": project.name, "domain_id": project.domain_id,
        "description": project.description, "enabled": project.enabled, "is_domain": project.is_domain,
        "parent_id": accounts.project_parent_id(project), "tags": accounts.project_tag_names(project),
        "options": dict(project.options),
        "links": {"self": v3_url(f"/projects/{project.id}")},
    }


def present_projects(projects: list[Project]) -> list[dict[str, Any]]:
    """``present_project`` of each, their tags read by one query."""
    prefetch_related_objects(projects, "tags")
    return [present_project(p) for p in projects]


def present_user(user: User) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": user.id, "name": user.name, "domain_id": user.domain_id, "enabled": user.enabled,
        "password_expires_at": None, "options": {},
        "links": {"self": v3_url(f"/users/{user.id}")},
    }
    if user.default_project_id:
        body["default_project_id"] = user.default_project_id
    if user.email:
        body["email"] = user.email
    if user.description:
        body["description"] = user.description
    return body


def present_role(role: Role) -> dict[str, Any]:
    return {
        "id": role.id, "name": role.name, "domain_id": role.domain_id, "description": role.description or None,
        "options": {}, "links": {"self": v3_url(f"/roles/{role.id}")},
    }


def present_token(token: Token, *, with_catalog: bool = True, roles: list[str] | None = None) -> dict[str, Any]:
    """The token's body; ``roles``: its roles (``tokens.token_roles``) when the caller has them."""
    user = token.user
    body: dict[str, Any] = {
        "methods": list(token.methods),
        "user": {"id": user.id, "name": user.name, "domain": accounts.domain_ref(user.domain_id),
                 "password_expires_at": None},
        "audit_ids": [token.audit_id],
        "expires_at": token.expires_at.strftime(TIME_FORMAT),
        "issued_at": token.issued_at.strftime(TIME_FORMAT),
    }
    if token.project is not None:
        project = token.project
        role_list = Role.objects.filter(name__in=roles if roles is not None else tokens.token_roles(token))
        body["project"] = {"id": project.id, "name": project.name, "domain": accounts.domain_ref(project.domain_id)}
        body["is_domain"] = False
        body["roles"] = [{"id": r.id, "name": r.name} for r in sorted(role_list, key=lambda r: r.name)]
        if with_catalog:
            body["catalog"] = catalog(project_id=project.id, user_id=user.id)
    credential = token.application_credential
    if credential is not None:
        body["application_credential"] = {"id": credential.id, "name": credential.name,
                                          "restricted": not credential.unrestricted}
    return {"token": body}


def collection_links(path: str) -> dict[str, Any]:
    return {"self": v3_url(path), "previous": None, "next": None}


# --- version discovery ------------------------------------------------------------------------


class VersionsView(PublicIdentityView):
    """``GET /identity`` and ``/identity/``: 300 Multiple Choices with the one version, as Keystone."""

    @extend_schema(responses={300: dict}, summary="Identity API versions")
    def get(self, request: Request) -> Response:
        return Response({"versions": {"values": [v3_document()]}}, status=300)


class V3View(PublicIdentityView):
    @extend_schema(responses={200: dict}, summary="Identity v3 version document")
    def get(self, request: Request) -> Response:
        return Response({"version": v3_document()})


# --- tokens ---------------------------------------------------------------------------------------

_DOMAIN_REF = {"type": "object", "properties": {"id": {"type": "string"}, "name": {"type": "string"}}}
_USER_REF = {
    "type": "object",
    "properties": {"id": {"type": "string"}, "name": {"type": "string"}, "password": {"type": "string"},
                   "domain": _DOMAIN_REF},
    "anyOf": [{"required": ["id"]}, {"required": ["name"]}],
}
_PROJECT_REF = {
    "type": "object",
    "properties": {"id": {"type": "string"}, "name": {"type": "string"}, "domain": _DOMAIN_REF},
    "anyOf": [{"required": ["id"]}, {"required": ["name"]}],
}
AUTH_SCHEMA = {
    "type": "object",
    "properties": {
        "auth": {
            "type": "object",
            "properties": {
                "identity": {
                    "type": "object",
                    "properties": {
                        "methods": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                        "password": {"type": "object", "properties": {"user": _USER_REF}, "required": ["user"]},
                        "token": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
                        "application_credential": {
                            "type": "object",
                            "properties": {"id": {"type": "string"}, "name": {"type": "string"},
                                           "secret": {"type": "string"}, "user": _USER_REF},
                        },
                    },
                    "required": ["methods"],
                },
                "scope": {
                    "anyOf": [
                        {"type": "object", "properties": {"project": _PROJECT_REF, "domain": _DOMAIN_REF,
                                                          "system": {"type": "object"}}},
                        {"type": "string", "enum": ["unscoped"]},
                    ],
                },
            },
            "required": ["identity"],
        }
    },
    "required": ["auth"],
}


class Authenticated(NamedTuple):
    user: User
    methods: list[str]
    credential: ApplicationCredential | None


def _authenticate(auth: dict[str, Any]) -> Authenticated:
    identity = auth["identity"]
    methods = identity["methods"]
    if "password" in methods:
        if "password" not in identity:
            raise Invalid("Invalid input for field 'identity': 'password' is a required property")
        return Authenticated(accounts.user_authenticate(identity["password"]["user"]), ["password"], None)
    if "token" in methods:
        if "token" not in identity:
            raise Invalid("Invalid input for field 'identity': 'token' is a required property")
        try:
            source = tokens.token_get_valid(identity["token"]["id"])
            tokens.token_roles(source)
        except tokens.TokenNotFound:
            raise accounts.AuthFailed() from None
        # A token of an application credential stays one: same project, same roles.
        return Authenticated(source.user, list(source.methods) + (["token"] if "token" not in source.methods else []),
                             source.application_credential)
    if "application_credential" in methods:
        if "application_credential" not in identity:
            raise Invalid("Invalid input for field 'identity': 'application_credential' is a required property")
        credential = app_credentials.application_credential_authenticate(identity["application_credential"])
        return Authenticated(credential.user, ["application_credential"], credential)
    raise accounts.AuthFailed("Attempted to authenticate with an unsupported method.")


def _scope_project(user: User, scope: Any, credential: ApplicationCredential | None = None) -> Project | None:
    if credential is not None:
        return _credential_project(credential, scope)
    if not scope or scope == "unscoped":
        return None
    if "project" not in scope:
        # Domain and system scopes are not part of the subset.
        raise accounts.AuthFailed("The request you have made requires authentication.")
    try:
        project = accounts.project_find(scope["project"])
    except (accounts.ProjectNotFound, accounts.DomainNotFound):
        raise accounts.AuthFailed() from None
    if not project.enabled or not roles.roles_for(user=user, project=project):
        raise accounts.AuthFailed(f"User {user.id} has no access to project {project.id}")
    return project


def _credential_project(credential: ApplicationCredential, scope: Any) -> Project:
    """An application credential's tokens are scoped to its project, which the request may
    only repeat."""
    if scope and scope != "unscoped":
        try:
            asked = accounts.project_find(scope["project"]) if "project" in scope else None
        except (accounts.ProjectNotFound, accounts.DomainNotFound):
            asked = None
        if asked is None or asked.id != credential.project_id:
            raise app_credentials.ApplicationCredentialAuthError(
                detail="Application credentials cannot request a scope.")
    return credential.project


class TokensView(IdentityView):
    """``/v3/auth/tokens``: issue (public), validate, check and revoke (``X-Subject-Token``)."""

    def get_authenticators(self) -> list[Any]:
        if self.request is not None and self.request.method == "POST":
            return []
        return super().get_authenticators()

    def get_permissions(self) -> list[Any]:
        if self.request is not None and self.request.method == "POST":
            return []
        return super().get_permissions()

    @extend_schema(request=dict, responses={201: dict},
                   summary="Issue a token (password, token or application_credential method)")
    def post(self, request: Request) -> Response:
        body = validate(request.data, AUTH_SCHEMA)["auth"]
        user, methods, credential = _authenticate(body)
        project = _scope_project(user, body.get("scope"), credential)
        token = tokens.token_issue(user=user, project=project, methods=methods, application_credential=credential)
        with_catalog = "nocatalog" not in request.query_params
        # validated as its first request will be (remembered by this process), which gives its roles
        roles = tokens.token_validate_ahead(token.value)
        response = Response(present_token(token, with_catalog=with_catalog, roles=roles), status=201)
        response["X-Subject-Token"] = token.value
        return response

    def _subject(self, request: Request) -> Token:
        subject = request.headers.get("X-Subject-Token")
        if not subject:
            raise Invalid("Expecting to find X-Subject-Token in the request headers.")
        token = tokens.token_get_valid(subject)
        authorize(self.ctx, "identity:validate_token", {"user_id": token.user_id, "project_id": token.project_id})
        return token

    @extend_schema(responses={200: dict}, summary="Validate a token (X-Subject-Token)")
    def get(self, request: Request) -> Response:
        token = self._subject(request)
        response = Response(present_token(token, with_catalog="nocatalog" not in request.query_params))
        response["X-Subject-Token"] = token.value
        return response

    def head(self, request: Request) -> Response:
        token = self._subject(request)
        tokens.token_roles(token)
        response = Response(status=200)
        response["X-Subject-Token"] = token.value
        return response

    @extend_schema(responses={204: None}, summary="Revoke a token")
    def delete(self, request: Request) -> Response:
        subject = request.headers.get("X-Subject-Token")
        if not subject:
            raise Invalid("Expecting to find X-Subject-Token in the request headers.")
        tokens.token_revoke(actor=self.ctx, token_id=subject)
        return Response(status=204)


class CatalogView(IdentityView):
    @extend_schema(responses={200: dict}, summary="The service catalog")
    def get(self, request: Request) -> Response:
        return Response({"catalog": catalog(project_id=self.ctx.project_id, user_id=self.ctx.user_id),
                         "links": collection_links("/auth/catalog")})


class AuthProjectsView(IdentityView):
    @extend_schema(responses={200: dict}, summary="Projects the token's user can scope to")
    def get(self, request: Request) -> Response:
        user = accounts.user_get(self.ctx.user_id or "")
        projects = present_projects([p for p in accounts.user_projects(user) if p.enabled])
        return Response({"projects": projects, "links": collection_links("/auth/projects")})


class AuthDomainsView(IdentityView):
    @extend_schema(responses={200: dict}, summary="Domains the token's user can scope to (none)")
    def get(self, request: Request) -> Response:
        return Response({"domains": [], "links": collection_links("/auth/domains")})


# --- services, endpoints, regions ---------------------------------------------------------------

SERVICE_CREATE = {
    "type": "object",
    "properties": {
        "type": {"type": "string", "minLength": 1, "maxLength": 255},
        "name": {"type": "string", "maxLength": 255},
        "enabled": {"type": "boolean"},
    },
    "required": ["type"],
}
SERVICE_UPDATE = {**SERVICE_CREATE, "required": [], "minProperties": 1}
ENDPOINT_CREATE = {
    "type": "object",
    "properties": {
        "interface": {"type": "string", "enum": ["admin", "internal", "public"]},
        "url": {"type": "string", "maxLength": 225, "pattern": "^[a-zA-Z0-9+.-]+:.+"},
        "service_id": {"type": "string", "maxLength": 64},
        "region_id": {"type": ["string", "null"], "maxLength": 255},
        "region": {"type": ["string", "null"], "maxLength": 255},
        "enabled": {"type": "boolean"},
    },
    "required": ["interface", "service_id", "url"],
}
ENDPOINT_UPDATE = {**ENDPOINT_CREATE, "required": [], "minProperties": 1}


def _extra(data: dict[str, Any], *fields: str) -> dict[str, Any]:
    """The attributes of ``data`` other than ``fields`` and ``id`` (Keystone makes the ids)."""
    return {k: v for k, v in data.items() if k not in fields and k != "id"}


def _without_id(data: dict[str, Any], entry_id: str) -> dict[str, Any]:
    """An update's attributes; an ``id`` other than the URL's is refused, as Keystone does."""
    data = dict(data)
    if data.pop("id", entry_id) != entry_id:
        raise Invalid("Cannot change ID")
    return data


def present_service(service: Service) -> dict[str, Any]:
    return {**service.extra, "id": service.id, "type": service.type, "name": service.name,
            "enabled": service.enabled, "links": {"self": v3_url(f"/services/{service.id}")}}


def present_endpoint(endpoint: Endpoint) -> dict[str, Any]:
    return {**endpoint.extra, "id": endpoint.id, "interface": endpoint.interface, "region": endpoint.region_id,
            "region_id": endpoint.region_id, "url": endpoint.url, "service_id": endpoint.service_id,
            "enabled": endpoint.enabled, "links": {"self": v3_url(f"/endpoints/{endpoint.id}")}}


class ServicesView(IdentityView):
    @extend_schema(responses={200: dict}, summary="List services (filters: type, name)")
    def get(self, request: Request) -> Response:
        found = catalog_admin.service_list(actor=self.ctx, service_type=request.query_params.get("type"),
                                           name=request.query_params.get("name"))
        return Response({"services": [present_service(s) for s in found], "links": collection_links("/services")})

    @extend_schema(request=dict, responses={201: dict}, summary="Register a service")
    def post(self, request: Request) -> Response:
        data = validate(self.object_body("service"), SERVICE_CREATE)
        service = catalog_admin.service_create(
            actor=self.ctx, service_type=data["type"], name=data.get("name", ""), enabled=data.get("enabled", True),
            extra=_extra(data, "type", "name", "enabled"))
        return Response({"service": present_service(service)}, status=201)


class ServiceView(IdentityView):
    @extend_schema(responses={200: dict}, summary="Show a service")
    def get(self, request: Request, service_id: str) -> Response:
        return Response({"service": present_service(catalog_admin.service_show(actor=self.ctx, service_id=service_id))})

    @extend_schema(request=dict, responses={200: dict}, summary="Update a registered service")
    def patch(self, request: Request, service_id: str) -> Response:
        data = _without_id(validate(self.object_body("service"), SERVICE_UPDATE), service_id)
        service = catalog_admin.service_update(actor=self.ctx, service_id=service_id, changes=data)
        return Response({"service": present_service(service)})

    @extend_schema(responses={204: None}, summary="Delete a registered service and its endpoints")
    def delete(self, request: Request, service_id: str) -> Response:
        catalog_admin.service_delete(actor=self.ctx, service_id=service_id)
        return Response(status=204)


class EndpointsView(IdentityView):
    @extend_schema(responses={200: dict}, summary="List endpoints (filters: service_id, interface, region_id)")
    def get(self, request: Request) -> Response:
        params = request.query_params
        found = catalog_admin.endpoint_list(actor=self.ctx, service_id=params.get("service_id"),
                                            interface=params.get("interface"), region_id=params.get("region_id"))
        return Response({"endpoints": [present_endpoint(e) for e in found], "links": collection_links("/endpoints")})

    @extend_schema(request=dict, responses={201: dict}, summary="Register an endpoint")
    def post(self, request: Request) -> Response:
        data = validate(self.object_body("endpoint"), ENDPOINT_CREATE)
        endpoint = catalog_admin.endpoint_create(
            actor=self.ctx, service_id=data["service_id"], interface=data["interface"], url=data["url"],
            region_id=data.get("region_id"), region=data.get("region"), enabled=data.get("enabled", True),
            extra=_extra(data, *ENDPOINT_CREATE["properties"]))
        return Response({"endpoint": present_endpoint(endpoint)}, status=201)


class EndpointView(IdentityView):
    @extend_schema(responses={200: dict}, summary="Show an endpoint")
    def get(self, request: Request, endpoint_id: str) -> Response:
        endpoint = catalog_admin.endpoint_show(actor=self.ctx, endpoint_id=endpoint_id)
        return Response({"endpoint": present_endpoint(endpoint)})

    @extend_schema(request=dict, responses={200: dict}, summary="Update a registered endpoint")
    def patch(self, request: Request, endpoint_id: str) -> Response:
        data = _without_id(validate(self.object_body("endpoint"), ENDPOINT_UPDATE), endpoint_id)
        endpoint = catalog_admin.endpoint_update(actor=self.ctx, endpoint_id=endpoint_id, changes=data)
        return Response({"endpoint": present_endpoint(endpoint)})

    @extend_schema(responses={204: None}, summary="Delete a registered endpoint")
    def delete(self, request: Request, endpoint_id: str) -> Response:
        catalog_admin.endpoint_delete(actor=self.ctx, endpoint_id=endpoint_id)
        return Response(status=204)


REGION_CREATE = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "maxLength": 255},
        "description": {"type": ["string", "null"]},
        "parent_region_id": {"type": ["string", "null"], "maxLength": 255},
    },
}
REGION_UPDATE = {**REGION_CREATE, "minProperties": 1}
_REGION_FIELDS = ("id", "description", "parent_region_id")


def present_region(region: Region) -> dict[str, Any]:
    return {**region.extra, "id": region.id, "description": region.description,
            "parent_region_id": region.parent_region_id, "links": {"self": v3_url(f"/regions/{region.id}")}}


def _region_created(ctx: Any, data: dict[str, Any], region_id: str | None) -> Response:
    region = regions.region_create(
        actor=ctx, region_id=region_id, description=data.get("description"),
        parent_region_id=data.get("parent_region_id"),
        extra=_extra(data, *_REGION_FIELDS))
    return Response({"region": present_region(region)}, status=201)


class RegionsView(IdentityView):
    @extend_schema(responses={200: dict}, summary="List regions (filter: parent_region_id)")
    def get(self, request: Request) -> Response:
        params = request.query_params
        parent = params["parent_region_id"] if "parent_region_id" in params else regions.ANY_PARENT
        found = regions.region_list(actor=self.ctx, parent_region_id=parent)
        return Response({"regions": [present_region(r) for r in found], "links": collection_links("/regions")})

    @extend_schema(request=dict, responses={201: dict}, summary="Create a region (its id given or made)")
    def post(self, request: Request) -> Response:
        data = validate(self.object_body("region"), REGION_CREATE)
        return _region_created(self.ctx, data, data.get("id") or None)


class RegionView(IdentityView):
    @extend_schema(responses={200: dict}, summary="Show a region")
    def get(self, request: Request, region_id: str) -> Response:
        return Response({"region": present_region(regions.region_show(actor=self.ctx, region_id=region_id))})

    @extend_schema(request=dict, responses={201: dict}, summary="Create a region with this id")
    def put(self, request: Request, region_id: str) -> Response:
        data = validate(self.object_body("region"), REGION_CREATE)
        if data.get("id", region_id) != region_id:
            raise Invalid(f'Conflicting region IDs specified: "{region_id}" != "{data["id"]}"')
        return _region_created(self.ctx, data, region_id)

    @extend_schema(request=dict, responses={200: dict}, summary="Update a region")
    def patch(self, request: Request, region_id: str) -> Response:
        data = dict(validate(self.object_body("region"), REGION_UPDATE))
        if data.pop("id", region_id) != region_id:
            raise Invalid("Cannot change ID")
        region = regions.region_update(actor=self.ctx, region_id=region_id, changes=data)
        return Response({"region": present_region(region)})

    @extend_schema(responses={204: None}, summary="Delete a region (and its child regions)")
    def delete(self, request: Request, region_id: str) -> Response:
        regions.region_delete(actor=self.ctx, region_id=region_id)
        return Response(status=204)


# --- domains (the one ``default`` domain, read-only) ------------------------------------------


def present_domain() -> dict[str, Any]:
    return {
        "id": DEFAULT_DOMAIN_ID, "name": accounts.DEFAULT_DOMAIN_NAME, "description": "The default domain",
        "enabled": True, "tags": [], "options": {}, "links": {"self": v3_url(f"/domains/{DEFAULT_DOMAIN_ID}")},
    }


class DomainsView(IdentityView):
    @extend_schema(responses={200: dict}, summary="List domains (only Default)")
    def get(self, request: Request) -> Response:
        name = request.query_params.get("name")
        domains = [present_domain()] if name in (None, accounts.DEFAULT_DOMAIN_NAME) else []
        return Response({"domains": domains, "links": collection_links("/domains")})


class DomainView(IdentityView):
    @extend_schema(responses={200: dict}, summary="Show a domain")
    def get(self, request: Request, domain_id: str) -> Response:
        accounts.domain_id_from({"id": domain_id})
        return Response({"domain": present_domain()})


# --- projects ---------------------------------------------------------------------------------------

PROJECT_CREATE = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 64},
        "domain_id": {"type": ["string", "null"]},
        "description": {"type": ["string", "null"]},
        "enabled": {"type": "boolean"},
        "is_domain": {"type": "boolean"},
        "parent_id": {"type": ["string", "null"], "maxLength": 64},
        "tags": {"type": "array", "items": {"type": "string"}},
        "options": {
            "type": "object",
            "properties": {name: {"type": [kind, "null"]} for name, kind in PROJECT_OPTIONS.items()},
            "propertyNames": {"enum": list(PROJECT_OPTIONS)},
        },
    },
    "required": ["name"],
}
PROJECT_UPDATE = {**PROJECT_CREATE, "required": [], "minProperties": 1}


def _project_extra(data: dict[str, Any]) -> dict[str, Any]:
    """The attributes of a project body that have no column: kept and given back, as Keystone.
    ``links`` is the cloud's to make (given back, it would hide the client's): 400."""
    if "links" in data:
        raise Invalid("Invalid input for field 'links': a project's links are made by the cloud.")
    return _extra(data, *PROJECT_CREATE["properties"])


PROJECT_TAGS_REPLACE = {
    "type": "object",
    "properties": {"tags": {"type": "array", "items": {"type": "string"}}},
    "required": ["tags"],
}


#: ``GET /v3/projects`` query parameter -> ``selectors.projects_tagged`` keyword
TAG_FILTERS = {"tags": "all_of", "tags-any": "any_of", "not-tags": "not_all_of", "not-tags-any": "not_any_of"}


def _bool_filter(value: str | None) -> bool | None:
    if value is None:
        return None
    return value.lower() not in ("0", "false", "no", "off")


class ProjectsView(IdentityView):
    @extend_schema(responses={200: dict}, summary="List projects")
    def get(self, request: Request) -> Response:
        authorize(self.ctx, "identity:list_projects")
        qs = Project.objects.order_by("name")
        params = request.query_params
        if "name" in params:
            qs = qs.filter(name=params["name"])
        if "domain_id" in params:
            qs = qs.filter(domain_id=params["domain_id"])
        enabled = _bool_filter(params.get("enabled"))
        if enabled is not None:
            qs = qs.filter(enabled=enabled)
        if "parent_id" in params:  # a project's parent is its domain (no hierarchy here)
            qs = qs.filter(domain_id=params["parent_id"])
        if _bool_filter(params.get("is_domain")):  # no project acts as a domain here
            qs = qs.none()
        qs = selectors.projects_tagged(qs, **{
            keyword: params[param].split(",") for param, keyword in TAG_FILTERS.items() if param in params})
        return Response({"projects": present_projects(list(qs)), "links": collection_links("/projects")})

    @extend_schema(request=dict, responses={201: dict}, summary="Create a project")
    def post(self, request: Request) -> Response:
        data = validate(self.object_body("project"), PROJECT_CREATE)
        if "id" in data:
            raise Invalid("Invalid input for field 'id': a project's id is made by the cloud.")
        domain_id = accounts.domain_id_from({"id": data["domain_id"]} if data.get("domain_id") else None)
        project = accounts.project_create(
            actor=self.ctx, name=data["name"], domain_id=domain_id, description=data.get("description") or "",
            enabled=data.get("enabled", True), tags=data.get("tags"), is_domain=data.get("is_domain", False),
            parent_id=data.get("parent_id"), extra=_project_extra(data), options=data.get("options"),
        )
        return Response({"project": present_project(project)}, status=201)


class ProjectView(IdentityView):
    @extend_schema(responses={200: dict}, summary="Show a project")
    def get(self, request: Request, project_id: str) -> Response:
        authorize(self.ctx, "identity:get_project", {"project_id": project_id})
        return Response({"project": present_project(accounts.project_get(project_id))})

    @extend_schema(request=dict, responses={200: dict}, summary="Update a project")
    def patch(self, request: Request, project_id: str) -> Response:
        data = _without_id(validate(self.object_body("project"), PROJECT_UPDATE), project_id)
        changes = {k: data[k] for k in ("name", "description", "enabled") if k in data}
        if "description" in changes and changes["description"] is None:
            changes["description"] = ""
        changes.update({k: data[k] for k in ("domain_id", "is_domain", "parent_id") if k in data})
        project = accounts.project_update(actor=self.ctx, project_id=project_id, tags=data.get("tags"),
                                          extra=_project_extra(data), options=data.get("options"), **changes)
        return Response({"project": present_project(project)})

    @extend_schema(responses={204: None}, summary="Delete a project")
    def delete(self, request: Request, project_id: str) -> Response:
        accounts.project_delete(actor=self.ctx, project_id=project_id)
        return Response(status=204)


class ProjectTagsView(IdentityView):
    """``/v3/projects/{project_id}/tags``: the project's tags, replaced whole by PUT."""

    def _body(self, project_id: str, tags: list[str]) -> dict[str, Any]:
        return {"tags": tags, "links": {"self": v3_url(f"/projects/{project_id}/tags")}}

    @extend_schema(responses={200: dict}, summary="List a project's tags")
    def get(self, request: Request, project_id: str) -> Response:
        return Response(self._body(project_id, project_tags.project_tags_list(actor=self.ctx, project_id=project_id)))

    @extend_schema(request=dict, responses={200: dict}, summary="Replace a project's tags")
    def put(self, request: Request, project_id: str) -> Response:
        data = validate(request.data, PROJECT_TAGS_REPLACE)
        tags = project_tags.project_tags_replace(actor=self.ctx, project_id=project_id, tags=data["tags"])
        return Response(self._body(project_id, tags))

    @extend_schema(responses={204: None}, summary="Remove every tag of a project")
    def delete(self, request: Request, project_id: str) -> Response:
        project_tags.project_tags_clear(actor=self.ctx, project_id=project_id)
        return Response(status=204)


class ProjectTagView(IdentityView):
    """``/v3/projects/{project_id}/tags/{tag}``: 204 when the project has the tag, 404 when not."""

    @extend_schema(responses={204: None}, summary="Check that a project has a tag")
    def get(self, request: Request, project_id: str, tag: str) -> Response:
        project_tags.project_tag_check(actor=self.ctx, project_id=project_id, tag=tag)
        return Response(status=204)

    def head(self, request: Request, project_id: str, tag: str) -> Response:
        return self.get(request, project_id, tag)

    @extend_schema(request=None, responses={201: None}, summary="Add a tag to a project")
    def put(self, request: Request, project_id: str, tag: str) -> Response:
        project_tags.project_tag_add(actor=self.ctx, project_id=project_id, tag=tag)
        return Response(status=201, headers={"Location": v3_url(f"/projects/{project_id}/tags/{quote(tag)}")})

    @extend_schema(responses={204: None}, summary="Remove a tag from a project")
    def delete(self, request: Request, project_id: str, tag: str) -> Response:
        project_tags.project_tag_remove(actor=self.ctx, project_id=project_id, tag=tag)
        return Response(status=204)


# --- users -------------------------------------------------------------------------------------------

USER_CREATE = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 255},
        "password": {"type": ["string", "null"]},
        "domain_id": {"type": ["string", "null"]},
        "default_project_id": {"type": ["string", "null"]},
        "email": {"type": ["string", "null"]},
        "description": {"type": ["string", "null"]},
        "enabled": {"type": "boolean"},
        "options": {
            "type": "object",
            "properties": {name: {"type": [kind, "null"]} for name, kind in PROJECT_OPTIONS.items()},
            "propertyNames": {"enum": list(PROJECT_OPTIONS)},
        },
    },
    "required": ["name"],
}
USER_UPDATE = {**USER_CREATE, "required": [], "minProperties": 1}


class UsersView(IdentityView):
    @extend_schema(responses={200: dict}, summary="List users")
    def get(self, request: Request) -> Response:
        authorize(self.ctx, "identity:list_users")
        qs = User.objects.order_by("name")
        if "name" in request.query_params:
            qs = qs.filter(name=request.query_params["name"])
        if "domain_id" in request.query_params:
            qs = qs.filter(domain_id=request.query_params["domain_id"])
        return Response({"users": [present_user(u) for u in qs], "links": collection_links("/users")})

    @extend_schema(request=dict, responses={201: dict}, summary="Create a user")
    def post(self, request: Request) -> Response:
        data = validate(self.object_body("user"), USER_CREATE)
        domain_id = accounts.domain_id_from({"id": data["domain_id"]} if data.get("domain_id") else None)
        user = accounts.user_create(
            actor=self.ctx, name=data["name"], password=data.get("password"), domain_id=domain_id,
            default_project_id=data.get("default_project_id") or None,
            email=data.get("email") or "", description=data.get("description") or "",
            enabled=data.get("enabled", True),
        )
        return Response({"user": present_user(user)}, status=201)


class UserView(IdentityView):
    @extend_schema(responses={200: dict}, summary="Show a user")
    def get(self, request: Request, user_id: str) -> Response:
        authorize(self.ctx, "identity:get_user", {"user_id": user_id})
        return Response({"user": present_user(accounts.user_get(user_id))})

    @extend_schema(request=dict, responses={200: dict}, summary="Update a user (password included)")
    def patch(self, request: Request, user_id: str) -> Response:
        data = validate(self.object_body("user"), USER_UPDATE)
        changes: dict[str, Any] = {k: data[k] for k in ("name", "enabled", "default_project_id") if k in data}
        for key in ("email", "description"):
            if key in data:
                changes[key] = data[key] or ""
        user = accounts.user_update(actor=self.ctx, user_id=user_id, password=data.get("password"), **changes)
        return Response({"user": present_user(user)})

    @extend_schema(responses={204: None}, summary="Delete a user")
    def delete(self, request: Request, user_id: str) -> Response:
        accounts.user_delete(actor=self.ctx, user_id=user_id)
        return Response(status=204)


PASSWORD_CHANGE = {
    "type": "object",
    "properties": {"user": {"type": "object", "properties": {
        "password": {"type": "string", "minLength": 1}, "original_password": {"type": "string"}},
        "required": ["password", "original_password"]}},
    "required": ["user"],
}


class UserPasswordView(IdentityView):
    """``POST /v3/users/{id}/password``: a user changes their own password (original required);
    every token of the user is revoked."""

    @extend_schema(request=dict, responses={204: None}, summary="Change one's own password")
    def post(self, request: Request, user_id: str) -> Response:
        data = validate(request.data, PASSWORD_CHANGE)["user"]
        accounts.user_password_change(actor=self.ctx, user_id=user_id, original_password=data["original_password"],
                                      password=data["password"])
        return Response(status=204)


class UserProjectsView(IdentityView):
    @extend_schema(responses={200: dict}, summary="Projects a user has a role on")
    def get(self, request: Request, user_id: str) -> Response:
        authorize(self.ctx, "identity:list_user_projects", {"user_id": user_id})
        user = accounts.user_get(user_id)
        projects = present_projects(accounts.user_projects(user))
        return Response({"projects": projects, "links": collection_links(f"/users/{user_id}/projects")})


# --- application credentials ----------------------------------------------------------------------

_ROLE_REF = {
    "type": "object",
    "properties": {"id": {"type": "string", "minLength": 1, "maxLength": 64},
                   "name": {"type": "string", "minLength": 1, "maxLength": 255}},
    "minProperties": 1, "maxProperties": 1, "additionalProperties": False,
}
APPLICATION_CREDENTIAL_CREATE = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 255},
        "description": {"type": ["string", "null"]},
        "secret": {"type": ["string", "null"]},
        "expires_at": {"type": ["string", "null"]},
        "roles": {"type": "array", "items": _ROLE_REF},
        "unrestricted": {"type": "boolean"},
        "access_rules": {"type": "array", "maxItems": 0},
    },
    "required": ["name"],
}
APP_CRED_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%f"


def present_application_credential(credential: ApplicationCredential, *, with_secret: bool = False) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": credential.id, "name": credential.name, "description": credential.description,
        "expires_at": credential.expires_at.strftime(APP_CRED_TIME_FORMAT) if credential.expires_at else None,
        "project_id": credential.project_id,
        "roles": [{"id": r.id, "name": r.name, "domain_id": r.domain_id}
                  for r in sorted(credential.roles.all(), key=lambda r: r.name)],
        "unrestricted": credential.unrestricted, "access_rules": [],
        "links": {"self": v3_url(f"/users/{credential.user_id}/application_credentials/{credential.id}")},
    }
    if with_secret:
        body["secret"] = credential.secret
    return body


class ApplicationCredentialsView(IdentityView):
    """``/v3/users/{user_id}/application_credentials`` (access rules are not supported: a
    credential may only carry an empty ``access_rules``)."""

    @extend_schema(responses={200: dict}, summary="List a user's application credentials (filter: name)")
    def get(self, request: Request, user_id: str) -> Response:
        found = app_credentials.application_credential_list(actor=self.ctx, user_id=user_id,
                                                            name=request.query_params.get("name"))
        return Response({"application_credentials": [present_application_credential(c) for c in found],
                         "links": collection_links(f"/users/{user_id}/application_credentials")})

    @extend_schema(request=dict, responses={201: dict}, summary="Create an application credential")
    def post(self, request: Request, user_id: str) -> Response:
        data = validate(self.object_body("application_credential"), APPLICATION_CREDENTIAL_CREATE)
        credential = app_credentials.application_credential_create(
            actor=self.ctx, user_id=user_id, name=data["name"], description=data.get("description"),
            secret=data.get("secret"), expires_at=data.get("expires_at"), roles=data.get("roles"),
            unrestricted=data.get("unrestricted", False),
        )
        return Response({"application_credential": present_application_credential(credential, with_secret=True)},
                        status=201)


class ApplicationCredentialView(IdentityView):
    @extend_schema(responses={200: dict}, summary="Show an application credential")
    def get(self, request: Request, user_id: str, application_credential_id: str) -> Response:
        credential = app_credentials.application_credential_get(
            actor=self.ctx, user_id=user_id, application_credential_id=application_credential_id)
        return Response({"application_credential": present_application_credential(credential)})

    @extend_schema(responses={204: None}, summary="Delete an application credential (and its tokens)")
    def delete(self, request: Request, user_id: str, application_credential_id: str) -> Response:
        app_credentials.application_credential_delete(
            actor=self.ctx, user_id=user_id, application_credential_id=application_credential_id)
        return Response(status=204)


# --- groups -------------------------------------------------------------------------------------------

GROUP_CREATE = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 255},
        "domain_id": {"type": ["string", "null"]},
        "description": {"type": ["string", "null"]},
    },
    "required": ["name"],
}
GROUP_UPDATE = {**GROUP_CREATE, "required": [], "minProperties": 1}


def present_group(group: Group) -> dict[str, Any]:
    return {"id": group.id, "name": group.name, "domain_id": group.domain_id, "description": group.description,
            "links": {"self": v3_url(f"/groups/{group.id}")}}


class GroupsView(IdentityView):
    @extend_schema(responses={200: dict}, summary="List groups")
    def get(self, request: Request) -> Response:
        authorize(self.ctx, "identity:list_groups")
        qs = Group.objects.order_by("name")
        for key in ("name", "domain_id"):
            if key in request.query_params:
                qs = qs.filter(**{key: request.query_params[key]})
        return Response({"groups": [present_group(g) for g in qs], "links": collection_links("/groups")})

    @extend_schema(request=dict, responses={201: dict}, summary="Create a group")
    def post(self, request: Request) -> Response:
        data = validate(self.object_body("group"), GROUP_CREATE)
        domain_id = accounts.domain_id_from({"id": data["domain_id"]} if data.get("domain_id") else None)
        group = groups.group_create(actor=self.ctx, name=data["name"], domain_id=domain_id,
                                    description=data.get("description") or "")
        return Response({"group": present_group(group)}, status=201)


class GroupView(IdentityView):
    @extend_schema(responses={200: dict}, summary="Show a group")
    def get(self, request: Request, group_id: str) -> Response:
        authorize(self.ctx, "identity:get_group")
        return Response({"group": present_group(groups.group_get(group_id))})

    @extend_schema(request=dict, responses={200: dict}, summary="Update a group")
    def patch(self, request: Request, group_id: str) -> Response:
        data = validate(self.object_body("group"), GROUP_UPDATE)
        changes = {k: data[k] or "" for k in ("name", "description") if k in data}
        return Response({"group": present_group(groups.group_update(actor=self.ctx, group_id=group_id, **changes))})

    @extend_schema(responses={204: None}, summary="Delete a group")
    def delete(self, request: Request, group_id: str) -> Response:
        groups.group_delete(actor=self.ctx, group_id=group_id)
        return Response(status=204)


class GroupUsersView(IdentityView):
    @extend_schema(responses={200: dict}, summary="List the users of a group")
    def get(self, request: Request, group_id: str) -> Response:
        members = groups.group_users(actor=self.ctx, group_id=group_id)
        return Response({"users": [present_user(u) for u in members],
                         "links": collection_links(f"/groups/{group_id}/users")})


class GroupUserView(IdentityView):
    @extend_schema(request=None, responses={204: None}, summary="Add a user to a group")
    def put(self, request: Request, group_id: str, user_id: str) -> Response:
        groups.group_user_add(actor=self.ctx, group_id=group_id, user_id=user_id)
        return Response(status=204)

    @extend_schema(responses={204: None}, summary="Check that a user is in a group")
    def get(self, request: Request, group_id: str, user_id: str) -> Response:
        groups.group_user_check(actor=self.ctx, group_id=group_id, user_id=user_id)
        return Response(status=204)

    def head(self, request: Request, group_id: str, user_id: str) -> Response:
        groups.group_user_check(actor=self.ctx, group_id=group_id, user_id=user_id)
        return Response(status=204)

    @extend_schema(responses={204: None}, summary="Remove a user from a group")
    def delete(self, request: Request, group_id: str, user_id: str) -> Response:
        groups.group_user_remove(actor=self.ctx, group_id=group_id, user_id=user_id)
        return Response(status=204)


class UserGroupsView(IdentityView):
    @extend_schema(responses={200: dict}, summary="List the groups of a user")
    def get(self, request: Request, user_id: str) -> Response:
        found = groups.user_groups(actor=self.ctx, user_id=user_id)
        return Response({"groups": [present_group(g) for g in found],
                         "links": collection_links(f"/users/{user_id}/groups")})


# --- roles and assignments ------------------------------------------------------------------------

ROLE_CREATE = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 255, "pattern": r"^[A-Za-z0-9_.-]+$"},
        "description": {"type": ["string", "null"]},
        "domain_id": {"type": "null"},
        "options": {
            "type": "object",
            "properties": {name: {"type": [kind, "null"]} for name, kind in PROJECT_OPTIONS.items()},
            "propertyNames": {"enum": list(PROJECT_OPTIONS)},
        },
    },
    "required": ["name"],
}


class RolesView(IdentityView):
    @extend_schema(responses={200: dict}, summary="List roles")
    def get(self, request: Request) -> Response:
        authorize(self.ctx, "identity:list_roles")
        roles.ensure_default_roles()
        qs = Role.objects.order_by("name")
        if "name" in request.query_params:
            qs = qs.filter(name=request.query_params["name"])
        return Response({"roles": [present_role(r) for r in qs], "links": collection_links("/roles")})

    @extend_schema(request=dict, responses={201: dict}, summary="Create a role")
    def post(self, request: Request) -> Response:
        data = validate(self.object_body("role"), ROLE_CREATE)
        role = role_admin.role_create(actor=self.ctx, name=data["name"], description=data.get("description") or "")
        return Response({"role": present_role(role)}, status=201)


class RoleView(IdentityView):
    @extend_schema(responses={200: dict}, summary="Show a role")
    def get(self, request: Request, role_id: str) -> Response:
        authorize(self.ctx, "identity:get_role")
        return Response({"role": present_role(accounts.role_get(role_id))})

    @extend_schema(responses={204: None}, summary="Delete a role")
    def delete(self, request: Request, role_id: str) -> Response:
        role_admin.role_delete(actor=self.ctx, role_id=role_id)
        return Response(status=204)


def _grants_path(project_id: str, grantee: dict[str, str]) -> str:
    kind, grantee_id = ("groups", grantee["group_id"]) if "group_id" in grantee else ("users", grantee["user_id"])
    return f"/projects/{project_id}/{kind}/{grantee_id}/roles"


class ProjectGrantsView(IdentityView):
    """``/v3/projects/{p}/users/{u}/roles`` and ``/v3/projects/{p}/groups/{g}/roles``."""

    @extend_schema(responses={200: dict}, summary="Roles of a user or a group on a project")
    def get(self, request: Request, project_id: str, **grantee: str) -> Response:
        found = role_admin.grant_list(actor=self.ctx, project_id=project_id, **grantee)
        return Response({"roles": [present_role(r) for r in found],
                         "links": collection_links(_grants_path(project_id, grantee))})


class ProjectGrantView(IdentityView):
    """``/v3/projects/{p}/users/{u}/roles/{r}`` and ``/v3/projects/{p}/groups/{g}/roles/{r}``."""

    @extend_schema(request=None, responses={204: None}, summary="Assign a role")
    def put(self, request: Request, project_id: str, role_id: str, **grantee: str) -> Response:
        role_admin.grant_create(actor=self.ctx, project_id=project_id, role_id=role_id, **grantee)
        return Response(status=204)

    @extend_schema(responses={204: None}, summary="Check a role assignment")
    def get(self, request: Request, project_id: str, role_id: str, **grantee: str) -> Response:
        role_admin.grant_check(actor=self.ctx, project_id=project_id, role_id=role_id, **grantee)
        return Response(status=204)

    def head(self, request: Request, project_id: str, role_id: str, **grantee: str) -> Response:
        role_admin.grant_check(actor=self.ctx, project_id=project_id, role_id=role_id, **grantee)
        return Response(status=204)

    @extend_schema(responses={204: None}, summary="Unassign a role")
    def delete(self, request: Request, project_id: str, role_id: str, **grantee: str) -> Response:
        role_admin.grant_revoke(actor=self.ctx, project_id=project_id, role_id=role_id, **grantee)
        return Response(status=204)


def _assignment_entry(actor: User | Group, project: Project, role: Role, *, include_names: bool,
                     via: Group | None = None) -> dict[str, Any]:
    kind = "group" if isinstance(actor, Group) else "user"
    granted_to, granted_id = ("group", via.id) if via is not None else (kind, actor.id)
    entry: dict[str, Any] = {
        "role": {"id": role.id}, kind: {"id": actor.id}, "scope": {"project": {"id": project.id}},
        "links": {"assignment": v3_url(f"/projects/{project.id}/{granted_to}s/{granted_id}/roles/{role.id}")},
    }
    if via is not None:
        entry["links"]["membership"] = v3_url(f"/groups/{via.id}/users/{actor.id}")
    if include_names:
        entry["role"]["name"] = role.name
        entry[kind].update(name=actor.name, domain=accounts.domain_ref(actor.domain_id))
        entry["scope"]["project"].update(name=project.name, domain=accounts.domain_ref(project.domain_id))
    return entry


class RoleAssignmentsView(IdentityView):
    """``GET /v3/role_assignments`` with ``user.id``, ``group.id``, ``scope.project.id``,
    ``role.id``, ``effective`` (implied roles and group memberships expanded into user
    assignments) and ``include_names``."""

    @extend_schema(responses={200: dict}, summary="List role assignments")
    def get(self, request: Request) -> Response:
        params = request.query_params
        user_filter, group_filter = params.get("user.id"), params.get("group.id")
        if not (user_filter and user_filter == self.ctx.user_id):
            authorize(self.ctx, "identity:list_role_assignments")
        if "scope.domain.id" in params or "scope.system" in params:
            return Response({"role_assignments": [], "links": collection_links("/role_assignments")})
        effective = "effective" in params
        include_names = "include_names" in params
        users = User.objects.order_by("name")
        if user_filter:
            users = users.filter(id=user_filter)
        groups_qs = Group.objects.order_by("name")
        if group_filter:
            groups_qs = groups_qs.filter(id=group_filter)
        projects = Project.objects.all()
        if params.get("scope.project.id"):
            projects = projects.filter(id=params["scope.project.id"])
        by_name = {r.name: r for r in Role.objects.all()}
        role_filter = params.get("role.id")

        def picked(names: list[str] | set[str]) -> list[Role]:
            found = [by_name[n] for n in roles.role_names() if n in names and n in by_name]
            return [r for r in found if not role_filter or r.id == role_filter]

        out = []
        for project in projects.order_by("name"):
            if not group_filter:
                for user in users:
                    names = (roles.roles_for if effective else roles.assigned_roles)(user=user, project=project)
                    out += [_assignment_entry(user, project, r, include_names=include_names) for r in picked(names)]
            if user_filter:
                continue
            for group in groups_qs:
                names = roles.group_assigned_roles(group=group, project=project)
                if not effective:
                    out += [_assignment_entry(group, project, r, include_names=include_names) for r in picked(names)]
                elif group_filter:
                    for member in groups.group_members(group):
                        out += [_assignment_entry(member, project, r, include_names=include_names, via=group)
                                for r in picked(roles.with_implied(names))]
        return Response({"role_assignments": out, "links": collection_links("/role_assignments")})
