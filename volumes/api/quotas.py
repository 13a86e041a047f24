"""Cinder's ``/os-quota-sets/{project_id}``: show (``?usage=true`` for limit/in_use/reserved),
update and delete (admins), ``/os-quota-sets/{project_id}/defaults``, and the admins'
``/os-quota-class-sets/{class}`` (show and update; the ``default`` class sets the defaults)."""
from __future__ import annotations

from typing import Any

from rest_framework.request import Request
from rest_framework.response import Response

from cloudcore.core.api.validation import validate, word_bool

from .. import quotas
from .views import VolumeAPIView

UPDATE_SCHEMA = {"type": "object", "required": ["quota_set"], "properties": {"quota_set": {"type": "object"}}}


class QuotaSetView(VolumeAPIView):
    def get(self, request: Request, target_project: str, **_kw: Any) -> Response:
        flag = request.query_params.get("usage", "false").lower()
        with_usage = word_bool(flag, invalid=f"Invalid input received: Invalid value '{flag}' for usage.")
        shown = quotas.quota_set_get(self.ctx, target_project, with_usage=with_usage)
        return Response({"quota_set": {"id": target_project, **shown}})

    def put(self, request: Request, target_project: str, **_kw: Any) -> Response:
        body = validate(self.body(), UPDATE_SCHEMA)
        return Response({"quota_set": quotas.quota_set_update(self.ctx, target_project, values=body["quota_set"],
                                                              skip_validation=body.get("skip_validation", True))})

    def delete(self, request: Request, target_project: str, **_kw: Any) -> Response:
        quotas.quota_set_delete(self.ctx, target_project)
        return Response(status=200)


class QuotaDefaultsView(VolumeAPIView):
    def get(self, request: Request, target_project: str, **_kw: Any) -> Response:
        return Response({"quota_set": {"id": target_project, **quotas.quota_defaults_get(self.ctx, target_project)}})


CLASS_SCHEMA = {"type": "object", "required": ["quota_class_set"],
                "properties": {"quota_class_set": {"type": "object"}}}


class QuotaClassSetView(VolumeAPIView):
    def get(self, request: Request, class_name: str, **_kw: Any) -> Response:
        return Response({"quota_class_set": {"id": class_name, **quotas.quota_class_get(self.ctx, class_name)}})

    def put(self, request: Request, class_name: str, **_kw: Any) -> Response:
        body = validate(self.body(), CLASS_SCHEMA)
        # the update's body has no id (Cinder's)
        return Response({"quota_class_set": quotas.quota_class_update(self.ctx, class_name,
                                                                      values=body["quota_class_set"])})
