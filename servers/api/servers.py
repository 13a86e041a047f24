"""Servers API: ``/servers``, ``/servers/detail``, ``/servers/{id}``, metadata and tags.

Handlers are thin: parse and validate (schemas per microversion in ``schemas``), look the server
up (reads authorize their rule here), call one selector or service (writes: ``server_create``,
``server_update``, ``servers.services.metadata`` / ``tags``, which check their policy at entry),
render with ``servers.presenter``'s tables. The extras of a page (addresses, tags, faults,
attached volumes, host status) are loaded in bulk, one query per cell and kind, never per server.
"""
from __future__ import annotations

import uuid as uuidlib
from collections import defaultdict
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.db.models import BooleanField, IntegerField, QuerySet, Value
from django.http import QueryDict
from django.utils.dateparse import parse_datetime
from rest_framework.request import Request
from rest_framework.response import Response

from cells.context import current_alias, target_cell
from cloudcore.core.api.validation import as_bool, query_int, reject_unknown_params, validate
from cloudcore.core.api.views import ComputeAPIView
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import CellDown, Invalid
from cloudcore.core.policy import authorize, can
from cloudcore.core.prepared import prepared_in_rows, prepared_rows
from cloudcore.core.sqlin import values_in
from hosts.selectors import compute_services
from hosts.services.servicegroup import service_is_up
from scheduling.services.request_specs import request_spec_get

from ..models import BlockDeviceMapping, InstanceFault, Tag
from ..presenter import (
    base_url,
    links,
    list_columns,
    present_down_cell_show,
    present_server,
    present_server_brief,
    present_updated_server,
    server_field_at,
)
from ..selectors import (
    ALL_REGEX_FILTERS,
    BOOLEAN_FILTERS,
    ServerRecord,
    regex_checked,
    request_spec_keys_of,
    server_get,
    server_list,
)
from ..services import create as create_svc
from ..services import delete as delete_svc
from ..services import metadata as metadata_svc
from ..services import tags as tags_svc
from ..services import update as update_svc
from ..services.disk_config import disk_config_from_api, disk_config_to_api
from ..services.external import addresses_and_group_names, instance_uuids_with_ip
from ..services.guards import record_target
from . import schemas

Version = tuple[int, int]
MAX_LIMIT = 1000


def get_server(actor: RequestContext, server_id: str, rule: str | None = None,
               version: Version = (2, 1), *, with_spec: bool = False) -> ServerRecord:
    """The server (404 if not visible), with the read ``rule`` authorized against its project
    (writes pass no rule: their service checks its own). A server whose cell does not answer is a
    503, except for show from 2.69 (a down-cell stub). ``with_spec``: with its request spec, read
    with its mapping (``server_get``'s)."""
    record = server_get(actor, server_id, with_spec=with_spec)
    if rule:
        authorize(actor, rule, record_target(record))
    if record.down_cell and not (rule == "os_compute_api:servers:show"
                                 and schemas.SERVER_FEATURES.has("down_cell_stubs", version)):
        raise CellDown(cell=record.cell.name if record.cell else "")
    return record


# --- bulk extras of a page ------------------------------------------------------------------------
def _addresses_and_group_names(records: list[ServerRecord]) -> tuple[dict[str, dict[str, Any]], dict[str, list[str]]]:
    """The addresses of the records' instances (a build request shows none) and the names of
    every record's security groups (those it asked for while it has no port)."""
    building = [r.uuid for r in records if r.instance is None or r.instance.vm_state == "building"]
    addresses, names = addresses_and_group_names([r.uuid for r in records], building=building)
    placed = {r.uuid for r in records if r.instance is not None}
    return {uuid: found for uuid, found in addresses.items() if uuid in placed}, names


def _fault_body(fault: InstanceFault, actor: RequestContext) -> dict[str, Any]:
    body: dict[str, Any] = {
        "code": fault.code,
        "created": fault.created_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "message": fault.message,
    }
    if actor.is_admin or fault.code != 500:
        body["details"] = fault.details or ""
    return body


#: The body's fields that read the server's request spec (API database).
_SPEC_FIELDS = ("pinned_availability_zone", "scheduler_hints", "server_groups")
_HOST_STATUS_RULE = "os_compute_api:servers:show:host_status"


def _shows_spec(version: Version, *, listing: bool = False) -> bool:
    return any(server_field_at(name, version, listing=listing) for name in _SPEC_FIELDS)


