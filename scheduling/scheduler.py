"""The scheduler: ``select_destinations`` picks a compute node for each instance of a request,
claims its resources in placement, and returns alternates from the same cell.

Steps (constant number of SQL queries whatever the number of hosts; per instance a claim):

1. the request in placement terms: resources from the flavor (``RequestView.resources``),
   required/forbidden traits (flavor extra specs, image properties, and
   ``COMPUTE_STATUS_DISABLED`` forbidden), the zone's aggregates as ``member_of``;
2. where: requested destination host/node/cell, forced hosts/nodes and a move that must stay in
   its source cell narrow the providers up front (their compute nodes are read from the cell);
3. allocation candidates from placement (at most ``MAX_PLACEMENT_RESULTS`` unless narrowed),
   answered by the process's in-memory copy of placement (``placement.cache``: one statement
   to learn what changed, five to re-read the providers that did, none when the changes were
   this process's own claims);
4. host states: the candidates' compute nodes from the process's copy of each cell's nodes
   (``host_cache``: one fingerprint statement per cell, which also lists the services that are
   disabled, forced down or silent: their state is read fresh), zones and aggregate
   metadata from the API database (one query);
5. filters (``scheduling.filters``), weighers (``scheduling.weights``);
6. for each instance, the best host whose claim succeeds (a failed claim tries the next host),
   plus up to ``MAX_ATTEMPTS - 1`` alternates in the same cell that still fit. Several instances
   are placed in memory one after the other and claimed together in one transaction
   (``placement.claim_allocation_requests``); when that loses to a concurrent writer, the
   request starts over claiming each instance as it is placed.

NoValidHost ("No valid host was found. There are not enough hosts available.") when any
instance finds no host; the claims made for the others are then released.
"""
from __future__ import annotations

import json
import logging
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from operator import attrgetter
from types import SimpleNamespace
from typing import Any

from django.conf import settings
from django.db.models import QuerySet

from cells.context import target_cell
from cells.selectors import cell_list
from cloudcore.core.exceptions import CloudcoreError, NoValidHost
from cloudcore.core.notifications import notify, publisher
from cloudcore.core.prepared import prepared_rows
from cloudcore.core.scope import request_scope
from hosts.selectors import compute_node_values, compute_services_values, service_field_names
from servers.selectors import group_member_hosts, hosts_of

from .filters import filter_hosts
from .host_cache import NodeFacts, freshness, node_cache
from .host_state import HostState, RequestView, max_placement_results
from .models import AggregateMetadata
from .placement import services as placement
from .placement.cache import provider_cache, shortfall_copy
from .services.aggregates import AZ_KEY, aggregate_uuids_for_zone
from .services.traces import trace_record_save
from .trace import SchedulingTrace, host_limit, trace_summary
from .weights import weigh_hosts

log = logging.getLogger(__name__)
NOT_ENOUGH_HOSTS = "There are not enough hosts available."
DISABLED_TRAIT = "COMPUTE_STATUS_DISABLED"


@dataclass
class Selection:
    """A chosen (or alternate) destination. ``allocation_request`` is the placement allocation
    candidate as JSON text (None for a rebuild check)."""

    service_host: str
    nodename: str
    compute_node_uuid: str
    cell_uuid: str
    allocation_request: str | None
    allocation_request_version: str = "1.36"
    limits: dict[str, Any] = field(default_factory=dict)
    #: the node's row id and its host's availability zone, as the host state read them (so the
    #: conductor need not read them again)
    compute_id: int | None = None
    availability_zone: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "service_host": self.service_host, "nodename": self.nodename,
            "compute_node_uuid": self.compute_node_uuid, "cell_uuid": self.cell_uuid,
            "allocation_request": self.allocation_request,
            "allocation_request_version": self.allocation_request_version, "limits": dict(self.limits),
            "compute_id": self.compute_id, "availability_zone": self.availability_zone,
        }

    @classmethod
    def from_host(cls, host: HostState) -> Selection:
        return cls(
            service_host=host.host, nodename=host.nodename, compute_node_uuid=host.uuid, cell_uuid=host.cell_uuid,
            allocation_request=json.dumps(host.allocation_request) if host.allocation_request else None,
            compute_id=host.compute_id, availability_zone=host.availability_zone or None,
        )


