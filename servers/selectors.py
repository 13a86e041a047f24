"""Reading servers across cells (STYLE rule 3: reads are selectors).

``server_get`` follows the InstanceMapping to the one cell that holds the server (or its
BuildRequest). ``server_list`` returns BuildRequests first, then the instances of every cell
merge-sorted on (sort keys, uuid), with marker paging done per cell in SQL (``cloudcore.core.keyset``:
NULL ordered and compared as the merge orders it, first ascending, on every backend; the marker may
be a deleted server, as in Nova); a cell that does not answer yields "down cell" stubs for its mapped
servers (shown as UNKNOWN from 2.69).
"""
from __future__ import annotations

import importlib
import json
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from operator import itemgetter
from typing import TYPE_CHECKING, Any, TypeVar

import orjson
from django.db import DatabaseError
from django.db.models import Count, OuterRef, Q, QuerySet, Sum, TextField
from django.db.models.functions import Cast, Coalesce

from cells import selectors as cell_selectors
from cells.context import current_alias, target_cell
from cells.scatter import failed, scatter_gather
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import CellDown, InstanceNotFound, Invalid, NotFound
from cloudcore.core.keyset import SortKeys, after_row, sort_order
from cloudcore.core.prepared import RawRows, prepared_first, prepared_objects
from scheduling.services.request_specs import request_spec_of, request_specs_listed

from .choices import MigrationStatus, MigrationType, PowerState, TaskState, VmState
from .models import (
    BlockDeviceMapping,
    BuildRequest,
    Instance,
    InstanceFault,
    InstanceGroupMember,
    Migration,
    Tag,
    VirtualInterface,
)
from .status import states_for_status

if TYPE_CHECKING:
    from cells.models import CellMapping, InstanceMapping


class ServerNotFound(NotFound):
    message = "Instance %(instance_id)s could not be found."


class MarkerNotFound(Invalid):
    message = "marker [%(marker)s] not found"


@dataclass
class ServerRecord:
    """One server as the API sees it: an Instance row, a BuildRequest, or a down-cell stub."""

    uuid: str
    instance: Instance | None = None
    build_request: BuildRequest | None = None
    cell: CellMapping | None = None
    down_cell: bool = False
    mapping: InstanceMapping | None = None
    #: The Instance columns read into ``instance`` when it was read with some only (a list page's
    #: rows: one frozenset for them all), None for a whole row.
    loaded: frozenset[str] | None = None
    #: Whether ``spec`` was read with the mapping (``server_get``'s ``with_spec``): the server's
    #: request spec, None when it has none.
    spec_read: bool = False
    spec: dict[str, Any] | None = None

    @property
    def project_id(self) -> str:
        if self.instance is not None:
            return self.instance.project_id
        if self.build_request is not None:
            return self.build_request.project_id
        return self.mapping.project_id if self.mapping else ""


@dataclass
class ServerListResult:
    records: list[ServerRecord] = field(default_factory=list)
    down_cells: list[str] = field(default_factory=list)


def _visible_to(actor: RequestContext, project_id: str) -> bool:
    return actor.is_admin or actor.project_id == project_id


def server_get(actor: RequestContext, instance_uuid: str, *, allow_other_projects: bool = True,
               with_spec: bool = False) -> ServerRecord:
    """The server ``instance_uuid`` visible to ``actor``; ServerNotFound (404) otherwise. With
    ``with_spec``, the record carries the server's request spec (``spec``), read in the statement
    that reads its mapping (a show from 2.69: a client's status poll).

    Users never see another project's servers (404, not 403): only cloud admins do.
    """
    if with_spec:
        mapping = cell_selectors.instance_mapping_get(instance_uuid, named="request_spec",
                                                      annotations=lambda: {"request_spec_text": _spec_text()})
    else:
        mapping = cell_selectors.instance_mapping_get(instance_uuid)
    record = _server_of(actor, instance_uuid, mapping)
    if with_spec:
        record.spec_read, record.spec = True, _spec_loads(getattr(mapping, "request_spec_text", None))
    return record


def _server_of(actor: RequestContext, instance_uuid: str, mapping: InstanceMapping | None) -> ServerRecord:
    if mapping is None or not _visible_to(actor, mapping.project_id):
        raise ServerNotFound(instance_id=instance_uuid)
    if mapping.queued_for_delete and mapping.cell is None:
        # queued at delete time: until its host has terminated it, a server in a cell is still shown
        raise ServerNotFound(instance_id=instance_uuid)
    if mapping.cell is None:
        br = build_request_get(instance_uuid)
        if br is None:
            # Scheduled meanwhile: the mapping now has a cell.
            mapping.refresh_from_db()
            if mapping.cell is None:
                raise ServerNotFound(instance_id=instance_uuid)
        else:
            return ServerRecord(uuid=instance_uuid, build_request=br, mapping=mapping)
    cell = mapping.cell
    assert cell is not None
    try:
        with target_cell(cell):
            # read by every request about one server (a client's status poll above all): its SQL
            # built once per process for each cell's database (prepared_first)
            instance = prepared_first(f"servers.instance.{current_alias()}", _instance, (instance_uuid,))
    except (DatabaseError, CellDown):
        # The cell does not answer: what the API database knows (a down-cell stub, 2.69).
        return ServerRecord(uuid=instance_uuid, cell=cell, down_cell=True, mapping=mapping)
    if instance is None:
        raise ServerNotFound(instance_id=instance_uuid)
    return ServerRecord(uuid=instance_uuid, instance=instance, cell=cell, mapping=mapping)