def _host_status(services: dict[str, Any], host: str | None) -> str:
    if not host:
        return ""
    service = services.get(host)
    if service is None:
        return "UNKNOWN"

    if service.forced_down or not service_is_up(service):
        return "DOWN"
    if service.disabled:
        return "MAINTENANCE"
    return "UP"


def _volumes(uuids: Any) -> QuerySet[BlockDeviceMapping, tuple[str, str, bool, int]]:
    return BlockDeviceMapping.objects.filter(instance_uuid__in=uuids, volume_id__isnull=False)\
        .values_list("instance_uuid", "volume_id", "delete_on_termination", "id")


def _tags_and_volumes(tag_uuids: Any, volume_uuids: Any) -> QuerySet[Tag, tuple[str, str, bool | None, int | None]]:
    """The tags (``id`` NULL) and the volumes' block devices of the servers, one ``UNION ALL``."""
    tags = Tag.objects.filter(instance_uuid__in=tag_uuids).values_list(
        "instance_uuid", "tag", Value(None, output_field=BooleanField()), Value(None, output_field=IntegerField()))
    return tags.union(_volumes(volume_uuids), all=True)


def _extras_rows(alias: str, uuids: list[str], *, want_tags: bool) -> list[tuple[Any, ...]]:
    """The rows of ``_tags_and_volumes`` (of ``_volumes`` without ``want_tags``) of a cell's servers: a
    show's statement (a client's status poll) built once per process for each cell's database
    (``prepared_rows``), a page's for its servers."""
    if not want_tags:
        return prepared_in_rows(f"servers.render.volumes.{alias}", _volumes, uuids)
    if len(uuids) == 1:
        return prepared_rows(f"servers.render.tags_and_volumes.{alias}",
                             lambda tagged, attached: _tags_and_volumes([tagged], [attached]), (uuids[0], uuids[0]))
    return [tuple(row) for row in _tags_and_volumes(values_in(uuids), values_in(uuids))]


def render(records: list[ServerRecord], *, version: Version, actor: RequestContext,
           listing: bool = False) -> list[dict[str, Any]]:
    """Detail bodies of ``records`` with their extras loaded in bulk; with ``listing``, the entries
    of a list (``present_server``'s ``listing``: the extras of a field only a show has are not loaded)."""
    by_cell: dict[str, list[ServerRecord]] = defaultdict(list)
    for r in records:
        if r.instance is not None and r.cell is not None:
            by_cell[r.cell.uuid].append(r)
    tags: dict[str, list[str]] = defaultdict(list)
    faults: dict[str, dict[str, Any]] = {}
    volumes: dict[str, list[dict[str, Any]]] = defaultdict(list)
    host_status: dict[str, str] = {}
    # the policy answers of the page, shared with its bodies' (``present_server``'s ``checks``): the
    # host status of a server whose project may not see it is not read (a member's status poll)
    checks: dict[Any, Any] = {}
    want_host_status = server_field_at("host_status", version, listing=listing)
    want_tags = server_field_at("tags", version, listing=listing)
    for cell_records in by_cell.values():
        uuids = [r.uuid for r in cell_records]
        cell = cell_records[0].cell
        assert cell is not None
        # the records' own cell mapping (read with their instance mappings), not found again by its
        # uuid among every cell: a show (a client's status poll) reads no cell list
        with target_cell(cell):
            attached: list[tuple[int, str, str, Any]] = []
            for instance_uuid, value, delete_on_termination, bdm_id in _extras_rows(
                    current_alias(), uuids, want_tags=want_tags):
                if bdm_id is None:
                    tags[instance_uuid].append(value)
                else:
                    attached.append((bdm_id, instance_uuid, value, delete_on_termination))
            for instance_uuid in uuids:
                if instance_uuid in tags:
                    tags[instance_uuid].sort()
            for _bdm_id, instance_uuid, volume_id, delete_on_termination in sorted(attached):
                # as the database gives it: SQLite's 0/1
                volumes[instance_uuid].append({"id": volume_id, "delete_on_termination": bool(delete_on_termination)})
            shows_fault = [r.uuid for r in cell_records
                           if r.instance is not None and r.instance.vm_state in ("error", "pending")]
            if shows_fault:
                for f in InstanceFault.objects.filter(instance_uuid__in=shows_fault).order_by("-created_at", "-id"):
                    faults.setdefault(f.instance_uuid, _fault_body(f, actor))
            if want_host_status:
                hosts = {r.instance.host for r in cell_records if r.instance is not None and r.instance.host
                         and _may_see_host_status(actor, r.project_id, checks)}
                if hosts:

                    services = compute_services(hosts)
                    by_host = {host: _host_status(services, host) for host in hosts}  # once per host, not per row
                    for r in cell_records:
                        assert r.instance is not None
                        host_status[r.uuid] = by_host.get(r.instance.host or "", "")
    for r in records:
        if r.build_request is not None and want_tags:
            tags[r.uuid] = sorted(r.build_request.tags or [])
    addresses, groups = _addresses_and_group_names(records)
    specs: dict[str, dict[str, Any]] = {}
    if _shows_spec(version, listing=listing):
        specs = {r.uuid: r.spec for r in records if r.spec_read and r.spec is not None}
        unread = [r.uuid for r in records if not r.spec_read]
        if unread:
            specs.update(request_spec_keys_of(unread))
    return [
        present_server(
            r, version=version, actor=actor, addresses=addresses.get(r.uuid, {}), volumes=volumes.get(r.uuid, []),
            tags=tags.get(r.uuid, []), fault=faults.get(r.uuid), host_status=host_status.get(r.uuid, ""),
            spec=specs.get(r.uuid), security_groups=groups.get(r.uuid, []), checks=checks, listing=listing,
        )
        for r in records
    ]