# --- host loading ----------------------------------------------------------------------------------
def _schedulable_cells(request: RequestView) -> list[Any]:
    cells = cell_list(cell0=False, enabled_only=True)
    wanted = request.destination_cell
    if not wanted and request.source_cell and not request.allow_cross_cell_move:
        wanted = request.source_cell
    if wanted:
        cells = [c for c in cells if wanted in (c.uuid, c.name)]
    return cells


NODE_FIELDS = ("id", "uuid", "host", "hypervisor_hostname", "hypervisor_type", "hypervisor_version", "cpu_info",
               "service_id")


def _service_fields() -> list[str]:
    return service_field_names()


def _read_cell_nodes(cell: Any, updated_after: datetime | None = None) -> dict[str, tuple[Any, Any, Any]]:
    """``{node uuid: (node, service or None, cell)}`` of every live node of ``cell`` (targeted
    by the caller; with ``updated_after``, only the nodes updated after it): one query, plus one
    for nodes whose service link is not filled yet. Nodes
    and services are read-only views (namespaces with the model's field attributes): the
    scheduler never writes them, and skipping model instantiation matters with many nodes."""
    service_fields = _service_fields()
    rows = compute_node_values(*NODE_FIELDS, *(f"service__{f}" for f in service_fields), updated_after=updated_after)
    unlinked = {r["host"] for r in rows if r["service_id"] is None and r["host"]}
    by_host = compute_services_values(unlinked, service_fields) if unlinked else {}
    found: dict[str, tuple[Any, Any, Any]] = {}
    for row in rows:
        node = SimpleNamespace(**{f: row[f] for f in NODE_FIELDS})
        if row["service_id"] is not None:
            values = {f: row[f"service__{f}"] for f in service_fields}
        else:
            values = by_host.get(row["host"])
        service = SimpleNamespace(**values) if values and values.get("id") is not None \
            and not values.get("deleted") else None
        found[node.uuid] = (node, service, cell)
    return found


#: ``_CellsView.node_uuids``'s last answer, with the cells' node copies it was made of (held, so
#: that their identity cannot be taken by new objects)
_last_node_uuids: tuple[tuple[dict[str, NodeFacts], ...], frozenset[str]] = ((), frozenset())
#: ``_cells_view``'s last merged node dict, with the cells' node copies it was made of (the same
#: dict while no copy changes: ten thousand entries are not copied again per request)
_last_nodes: tuple[tuple[dict[str, NodeFacts], ...], dict[str, NodeFacts]] = ((), {})


@dataclass
class _CellsView:
    """The live nodes of the schedulable cells (from ``node_cache``) and, per cell, the services
    that are disabled, forced down or down right now."""

    nodes: dict[str, NodeFacts] = field(default_factory=dict)
    problems: dict[str, dict[int, Any]] = field(default_factory=dict)
    #: each cell's node copy as ``node_cache`` gave it (the same objects while a cell is unchanged)
    copies: tuple[dict[str, NodeFacts], ...] = ()

    def node_uuids(self) -> frozenset[str]:
        """The uuids of ``nodes``, as the same set object for as long as no cell's node copy
        changes: the provider copy keeps a shortfall keyed by its scope, and a set it saw before
        is found by identity, with its hash kept, instead of ten thousand uuids hashed again."""
        global _last_node_uuids
        copies, uuids = _last_node_uuids
        if not _same_copies(copies, self.copies):
            uuids = frozenset(self.nodes)
            _last_node_uuids = (self.copies, uuids)
        return uuids


def _same_copies(seen: tuple[dict[str, NodeFacts], ...], now: tuple[dict[str, NodeFacts], ...]) -> bool:
    """Whether ``now`` are the very node copies ``seen`` (no cell's copy changed since)."""
    return len(seen) == len(now) and all(a is b for a, b in zip(seen, now, strict=True))