def _instance(instance_uuid: str) -> QuerySet[Instance]:
    return Instance.objects.filter(uuid=instance_uuid)


def _spec_text() -> Cast:
    """The request spec of each mapping's server as its stored JSON text (NULL when it has none):
    decoded here by orjson (``_spec_loads``), where the JSON field's converter would use ``json``."""
    return Cast(request_spec_of(OuterRef("instance_uuid")), TextField())


#: digits turned to ``0``: a run of 19 of them is a number orjson may not read exactly
_DIGITS_TO_ZERO = bytes.maketrans(b"123456789", b"000000000")


def _spec_loads(text: str | None) -> Any:
    """A request spec's stored text (or its hints', ``request_spec_keys_of``) decoded, by orjson
    unless it holds a run of 19 digits or more: orjson reads an integer beyond 64 bits (a client's
    scheduler hint can be one) as a float, ``json`` as the exact integer. (The look for the run
    costs about half of what orjson saves.)"""
    if text is None:
        return None
    data = text.encode()
    if b"0" * 19 not in data.translate(_DIGITS_TO_ZERO):
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:  # what orjson refuses (NaN, which ``json`` wrote)
            pass
    return json.loads(text)


def request_spec_keys_of(instance_uuids: Iterable[str]) -> dict[str, dict[str, Any]]:
    """``{instance_uuid: the keys of its request spec a server's body shows}`` of those among
    ``instance_uuids`` that have a spec: ``availability_zone`` (2.96's pinned zone),
    ``instance_group`` as ``{"uuid": ...}`` (2.71's ``server_groups``; a group in a spec always
    has its uuid) and ``scheduler_hints`` (2.100), ``None`` where the spec has none, in one
    statement of the API database. They are read from the spec row's own columns of them
    (``request_specs_listed``), never the spec (a page's 1,000 specs each hold a flavor and an
    image, which a body does not show), and each distinct text of hints decoded once: servers
    whose values are equal share one dict (to be read, not changed: a page's bodies, as
    ``RawRows``' shared JSON)."""
    shown_of: dict[tuple[str | None, str | None, str | None], dict[str, Any]] = {}
    keys: dict[str, dict[str, Any]] = {}
    for uuid, zone, group_uuid, hints in request_specs_listed(instance_uuids):
        shown = shown_of.get((zone, group_uuid, hints))
        if shown is None:
            shown = shown_of[zone, group_uuid, hints] = {
                "availability_zone": zone, "instance_group": {"uuid": group_uuid} if group_uuid is not None else None,
                "scheduler_hints": _spec_loads(hints)}
        keys[uuid] = shown
    return keys


#: Python's parser of regular expressions (``re._parser``: no public module parses one)
_RE_PARSER: Any = importlib.import_module("re._parser")
_REPEATS = (_RE_PARSER.MAX_REPEAT, _RE_PARSER.MIN_REPEAT)


def _backtracks(items: Any, repeated: bool = False) -> bool:
    """Whether the parsed pattern ``items`` has a repetition, or alternatives, inside a repetition
    (``repeated``: inside one already): what makes a search try exponentially many ways."""
    for op, arg in items:
        if op in _REPEATS:
            repeats = arg[1] > 1
            if (repeated and repeats) or _backtracks(arg[2], repeated or repeats):
                return True
        elif op is _RE_PARSER.BRANCH:
            if repeated or any(_backtracks(alternative, repeated) for alternative in arg[1]):
                return True
        elif op is _RE_PARSER.SUBPATTERN:
            if _backtracks(arg[3], repeated):
                return True
        elif op in (_RE_PARSER.ASSERT, _RE_PARSER.ASSERT_NOT, _RE_PARSER.ATOMIC_GROUP):
            if _backtracks(arg[-1], repeated):
                return True
    return False


def regex_checked(value: str, name: str = "name") -> str:
    """``value`` if the server list may search with it (the ``name`` filter and ``REGEX_FILTERS``);
    Invalid (400) if it is no regular expression (Nova's words), or if it repeats a repetition or
    alternatives (``(a+)+b``, ``(a|aa)*b``). Such a pattern can make the search backtrack for ever
    (``(a+)+b`` takes a second on 24 characters and twice as long with each one more), and on SQLite
    the search runs in the web process, holding its interpreter's lock. Nova has no such bound
    (MySQL bounds a search's time instead); a user's name filter seldom needs one."""
    try:
        parsed = _RE_PARSER.parse(value)
    except re.error:
        raise Invalid(f"Invalid input for query parameters {name}. Value: {value}. "
                      f"'{value}' is not a 'regex'") from None
    if _backtracks(parsed):
        raise Invalid(f"Invalid input for query parameters {name}. Value: {value}. A repetition inside a "
                      "repetition, or alternatives inside one, is not searched with: it can backtrack for ever")
    return value


#: the list filters Nova leaves to its database layer's regular expression on the instance column of
#: the same name (REGEXP, PostgreSQL's ``~``): a search anywhere in the column's text, integers and
#: timestamps included (``progress=5`` also lists 50 and 15, ``created_at=2026-11-30`` that day's).
#: Who may use which is the API's choice.
REGEX_FILTERS = ("power_state", "progress", "config_drive", "created_at", "launched_at", "terminated_at",
                 "hostname", "access_ip_v4", "access_ip_v6", "launch_index", "kernel_id", "ramdisk_id",
                 "display_name", "display_description", "locked_by", "root_device_name", "updated_at", "vcpus",
                 "memory_mb", "root_gb", "ephemeral_gb")
