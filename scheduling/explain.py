"""Ask before you boot: would a request fit now, on which hosts, and if not, the smallest changes
that would make it fit (issue 22, the dry run).

``explain_request`` runs the scheduler's own steps on the request spec with no instance to claim
for (so placement is asked and the filters and weighers run, but nothing is allocated), which gives
the decision and its trace. Then it looks at every compute node of the schedulable cells against
every condition at once (not stopping at the first, as scheduling does): placement's (resources,
traits, aggregates, a disabled compute) from the scheduler's copy of placement, and every
filter's. A host with no problem fits; the hosts with the fewest problems (those too small even
when empty last) are the suggestions:
how much of which resource it is short of and which of its servers would have to be freed (the
fewest allocations that cover the shortage, from placement), that its compute service is disabled,
which trait it lacks, which zone it is in, which members of the request's server group keep its
affinity or anti-affinity policy from it (a soft policy orders the hosts that fit, as its weigher
does in a real boot). Reads only: placement's allocations of the suggested
hosts (one query each, at most ``SUGGESTIONS``) and their servers' names (one query per cell).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import Any

from django.conf import settings

from cloudcore.core.exceptions import NoValidHost

from .filters import rejections
from .host_state import HostState, RequestView
from .placement import services as placement
from .placement.cache import provider_cache
from .scheduler import (
    DISABLED_TRAIT,
    GroupPlacement,
    _cells_view,
    _host_states,
    _placement_query,
    _schedulable_cells,
    _select,
    owned_trace,
    placement_shortfall,
)
from .trace import SchedulingTrace, resource_words, user_reason
from .weights import weigh_hosts

#: how many near-miss hosts get a suggestion
SUGGESTIONS = 3
DISABLED_WORDS = "enable its compute service"


@dataclass
class Suggestion:
    """One host and what would have to change for the request to fit on it."""

    host: str
    node: str
    cell: str | None
    changes: list[str] = field(default_factory=list)
    short: dict[str, int] = field(default_factory=dict)
    free_servers: list[dict[str, Any]] = field(default_factory=list)
    only_disabled: bool = False
    #: the server group members that keep the group's policy from this host (``{"id", "name", "host"}``)
    group_members: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"host": self.host, "node": self.node, "cell": self.cell, "changes": self.changes,
                "short": self.short, "free_servers": self.free_servers, "only_disabled": self.only_disabled,
                "group_members": self.group_members}


def explain_request(*, spec: dict[str, Any], server_names: Any = None) -> dict[str, Any]:
    """The dry run of ``spec`` (a request spec as the scheduler reads it). No allocation is
    made. ``server_names(uuids) -> {uuid: name}`` names the servers to free (optional).

    Answers ``{"fits", "hosts" (that fit now, best first), "message" (words for a user),
    "suggestions" (hosts with the fewest changes first), "disabled_hosts_that_fit", "trace"}``."""
    request = RequestView(spec)
    trace = SchedulingTrace()
    fits = True
    try:
        _select(None, spec, request, [], False, trace)
    except NoValidHost as exc:
        fits = False
        trace.failed(str(exc))
    provider_cache.refresh()  # a request stopped before placement still gets a fresh copy
    view = _cells_view(_schedulable_cells(request))
    wanted = request.resources()
    query = _placement_query(request)
    hosts = _host_states(view, list(view.nodes), provider_cache.summaries(view.nodes), {})
    placement_problems: dict[str, dict[str, Any]] = {}
    if query is not None and wanted:
        required, forbidden, member_of = query
        shortfall = placement_shortfall(view, wanted, (required, forbidden, member_of), None, nearest=len(view.nodes))
        placement_problems = {near["uuid"]: near for near in shortfall["nearest"]}
    filter_problems = rejections(hosts, request)
    group = GroupPlacement.of(spec, exclude=[u for u in [spec.get("instance_uuid")] if u])
    group_names = _member_names(group, server_names)
    fitting: list[HostState] = []
    ranked: list[tuple[bool, int, float, HostState, list[str]]] = []
    for host in hosts:
        problems = _problems(host, placement_problems.get(host.uuid), filter_problems[id(host)], request, query,
                             wanted)
        problems += _group_problems(group, host.host, group_names)
        if not problems:
            fitting.append(host)
            continue
        near = placement_problems.get(host.uuid) or {}
        relative = sum(n / wanted[rc] for rc, n in (near.get("short") or {}).items() if wanted.get(rc))
        too_small = any(host.capacity(rc) < n for rc, n in wanted.items())
        ranked.append((too_small, len(problems), relative, host, problems))
    ranked.sort(key=lambda r: (r[0], r[1], r[2], r[3].host))
    suggestions = [_suggestion(host, problems, placement_problems.get(host.uuid), server_names, wanted)
                   for *_rank, host, problems in ranked[:SUGGESTIONS]]
    for suggestion in suggestions:
        suggestion.group_members = [{"id": uuid, "name": group_names.get(uuid), "host": on}
                                    for uuid, on in group.blocking(suggestion.host)]
    disabled = sorted(host.host for *_rank, host, problems in ranked if all(p == DISABLED_WORDS for p in problems))
    return {
        "fits": fits, "hosts": [h.host for h in group.order(weigh_hosts(fitting, request))] if fits else [],
        "message": trace.message or None if not fits else None,
        "user_message": user_reason(trace.to_dict()) if not fits else None,
        "suggestions": [s.to_dict() for s in suggestions] if not fits else [],
        "disabled_hosts_that_fit": disabled, "trace": owned_trace(trace),
    }


def _problems(host: HostState, near: dict[str, Any] | None, failed_filters: list[str], request: RequestView,
              query: Any, wanted: dict[str, int]) -> list[str]:
    """Every change ``host`` needs, in words (a disabled compute counted once). A resource the
    host has less of in all than the request wants is said as too small, not as an amount to free."""
    problems: list[str] = []
    if query is None:
        problems.append(f"availability zone {request.availability_zone} does not exist")
    near = near or {}
    for rc, amount in sorted((near.get("short") or {}).items()):
        capacity = host.capacity(rc)
        if capacity < wanted.get(rc, 0):
            what, has = resource_words(rc, capacity)
            problems.append(f"too small: {has} of {what} in all, {resource_words(rc, wanted[rc])[1]} needed")
        else:
            what, much = resource_words(rc, amount)
            problems.append(f"free {much} of {what}")
    problems += [f"add trait {t}" for t in near.get("missing_traits", [])]
    for trait in near.get("forbidden_traits", []):
        problems.append(DISABLED_WORDS if trait == DISABLED_TRAIT else f"remove trait {trait}")
    if near.get("outside_aggregates"):
        problems.append(f"add it to availability zone {request.availability_zone}" if request.availability_zone
                        else "add it to the requested aggregates")
    for failed in failed_filters:
        name, _, why = failed.partition(": ")
        if name == "ComputeFilter" and why.startswith("service disabled"):
            if DISABLED_WORDS not in problems:
                problems.append(DISABLED_WORDS)
        elif name == "AvailabilityZoneFilter" and near.get("outside_aggregates"):
            continue  # said once already
        else:
            problems.append(failed)
    return problems


def _member_names(group: GroupPlacement, server_names: Any) -> dict[str, str]:
    """The names of the group's members on a host (one read per cell), when names are asked for."""
    members = [uuid for uuids in group.members.values() for uuid in uuids]
    return dict(server_names(members)) if server_names and members and group.filter_name else {}


