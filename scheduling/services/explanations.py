"""Scheduling explanations for operators (issue 22): the stored trace of a server's decision, and
the dry run of a request (a flavor, image, zone and hints, or a server's own request spec). What
the API view and ``manage.py scheduler explain`` call; policy is the caller's (both are admin)."""
from __future__ import annotations

import re
from typing import Any

from oslo_utils import uuidutils

from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Conflict, NotFound
from images.services import image_find
from servers.selectors import names_of, server_list
from servers.services.flavors import flavor_find
from servers.services.server_groups import group_for_create

from ..explain import dry_run_spec, explain_request
from ..trace import trace_text
from .request_specs import request_spec_get
from .traces import trace_record_get


class SchedulingTraceNotFound(NotFound):
    message = "No scheduling trace is kept for server %(server)s."


def server_ref(ref: str) -> str:
    """The uuid of the server ``ref`` names for an operator's command: its uuid, or its name when
    one server of any project has that name (as the ``openstack`` client finds a server). NotFound
    when none does, Conflict when several do (the client's words)."""
    if uuidutils.is_uuid_like(ref):
        return ref
    found = server_list(RequestContext.system(), filters={"name": f"^{re.escape(ref)}$", "all_tenants": True},
                        limit=None, marker=None, columns=())
    uuids = [record.uuid for record in found.records]
    if not uuids:
        raise NotFound(f"No server with a name or ID of '{ref}' exists.")
    if len(uuids) > 1:
        raise Conflict(f"More than one server exists with the name '{ref}'.")
    return uuids[0]


def server_explanation(*, instance_uuid: str, request_id: str | None = None) -> dict[str, Any]:
    """The latest stored trace of the server (of ``request_id`` when given), with its text.
    Raises SchedulingTraceNotFound (404)."""
    record = trace_record_get(instance_uuid=instance_uuid, request_id=request_id)
    if record is None:
        raise SchedulingTraceNotFound(server=instance_uuid)
    return {
        "server_id": instance_uuid, "request_id": record.request_id,
        "created_at": record.created_at.replace(tzinfo=None).isoformat(), "result": record.result,
        "message": record.message or None, "trace": record.trace, "text": trace_text(record.trace),
    }


def server_dry_run(*, instance_uuid: str) -> dict[str, Any]:
    """The dry run of the server's own request spec (one instance): would it fit now?"""
    spec = request_spec_get(instance_uuid)
    if spec is None:
        raise NotFound(f"Server {instance_uuid} has no request spec.")
    return explain_request(spec={**spec, "num_instances": 1}, server_names=names_of)


def request_dry_run(*, actor: RequestContext, flavor_ref: str, image_ref: str | None = None,
                    availability_zone: str | None = None, hints: dict[str, Any] | None = None) -> dict[str, Any]:
    """The dry run of booting one server with that flavor (id or name), image (id or name), zone
    and scheduler hints. A ``group`` hint is honoured as a boot honours it (its policy filters or
    weighs the hosts). Raises FlavorNotFound / ImageNotFound (404), Invalid (400) for a group
    that is not found, GroupMembersQuotaExceeded (403) for a full one."""
    flavor = flavor_find(flavor_ref.rstrip("/").rsplit("/", 1)[-1])
    image: dict[str, Any] | None = None
    if image_ref:
        found = image_find(actor, image_ref.rstrip("/").rsplit("/", 1)[-1])
        image = {"id": found.id, "name": found.name, "properties": dict(found.properties or {})}
    hints = dict(hints or {})
    group = group_for_create(actor=actor, group_uuid=str(hints["group"]), count=1) if hints.get("group") else None
    spec = dry_run_spec(flavor=flavor.as_dict(), image=image, availability_zone=availability_zone,
                        hints=hints, project_id=actor.project_id, user_id=actor.user_id, instance_group=group)
    return explain_request(spec=spec, server_names=names_of)