#: boolean columns: Nova's regular expression over MySQL's 1/0, here the value read as a boolean (the
#: same answer for 1/0, and for true/false on either backend)
BOOLEAN_FILTERS = ("auto_disk_config",)
#: Nova's instance columns copied from the image's properties of the same name at the build (its
#: ``_inherit_properties_from_image``); here the image's properties kept in the system metadata
#: (``image_<name>``) are those columns, searched the same way
IMAGE_PROPERTY_FILTERS = {"os_type": "image_os_type", "architecture": "image_architecture",
                          "vm_mode": "image_vm_mode"}
#: Nova's instance columns that its libvirt driver fills at the spawn with the devices of the flavor's
#: local disks; here those names follow from the flavor as ``compute.block_devices.local_disks`` gives
#: them: the ephemeral disk right after the root disk, then the swap disk (``LOCAL_DEVICE_NAMES``)
LOCAL_DEVICE_FILTERS = ("default_ephemeral_device", "default_swap_device")
#: (the first local disk's device, the second's)
LOCAL_DEVICE_NAMES = ("/dev/vdb", "/dev/vdc")
#: each regular expression filter searched in a stored value: its lookup (its column, or the image's
#: property in the system metadata)
REGEX_LOOKUPS = {**{key: key for key in REGEX_FILTERS},
                 **{key: f"system_metadata__{item}" for key, item in IMAGE_PROPERTY_FILTERS.items()}}
#: every list filter that is a regular expression over a server's value
ALL_REGEX_FILTERS = (*REGEX_LOOKUPS, *LOCAL_DEVICE_FILTERS)


def _local_device_query(key: str, pattern: str) -> Q:
    """The servers whose ``key`` device (``LOCAL_DEVICE_FILTERS``) ``pattern`` finds: the device's
    name is one of two, so the pattern is tried on both here and the query asks which disks the
    server's flavor has."""
    first, second = (re.search(pattern, name) is not None for name in LOCAL_DEVICE_NAMES)
    ephemeral, swap = Q(ephemeral_gb__gt=0), Q(flavor__swap__gt=0)
    nothing = Q(pk__in=[])
    if key == "default_ephemeral_device":
        return ephemeral if first else nothing
    return (swap & ephemeral if second else nothing) | (swap & ~ephemeral if first else nothing)


def _instance_query(
    actor: RequestContext, filters: dict[str, Any], version: tuple[int, int]
) -> Q:
    q = Q()
    if filters.get("deleted"):
        q &= Q(deleted=True)
    elif not (filters.get("changes-since") and "deleted" not in filters):
        # changes-since alone also returns the servers deleted since then (as Nova does)
        q &= Q(deleted=False)
    hidden = filters.get("hidden")
    q &= Q(hidden=True) if hidden else (Q(hidden=False) | Q(hidden__isnull=True))
    if not filters.get("all_tenants") or not actor.is_admin:
        q &= Q(project_id=actor.project_id)
    elif filters.get("project_id"):
        q &= Q(project_id=filters["project_id"])
    if filters.get("user_id"):
        q &= Q(user_id=filters["user_id"])
    if filters.get("name"):
        q &= Q(display_name__regex=regex_checked(filters["name"]))
    if filters.get("status"):
        vm_states, task_states = set(), set()
        any_task = False
        for status in filters["status"]:
            vms, tss = states_for_status(status, version)
            vm_states.update(vms)
            if tss is None:
                any_task = True
            else:
                task_states.update(tss)
        q &= Q(vm_state__in=sorted(vm_states))
        if not any_task and task_states:
            q &= Q(task_state__in=sorted(t for t in task_states if t))
    for key in ("vm_state", "task_state"):
        if filters.get(key):
            q &= Q(**{f"{key}__in": list(filters[key])})
    for key, lookup in REGEX_LOOKUPS.items():
        if filters.get(key):
            q &= Q(**{f"{lookup}__regex": regex_checked(filters[key], key)})
    for key in BOOLEAN_FILTERS:
        if filters.get(key) is not None:
            q &= Q(**{key: filters[key]})
    for key in LOCAL_DEVICE_FILTERS:
        if filters.get(key):
            q &= _local_device_query(key, regex_checked(filters[key], key))
    for key, col in (("host", "host"), ("node", "node"), ("availability_zone", "availability_zone"),
                     ("reservation_id", "reservation_id"), ("key_name", "key_name"), ("image_ref", "image_ref")):
        if filters.get(key):
            q &= Q(**{col: filters[key]})
    if filters.get("image"):
        q &= Q(image_ref=str(filters["image"]).rstrip("/").rsplit("/", 1)[-1])
    if filters.get("flavor"):
        q &= Q(flavor__flavorid=str(filters["flavor"]).rstrip("/").rsplit("/", 1)[-1])
    if filters.get("uuid"):
        q &= Q(uuid=filters["uuid"])
    if filters.get("uuids") is not None:
        q &= Q(uuid__in=list(filters["uuids"]))
    if "locked" in filters and filters["locked"] is not None:
        q &= Q(locked=bool(filters["locked"]))
    if filters.get("changes-since"):
        q &= Q(updated_at__gte=filters["changes-since"]) | Q(created_at__gte=filters["changes-since"])
    if filters.get("changes-before"):
        q &= Q(updated_at__lte=filters["changes-before"]) | (
            Q(updated_at__isnull=True) & Q(created_at__lte=filters["changes-before"])
        )
    return q