def _group_problems(group: GroupPlacement, host: str, names: dict[str, str]) -> list[str]:
    """What the group's hard policy asks of ``host``, naming the members that block it."""
    blocking = group.blocking(host)
    if not blocking:
        return []
    if group.policy == "anti-affinity":
        servers = ", ".join(_member_words(uuid, names) for uuid, _on in blocking)
        extra = len(blocking) - group.max_per_host + 1
        which = servers if extra >= len(blocking) else f"{extra} of {servers}"
        return [f"move {which} off it (server group {group.uuid} is anti-affinity, "
                f"at most {group.max_per_host} per host)"]
    servers = ", ".join(f"{_member_words(uuid, names)} on {on}" for uuid, on in blocking)
    return [f"server group {group.uuid} is affinity: its members are elsewhere ({servers})"]


def _member_words(uuid: str, names: dict[str, str]) -> str:
    return f"server {names[uuid]} ({uuid})" if names.get(uuid) else f"server {uuid}"


def _suggestion(host: HostState, problems: list[str], near: dict[str, Any] | None, server_names: Any,
                wanted: dict[str, int]) -> Suggestion:
    """``host``'s changes, and the fewest of its servers to free for what it is short of (none when
    it is too small for the request even empty: freeing would not make it fit)."""
    short = dict((near or {}).get("short") or {})
    suggestion = Suggestion(host=host.host, node=host.nodename, cell=host.cell_name, changes=list(problems),
                            short=short, only_disabled=all(p == DISABLED_WORDS for p in problems))
    if short and all(host.capacity(rc) >= wanted.get(rc, 0) for rc in short):
        chosen, covered = servers_to_free(placement.provider_allocations(rp=host.uuid), short)
        names = server_names([c for c, _ in chosen]) if server_names and chosen else {}
        suggestion.free_servers = [{"id": uuid, "name": names.get(uuid), "resources": resources}
                                   for uuid, resources in chosen]
        if not covered:
            suggestion.changes.append("even with every server freed the host is too small")
    return suggestion


