"""``/servers/{id}/os-instance-actions``: the actions recorded on a server, with their events.

2.21 deleted servers too; 2.51 events for everyone (traceback only with the events policy);
2.58 ``updated_at``, paging (``limit``/``marker``) and ``changes-since``; 2.62 event
``hostId`` (and ``host`` with the events policy); 2.66 ``changes-before``; 2.84 event ``details``.
"""
from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.db.models import Q
from django.utils.dateparse import parse_datetime
from rest_framework.request import Request
from rest_framework.response import Response

from cells.context import target_cell
from cells.selectors import instance_mapping_get
from cloudcore.core.api.versioned import present
from cloudcore.core.api.views import ComputeAPIView
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Invalid, NotFound
from cloudcore.core.policy import authorize, can

from ..models import Instance, InstanceAction
from ..presenter import INSTANCE_ACTION_EVENT_FIELDS, INSTANCE_ACTION_FIELDS, EventView, base_url
from ..selectors import ServerNotFound
from .schemas import INSTANCE_ACTION_FEATURES, INSTANCE_ACTION_QUERY


def _lookup(actor: RequestContext, server_id: str, version: tuple[int, int]) -> tuple[Any, Instance | None]:
    """(cell, instance) of the server; deleted servers are found from 2.21."""
    mapping = instance_mapping_get(server_id)
    if mapping is None or not (actor.is_admin or mapping.project_id == actor.project_id):
        raise ServerNotFound(instance_id=server_id)
    if mapping.cell is None:
        return None, None
    with target_cell(mapping.cell):
        qs = Instance.all_objects.filter(uuid=server_id)
        if not INSTANCE_ACTION_FEATURES.has("deleted_servers", version):
            qs = qs.filter(deleted=False)
        instance = qs.first()
    if instance is None:
        raise ServerNotFound(instance_id=server_id)
    return mapping.cell, instance


def _target(instance: Instance) -> dict[str, Any]:
    return {"project_id": instance.project_id, "user_id": instance.user_id}


class InstanceActionsView(ComputeAPIView):
    query_parameters = frozenset({"limit", "marker", "changes-since", "changes-before"})

    def get(self, request: Request, server_id: str) -> Response:
        actor, version = self.ctx, self.version
        cell, instance = _lookup(actor, server_id, version)
        target = _target(instance) if instance else {"project_id": actor.project_id}
        authorize(actor, "os_compute_api:os-instance-actions:list", target)
        if cell is None:
            return Response({"instanceActions": []})
        params = INSTANCE_ACTION_QUERY.only(request.query_params.dict(), version)
        limit: int | None = None
        q = Q(instance_uuid=server_id)
        if "limit" in params:
            try:
                limit = int(params["limit"])
            except ValueError as exc:
                raise Invalid("limit param must be an integer") from exc
            if limit < 0:
                raise Invalid("limit param must be positive")
        marker = params.get("marker")
        for key, lookup in (("changes-since", "updated_at__gte"), ("changes-before", "updated_at__lte")):
            if key in params:
                when = parse_datetime(params[key].replace(" ", "+"))
                if when is None:
                    raise Invalid(f"Invalid input for query parameters {key}. Value: {params[key]}.")
                q &= Q(**{lookup: when})
        with target_cell(cell):
            qs = InstanceAction.objects.filter(q).order_by("-start_time", "-id")
            if marker:
                anchor = InstanceAction.objects.filter(instance_uuid=server_id, request_id=marker).first()
                if anchor is None:
                    raise Invalid(f"Marker {marker} could not be found.")
                qs = qs.filter(Q(start_time__lt=anchor.start_time) | Q(start_time=anchor.start_time, id__lt=anchor.id))
            if limit is not None:
                qs = qs[:limit]
            actions = list(qs)
        body: dict[str, Any] = {"instanceActions": [present(INSTANCE_ACTION_FIELDS, a, version) for a in actions]}
        if limit is not None and actions and len(actions) >= limit:
            query = urlencode({"limit": limit, "marker": actions[-1].request_id})
            body["links"] = [{"rel": "next",
                              "href": f"{base_url()}/v2.1/servers/{server_id}/os-instance-actions?{query}"}]
        return Response(body)


class InstanceActionView(ComputeAPIView):
    def get(self, request: Request, server_id: str, request_id: str) -> Response:
        actor, version = self.ctx, self.version
        cell, instance = _lookup(actor, server_id, version)
        if cell is None or instance is None:
            raise NotFound(f"Action for request_id {request_id} on instance {server_id} not found")
        target = _target(instance)
        authorize(actor, "os_compute_api:os-instance-actions:show", target)
        show_events = can(actor, "os_compute_api:os-instance-actions:events", target)
        show_details = can(actor, "os_compute_api:os-instance-actions:events:details", target)
        with target_cell(cell):
            action = InstanceAction.objects.filter(instance_uuid=server_id, request_id=request_id).first()
            if action is None:
                raise NotFound(f"Action for request_id {request_id} on instance {server_id} not found")
            events = list(action.events.all().order_by("-start_time", "-id"))
        body = present(INSTANCE_ACTION_FIELDS, action, version)
        if show_events or INSTANCE_ACTION_FEATURES.has("events_for_all", version):
            body["events"] = [present(INSTANCE_ACTION_EVENT_FIELDS,
                                      EventView(ev, instance.project_id, show_events, show_details), version)
                              for ev in events]
        return Response({"instanceAction": body})