def _apply_tag_filters(qs: QuerySet[Instance], filters: dict[str, Any]) -> QuerySet[Instance]:
    def uuids_with(tag: str) -> QuerySet[Any]:
        return Tag.objects.filter(tag=tag).values("instance_uuid")

    for tag in filters.get("tags") or []:
        qs = qs.filter(uuid__in=uuids_with(tag))
    if filters.get("tags-any"):
        qs = qs.filter(uuid__in=Tag.objects.filter(tag__in=filters["tags-any"]).values("instance_uuid"))
    if filters.get("not-tags"):
        # Exclude servers that carry *all* of the tags.
        tags = filters["not-tags"]
        full = (
            Tag.objects.filter(tag__in=tags).values("instance_uuid").annotate(n=Count("tag"))
            .filter(n=len(set(tags))).values("instance_uuid")
        )
        qs = qs.exclude(uuid__in=full)
    if filters.get("not-tags-any"):
        qs = qs.exclude(uuid__in=Tag.objects.filter(tag__in=filters["not-tags-any"]).values("instance_uuid"))
    return qs


SORT_KEYS = {
    "created_at": "created_at", "updated_at": "updated_at", "display_name": "display_name",
    "uuid": "uuid", "vm_state": "vm_state", "task_state": "task_state", "power_state": "power_state",
    "host": "host", "node": "node", "launched_at": "launched_at", "terminated_at": "terminated_at",
    "availability_zone": "availability_zone", "hostname": "hostname", "key_name": "key_name",
    "project_id": "project_id", "user_id": "user_id", "locked": "locked",
}


#: a build request's value of a sort key its instance does not hold: what the API shows of it
_BUILD_REQUEST_SHOWN = {"vm_state": VmState.BUILDING, "task_state": TaskState.SCHEDULING,
                        "power_state": PowerState.NOSTATE, "locked": False}


def _build_request_value(build_request: BuildRequest, column: str) -> Any:
    """``column``'s value of a build request's instance (``id``: the build request's own, as Nova's;
    an ``IMAGE_PROPERTY_FILTERS`` key: the image's property in its system metadata)."""
    if column == "created_at":
        return build_request.created_at
    if column == "uuid":
        return build_request.instance_uuid
    if column == "id":
        return build_request.pk
    if column in IMAGE_PROPERTY_FILTERS:
        return (build_request.instance.get("system_metadata") or {}).get(IMAGE_PROPERTY_FILTERS[column])
    return build_request.instance.get(column, _BUILD_REQUEST_SHOWN.get(column))


def _sort_key(value: Any) -> Any:
    if value is None:
        return (0, "")
    if isinstance(value, datetime):
        return (1, value.timestamp())
    return (1, value)