def _cells_view(cells: Iterable[Any]) -> _CellsView:
    """One statement per cell for its fingerprint and its services' state (the node rows
    themselves only when the cell changed); a cell that cannot be read offers no hosts this time.
    ``nodes`` is shared by the requests that see the same node copies: do not mutate it."""
    global _last_nodes
    view = _CellsView()
    service_fields = _service_fields()
    for cell in cells:
        try:
            with target_cell(cell):
                fingerprint, problems = freshness(service_fields)
                nodes = node_cache.nodes(cell, _read_cell_nodes, fingerprint)
        except CloudcoreError:
            raise
        except Exception:  # a cell that cannot be read offers no hosts this time
            log.exception("could not load compute nodes of cell %s", cell.uuid)
            continue
        view.copies += (nodes,)
        view.problems[cell.uuid] = problems
    copies, merged = _last_nodes
    if not _same_copies(copies, view.copies):
        merged = {}
        for nodes in view.copies:
            merged.update(nodes)
        _last_nodes = (view.copies, merged)
    view.nodes = merged
    return view


def _aggregate_facts(names: set[str]) -> tuple[dict[str, str], dict[str, dict[str, set[str]]]]:
    """``({host: zone}, {host: {key: {values}}})`` for ``names``, as ``hosts_availability_zones``
    and ``host_aggregates_metadata`` answer, from one query over every live aggregate's
    metadata (no list of host names sent: its cost follows the aggregate memberships)."""
    zones: dict[str, set[str]] = defaultdict(set)
    metadata: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for host, key, value in prepared_rows("scheduling.aggregate_facts", _aggregate_facts_query, ()):
        if host in names:
            metadata[host][key].add(value)
            if key == AZ_KEY:
                zones[host].add(value)
    default = settings.DEFAULT_AVAILABILITY_ZONE
    return {h: ",".join(sorted(zones[h])) if zones.get(h) else default for h in names}, metadata


def _aggregate_facts_query() -> QuerySet[Any, Any]:
    # read for every request: its SQL built once per process (prepared_rows)
    return AggregateMetadata.objects.filter(aggregate__deleted=False).values_list(
        "aggregate__hosts__host", "key", "value")


def _host_states(view: _CellsView, rows: Iterable[str], summaries: dict[str, Any] | None,
                 requests: dict[str, dict[str, Any]]) -> list[HostState]:
    """Host states of the nodes ``rows`` (with ``summaries``, only those placement summarised).
    Each host state takes its provider's resources and traits from the summary as they are,
    without a copy (the provider copy shares them between requests; ``HostState.consume``
    replaces what it changes)."""
    nodes = view.nodes
    facts = [nodes[uuid] for uuid in rows if summaries is None or uuid in summaries]
    zones, metadata = _aggregate_facts({f.node.host for f in facts if f.node.host})
    default_zone = settings.DEFAULT_AVAILABILITY_ZONE
    summaries = summaries or {}
    no_summary: dict[str, Any] = {}
    problems = view.problems
    no_problems: dict[int, Any] = {}
    states = []
    for fact in facts:
        node, cell = fact.node, fact.cell
        summary = summaries.get(node.uuid, no_summary)
        # the service as it is now, and True when it is known to be up and enabled (None: the
        # filter looks): a service with a problem in ``view.problems`` is that problem's row
        if fact.service is None:
            service, service_up = None, None
        elif (problem := problems.get(cell.uuid, no_problems).get(fact.service.id)) is not None:
            service, service_up = problem, None
        else:
            service, service_up = fact.service_ok, True
        states.append(HostState(
            host=node.host, nodename=node.hypervisor_hostname, uuid=node.uuid, cell_uuid=cell.uuid, compute_id=node.id,
            cell_name=cell.name, service=service, service_up=service_up, hypervisor_type=node.hypervisor_type,
            hypervisor_version=node.hypervisor_version, cpu_arch=fact.cpu_arch,
            resources=summary["resources"] if summary else {}, traits=summary.get("traits") or [],
            aggregate_metadata=dict(metadata[node.host]) if node.host in metadata else {},
            availability_zone=zones.get(node.host, default_zone), allocation_request=requests.get(node.uuid),
        ))
    states.sort(key=attrgetter("host", "nodename"))
    return states