def _may_see_host_status(actor: RequestContext, project_id: str, checks: dict[Any, Any]) -> bool:
    """The host status policy for a server of ``project_id``, asked once per page and project (the
    key and answer ``present_server``'s ``View.can`` reads in ``checks``)."""
    key = (_HOST_STATUS_RULE, project_id)
    known = checks.get(key)
    if known is None:
        known = checks[key] = can(actor, _HOST_STATUS_RULE, {"project_id": project_id})
    return bool(known)


# --- list -----------------------------------------------------------------------------------------
_USER_FILTERS = {
    "name", "status", "image", "flavor", "changes-since", "changes-before", "reservation_id", "tags", "tags-any",
    "not-tags", "not-tags-any", "ip", "ip6", "uuid", "availability_zone", "key_name", "locked", "description",
    "user_id",
}
_ADMIN_FILTERS = {"host", "node", "deleted", "all_tenants", "project_id", "tenant_id", "hidden", "image_ref",
                  *BOOLEAN_FILTERS}
#: exact states, each repeatable (any of them): admins' filters, members' too from 2.83
_STATE_FILTERS = {"vm_state", "task_state"}
#: Nova's regular expressions on their columns (selectors.REGEX_FILTERS), one value (the last):
#: admins' filters, these members' too from 2.83; the others admins' only
_MEMBER_REGEX_FILTERS = {"power_state", "progress", "config_drive", "created_at", "launched_at", "terminated_at"}
#: what only admins may filter by, and what members may too from 2.83
_ADMINS_ONLY = _ADMIN_FILTERS | (set(ALL_REGEX_FILTERS) - _MEMBER_REGEX_FILTERS)
_FROM_2_83 = _STATE_FILTERS | _MEMBER_REGEX_FILTERS
_ADMIN_SORT_KEYS = {"host", "node", "compute_host"}
#: What ``present_server_brief`` reads of a row.
_BRIEF_COLUMNS = ("uuid", "display_name")
#: Every query parameter Nova's list schema knows; from 2.75 any other one is a 400.
_KNOWN_PARAMS = _USER_FILTERS | _ADMIN_FILTERS | {
    "limit", "marker", "sort_key", "sort_dir", "vm_state", "task_state", "power_state", "config_drive",
    "access_ip_v4", "access_ip_v6", "auto_disk_config", "progress", "launch_index", "display_name",
    "display_description", "created_at", "updated_at", "launched_at", "terminated_at", "locked_by", "kernel_id",
    "ramdisk_id", "root_device_name", "hostname", "image_ref", "flavor", "ip6", "compute_host",
    "soft_deleted", "block_device_mapping", "security_groups", "info_cache", "system_metadata", "metadata",
    "pci_devices", "services", "tags", "architecture", "os_type", "vm_mode", "default_swap_device",
    "default_ephemeral_device", "ephemeral_gb", "ephemeral_key_uuid", "key_data", "memory_mb", "vcpus", "root_gb",
    "user_data", "reservation_id", "shutdown_terminate", "disable_terminate", "cell_name", "cleaned",
    "instance_type_id", "node", "internal_id", "host", "uuid",
}


