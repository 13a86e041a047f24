"""Quota sets (``/os-quota-sets/{project_id}``, ``/defaults``, ``/detail``) and quota classes
(``/os-quota-class-sets/{class}``), over ``servers.services.quotas``.

Which resources a body carries depends on the microversion, in one table per resource below:
the network proxies (stored and shown, never enforced: Neutron owns them) go at 2.36 for quota
sets and at 2.50 for quota classes (which gain the server group resources there); the injected-file ones go at 2.57.
``?user_id=`` reads a user's view of the project's quota (key pairs counted for that user);
per-user limits are not stored, so a write with ``user_id`` is refused.
"""
from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from cloudcore.core.api.microversion import Version
from cloudcore.core.api.validation import VersionedSchema, reject_unknown_params
from cloudcore.core.api.views import ComputeAPIView
from cloudcore.core.exceptions import Invalid
from cloudcore.core.policy import authorize

from ..services import quotas as svc

V236, V250, V257, V275 = (2, 36), (2, 50), (2, 57), (2, 75)

_PROXIES = ("fixed_ips", "floating_ips", "security_group_rules", "security_groups")
_INJECTED = ("injected_files", "injected_file_content_bytes", "injected_file_path_bytes")
_GROUPS = ("server_groups", "server_group_members")
_CORE = ("instances", "cores", "ram", "metadata_items", "key_pairs")

#: (first version, last version, resources shown) — quota sets, then quota classes.
QUOTA_SET_RESOURCES: list[tuple[Version, Version, tuple[str, ...]]] = [
    ((2, 1), (2, 35), (*_CORE, *_INJECTED, *_GROUPS, *_PROXIES)),
    ((2, 36), (2, 56), (*_CORE, *_INJECTED, *_GROUPS)),
    ((2, 57), (99, 99), (*_CORE, *_GROUPS)),
]
QUOTA_CLASS_RESOURCES: list[tuple[Version, Version, tuple[str, ...]]] = [
    ((2, 1), (2, 49), (*_CORE, *_INJECTED, *_PROXIES)),
    ((2, 50), (2, 56), (*_CORE, *_INJECTED, *_GROUPS)),
    ((2, 57), (99, 99), (*_CORE, *_GROUPS)),
]

_LIMIT = {"type": ["integer", "string"], "pattern": r"^-?[0-9]+$", "minimum": -1, "maximum": 0x7FFFFFFF}
_FORCE = {"type": ["boolean", "string"], "enum": [True, False, "True", "False", "true", "false"]}


def _resources(table: list[tuple[Version, Version, tuple[str, ...]]], version: Version) -> tuple[str, ...]:
    return next(names for lo, hi, names in table if lo <= version <= hi)


def _body_schema(key: str, names: tuple[str, ...], *, force: bool) -> dict[str, Any]:
    props: dict[str, Any] = dict.fromkeys(names, _LIMIT)
    if force:
        props["force"] = _FORCE
    return {
        "type": "object",
        "properties": {key: {"type": "object", "properties": props, "additionalProperties": False}},
        "required": [key],
        "additionalProperties": False,
    }


def _versioned(key: str, table: list[tuple[Version, Version, tuple[str, ...]]], *, force: bool,
               extra: tuple[str, ...] = ()) -> VersionedSchema:
    return VersionedSchema(*[
        (f"{lo[0]}.{lo[1]}", None if hi == (99, 99) else f"{hi[0]}.{hi[1]}",
         _body_schema(key, (*names, *(extra if lo == (2, 1) else ())), force=force))
        for lo, hi, names in table
    ])


#: Nova's pre-2.36 update also takes ``networks`` (ignored: Neutron owns it).
QUOTA_SET_UPDATE = _versioned("quota_set", QUOTA_SET_RESOURCES, force=True, extra=("networks",))
QUOTA_CLASS_UPDATE = _versioned("quota_class_set", QUOTA_CLASS_RESOURCES, force=False, extra=("networks",))


def _shown(limits: dict[str, int], names: tuple[str, ...]) -> dict[str, int]:
    return {name: limits.get(name, -1) for name in names}