def _candidate_hosts(request: RequestView, trace: SchedulingTrace | None = None,
                     ) -> tuple[list[HostState], dict[str, int]]:
    """Host states of the compute nodes placement says can take one instance of ``request``.
    ``trace`` records the placement request, the candidate count and, when there is none, the
    shortfall (from the provider copy: one statement to check it is fresh)."""
    trace = trace if trace is not None else SchedulingTrace()
    cells = _schedulable_cells(request)
    trace.request = _request_facts(request)
    if not cells:
        trace.placement = {"candidates": 0, "error": "No enabled cell can take the request."}
        return [], {}
    hosts = set(request.force_hosts) | ({request.destination_host} if request.destination_host else set())
    nodes = set(request.force_nodes) | ({request.destination_node} if request.destination_node else set())
    narrowed = bool(hosts or nodes or request.destination_cell
                    or (request.source_cell and not request.allow_cross_cell_move))
    view = _cells_view(cells)
    preloaded = [uuid for uuid, f in view.nodes.items()
                 if (not hosts or f.node.host in hosts) and (not nodes or f.node.hypervisor_hostname in nodes)] \
        if narrowed else None
    wanted = request.resources()
    if request.is_rebuild:
        hosts = _host_states(view, preloaded if preloaded is not None else list(view.nodes), None, {})
        trace.placement = {"candidates": len(hosts), "rebuild_check": True}
        return hosts, {}
    query = _placement_query(request)
    if query is None:
        trace.placement = {"candidates": 0, "shortfall": {"unknown_zone": request.availability_zone}}
        return [], wanted
    required, forbidden, member_of = query
    try:
        found = placement.allocation_candidates(
            copy=provider_cache, resources=wanted, required_traits=required, forbidden_traits=forbidden,
            member_of=member_of, limit=None if preloaded is not None else max_placement_results(),
            provider_uuids=preloaded,
            randomize=bool(getattr(settings, "RANDOMIZE_ALLOCATION_CANDIDATES", False)),
        )
    except placement.PlacementInvalid as exc:
        log.info("placement refused the request: %s", exc)
        trace.placement = {"candidates": 0, "error": str(exc)}
        return [], wanted
    trace.placement = {"candidates": len(found.allocation_requests)}
    if not found.allocation_requests:
        placement_shortfall(view, wanted, query, preloaded, trace=trace)
    requests = {next(iter(r["allocations"])): r for r in found.allocation_requests}
    rows = preloaded if preloaded is not None else [u for u in found.provider_summaries if u in view.nodes]
    return _host_states(view, rows, found.provider_summaries, requests), wanted


def _placement_query(request: RequestView) -> tuple[set[str], set[str], list[list[str]]] | None:
    """(required traits, forbidden traits, member_of) of the request; None when it names an
    availability zone that has no aggregate and is not the default one (nothing can match)."""
    required, forbidden = request.traits()
    forbidden.add(DISABLED_TRAIT)
    member_of = request.destination_aggregates()
    zone = request.availability_zone
    if zone:
        zone_aggregates = aggregate_uuids_for_zone(zone)
        if zone_aggregates:
            member_of.append(zone_aggregates)
        elif zone != settings.DEFAULT_AVAILABILITY_ZONE:
            return None
    return required, forbidden - required, member_of


def _request_facts(request: RequestView) -> dict[str, Any]:
    required, forbidden = request.traits()
    return {
        "resources": request.resources(), "required_traits": sorted(required), "forbidden_traits": sorted(forbidden),
        "availability_zone": request.availability_zone, "num_instances": int(request.spec.get("num_instances") or 1),
        "destination": {k: v for k, v in request.destination.items() if v} or None,
        "force_hosts": request.force_hosts, "ignore_hosts": request.ignore_hosts,
    }


def placement_shortfall(view: _CellsView, wanted: dict[str, int],
                        query: tuple[set[str], set[str], list[list[str]]], preloaded: list[str] | None,
                        nearest: int | None = None, trace: SchedulingTrace | None = None) -> dict[str, Any]:
    """Why placement offered no candidate (``ProviderCache.shortfall`` over the providers of the
    schedulable cells' nodes), the nearest providers named by their host. The caller has just
    refreshed the provider copy (its allocation candidates, or ``provider_cache.refresh``): the
    shortfall explains that state without reading the stamp again. With ``trace``, the answer is
    also its placement's ``shortfall``, and, when it is the kept named answer, its
    ``shortfall_of``. The answer may be that kept named answer, shared with the next requests
    (``_last_named``): read it, never change it (``owned_trace`` copies it for a reader that may)."""
    global _last_named
    required, forbidden, member_of = query
    answer = provider_cache.shortfall(
        resources=wanted, required_traits=required, forbidden_traits=forbidden, member_of=member_of,
        provider_uuids=preloaded if preloaded is not None else view.node_uuids(),
        nearest=nearest if nearest is not None else host_limit(), refresh=False, copied=False)
    seen, nodes, named = _last_named
    same = seen is answer and nodes is view.nodes
    if not same or named is None:
        shortfall = shortfall_copy(answer)
        for near in shortfall["nearest"]:
            near["host"], near["node"] = _host_of(view, near)
        if same:  # asked for a second time: kept, named (a run of changing answers copies each once)
            named = shortfall
            _last_named = (answer, nodes, named)
        else:
            named = None
            _last_named = (answer, view.nodes, None)
    if named is not None:
        shortfall = named
    if trace is not None:
        trace.placement["shortfall"], trace.shortfall_of = shortfall, named
    return shortfall