def servers_to_free(allocations: dict[str, dict[str, int]], short: dict[str, int],
                    ) -> tuple[list[tuple[str, dict[str, int]]], bool]:
    """The fewest consumers whose allocations cover ``short`` (greedy: each step takes the
    consumer that covers most of what is still missing, relative to the shortage; the smallest of
    equals), and whether they cover it."""
    missing = {rc: n for rc, n in short.items() if n > 0}
    left = dict(allocations)
    chosen: list[tuple[str, dict[str, int]]] = []
    while missing and left:
        best = max(left.items(), key=partial(_gain, missing=missing))
        if _gain(best, missing)[0] <= 0:
            break
        chosen.append(best)
        del left[best[0]]
        missing = {rc: n - best[1].get(rc, 0) for rc, n in missing.items() if n - best[1].get(rc, 0) > 0}
    return chosen, not missing


def _gain(item: tuple[str, dict[str, int]], missing: dict[str, int]) -> tuple[float, int, str]:
    """Most of the gap covered first, then the smallest server (less to disturb)."""
    uuid, resources = item
    return sum(min(resources.get(rc, 0), n) / n for rc, n in missing.items()), -sum(resources.values()), uuid


def dry_run_spec(*, flavor: dict[str, Any], image: dict[str, Any] | None, availability_zone: str | None,
                 hints: dict[str, Any], project_id: str | None, user_id: str | None,
                 num_instances: int = 1, instance_group: dict[str, Any] | None = None) -> dict[str, Any]:
    """A request spec as server create writes it, for a server that will not be created
    (``instance_group``: the group of the ``group`` hint, as ``group_for_create`` gives it)."""
    return {
        "project_id": project_id, "user_id": user_id, "flavor": flavor, "image": image or {}, "is_bfv": False,
        "availability_zone": availability_zone or settings.DEFAULT_SCHEDULE_ZONE, "num_instances": num_instances,
        "force_hosts": [], "force_nodes": [], "requested_destination": None, "scheduler_hints": hints,
        "instance_group": instance_group, "ignore_hosts": [],
    }