def server_list(
    actor: RequestContext,
    *,
    filters: dict[str, Any],
    limit: int | None,
    marker: str | None,
    sort_keys: Sequence[str] = ("created_at",),
    sort_dirs: Sequence[str] = ("desc",),
    version: tuple[int, int] = (2, 1),
    columns: Iterable[str] | None = None,
) -> ServerListResult:
    """Servers visible to ``actor`` (see module doc). ``limit`` None means no limit. ``columns``:
    the Instance columns to load (with the sort keys and ``uuid``; the others are deferred: what the
    caller reads, a page of 1,000 rows need not convert the rest), None for whole rows. The records'
    instances are for reading only: the values of their JSON columns (flavor, metadata, ...) read
    from equal stored texts are one object, shared by those instances.

    The servers are sorted on every one of ``sort_keys`` in turn, each in its direction of
    ``sort_dirs``, then on ``uuid`` (``created_at`` descending when no key is left); a key without
    a direction takes the first direction (``desc`` when none is given), as Nova's
    process_sort_params pads them. Invalid (400) for an unknown key or direction, or more
    directions than keys (Nova's message). ``uuid`` ascending breaks the ties of the cells' servers,
    as Nova's cross-cell merge (InstanceSortContext) does, in each cell's SQL, the merge and after a
    marker alike. The build requests are sorted on the same keys, then ``created_at`` and their own
    ``id`` in the first direction (Nova's BuildRequestList.get_by_filters: process_sort_params'
    default keys); a marker that is one of them is a place in that order."""
    given = _sort_columns(sort_keys, sort_dirs)
    keys = given if any(column == "uuid" for column, _desc in given) else [*given, ("uuid", False)]
    columns_sorted = [column for column, _desc in keys]
    marker_values: tuple[Any, ...] | None = None
    records: list[ServerRecord] = []

    # 1. Build requests (not yet in a cell) come first, as in Nova.
    build_requests: list[BuildRequest] = []
    if not filters.get("deleted") and not (filters.get("host") or filters.get("node")) \
            and filters.get("uuids") is None:
        brs = BuildRequest.objects.all()
        if not (filters.get("all_tenants") and actor.is_admin):
            brs = brs.filter(project_id=actor.project_id)
        elif filters.get("project_id"):
            brs = brs.filter(project_id=filters["project_id"])
        for br in brs:
            if filters.get("name") and not re.search(filters["name"], br.instance.get("display_name", "")):
                continue
            if filters.get("status") and "BUILD" not in {s.upper() for s in filters["status"]}:
                continue
            if any(filters.get(key) and _BUILD_REQUEST_SHOWN[key] not in filters[key]
                   for key in ("vm_state", "task_state")):
                continue
            # Nova's BuildRequestList: an instance's value that is empty (0, None, "") passes (so do
            # the LOCAL_DEVICE_FILTERS: no device is named before the spawn)
            if any(filters.get(key) and (shown := _build_request_value(br, key))
                   and not re.search(filters[key], str(shown)) for key in REGEX_LOOKUPS):
                continue
            # the exact filters too (``image_ref``), and a boolean column's value when it has one
            if filters.get("image_ref") and br.instance.get("image_ref") != filters["image_ref"]:
                continue
            if any(filters.get(key) is not None and br.instance.get(key) is not None
                   and bool(br.instance[key]) != filters[key] for key in BOOLEAN_FILTERS):
                continue
            build_requests.append(br)

    br_records = [ServerRecord(uuid=br.instance_uuid, build_request=br)
                  for br in _build_requests_sorted(build_requests, given)]
    skip_builds = False
    if marker:
        idx = next((i for i, r in enumerate(br_records) if r.uuid == marker), None)
        if idx is not None:
            br_records = br_records[idx + 1:]
        else:
            skip_builds = True
            marker_values = _marker_values(actor, marker, columns_sorted)
    if not skip_builds:
        records.extend(br_records)
    if limit is not None and len(records) >= limit:
        return ServerListResult(records=records[:limit])

    remaining = None if limit is None else limit - len(records)
    q = _instance_query(actor, filters, version)
    # NULLs ordered and compared as the merge below orders them (first ascending) on every backend
    order = sort_order(Instance, keys)
    loaded = None if columns is None else sorted({*columns, *columns_sorted})

    def per_cell(cell: CellMapping) -> tuple[RawRows, list[Any]]:
        qs = Instance.all_objects.filter(q)
        if loaded is not None:
            qs = qs.only(*loaded)
        qs = _apply_tag_filters(qs, filters)
        if marker_values is not None:
            qs = qs.filter(after_row(Instance, keys, marker_values))
        qs = qs.order_by(*order)
        if remaining is not None:
            qs = qs[:remaining]
        # rows made instances only once the merge kept them: each cell reads up to the page's size;
        # the rows' JSON values read from equal texts are shared (a page's rows share a few flavors)
        rows = RawRows(qs, shared_json=True)
        return rows, rows.rows()

    cells = cell_selectors.cell_list()
    results = scatter_gather(per_cell, cells)
    by_uuid = {c.uuid: c for c in cells}
    merged: list[_Merged] = []
    seen: set[str] = set()
    down: list[str] = []
    # a last uuid in the other direction than the key before it (the tie-breaker ascending after a
    # descending key: the default order) is merged inverted, in that key's direction: one sort
    inverted = len(keys) > 1 and keys[-1][0] == "uuid" and keys[-1][1] != keys[-2][1]
    merge_desc = [d for _column, d in keys[:-1]] + [keys[-2][1] if inverted else keys[-1][1]]
    by_value = columns_sorted[:-1] if inverted else columns_sorted
    for cell_uuid, result in results.items():
        if failed(result):
            down.append(cell_uuid)
            continue
        reader, rows = result  # type: ignore[misc]
        cell = by_uuid[cell_uuid]
        for row in rows:
            instance_uuid = reader.value(row, "uuid")
            values = tuple(_sort_key(reader.value(row, c)) for c in by_value)
            if inverted:
                values += (_inverted(instance_uuid),)
            merged.append((values, instance_uuid, cell, row, reader))
    _merge_sort(merged, merge_desc)
    if records:
        # a build request read above whose server the conductor has since created in its cell (the
        # request is deleted just after): listed once, as the cell's row, its current state
        in_cells = {m[1] for m in merged} & {r.uuid for r in records}
        if in_cells:
            records = [r for r in records if r.uuid not in in_cells]
        seen.update(r.uuid for r in records)
    for _key, instance_uuid, cell, row, reader in merged:
        if limit is not None and len(records) >= limit:
            break  # the rest is cut below: not made instances
        if instance_uuid in seen:  # the same server in two cells during a cross-cell move
            continue
        seen.add(instance_uuid)
        records.append(ServerRecord(uuid=instance_uuid, instance=reader.instance(row), cell=cell, loaded=reader.loaded))
    if down:
        records.extend(_down_cell_records(actor, filters, [by_uuid[u] for u in down], seen))
    if limit is not None:
        records = records[:limit]
    return ServerListResult(records=records, down_cells=down)


def _sort_columns(sort_keys: Sequence[str], sort_dirs: Sequence[str]) -> list[tuple[str, bool]]:
    """(column, descending) of each sort key, the missing directions padded with the first (see
    ``server_list``)."""
    if not sort_keys:
        # every key was one ignored for the actor: Nova's default sort, whatever direction is left
        sort_keys, sort_dirs = ("created_at",), ("desc",)
    for key in sort_keys:
        if key not in SORT_KEYS:
            raise Invalid(f"Invalid sort_key {key!r}")
    for sort_dir in sort_dirs:
        if sort_dir not in ("asc", "desc"):
            raise Invalid(f"Invalid sort_dir {sort_dir!r}")
    if len(sort_dirs) > len(sort_keys):
        raise Invalid("Invalid input received: Sort direction size exceeds sort key size")
    padding = sort_dirs[0] if sort_dirs else "desc"
    dirs = [*sort_dirs, *[padding] * (len(sort_keys) - len(sort_dirs))]
    return [(SORT_KEYS[key], sort_dir == "desc") for key, sort_dir in zip(sort_keys, dirs, strict=True)]


def _build_requests_sorted(build_requests: list[BuildRequest], keys: SortKeys) -> list[BuildRequest]:
    """``build_requests`` sorted on ``keys`` (NULL first ascending, as the cells' servers), then on
    ``created_at`` and ``id`` in the first key's direction unless among them, as Nova sorts them."""
    keys = [*keys, *[(column, keys[0][1]) for column in ("created_at", "id")
                     if all(column != given for given, _desc in keys)]]
    rows = [(tuple(_sort_key(_build_request_value(br, column)) for column, _desc in keys), br)
            for br in build_requests]
    _merge_sort(rows, [desc for _column, desc in keys])
    return [br for _values, br in rows]