_BOOLEAN_WORDS = ("true", "false", "1", "0", "yes", "no", "on", "off")


def _timestamp(value: str, name: str) -> Any:
    parsed = parse_datetime(value.replace(" ", "+")) if value else None
    if parsed is None:
        raise Invalid(f"Invalid filter field: {name}.")
    return parsed


def list_filters(request: Request, actor: RequestContext, version: Version) -> dict[str, Any]:
    """The query string as selector filters; filters a non-admin may not use are ignored."""
    params = request.query_params
    admin = actor.is_admin
    states = admin or schemas.SERVER_FEATURES.has("member_state_filters", version)
    # Nova's query schema checks a regular expression's form whoever asks and whatever is ignored after
    # (and the search's bound, ``regex_checked``)
    for key in set(params) & {*ALL_REGEX_FILTERS, "name"}:
        for value in params.getlist(key):
            regex_checked(value, key)
    out: dict[str, Any] = {}
    for key in params:
        if key in _USER_FILTERS or (admin and key in _ADMINS_ONLY) or (states and key in _FROM_2_83):
            values = params.getlist(key)
            out[key] = values if key == "status" or key in _STATE_FILTERS else values[-1]
    for key in ("status", *_STATE_FILTERS):
        if key in out:
            out[key] = [s for s in out[key] if s]
    for key in ("tags", "tags-any", "not-tags", "not-tags-any"):
        if key in out:
            out[key] = [t for t in out[key].split(",") if t]
    for key in ("changes-since", "changes-before"):
        if key in out:
            out[key] = _timestamp(out[key], key)
    out = schemas.SERVER_LIST_QUERY.only(out, version)
    if "user_id" in out and not admin and not schemas.SERVER_FEATURES.has("member_user_id_filter", version):
        out.pop("user_id")
    if "all_tenants" in out:
        value = out["all_tenants"]
        out["all_tenants"] = value == "" or as_bool(value)
    if "tenant_id" in out and "project_id" not in out:
        out["project_id"] = out.pop("tenant_id")
    # without all_tenants the list is the caller's project whatever project_id says (Nova, and
    # Tempest's test_list_servers_by_admin_with_specified_tenant)
    if "deleted" in out:
        out["deleted"] = as_bool(out["deleted"])
    for key in set(out) & {"locked", *BOOLEAN_FILTERS}:
        if str(out[key]).lower() not in _BOOLEAN_WORDS:
            raise Invalid(f"Invalid value for {key} filter: {out[key]}")
        out[key] = as_bool(out[key])
    if out.get("ip") or out.get("ip6"):
        out["uuids"] = _uuids_with_ip(out.pop("ip", None), out.pop("ip6", None))
    return out


def _uuids_with_ip(ip: str | None, ip6: str | None) -> list[str] | None:

    return list(instance_uuids_with_ip(ip=ip, ip6=ip6))


def _next_link(request: Request, path: str, marker: str, limit: int) -> list[dict[str, str]]:
    params = [(k, v) for k in request.query_params for v in request.query_params.getlist(k)
              if k not in ("marker", "limit")]
    params += [("limit", str(limit)), ("marker", marker)]
    return [{"rel": "next", "href": f"{base_url()}/v2.1/{path}?{urlencode(params)}"}]


def _sort_params(params: QueryDict, actor: RequestContext) -> tuple[list[str], list[str]]:
    """The repeated ``sort_key`` and ``sort_dir`` parameters in order, as Nova's get_sort_params reads
    them (``created_at`` when no key is given, ``desc`` when no direction is), without the keys
    Nova ignores for members and the direction given with each of them: the directions left still
    go with their keys. server_list pads the missing directions and refuses extra ones."""
    keys = params.getlist("sort_key") or ["created_at"]
    dirs = params.getlist("sort_dir") or ["desc"]
    ignored = set() if actor.is_admin else {i for i, key in enumerate(keys) if key in _ADMIN_SORT_KEYS}
    return ([key for i, key in enumerate(keys) if i not in ignored],
            [sort_dir for i, sort_dir in enumerate(dirs) if i not in ignored])


