"""Neutron's housekeeping calls that clients make: ``/v2.0/quotas`` (with ``/default`` and ``/details``, an
optional ``.json`` suffix as openstacksdk sends it) and ``/v2.0/network-ip-availabilities``."""
from __future__ import annotations

from typing import Any

from rest_framework.request import Request
from rest_framework.response import Response

from .. import availability, quotas
from .views import NeutronView


def _with_project(project_id: str, limits: dict[str, Any]) -> dict[str, Any]:
    return {**limits, "project_id": project_id, "tenant_id": project_id}


class QuotasView(NeutronView):
    def get(self, request: Request) -> Response:
        return Response({"quotas": [_with_project(p, limits) for p, limits in quotas.quota_list(self.ctx)]})


class QuotaView(NeutronView):
    def get(self, request: Request, project_id: str) -> Response:
        return Response({"quota": quotas.quota_show(self.ctx, project_id)})

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


class IpAvailabilitiesView(NeutronView):
    def get(self, request: Request) -> Response:
        found = availability.ip_availability_list(self.ctx, filters=self._filters())
        return Response({"network_ip_availabilities": [self._fields(a) for a in found]})


class IpAvailabilityView(NeutronView):
    def get(self, request: Request, network_id: str) -> Response:
        return Response({"network_ip_availability": self._fields(availability.ip_availability_show(self.ctx,
                                                                                                   network_id))})