#: (the sort keys' values, uuid, cell, the row, its reader) of a row of the merge
_Merged = tuple[tuple[Any, ...], str, "CellMapping", Any, RawRows]
#: a row sorted on its first item, the values of its sort keys
_Sorted = TypeVar("_Sorted", bound=tuple[Any, ...])
#: each byte of a string's UTF-8 its complement: see ``_inverted``
_COMPLEMENT = bytes(range(255, -1, -1))


def _inverted(value: str) -> bytes:
    """``value`` (with no NUL) as bytes in the inverse order of strings: each byte of its UTF-8 (which
    is in code point order) complemented, then a byte above every complemented one, so that a prefix
    comes after the longer strings it begins."""
    return value.encode().translate(_COMPLEMENT) + b"\xff"


def _merge_sort(merged: list[_Sorted], desc: Sequence[bool]) -> None:
    """Sorts ``merged`` on its keys' values, each key in its direction: one stable sort per run of
    keys of one direction, the last run first (a single direction is one sort)."""
    end = len(desc)
    while end > 0:
        start = end - 1
        while start > 0 and desc[start - 1] == desc[end - 1]:
            start -= 1
        merged.sort(key=_FIRST if (start, end) == (0, len(desc)) else _values_of(slice(start, end)),
                    reverse=desc[end - 1])
        end = start


_FIRST = itemgetter(0)


def _values_of(keys: slice) -> Callable[[tuple[Any, ...]], tuple[Any, ...]]:
    return lambda m: m[0][keys]


def _marker_values(actor: RequestContext, marker: str, columns: Sequence[str]) -> tuple[Any, ...]:
    """The values of ``columns`` (the sort keys', ``uuid`` among them) of the server ``marker`` in its
    cell, a deleted one too (Nova's get_marker_record reads it with read_deleted='yes': a list of
    deleted servers, or of changes-since, is paged past them). MarkerNotFound (400) when it is no
    server ``actor`` sees, or its cell does not answer."""
    mapping = cell_selectors.instance_mapping_get(marker)
    if mapping is None or mapping.cell is None or not _visible_to(actor, mapping.project_id):
        raise MarkerNotFound(marker=marker)
    try:
        with target_cell(mapping.cell):
            row: tuple[Any, ...] | None = Instance.all_objects.filter(uuid=marker).values_list(*columns).first()
    except (DatabaseError, CellDown) as exc:
        raise MarkerNotFound(marker=marker) from exc
    if row is None:
        raise MarkerNotFound(marker=marker)
    return row


def _down_cell_records(
    actor: RequestContext, filters: dict[str, Any], cells: Iterable[CellMapping], seen: set[str]
) -> list[ServerRecord]:
    all_projects = bool(filters.get("all_tenants") and actor.is_admin)
    mappings = cell_selectors.instance_mappings_in(cells, project_id=None if all_projects else actor.project_id)
    out = []
    for m in mappings:
        if m.instance_uuid not in seen:
            out.append(ServerRecord(uuid=m.instance_uuid, cell=m.cell, down_cell=True, mapping=m))
    return out


# --- reads for the other apps (in the targeted cell unless said otherwise) ----------------------
def instances_on_hosts_exist(hosts: Iterable[str]) -> bool:
    """Does a live instance run on one of ``hosts``?"""
    return Instance.objects.filter(host__in=list(hosts), deleted=False).exists()


def instances_on_node(host: str | None, node: str | None) -> list[Instance]:
    """Live instances of one compute node."""
    return list(Instance.objects.filter(host=host, node=node))


def visible_instance_count() -> int:
    return Instance.objects.filter(hidden=False).count()


def instance_state_counts() -> list[dict[str, Any]]:
    """``[{"vm_state", "task_state", "n"}]`` over the visible instances."""
    return list(Instance.objects.filter(hidden=False).values("vm_state", "task_state").annotate(n=Count("id")))


def build_request_count() -> int:
    """Servers accepted but not yet in a cell (API database)."""
    return BuildRequest.objects.count()


def latest_faults(limit: int) -> list[InstanceFault]:
    return list(InstanceFault.objects.order_by("-created_at")[:limit])


def instances_without_compute(limit: int | None = None) -> list[Instance]:
    """Instances, deleted ones included, with a node but no ``compute_id`` yet (online data
    migration), as (id, host, node) rows."""
    qs = Instance.all_objects.filter(compute__isnull=True).exclude(node=None).only("id", "host", "node")
    return list(qs if limit is None else qs[:limit])


def instances_without_compute_count() -> int:
    return Instance.all_objects.filter(compute__isnull=True).exclude(node=None).count()



def instances_active_between(start: datetime, stop: datetime, *, project_id: str | None = None) -> list[Instance]:
    """Instances, deleted ones included, that ran some time in [start, stop) (launched before
    ``stop``, not terminated before ``start``), of every cell, in (created_at, uuid) order; the
    hidden copy of a server a cross-cell move left behind is not counted twice."""
    q = Q(launched_at__lt=stop, hidden=False) & (Q(terminated_at__isnull=True) | Q(terminated_at__gt=start))
    if project_id is not None:
        q &= Q(project_id=project_id)

    def per_cell(_cell: CellMapping) -> list[Instance]:
        return list(Instance.all_objects.filter(q))

    found: list[Instance] = []
    for result in scatter_gather(per_cell, cell_selectors.cell_list(cell0=False)).values():
        if not failed(result):
            found.extend(result)  # type: ignore[arg-type]
    return sorted(found, key=lambda i: (i.created_at, i.uuid))