def list_servers(view: ComputeAPIView, request: Request, *, detail: bool) -> Response:
    actor = view.ctx
    version = view.version
    rule = "os_compute_api:servers:detail" if detail else "os_compute_api:servers:index"
    authorize(actor, rule, {"project_id": actor.project_id, "user_id": actor.user_id})
    if "all_tenants" in request.query_params:
        # Nova checks the policy whenever the parameter is present (403 for a member).
        authorize(actor, f"{rule}:get_all_tenants", {"project_id": actor.project_id})
    params = request.query_params
    if schemas.SERVER_FEATURES.has("strict_query", version):
        reject_unknown_params(params.keys(), _KNOWN_PARAMS)
    filters = list_filters(request, actor, version)
    limit = min(query_int(params, "limit", invalid="%(name)s param must be an integer",
                          negative="%(name)s param must be positive", default=MAX_LIMIT) or 0, MAX_LIMIT)
    marker = params.get("marker") or None
    sort_keys, sort_dirs = _sort_params(params, actor)
    # a list of the actor's own project (server_list's restriction) reads the columns of the fields
    # the policy shows the actor there only
    own_project = actor.project_id if not (filters.get("all_tenants") and actor.is_admin) else None
    result = server_list(actor, filters=filters, limit=limit, marker=marker, sort_keys=sort_keys,
                         sort_dirs=sort_dirs, version=version,
                         columns=list_columns(version, actor=actor, project_id=own_project) if detail
                         else _BRIEF_COLUMNS)
    records = result.records
    if result.down_cells and not schemas.SERVER_FEATURES.has("down_cell_stubs", version):
        records = [r for r in records if not r.down_cell]
    if detail:
        body: dict[str, Any] = {"servers": render(records, version=version, actor=actor, listing=True)}
    else:
        body = {"servers": [
            {"id": r.uuid, "status": "UNKNOWN", "links": links("servers", r.uuid)} if r.down_cell
            else present_server_brief(r) for r in records
        ]}
    if records and len(records) >= limit:
        body["servers_links"] = _next_link(request, "servers/detail" if detail else "servers",
                                           records[-1].uuid, limit)
    return Response(body)


# --- create ---------------------------------------------------------------------------------------
def _parse_networks(raw: Any, version: Version) -> str | list[create_svc.RequestedNetwork] | None:
    if raw is None:  # before 2.37 (required from it on)
        return None
    if isinstance(raw, str):
        return raw
    out = []
    seen_ports: set[str] = set()
    for entry in raw:
        port = entry.get("port")
        net = entry.get("uuid")
        if port:
            if port in seen_ports:
                raise Invalid(f"Port {port} was requested more than once.")
            seen_ports.add(port)
            out.append(create_svc.RequestedNetwork(port_id=port, tag=entry.get("tag")))
            continue
        if not net:
            raise Invalid("Bad networks format: network uuid is not in proper format ()")
        try:
            uuidlib.UUID(str(net))
        except ValueError as exc:
            raise Invalid(f"Bad networks format: network uuid is not in proper format ({net})") from exc
        out.append(create_svc.RequestedNetwork(network_id=net, fixed_ip=entry.get("fixed_ip"), tag=entry.get("tag")))
    return out


def _parse_zone(zone: str | None) -> tuple[str | None, str | None, str | None]:
    """``az``, ``az:host``, ``az::node`` or ``az:host:node`` (host/node for admins only)."""
    if not zone:
        return None, None, None
    parts = zone.split(":")
    if len(parts) > 3:
        raise Invalid(f"Unable to parse availability_zone: {zone}")
    az = parts[0] or None
    host = parts[1] if len(parts) > 1 and parts[1] else None
    node = parts[2] if len(parts) > 2 and parts[2] else None
    return az, host, node


def _flavor_ref(value: Any) -> str:
    return str(value)


