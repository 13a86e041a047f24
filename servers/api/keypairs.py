"""Keypairs API (``/os-keypairs``): 2.2 ``type`` (ssh/x509) and 201/204 codes, 2.10 ``user_id``
(admins act for another user), 2.35 paging, 2.92 import only (no generation)."""
from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from cloudcore.core.api.microversion import Version
from cloudcore.core.api.validation import VersionedSchema, reject_unknown_params
from cloudcore.core.api.versioned import present
from cloudcore.core.api.views import ComputeAPIView
from cloudcore.core.exceptions import Invalid

from ..models import KeyPair
from ..presenter import (
    KEYPAIR_BRIEF_FIELDS,
    KEYPAIR_CREATE_STATUS,
    KEYPAIR_CREATED_FIELDS,
    KEYPAIR_DELETE_STATUS,
    KEYPAIR_FIELDS,
    base_url,
)
from ..services import keypairs as svc
from .schemas import KEYPAIR_FEATURES, KEYPAIR_QUERY

_NAME_20 = {"type": "string", "minLength": 1, "maxLength": 255, "pattern": r"^(?!\s+$)[a-zA-Z0-9 _-]+$"}
_NAME_292 = {"type": "string", "minLength": 1, "maxLength": 255, "pattern": r"^(?!\s+$)[a-zA-Z0-9 @._-]+$"}
_PUBLIC_KEY = {"type": "string"}
_TYPE = {"type": "string", "enum": ["ssh", "x509"]}


def _schema(props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"keypair": {"type": "object", "properties": props, "required": required,
                                   "additionalProperties": False}},
        "required": ["keypair"],
        "additionalProperties": False,
    }


KEYPAIR_CREATE = VersionedSchema(
    ("2.1", "2.1", _schema({"name": _NAME_20, "public_key": _PUBLIC_KEY}, ["name"])),
    ("2.2", "2.9", _schema({"name": _NAME_20, "public_key": _PUBLIC_KEY, "type": _TYPE}, ["name"])),
    ("2.10", "2.91", _schema({"name": _NAME_20, "public_key": _PUBLIC_KEY, "type": _TYPE,
                              "user_id": {"type": "string"}}, ["name"])),
    ("2.92", None, _schema({"name": _NAME_292, "public_key": _PUBLIC_KEY, "type": _TYPE,
                            "user_id": {"type": "string"}}, ["name", "public_key"])),
)


def present_keypair_brief(keypair: KeyPair, version: Version) -> dict[str, Any]:
    return {"keypair": present(KEYPAIR_BRIEF_FIELDS, keypair, version)}


def present_keypair(keypair: KeyPair, version: Version) -> dict[str, Any]:
    return present(KEYPAIR_FIELDS, keypair, version)


class KeypairAPIView(ComputeAPIView):
    def query(self, request: Request, *, listing: bool = False) -> dict[str, Any]:
        """The query parameters that exist at this microversion (unknown ones are a 400 from 2.75)."""
        params = request.query_params
        if KEYPAIR_FEATURES.has("strict_query", self.version):
            allowed = KEYPAIR_QUERY.names_at(self.version)
            reject_unknown_params(params, allowed if listing else allowed & {"user_id"})
        return KEYPAIR_QUERY.only(params.dict(), self.version)


class KeypairsView(KeypairAPIView):
    query_parameters = frozenset({"user_id", "limit", "marker"})

    @extend_schema(responses={200: dict}, summary="List keypairs")
    def get(self, request: Request) -> Response:
        params = self.query(request, listing=True)
        user_id, marker, limit = params.get("user_id"), params.get("marker"), None
        raw = params.get("limit")
        if raw is not None:
            if not raw.isdigit():
                raise Invalid(f"Invalid input for query parameters limit. Value: {raw}. "
                              f"'{raw}' does not match '^[0-9]*$'")
            limit = int(raw)
        items = svc.keypair_list(actor=self.ctx, user_id=user_id, limit=limit, marker=marker)
        body: dict[str, Any] = {"keypairs": [present_keypair_brief(k, self.version) for k in items]}
        if limit and len(items) == limit:
            query = {k: v for k, v in request.query_params.items() if k != "marker"}
            query["marker"] = items[-1].name
            body["keypairs_links"] = [{"rel": "next", "href": f"{base_url()}/v2.1/os-keypairs?{urlencode(query)}"}]
        return Response(body)

    @extend_schema(request=dict, responses={200: dict, 201: dict}, summary="Import (or generate) a keypair")
    def post(self, request: Request) -> Response:
        body = self.body()
        if (KEYPAIR_FEATURES.has("import_only", self.version) and isinstance(body, dict)
                and isinstance(body.get("keypair"), dict) and "public_key" not in body["keypair"]):
            raise Invalid("Keypair generation is not supported (microversion 2.92 and later): "
                          "'public_key' is a required property")
        data = KEYPAIR_CREATE.validate(body, self.version)["keypair"]
        key_type = data.get("type", "ssh")
        created = svc.keypair_create(
            actor=self.ctx, name=data["name"], user_id=data.get("user_id"), public_key=data.get("public_key"),
            key_type=key_type,
        )
        keypair = created.keypair
        out = present(KEYPAIR_CREATED_FIELDS, keypair, self.version)
        if created.private_key is not None:
            out["private_key"] = created.private_key
        return Response({"keypair": out}, status=KEYPAIR_CREATE_STATUS.at(self.version))


class KeypairView(KeypairAPIView):
    query_parameters = frozenset({"user_id"})

    @extend_schema(responses={200: dict}, summary="Show a keypair")
    def get(self, request: Request, keypair_name: str) -> Response:
        keypair = svc.keypair_get(actor=self.ctx, name=keypair_name, user_id=self.query(request).get("user_id"))
        return Response({"keypair": present_keypair(keypair, self.version)})

    @extend_schema(responses={202: None, 204: None}, summary="Delete a keypair")
    def delete(self, request: Request, keypair_name: str) -> Response:
        svc.keypair_delete(actor=self.ctx, name=keypair_name, user_id=self.query(request).get("user_id"))
        return Response(status=KEYPAIR_DELETE_STATUS.at(self.version))