def _instance_column(instance_uuids: Iterable[str], column: str) -> dict[str, str]:
    """``{instance_uuid: column}`` of those servers whose ``column`` is set (read in their cells)."""
    by_cell: dict[str, tuple[CellMapping, list[str]]] = {}
    for uuid in instance_uuids:
        mapping = cell_selectors.instance_mapping_get(uuid)
        if mapping is not None and mapping.cell is not None and not mapping.queued_for_delete:
            by_cell.setdefault(mapping.cell.uuid, (mapping.cell, []))[1].append(uuid)
    found: dict[str, str] = {}
    for cell, uuids in by_cell.values():
        with target_cell(cell):
            for uuid, value in Instance.objects.filter(uuid__in=uuids, **{f"{column}__isnull": False}) \
                    .exclude(**{column: ""}).values_list("uuid", column):
                found[uuid] = str(value)
    return found


def hosts_of(instance_uuids: Iterable[str]) -> dict[str, str]:
    """``{instance_uuid: host}`` of those servers that are on a host (read in their cells)."""
    return _instance_column(instance_uuids, "host")


def names_of(instance_uuids: Iterable[str]) -> dict[str, str]:
    """``{instance_uuid: display name}`` of those servers that have one (read in their cells)."""
    return _instance_column(instance_uuids, "display_name")


def group_member_hosts(group_uuid: str, *, exclude: Iterable[str] = ()) -> dict[str, list[str]]:
    """``{host: [uuids of the members on it]}`` (sorted) of a server group's members that are on a
    host, leaving out ``exclude`` (the servers being scheduled: a move does not count the server
    against itself)."""
    skip = set(exclude)
    members = [u for u in InstanceGroupMember.objects.filter(group__uuid=group_uuid)
               .values_list("instance_uuid", flat=True) if u not in skip]
    by_host: dict[str, list[str]] = defaultdict(list)
    for uuid, host in sorted(hosts_of(members).items()):
        by_host[host].append(uuid)
    return dict(by_host)


# --- used by compute/ ---------------------------------------------------------------------------
# (the compute agent's reads of its own cell: every one runs in the targeted cell)
class MigrationNotFound(NotFound):
    message = "Migration %(migration_id)s could not be found."


class BlockDeviceMappingNotFound(NotFound):
    message = "No volume Block Device Mapping with id %(bdm_id)s."


def instance_get(instance_uuid: str, *, read_deleted: bool = False) -> Instance | None:
    """The live server ``instance_uuid`` (deleted ones too with ``read_deleted``), or None. The live
    one's SQL is built once per process for each cell's database (``prepared_first``, the same
    statement as a show's): a compute host's build and every operation start with it."""
    if read_deleted:
        return Instance.all_objects.filter(uuid=instance_uuid).first()
    found: Instance | None = prepared_first(f"servers.instance.{current_alias()}", _instance, (instance_uuid,))
    return found


def instance_usage_on_node(compute_id: int) -> dict[str, int]:
    """What the live servers of compute node ``compute_id`` use: ``vcpus``, ``memory_mb`` and
    ``root_gb`` summed over those not offloaded, ``running`` how many they are (Nova's
    ``running_vms`` counts every server the node tracks, whatever its vm_state: a stopped one, or
    one in VERIFY_RESIZE on the destination of a move and its source copy on the source)."""
    on_node = Instance.objects.filter(compute_id=compute_id, deleted=False).exclude(
        vm_state__in=(VmState.SHELVED_OFFLOADED, VmState.DELETED))
    used = on_node.aggregate(vcpus=Sum("vcpus"), memory_mb=Sum("memory_mb"), root_gb=Sum("root_gb"))
    return {"vcpus": used["vcpus"] or 0, "memory_mb": used["memory_mb"] or 0, "root_gb": used["root_gb"] or 0,
            "running": on_node.count()}


def migration_get(migration_uuid: str) -> Migration | None:
    """The live migration ``migration_uuid``, or None."""
    return Migration.objects.filter(uuid=migration_uuid).first()


def evacuations_from(host: str, *, status: str) -> list[Migration]:
    """The live evacuations of the targeted cell whose source is ``host`` and status ``status``."""
    return list(Migration.objects.filter(source_compute=host, migration_type=MigrationType.EVACUATION,
                                         status=status).order_by("id"))


def bdm_get(bdm_uuid: str) -> BlockDeviceMapping | None:
    """The live block device mapping ``bdm_uuid``, or None."""
    return BlockDeviceMapping.objects.filter(uuid=bdm_uuid).first()


def bdms_of(instance_uuid: str, *, volumes_only: bool = False) -> list[BlockDeviceMapping]:
    """The server's live block device mappings in id order (with ``volumes_only`` those of
    destination ``volume``)."""
    qs = BlockDeviceMapping.objects.filter(instance_uuid=instance_uuid)
    if volumes_only:
        qs = qs.filter(destination_type="volume")
    return list(qs.order_by("id"))


def vif_preserved_port_ids(instance_uuid: str) -> set[str]:
    """The ports the user brought to the server (its live VIFs with ``preserve_on_delete``)."""
    return set(VirtualInterface.objects.filter(instance_uuid=instance_uuid, preserve_on_delete=True)
               .values_list("port_id", flat=True))


def vif_get(instance_uuid: str, port_id: str) -> VirtualInterface | None:
    """The server's live VIF of ``port_id`` in the targeted cell, or None."""
    return VirtualInterface.objects.filter(instance_uuid=instance_uuid, port_id=port_id).first()