def build_create_request(body: dict[str, Any], version: Version
                         ) -> create_svc.ServerCreateRequest:
    server = body["server"]
    hints = body.get("os:scheduler_hints") or body.get("OS-SCH-HNT:scheduler_hints") or {}
    zone, forced_host, forced_node = _parse_zone(server.get("availability_zone"))
    requested_host = server.get("host")
    requested_node = server.get("hypervisor_hostname")
    min_count = int(server.get("min_count", 1))
    max_count = int(server.get("max_count", min_count))
    if min_count > max_count:
        raise Invalid("min_count must be <= max_count")
    networks = _parse_networks(server.get("networks"), version)
    if server.get("trusted_image_certificates"):
        raise Invalid("Image signature certificate validation is not supported by this cloud.")
    config_drive = server.get("config_drive")
    return create_svc.ServerCreateRequest(
        name=server["name"],
        flavor_ref=_flavor_ref(server["flavorRef"]),
        image_ref=server.get("imageRef") or None,
        block_device_mapping=list(server.get("block_device_mapping_v2") or []),
        networks=networks,
        availability_zone=zone,
        forced_host=forced_host,
        forced_node=forced_node,
        requested_host=requested_host,
        requested_node=requested_node,
        key_name=server.get("key_name"),
        metadata=dict(server.get("metadata") or {}),
        user_data=server.get("user_data"),
        tags=list(server.get("tags") or []),
        min_count=min_count,
        max_count=max_count,
        description=server.get("description"),
        hostname=server.get("hostname"),
        scheduler_hints=dict(hints),
        config_drive=bool(config_drive) and str(config_drive).lower() not in ("false", "0", ""),
        auto_disk_config=disk_config_from_api(server.get("OS-DCF:diskConfig")),
        personality=list(server.get("personality") or []),
        admin_pass=server.get("adminPass"),
        access_ip_v4=server.get("accessIPv4"),
        access_ip_v6=server.get("accessIPv6"),
        return_reservation_id=as_bool(server.get("return_reservation_id", False)),
        security_groups=[str(g["name"]) for g in server.get("security_groups") or [] if g.get("name")],
        multiattach_supported=schemas.SERVER_FEATURES.has("multiattach", version),
    )


def create_server(view: ComputeAPIView, request: Request) -> Response:
    actor = view.ctx
    version = view.version
    body = view.body()
    if not isinstance(body, dict):
        raise Invalid("The request body is invalid.")
    validate(body, schemas.create_schema(version))
    req = build_create_request(body, version)
    result = create_svc.server_create(actor=actor, request=req)
    if req.return_reservation_id:
        return Response({"reservation_id": result.reservation_id}, status=202)
    server_id = result.instance_uuids[0]
    server: dict[str, Any] = {
        "id": server_id,
        "links": links("servers", server_id),
        "OS-DCF:diskConfig": disk_config_to_api(result.auto_disk_config),
        "security_groups": [{"name": name} for name in dict.fromkeys(req.security_groups or ["default"])],
    }
    if getattr(settings, "ENABLE_INSTANCE_PASSWORD", True):
        server["adminPass"] = result.admin_pass
    response = Response({"server": server}, status=202)
    response["Location"] = server["links"][0]["href"]
    return response


# --- views ----------------------------------------------------------------------------------------
class ServersView(ComputeAPIView):
    query_parameters = None

    def get(self, request: Request) -> Response:
        return list_servers(self, request, detail=False)

    def post(self, request: Request) -> Response:
        return create_server(self, request)


class ServersDetailView(ComputeAPIView):
    query_parameters = None

    def get(self, request: Request) -> Response:
        return list_servers(self, request, detail=True)


def _down_cell_show(record: ServerRecord, version: Version) -> dict[str, Any]:
    """Nova's show of a server whose cell does not answer (2.69): what the API database knows."""

    spec = record.spec if record.spec_read else request_spec_get(record.uuid)
    return present_down_cell_show(record, version=version, spec=spec or {})


class ServerView(ComputeAPIView):
    def get(self, request: Request, server_id: str) -> Response:
        # from 2.69 (a down cell's stub reads it) the request spec is read with the mapping
        record = get_server(self.ctx, server_id, "os_compute_api:servers:show", self.version,
                            with_spec=_shows_spec(self.version)
                            or schemas.SERVER_FEATURES.has("down_cell_stubs", self.version))
        if record.down_cell:
            return Response({"server": _down_cell_show(record, self.version)})
        return Response({"server": render([record], version=self.version, actor=self.ctx)[0]})

    def put(self, request: Request, server_id: str) -> Response:
        record = get_server(self.ctx, server_id)
        body = self.body()
        validate(body, schemas.update_schema(self.version))
        changes = body["server"]
        fields = {"name": "name", "description": "description", "hostname": "hostname",
                  "accessIPv4": "access_ip_v4", "accessIPv6": "access_ip_v6",
                  "pinned_availability_zone": "pinned_availability_zone"}
        args = {arg: changes[key] for key, arg in fields.items() if key in changes}
        if "OS-DCF:diskConfig" in changes:
            args["auto_disk_config"] = disk_config_from_api(changes["OS-DCF:diskConfig"])
        record = update_svc.server_update(actor=self.ctx, record=record, **args)
        return Response({"server": present_updated_server(render([record], version=self.version, actor=self.ctx)[0],
                                                          version=self.version)})

    def delete(self, request: Request, server_id: str) -> Response:
        record = get_server(self.ctx, server_id)
        delete_svc.server_delete(actor=self.ctx, record=record)
        return Response(status=204)


