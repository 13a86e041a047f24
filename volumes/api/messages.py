"""Cinder's ``/messages`` (3.3+; filters, sorting and paging from 3.5): list, show, delete."""
from __future__ import annotations

from typing import Any

from rest_framework.request import Request
from rest_framework.response import Response

from cloudcore.core.api.versioned import timestamp as _ts
from cloudcore.core.exceptions import NotFound

from .. import messages
from ..models import UserMessage
from ..owned import sorted_page
from .views import VolumeAPIView, _base, _int_param, _sort_param

MESSAGES_FROM = (3, 3)
PAGING_FROM = (3, 5)


class MessagesAPIView(VolumeAPIView):
    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        if self.v < MESSAGES_FROM:
            raise NotFound("The resource could not be found.")

    def message_body(self, msg: UserMessage) -> dict[str, Any]:
        base = _base(self.request)
        body: dict[str, Any] = {
            "id": msg.id, "event_id": msg.event_id, "user_message": messages.user_message_text(msg),
            "message_level": msg.message_level, "created_at": _ts(msg.created_at),
            "guaranteed_until": _ts(msg.expires_at), "request_id": msg.request_id,
            "links": [{"rel": "self", "href": f"{base}/v3/{msg.project_id}/messages/{msg.id}"},
                      {"rel": "bookmark", "href": f"{base}/{msg.project_id}/messages/{msg.id}"}]}
        if msg.resource_type:
            body["resource_type"] = msg.resource_type
        if msg.resource_uuid:
            body["resource_uuid"] = msg.resource_uuid
        return body


class MessagesView(MessagesAPIView):
    def get(self, request: Request, **_kw: Any) -> Response:
        params = request.query_params
        paging = self.v >= PAGING_FROM
        filters = {key: params[key] for key in messages.FILTERS if paging and key in params}
        found = messages.user_message_list(self.ctx, filters=filters)
        page = sorted_page(found, sort=_sort_param(params) if paging else None, sort_keys=messages.SORT_KEYS,
                           limit=_int_param(params.get("limit"), "limit") if paging else None,
                           marker=params.get("marker") if paging else None,
                           offset=(_int_param(params.get("offset"), "offset") or 0) if paging else 0)
        return Response({"messages": [self.message_body(m) for m in page]})


class MessageView(MessagesAPIView):
    def get(self, request: Request, message_id: str, **_kw: Any) -> Response:
        return Response({"message": self.message_body(messages.user_message_get(self.ctx, message_id))})

    def delete(self, request: Request, message_id: str, **_kw: Any) -> Response:
        messages.user_message_delete(self.ctx, messages.user_message_get(self.ctx, message_id))
        return Response(status=204)
