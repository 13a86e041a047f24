"""``POST /os-server-external-events`` (service or admin): 200 when every event was accepted, 207
with a per-event ``code`` otherwise; the event names allowed grow with the microversion."""
from __future__ import annotations

from typing import Any

from rest_framework.request import Request
from rest_framework.response import Response

from cloudcore.core.api.validation import validate
from cloudcore.core.api.versioned import Since
from cloudcore.core.api.views import ComputeAPIView

from ..services.external_events import EVENT_MIN_VERSION, EVENT_NAMES, server_external_events_create

EVENTS_SINCE = Since(EVENT_MIN_VERSION)


def _schema(version: tuple[int, int]) -> dict[str, Any]:
    names = [n for n in EVENT_NAMES if EVENTS_SINCE.has(n, version)]
    event = {"type": "object", "properties": {
        "name": {"type": "string", "enum": names},
        "server_uuid": {"type": "string", "format": "uuid"},
        "status": {"type": "string", "enum": ["failed", "completed", "in-progress"]},
        "tag": {"type": "string", "maxLength": 255}},
        "required": ["name", "server_uuid"], "additionalProperties": False}
    return {"type": "object", "properties": {"events": {"type": "array", "minItems": 1, "items": event}},
            "required": ["events"], "additionalProperties": False}


class ServerExternalEventsView(ComputeAPIView):
    def post(self, request: Request) -> Response:
        version = (self.version[0], self.version[1])
        body = validate(self.body(), _schema(version))
        code, events = server_external_events_create(self.ctx, events=body["events"], version=version)
        return Response({"events": events}, status=code)
