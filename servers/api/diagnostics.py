"""``GET /servers/{id}/diagnostics``: Nova's standardized body from 2.48 (the same keys whatever
the driver), libvirt's own flat keys below; both bare objects, as Nova answers them."""
from __future__ import annotations

from rest_framework.request import Request
from rest_framework.response import Response

from cloudcore.core.api.versioned import Since
from cloudcore.core.api.views import ComputeAPIView

from ..services.diagnostics import server_diagnostics
from .servers import get_server

DIAGNOSTICS_FEATURES = Since({"standardized": (2, 48)})


class ServerDiagnosticsView(ComputeAPIView):
    def get(self, request: Request, server_id: str) -> Response:
        record = get_server(self.ctx, server_id, version=self.version)
        return Response(server_diagnostics(actor=self.ctx, record=record,
                                           standardized=DIAGNOSTICS_FEATURES.has("standardized", self.version)))