def vif_tags(instance_uuid: str) -> dict[str, str | None]:
    """``{port id: tag}`` of the server's live VIFs in the targeted cell."""
    return dict(VirtualInterface.objects.filter(instance_uuid=instance_uuid).values_list("port_id", "tag"))


# --- used by conductor/ ---------------------------------------------------------------------------
# (the conductor's reads: the API database's BuildRequests, else the targeted cell; instance_get
# and migration_get above serve it too)
def build_request_get(instance_uuid: str) -> BuildRequest | None:
    """The BuildRequest of a server not yet in a cell (API database), or None (its SQL built once
    per process: a client polls its server's status until it is built)."""
    return prepared_first("servers.build_request", _build_request, (instance_uuid,))


def _build_request(instance_uuid: str) -> QuerySet[BuildRequest]:
    return BuildRequest.objects.filter(instance_uuid=instance_uuid)


#: a read of build requests named by its caller (``build_requests_get``'s ``prepared``) is prepared for
#: each number of servers up to this many (a cast of the conductor names one, or a multi-create's few)
PREPARED_BUILD_REQUESTS_UP_TO = 8


def build_requests_get(instance_uuids: Iterable[str], *, prepared: str | None = None,
                       **annotations: Any) -> dict[str, BuildRequest]:
    """``{instance_uuid: BuildRequest}`` of those among ``instance_uuids`` not yet in a cell (API
    database), in one statement; ``annotations``: expressions each row carries as an attribute
    (what another app reads with them, e.g. the request spec, as a subquery). ``prepared``: the
    caller's name for this read (the same annotations each time), under which its SQL is built
    once per process for each number of servers up to ``PREPARED_BUILD_REQUESTS_UP_TO``
    (``cloudcore.core.prepared``); the same statement and rows as the ORM's."""
    uuids = list(instance_uuids)

    def build(*values: str) -> QuerySet[BuildRequest]:
        return BuildRequest.objects.filter(instance_uuid__in=list(values)).annotate(**annotations)

    if prepared is not None and 0 < len(uuids) <= PREPARED_BUILD_REQUESTS_UP_TO:
        rows: Iterable[BuildRequest] = prepared_objects(f"servers.build_requests.{prepared}.{len(uuids)}", build, uuids)
    else:
        rows = build(*uuids)
    return {row.instance_uuid: row for row in rows}


def build_request_uuids_created_before(cutoff: datetime) -> list[str]:
    """The servers whose BuildRequest (API database) was accepted before ``cutoff``."""
    return list(BuildRequest.objects.filter(created_at__lt=cutoff).values_list("instance_uuid", flat=True))


def instances_idle_in(vm_state: str) -> list[Instance]:
    """The live servers in ``vm_state`` with no task under way."""
    return list(Instance.objects.filter(vm_state=vm_state, task_state__isnull=True))


def instances_with_stale_task(cutoff: datetime) -> list[Instance]:
    """The visible servers in a task_state (``deleting`` aside) not changed since ``cutoff`` (a
    server never updated counts from its creation)."""
    return list(Instance.objects.filter(task_state__isnull=False, hidden=False)
                .annotate(last_change=Coalesce("updated_at", "created_at"))
                .filter(last_change__lt=cutoff).exclude(task_state=TaskState.DELETING))


def migrations_with_status(status: str) -> list[Migration]:
    """The visible live migrations in ``status``."""
    return list(Migration.objects.filter(status=status, hidden=False))


def migrations_in_flight() -> list[Migration]:
    """The targeted cell's visible migrations still moving (queued, accepted or one of the
    pre-/post-/migrating steps, confirming or reverting), newest first."""
    return list(Migration.objects.filter(status__in=MigrationStatus.IN_FLIGHT, hidden=False).order_by("-created_at"))


def live_migrations_in_progress(instance_uuid: str) -> list[Migration]:
    """The server's live migrations in progress (queued, preparing, running, post-migrating)."""
    return list(Migration.objects.filter(instance_uuid=instance_uuid, migration_type=MigrationType.LIVE_MIGRATION,
                                         status__in=MigrationStatus.LIVE_IN_PROGRESS).order_by("id"))


def migration_of_instance(instance_uuid: str, migration_id: int | str) -> Migration | None:
    """The targeted cell's migration with row id ``migration_id`` of the server, or None."""
    try:
        return Migration.objects.filter(pk=int(migration_id), instance_uuid=instance_uuid).first()
    except (TypeError, ValueError):
        return None


def migration_unfinished_for(instance_uuid: str) -> Migration | None:
    """The server's newest migration still under way (pre-migrating, migrating, post-migrating)."""
    return (Migration.objects.filter(instance_uuid=instance_uuid, status__in=MigrationStatus.UNFINISHED)
            .order_by("-id").first())


# --- used by cross-cell ---
# Reads in the targeted cell for the conductor's cross-cell move (``conductor.cross_cell``).


def instance_get_in_cell(instance_uuid: str, *, read_deleted: bool = False) -> Instance:
    """``instance_get`` (a hidden copy too), raising InstanceNotFound when the targeted cell has
    no such row."""
    instance = instance_get(instance_uuid, read_deleted=read_deleted)
    if instance is None:
        raise InstanceNotFound(instance_id=instance_uuid)
    return instance


def migration_get_in_cell(migration_uuid: str) -> Migration:
    """``migration_get``, raising MigrationNotFound when the targeted cell has no such row."""
    migration = migration_get(migration_uuid)
    if migration is None:
        raise MigrationNotFound(migration_id=migration_uuid)
    return migration
