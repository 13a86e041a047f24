"""Neutron's ``/v2.0/quotas`` (quotas and quota_details extensions) over ``networks.quotas``: the
admin's listing of projects with limits of their own, a project's limits, defaults and details."""
from __future__ import annotations

from typing import Any

from rest_framework.request import Request
from rest_framework.response import Response

from .. import quotas
from .views import NeutronView


def present_quota(project_id: str, limits: dict[str, int]) -> dict[str, Any]:
    return {**limits, "project_id": project_id, "tenant_id": project_id}


class QuotasView(NeutronView):
    def get(self, request: Request) -> Response:
        return Response({"quotas": [present_quota(project_id, limits)
                                    for project_id, limits in quotas.quota_list(self.ctx)]})


class QuotaView(NeutronView):
    def get(self, request: Request, project_id: str) -> Response:
        return Response({"quota": quotas.quota_get(self.ctx, project_id)})

    def put(self, request: Request, project_id: str) -> Response:
        return Response({"quota": quotas.quota_update(self.ctx, project_id, changes=self._resource("quota"))})

    def delete(self, request: Request, project_id: str) -> Response:
        quotas.quota_delete(self.ctx, project_id)
        return Response(status=204)


class QuotaDefaultView(NeutronView):
    def get(self, request: Request, project_id: str) -> Response:
        return Response({"quota": quotas.quota_defaults(self.ctx, project_id)})


class QuotaDetailsView(NeutronView):
    def get(self, request: Request, project_id: str) -> Response:
        return Response({"quota": quotas.quota_details(self.ctx, project_id)})