#: the last shortfall answer named by host: (the provider copy's kept answer, the nodes it was
#: named from, the named answer once the answer was asked for twice). The same failure asked again
#: while neither changes (a PENDING server retried) is answered by the named answer itself, its
#: hosts not looked up again and nothing copied: nobody changes it (nor the kept one); a reader
#: that may change a trace gets its own copy (``owned_trace``)
_last_named: tuple[Any, Any, dict[str, Any] | None] = (None, None, None)


def owned_trace(trace: SchedulingTrace, whole: dict[str, Any] | None = None) -> dict[str, Any]:
    """``trace.to_dict()`` (or ``whole``, made by it) as a reader's own, which it may change: with
    a copy of its shortfall when that is the kept named answer (``placement_shortfall``), shared
    with the next requests; as it is otherwise (nothing else in it is shared)."""
    whole = whole if whole is not None else trace.to_dict()
    placement = whole["placement"]
    if trace.shortfall_of is None or placement.get("shortfall") is not trace.shortfall_of:
        return whole
    return {**whole, "placement": {**placement, "shortfall": shortfall_copy(trace.shortfall_of)}}


def _host_of(view: _CellsView, near: dict[str, Any]) -> tuple[str, str | None]:
    """(host, node) of a near provider of a shortfall (its uuid when no node is known)."""
    facts = view.nodes.get(near["uuid"])
    return (facts.node.host, facts.node.hypervisor_hostname) if facts else (near["uuid"], None)


# --- notifications ---------------------------------------------------------------------------------
def _payload(spec: dict[str, Any], instance_uuids: list[str]) -> dict[str, Any]:
    return {
        "instance_uuid": spec.get("instance_uuid") or (instance_uuids[0] if instance_uuids else None),
        "num_instances": len(instance_uuids) or int(spec.get("num_instances") or 1),
        "availability_zone": spec.get("availability_zone"),
        "flavor": spec.get("flavor") or {},
        "image": {k: v for k, v in (spec.get("image") or {}).items() if k in ("id", "name", "properties")},
        "project_id": spec.get("project_id"), "user_id": spec.get("user_id"),
        "ignore_hosts": spec.get("ignore_hosts") or [], "force_hosts": spec.get("force_hosts") or [],
        "force_nodes": spec.get("force_nodes") or [],
        "requested_destination": spec.get("requested_destination"),
        "scheduler_hints": spec.get("scheduler_hints") or {},
        "instance_group": spec.get("instance_group"),
    }


def _notify(event_type: str, payload: dict[str, Any]) -> None:
    notify(event_type, payload, priority="INFO", publisher_id=publisher("nova-scheduler"),
           payload_name="RequestSpecPayload", version="1.3")


# --- the entry point -------------------------------------------------------------------------------
def select_destinations(
    ctx: Any, spec: dict[str, Any], instance_uuids: list[str], return_alternates: bool = False,
) -> list[list[Selection]]:
    """One list per instance: ``[chosen, *alternates]`` (alternates only with
    ``return_alternates``; all in the chosen host's cell). The chosen host's allocations are
    claimed in placement for the instance uuid (no claim when ``instance_uuids`` is empty, nor for
    a rebuild check). Raises NoValidHost, whose reason names the shortfall in words without host
    names and whose ``trace`` holds the whole trace (``shared_trace``: the same, for readers that
    do not change it). Emits
    ``scheduler.select_destinations.start/end`` (the end's payload carries the trace summary).
    Writes one ``SchedulingTraceRecord`` per instance uuid.

    It runs in a request scope (``cloudcore.core.scope``; the one open around it when there is
    one: the HTTP request's, the conductor's build's): the notifications' records and the trace
    records are written together when the scope ends, one INSERT per model in one transaction
    (in a worker with no scope around it, before this returns or raises; in the conductor's
    build that finds no valid host, in the burial's API transaction); a failing write is logged,
    the answer is kept."""
    with request_scope():
        return _select_and_record(ctx, spec, instance_uuids, return_alternates)