# --- metadata -------------------------------------------------------------------------------------
class ServerMetadataView(ComputeAPIView):
    def get(self, request: Request, server_id: str) -> Response:
        record = get_server(self.ctx, server_id, "os_compute_api:server-metadata:index")
        return Response({"metadata": metadata_svc.server_metadata_of(record)})

    def post(self, request: Request, server_id: str) -> Response:
        record = get_server(self.ctx, server_id)
        body = validate(self.body(), schemas.METADATA_BODY)
        return Response({"metadata": metadata_svc.server_metadata_update(
            actor=self.ctx, record=record, metadata=body["metadata"], replace=False)})

    def put(self, request: Request, server_id: str) -> Response:
        record = get_server(self.ctx, server_id)
        body = validate(self.body(), schemas.METADATA_BODY)
        return Response({"metadata": metadata_svc.server_metadata_update(
            actor=self.ctx, record=record, metadata=body["metadata"], replace=True)})


class ServerMetadataItemView(ComputeAPIView):
    def get(self, request: Request, server_id: str, key: str) -> Response:
        record = get_server(self.ctx, server_id, "os_compute_api:server-metadata:show")
        metadata = metadata_svc.server_metadata_of(record)
        if key not in metadata:
            raise metadata_svc.MetadataItemNotFound()
        return Response({"meta": {key: metadata[key]}})

    def put(self, request: Request, server_id: str, key: str) -> Response:
        record = get_server(self.ctx, server_id)
        body = validate(self.body(), schemas.META_ITEM_BODY)
        if key not in body["meta"]:
            raise Invalid("Request body and URI mismatch")
        metadata_svc.server_metadata_item_set(actor=self.ctx, record=record, key=key, value=body["meta"][key])
        return Response({"meta": {key: body["meta"][key]}})

    def delete(self, request: Request, server_id: str, key: str) -> Response:
        record = get_server(self.ctx, server_id)
        metadata_svc.server_metadata_item_delete(actor=self.ctx, record=record, key=key)
        return Response(status=204)


# --- tags (2.26) ----------------------------------------------------------------------------------
class ServerTagsView(ComputeAPIView):
    available_from = schemas.TAGS_MIN_VERSION

    def get(self, request: Request, server_id: str) -> Response:
        record = get_server(self.ctx, server_id, "os_compute_api:os-server-tags:index")
        return Response({"tags": tags_svc.server_tags_of(record)})

    def put(self, request: Request, server_id: str) -> Response:
        record = get_server(self.ctx, server_id)
        body = validate(self.body(), schemas.TAGS_BODY)
        return Response({"tags": tags_svc.server_tags_replace(actor=self.ctx, record=record, tags=body["tags"])})

    def delete(self, request: Request, server_id: str) -> Response:
        record = get_server(self.ctx, server_id)
        tags_svc.server_tags_delete_all(actor=self.ctx, record=record)
        return Response(status=204)


class ServerTagView(ComputeAPIView):
    available_from = schemas.TAGS_MIN_VERSION

    def get(self, request: Request, server_id: str, tag: str) -> Response:
        record = get_server(self.ctx, server_id, "os_compute_api:os-server-tags:show")
        if tag not in tags_svc.server_tags_of(record):
            raise tags_svc.TagNotFound(tag=tag)
        return Response(status=204)

    def put(self, request: Request, server_id: str, tag: str) -> Response:
        record = get_server(self.ctx, server_id)
        validate(tag, schemas.TAG)
        if not tags_svc.server_tag_add(actor=self.ctx, record=record, tag=tag):
            return Response(status=204)
        response = Response(status=201)
        response["Location"] = f"{base_url()}/v2.1/servers/{record.uuid}/tags/{tag}"
        return response

    def delete(self, request: Request, server_id: str, tag: str) -> Response:
        record = get_server(self.ctx, server_id)
        tags_svc.server_tag_delete(actor=self.ctx, record=record, tag=tag)
        return Response(status=204)