class QuotaAPIView(ComputeAPIView):
    def user_param(self, request: Request) -> str | None:
        if self.version >= V275:
            reject_unknown_params(request.query_params, {"user_id"})
        return request.query_params.get("user_id") or None

    def resources(self) -> tuple[str, ...]:
        return _resources(QUOTA_SET_RESOURCES, self.version)


class QuotaSetView(QuotaAPIView):
    query_parameters = frozenset({"user_id"})

    @extend_schema(responses={200: dict}, summary="Show a project's quotas")
    def get(self, request: Request, project_id: str) -> Response:
        user_id = self.user_param(request)
        authorize(self.ctx, "os_compute_api:os-quota-sets:show", {"project_id": project_id, "user_id": user_id})
        body = {"id": project_id, **_shown(svc.quota_limits(project_id), self.resources())}
        return Response({"quota_set": body})

    @extend_schema(request=dict, responses={200: dict}, summary="Update a project's quotas")
    def put(self, request: Request, project_id: str) -> Response:
        user_id = self.user_param(request)
        body = QUOTA_SET_UPDATE.validate(self.body(), self.version)["quota_set"]
        if user_id:
            raise Invalid("Per-user quotas are not supported.")
        force = str(body.pop("force", False)).lower() == "true"
        limits = {name: int(value) for name, value in body.items()}
        result = svc.quota_set_update(actor=self.ctx, project_id=project_id, limits=limits, force=force)
        return Response({"quota_set": _shown(result, self.resources())})

    @extend_schema(responses={202: None}, summary="Revert a project's quotas to the defaults")
    def delete(self, request: Request, project_id: str) -> Response:
        user_id = self.user_param(request)
        if user_id:
            raise Invalid("Per-user quotas are not supported.")
        svc.quota_set_delete(actor=self.ctx, project_id=project_id)
        return Response(status=202)


class QuotaSetDefaultsView(QuotaAPIView):
    @extend_schema(responses={200: dict}, summary="Show the default quotas")
    def get(self, request: Request, project_id: str) -> Response:
        authorize(self.ctx, "os_compute_api:os-quota-sets:defaults", {"project_id": project_id})
        body = {"id": project_id, **_shown(svc.quota_class_limits(), self.resources())}
        return Response({"quota_set": body})


class QuotaSetDetailView(QuotaAPIView):
    query_parameters = frozenset({"user_id"})

    @extend_schema(responses={200: dict}, summary="Show a project's quotas with usage")
    def get(self, request: Request, project_id: str) -> Response:
        user_id = self.user_param(request)
        authorize(self.ctx, "os_compute_api:os-quota-sets:detail", {"project_id": project_id, "user_id": user_id})
        limits = svc.quota_limits(project_id)
        in_use = svc.quota_in_use(project_id, user_id)
        body: dict[str, Any] = {"id": project_id}
        for name in self.resources():
            body[name] = {"in_use": in_use.get(name, 0), "limit": limits.get(name, -1), "reserved": 0}
        return Response({"quota_set": body})


class QuotaClassSetView(ComputeAPIView):
    def resources(self) -> tuple[str, ...]:
        return _resources(QUOTA_CLASS_RESOURCES, self.version)

    @extend_schema(responses={200: dict}, summary="Show a quota class")
    def get(self, request: Request, class_name: str) -> Response:
        authorize(self.ctx, "os_compute_api:os-quota-class-sets:show", {"quota_class": class_name})
        body = {"id": class_name, **_shown(svc.quota_class_limits(class_name), self.resources())}
        return Response({"quota_class_set": body})

    @extend_schema(request=dict, responses={200: dict}, summary="Update a quota class")
    def put(self, request: Request, class_name: str) -> Response:
        body = QUOTA_CLASS_UPDATE.validate(self.body(), self.version)["quota_class_set"]
        limits = {name: int(value) for name, value in body.items()}
        result = svc.quota_class_update(actor=self.ctx, class_name=class_name, limits=limits)
        return Response({"quota_class_set": _shown(result, self.resources())})