def _select_and_record(ctx: Any, spec: dict[str, Any], instance_uuids: list[str],
                       return_alternates: bool) -> list[list[Selection]]:
    request = RequestView(spec)
    payload = _payload(spec, instance_uuids)
    _notify("scheduler.select_destinations.start", payload)
    trace = SchedulingTrace()
    request_id = str(ctx_attr(ctx, "request_id") or "")
    try:
        try:
            results = _select(ctx, spec, request, instance_uuids, return_alternates, trace)
        except _ClaimsLost:
            log.info("claims for %s lost to a concurrent writer: scheduling them one by one", instance_uuids)
            trace = SchedulingTrace()
            results = _select(ctx, spec, request, instance_uuids, return_alternates, trace, batch_claims=False)
    except NoValidHost as exc:
        whole = trace.to_dict()
        # its readers that only read take it as it is (``failure_details``, ``failure_summary``);
        # one that reads ``exc.trace`` gets its own copy, made then
        exc.share_trace(whole, own=partial(owned_trace, trace, whole))  # (a partial pickles, as whole does)
        trace_record_save(trace=trace, instance_uuids=instance_uuids, request_id=request_id, whole=whole)
        raise
    whole = trace.to_dict()
    trace_record_save(trace=trace, instance_uuids=instance_uuids, request_id=request_id, whole=whole)
    _notify("scheduler.select_destinations.end", {**payload, "scheduling_trace": trace_summary(whole)})
    return results


class _ClaimsLost(Exception):
    """The claims of a multi-instance request, made together, lost to a concurrent writer."""


