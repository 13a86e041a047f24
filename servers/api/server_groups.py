"""Server groups API (``/os-server-groups``): ``policies`` (a list of one) before 2.64, ``policy``
and ``rules`` from 2.64; ``project_id``/``user_id`` from 2.13; soft policies from 2.15. Create
answers 200, as Nova does."""
from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from cloudcore.core.api.microversion import Version
from cloudcore.core.api.validation import VersionedSchema, query_int
from cloudcore.core.api.versioned import present
from cloudcore.core.api.views import ComputeAPIView

from ..models import InstanceGroup
from ..presenter import SERVER_GROUP_FIELDS, GroupView
from ..services import server_groups as svc

_NAME = {"type": "string", "minLength": 1, "maxLength": 255, "pattern": r"^(?!\s)[^\x00-\x1f\x7f]*(?<!\s)$"}


def _schema(props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "required": ["server_group"], "additionalProperties": False,
            "properties": {"server_group": {"type": "object", "properties": props, "required": required,
                                            "additionalProperties": False}}}


def _policies(allowed: list[str]) -> dict[str, Any]:
    return {"type": "array", "items": [{"type": "string", "enum": allowed}], "uniqueItems": True,
            "minItems": 1, "maxItems": 1, "additionalItems": False}


_HARD = ["affinity", "anti-affinity"]
_ALL = [*_HARD, "soft-anti-affinity", "soft-affinity"]
GROUP_CREATE = VersionedSchema(
    ("2.1", "2.14", _schema({"name": _NAME, "policies": _policies(_HARD)}, ["name", "policies"])),
    ("2.15", "2.63", _schema({"name": _NAME, "policies": _policies(_ALL)}, ["name", "policies"])),
    ("2.64", None, _schema({"name": _NAME, "policy": {"type": "string", "enum": _ALL},
                            "rules": {"type": "object", "properties": {"max_server_per_host": {
                                "type": ["integer", "string"], "pattern": "^[0-9]*$"}},
                                "additionalProperties": False}}, ["name", "policy"])),
)


def present_group(group: InstanceGroup, version: Version) -> dict[str, Any]:
    return present(SERVER_GROUP_FIELDS, GroupView(group, svc.live_members(group)), version)


_INVALID_INT = "Invalid input for query parameters %(name)s. Value: %(value)s. '%(value)s' does not match '^[0-9]*$'"


class ServerGroupsView(ComputeAPIView):
    query_parameters = frozenset({"all_projects", "limit", "offset"})

    @extend_schema(responses={200: dict}, summary="List server groups")
    def get(self, request: Request) -> Response:
        params = request.query_params
        all_projects = str(params.get("all_projects", "")).lower() in ("1", "true", "yes", "t", "on")
        groups = svc.server_group_list(actor=self.ctx, all_projects=all_projects and self.ctx.is_admin,
                                       limit=query_int(params, "limit", invalid=_INVALID_INT, digits_only=True),
                                       offset=query_int(params, "offset", invalid=_INVALID_INT, digits_only=True) or 0)
        return Response({"server_groups": [present_group(g, self.version) for g in groups]})

    @extend_schema(request=dict, responses={200: dict}, summary="Create a server group")
    def post(self, request: Request) -> Response:
        body = GROUP_CREATE.validate(self.body(), self.version)["server_group"]
        # one of the two shapes, as the schema of the microversion allows
        policy = body["policy"] if "policy" in body else body["policies"][0]
        group = svc.server_group_create(actor=self.ctx, name=body["name"], policy=policy, rules=body.get("rules"))
        return Response({"server_group": present_group(group, self.version)})


class ServerGroupView(ComputeAPIView):
    @extend_schema(responses={200: dict}, summary="Show a server group")
    def get(self, request: Request, group_id: str) -> Response:
        group = svc.server_group_get(actor=self.ctx, group_uuid=group_id)
        return Response({"server_group": present_group(group, self.version)})

    @extend_schema(responses={204: None}, summary="Delete a server group")
    def delete(self, request: Request, group_id: str) -> Response:
        svc.server_group_delete(actor=self.ctx, group_uuid=group_id)
        return Response(status=204)
