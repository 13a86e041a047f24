"""Cinder's ``os-quota-sets`` (``/v3/{project}/os-quota-sets/{target}`` and the project-less form)
over ``volumes.quotas``: show (``?usage=True`` for usage), defaults, update and delete."""
from __future__ import annotations

from typing import Any

from rest_framework.request import Request
from rest_framework.response import Response

from cloudcore.core.api.validation import validate
from cloudcore.core.exceptions import Invalid

from .. import quotas
from .views import VolumeAPIView

UPDATE_SCHEMA = {"type": "object", "required": ["quota_set"],
                 "properties": {"quota_set": {"type": "object"}}}


def _usage_param(request: Request) -> bool:
    value = request.query_params.get("usage", "false")
    text = value.lower()
    if text not in ("true", "false", "1", "0", "yes", "no", "on", "off", "t", "f", "y", "n"):
        raise Invalid(f"Invalid input received: Value '{value}' for 'usage' is not a boolean.")
    return text in ("true", "1", "yes", "on", "t", "y")


class QuotaSetView(VolumeAPIView):
    def get(self, request: Request, target: str, **_kw: Any) -> Response:
        if _usage_param(request):
            body: dict[str, Any] = quotas.quota_show_usage(self.ctx, target)
        else:
            body = quotas.quota_show(self.ctx, target)
        return Response({"quota_set": {"id": target, **body}})

    def put(self, request: Request, target: str, **_kw: Any) -> Response:
        body = validate(self.body(), UPDATE_SCHEMA)
        limits = quotas.quota_update(self.ctx, target, changes=body["quota_set"],
                                     skip_validation=body.get("skip_validation", True))
        return Response({"quota_set": limits})

    def delete(self, request: Request, target: str, **_kw: Any) -> Response:
        quotas.quota_delete(self.ctx, target)
        return Response(status=200)


class QuotaSetDefaultsView(VolumeAPIView):
    def get(self, request: Request, target: str, **_kw: Any) -> Response:
        return Response({"quota_set": {"id": target, **quotas.quota_defaults(self.ctx, target)}})