def _select(ctx: Any, spec: dict[str, Any], request: RequestView, instance_uuids: list[str],
            return_alternates: bool, trace: SchedulingTrace, batch_claims: bool = True) -> list[list[Selection]]:
    consumers: list[str | None] = list(instance_uuids) or [None] * int(spec.get("num_instances") or 1)
    hosts, wanted = _candidate_hosts(request, trace)
    steps: list[str] = [f"placement: {len(hosts)} candidates"]
    hosts = filter_hosts(hosts, request, log=steps, trace=trace)
    hosts = _hint_hosts_filter(hosts, request, steps, trace)
    # a dry run has no instance: the server whose spec it is (if any) does not count against itself
    group = GroupPlacement.of(spec, exclude=instance_uuids or [u for u in [spec.get("instance_uuid")] if u])
    log.debug("filtering for %s: %s", instance_uuids, "; ".join(steps))
    claim = not request.is_rebuild
    # several instances: each is placed in memory and all are claimed at the end in one
    # transaction (``placement.claim_allocation_requests``); when a concurrent writer wins,
    # ``select_destinations`` starts over claiming one by one (``batch_claims=False``)
    claim_each = claim and not (batch_claims and len(consumers) > 1 and None not in consumers)
    project_id = str(spec.get("project_id") or ctx_attr(ctx, "project_id") or "")
    user_id = str(spec.get("user_id") or ctx_attr(ctx, "user_id") or "")
    chosen: list[HostState] = []
    claimed: list[str] = []
    max_attempts = int(getattr(settings, "MAX_ATTEMPTS", 3)) if return_alternates else 1
    results: list[list[Selection]] = []
    # every candidate fits one instance (placement's rule is ``HostState.fits`` and more) and
    # only a chosen host's usage changes during the request: a chosen host that no longer fits
    # leaves the list, nothing else needs looking at again
    fitting = list(hosts)
    first_weighing: list[HostState] = []
    for index, consumer in enumerate(consumers):
        scores: dict[str, tuple[float, list[float]]] | None = {} if index == 0 else None
        weighed = [h for h in fitting if group.allows(h.host)] if group.restricts else list(fitting)
        by_weight = weigh_hosts(weighed, request, scores=scores)
        if index == 0:
            first_weighing = by_weight
        ordered = group.order(by_weight)
        if scores is not None:
            if group.filter_name:
                room = [h for h in hosts if h.fits(wanted)]
                trace.filtered(group.filter_name, len(room), [h for h in room if not group.allows(h.host)],
                               lambda h: group.why_not(h.host))
            trace.weighed(weighed, ordered, {**scores, **group.scores(weighed)})
        picked = None
        for host in ordered:
            if consumer is None or not claim_each or placement.claim_allocation_request(
                consumer_uuid=consumer, allocation_request=host.allocation_request, project_id=project_id,
                user_id=user_id,
            ):
                picked = host
                break
            trace.claims_failed.append(host.host)
        if picked is None:
            for done in claimed:
                placement.allocations_delete(consumer_uuid=done)
            log.info("no valid host for %s: %s", instance_uuids, "; ".join(steps))
            if hosts:
                trace.unplaced = {"index": index, "count": len(consumers), "group_policy": group.policy
                                  if group.policy in ("affinity", "anti-affinity")
                                  and any(h.fits(wanted) for h in hosts) else None}
            reason = NOT_ENOUGH_HOSTS
            words = trace.user_reason()
            if words:
                reason = f"{NOT_ENOUGH_HOSTS} {words}"
            error = NoValidHost(reason=reason)
            trace.failed(str(error))
            raise error
        if consumer is not None and claim_each:
            claimed.append(consumer)
        group.place(picked.host)
        picked.consume(wanted)
        if not picked.fits(wanted):
            fitting = [h for h in fitting if h is not picked]
        chosen.append(picked)
        results.append([Selection.from_host(picked)])
    if claim and not claim_each and not placement.claim_allocation_requests(
            claims=[(consumer, host.allocation_request) for consumer, host in zip(consumers, chosen, strict=True)],
            project_id=project_id, user_id=user_id):
        raise _ClaimsLost
    taken = {id(h) for h in chosen}
    # nothing is consumed from here on, so one weighing orders the alternates of every instance;
    # one instance's are in the order its own weighing gave (the hosts it weighed are all of
    # ``hosts`` when no hard group policy took some out), the order the trace's weights show: a
    # second weighing would only count the chosen host's new use (it is no alternate), at the cost
    # of a pass over every host
    if max_attempts <= 1 or not chosen:
        by_weight = []
    elif len(chosen) == 1 and not group.restricts:
        by_weight = first_weighing
    else:
        by_weight = weigh_hosts(hosts, request)
    for index, picked in enumerate(chosen):
        if max_attempts <= 1:
            break
        for host in by_weight:
            if len(results[index]) >= max_attempts:
                break
            if host.cell_uuid == picked.cell_uuid and id(host) not in taken and host.fits(wanted) \
                    and group.allows(host.host):
                results[index].append(Selection.from_host(host))
    for consumer, picked, selection_list in zip(consumers, chosen, results, strict=True):
        trace.selected(consumer, picked, selection_list[1:])
    return results


#: the filter (hard policies) or weigher (soft ones) of each server group policy, by Nova's names
GROUP_FILTERS = {"affinity": "ServerGroupAffinityFilter", "anti-affinity": "ServerGroupAntiAffinityFilter"}
GROUP_WEIGHERS = {"soft-affinity": ("ServerGroupSoftAffinityWeigher", 1.0),
                  "soft-anti-affinity": ("ServerGroupSoftAntiAffinityWeigher", -1.0)}


class GroupPlacement:
    """A server group's policy during one scheduling request: ``members`` holds the uuids of the
    group's members per host as the request found them (the servers being scheduled left out),
    ``counts`` how many per host, updated as each server of the request is placed."""

    def __init__(self, policy: str | None, rules: dict[str, Any], members: dict[str, list[str]],
                 uuid: str | None = None) -> None:
        self.policy, self.uuid, self.members = policy, uuid, {h: list(m) for h, m in members.items()}
        self.counts = {host: len(uuids) for host, uuids in members.items()}
        self.max_per_host = int(rules.get("max_server_per_host") or 1)

    @classmethod
    def of(cls, spec: dict[str, Any], *, exclude: Iterable[str]) -> GroupPlacement:
        group = spec.get("instance_group") or {}
        if not group.get("uuid"):
            return cls(None, {}, {})
        return cls(str(group.get("policy")), dict(group.get("rules") or {}),
                   group_member_hosts(str(group["uuid"]), exclude=exclude), uuid=str(group["uuid"]))

    @property
    def filter_name(self) -> str | None:
        """The filter a hard policy is (None for a soft policy or no group)."""
        return GROUP_FILTERS.get(self.policy or "")

    def blocking(self, host: str) -> list[tuple[str, str]]:
        """``[(member uuid, its host)]`` of the members that keep a hard policy from ``host``
        (as the request found them): the members on it (anti-affinity), the members on other
        hosts (affinity, with none on it)."""
        if self.policy == "anti-affinity" and self.counts.get(host, 0) >= self.max_per_host:
            return [(uuid, host) for uuid in self.members.get(host, [])]
        if self.policy == "affinity" and self.members and host not in self.members:
            return [(uuid, other) for other, uuids in sorted(self.members.items()) for uuid in uuids]
        return []

    def why_not(self, host: str) -> str:
        """Why a hard policy keeps ``host`` out, for the trace (members by uuid)."""
        if self.policy == "anti-affinity":
            here = ", ".join(self.members.get(host, [])) or "servers placed by this request"
            return f"server group {self.uuid} is anti-affinity (at most {self.max_per_host} per host): {here} here"
        hosts = ", ".join(sorted({h for h, uuids in self.members.items() if uuids}))
        return f"server group {self.uuid} is affinity: its members are on {hosts or 'other hosts'}"

    def scores(self, weighed: list[HostState]) -> dict[str, tuple[float, list[float]]]:
        """A soft policy's weigher share per host of ``weighed`` (members on it; the trace's)."""
        name, multiplier = GROUP_WEIGHERS.get(self.policy or "", (None, 0.0))
        if name is None:
            return {}
        return {name: (multiplier, [float(self.counts.get(h.host, 0)) for h in weighed])}

    @property
    def restricts(self) -> bool:
        """Can ``allows`` say no (a hard policy)?"""
        return self.policy in ("affinity", "anti-affinity")

    def allows(self, host: str) -> bool:
        """ServerGroupAffinityFilter / ServerGroupAntiAffinityFilter."""
        if self.policy == "affinity":
            return not self.counts or host in self.counts
        if self.policy == "anti-affinity":
            return self.counts.get(host, 0) < self.max_per_host
        return True

    def order(self, weighed: list[HostState]) -> list[HostState]:
        """The soft policies' weighers: more members first (soft-affinity) or fewer first
        (soft-anti-affinity); the other weighers order hosts with the same count."""
        if self.policy == "soft-affinity":
            return sorted(weighed, key=lambda h: -self.counts.get(h.host, 0))
        if self.policy == "soft-anti-affinity":
            return sorted(weighed, key=lambda h: self.counts.get(h.host, 0))
        return weighed

    def place(self, host: str) -> None:
        if self.policy:
            self.counts[host] = self.counts.get(host, 0) + 1


def _hint_hosts_filter(hosts: list[HostState], request: RequestView, steps: list[str],
                       trace: SchedulingTrace | None = None) -> list[HostState]:
    """SameHostFilter / DifferentHostFilter: the hints name servers; their hosts decide."""
    for hint, keep in (("same_host", True), ("different_host", False)):
        wanted = request.hints.get(hint)
        if not wanted:
            continue
        named = set(hosts_of([wanted] if isinstance(wanted, str) else list(wanted)).values())
        before = len(hosts)
        name = "SameHostFilter" if keep else "DifferentHostFilter"
        out = [h for h in hosts if (h.host in named) != keep]
        hosts = [h for h in hosts if (h.host in named) == keep]
        if trace is not None:
            trace.filtered(name, before, out, lambda h, keep=keep: "no server named by same_host here" if keep
                           else "runs a server named by different_host")
        steps.append(f"{name}: {before} -> {len(hosts)}")
    return hosts


def ctx_attr(ctx: Any, name: str) -> Any:
    return getattr(ctx, name, None) if ctx is not None else None
