"""Why a scheduling request went where it went, or nowhere: the trace of one decision.

``select_destinations`` fills a ``SchedulingTrace`` as it goes, from what it already holds (the
placement request, the candidate count, the hosts each filter let through, the weights): placement's
answer and, when it offers no candidate, the shortfall computed by the scheduler's in-memory copy of
placement (``ProviderCache.shortfall``: one walk of the providers, then kept as counts that only
the providers placement changed since are taken out of and put back in: which resource class, by
how much, on how many providers; which traits and aggregates were missing); per filter the hosts
in and out, with a reason for each host out; the weights of the best hosts with each weigher's
share; the chosen host and its alternates. No query is made per host.

Bounded: per filter at most ``SCHEDULER_TRACE_HOSTS`` rejected hosts are named (the rest counted),
as for the weights and the nearest hosts of a shortfall.

Three readings: ``to_dict`` (everything, for admins: the trace record and the explanation API),
``trace_summary`` of it (a small dict for notifications, with host names: the external service of
the PENDING seed reads where to free resources) and ``user_message`` (words without host names:
the fault of a PENDING/ERROR server).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

#: how resource classes are named to users, and their unit
RESOURCE_WORDS: dict[str, tuple[str, str]] = {
    "VCPU": ("vCPUs", ""), "MEMORY_MB": ("RAM", " MB"), "DISK_GB": ("disk", " GB"),
}
RESULT_SELECTED = "selected"
RESULT_NO_VALID_HOST = "no_valid_host"


def host_limit() -> int:
    return int(settings.SCHEDULER_TRACE_HOSTS)


def resource_words(rc: str, amount: int) -> tuple[str, str]:
    """(what, "amount unit") for a user: ("RAM", "8192 MB")."""
    what, unit = RESOURCE_WORDS.get(rc, (rc, ""))
    return what, f"{amount}{unit}"


def shortfall_sentence(resources: dict[str, dict[str, int]]) -> str | None:
    """The resource class short on the most providers, in words ("Not enough RAM: needs 8192 MB,
    the most free on any host is 4096 MB.")."""
    if not resources:
        return None
    rc, facts = max(resources.items(), key=lambda item: (item[1]["short_on"], -item[1]["most_free"]))
    what, needed = resource_words(rc, facts["requested"])
    _, most = resource_words(rc, facts["most_free"])
    return f"Not enough {what}: needs {needed}, the most free on any host is {most}."


#: what each filter's rejection means to a user (no host names)
FILTER_WORDS: dict[str, str] = {
    "ComputeFilter": "The hosts with room are disabled or down.",
    "AvailabilityZoneFilter": "No host with room is in the requested availability zone.",
    "RequestedDestinationFilter": "The requested destination cannot take it.",
    "SourceCellFilter": "No host with room is in the server's cell.",
    "ImagePropertiesFilter": "No host with room matches the image's architecture or hypervisor type.",
    "AggregateInstanceExtraSpecsFilter": "No host with room is in an aggregate matching the flavor's extra specs.",
    "ignore_hosts": "Every host with room is excluded by the request.",
    "forced hosts/nodes": "The forced host cannot take it.",
    "SameHostFilter": "The host of the server named by same_host cannot take it.",
    "DifferentHostFilter": "Every host with room runs a server named by different_host.",
    "ServerGroupAffinityFilter": "The server group's affinity policy cannot be met by the hosts with room.",
    "ServerGroupAntiAffinityFilter": "The server group's anti-affinity policy cannot be met by the hosts with room.",
}


@dataclass
class SchedulingTrace:
    """One scheduling decision (see module doc). Filled by the scheduler, read as a dict."""

    request: dict[str, Any] = field(default_factory=dict)
    placement: dict[str, Any] = field(default_factory=dict)
    filters: list[dict[str, Any]] = field(default_factory=list)
    weights: list[dict[str, Any]] = field(default_factory=list)
    weights_more: int = 0
    selections: list[dict[str, Any]] = field(default_factory=list)
    claims_failed: list[str] = field(default_factory=list)
    unplaced: dict[str, Any] | None = None
    result: str = RESULT_SELECTED
    message: str = ""
    #: the kept answer that ``placement["shortfall"]`` is a copy of (``scheduler.placement_shortfall``;
    #: None when it is not one), which nothing changes while it is kept: two traces that copy the
    #: same one have equal shortfalls, found by its identity (not part of the trace's reading)
    shortfall_of: dict[str, Any] | None = field(default=None, compare=False, repr=False)

    # -- filling ------------------------------------------------------------------------------
    def filtered(self, name: str, before: int, out: list[Any], reason: Any) -> None:
        """A filter (or pseudo-filter) let ``before - len(out)`` hosts through; ``reason(host)``
        says why one was rejected (asked for the first ``host_limit()`` only). A step that had
        no host to look at is not recorded."""
        if not before:
            return
        limit = host_limit()
        self.filters.append({
            "name": name, "in": before, "out": len(out),
            "rejected": [{"host": h.host, "node": h.nodename, "reason": reason(h)} for h in out[:limit]],
            "more": max(len(out) - limit, 0),
        })

    def weighed(self, weighed: list[Any], ordered: list[Any], scores: dict[str, tuple[float, list[float]]]) -> None:
        """The best ``host_limit()`` of ``ordered`` with each weigher's share (``scores`` as
        ``weigh_hosts`` fills it, over ``weighed``, the hosts in the order they were weighed)."""
        limit = host_limit()
        best = ordered[:limit]
        wanted = {id(h) for h in best}
        position = {id(h): i for i, h in enumerate(weighed) if id(h) in wanted}
        self.weights = [{"host": h.host, "node": h.nodename, "weight": round(h.weight, 6),
                         "scores": {name: round(multiplier * values[position[id(h)]], 6)
                                    for name, (multiplier, values) in scores.items()}}
                        for h in best]
        self.weights_more = max(len(ordered) - limit, 0)

    def selected(self, consumer: str | None, host: Any, alternates: list[Any]) -> None:
        self.selections.append({
            "instance_uuid": consumer, "host": host.host, "node": host.nodename, "cell": host.cell_name,
            "alternates": [{"host": a.service_host, "node": a.nodename} for a in alternates],
        })

    def failed(self, message: str) -> None:
        self.result = RESULT_NO_VALID_HOST
        self.message = message

    # -- reading ------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "result": self.result, "message": self.message, "request": self.request, "placement": self.placement,
            "filters": self.filters, "weights": self.weights, "weights_more": self.weights_more,
            "selections": self.selections, "claims_failed": self.claims_failed, "unplaced": self.unplaced,
        }

    def user_reason(self) -> str | None:
        """The shortfall in words for anybody (no host names); None when nothing more specific
        than "not enough hosts" can be said. A trace whose shortfall is the kept answer the last
        one's words were made from (``shortfall_of``, never changed while kept), for the same
        zone and with no candidate, gets those words again (a PENDING server retried)."""
        kept, zone = self.shortfall_of, self.request.get("availability_zone")
        only_shortfall = kept is not None and not self.placement.get("candidates") \
            and not self.placement.get("error") and self.placement.get("shortfall") is kept
        last = _kept_words[0]
        if only_shortfall and last is not None and last[0] is kept and last[1] == zone:
            return last[2]
        words = user_reason(self.to_dict())
        if only_shortfall:
            _kept_words[0] = (kept, zone, words)
        return words


#: (the kept shortfall, the zone asked for, their words) of the last trace that had only a kept
#: shortfall to say (``SchedulingTrace.user_reason``); one slot, replaced whole
_kept_words: list[tuple[dict[str, Any], str | None, str | None] | None] = [None]


def user_reason(trace: dict[str, Any]) -> str | None:
    """See ``SchedulingTrace.user_reason``; works on a stored trace too."""
    placement = trace.get("placement") or {}
    shortfall = placement.get("shortfall") or {}
    if shortfall.get("unknown_zone"):
        return f"Availability zone {shortfall['unknown_zone']} has no hosts."
    if placement.get("error"):
        return str(placement["error"])
    if placement.get("candidates", 0) == 0 and shortfall:
        return _placement_words(shortfall, trace.get("request") or {})
    for step in trace.get("filters") or []:
        if step["in"] and step["out"] == step["in"]:
            return FILTER_WORDS.get(step["name"], f"Every host with room was rejected by {step['name']}.")
    unplaced = trace.get("unplaced") or {}
    if unplaced.get("group_policy"):
        return f"The server group's {unplaced['group_policy']} policy cannot be met by the hosts with room."
    if unplaced.get("index"):
        return f"Only {unplaced['index']} of the {unplaced['count']} servers fit on the hosts with room."
    return None


def _placement_words(shortfall: dict[str, Any], request: dict[str, Any]) -> str | None:
    providers = shortfall.get("providers", 0)
    if not providers:
        return "There are no compute hosts to choose from."
    blockers: list[tuple[int, str]] = []
    resources = shortfall.get("resources") or {}
    if resources:
        short_on = max(f["short_on"] for f in resources.values())
        blockers.append((short_on, shortfall_sentence(resources) or ""))
    for trait, count in (shortfall.get("traits_missing") or {}).items():
        blockers.append((count, f"No host has the required trait {trait}."))
    for trait, count in (shortfall.get("traits_forbidden") or {}).items():
        words = "The hosts with room are disabled." if trait == "COMPUTE_STATUS_DISABLED" \
            else f"The hosts with room have the forbidden trait {trait}."
        blockers.append((count, words))
    if shortfall.get("outside_aggregates"):
        zone = request.get("availability_zone")
        words = f"No host with room is in availability zone {zone}." if zone \
            else "No host with room is in the requested aggregates."
        blockers.append((shortfall["outside_aggregates"], words))
    if not blockers:
        return None
    # the blocker that stops the most hosts; a resource short everywhere is the clearest answer
    return max(blockers, key=lambda b: b[0])[1]


def trace_summary(trace: dict[str, Any]) -> dict[str, Any]:
    """A small digest for notifications and event details: the result, candidate count, the
    shortfall's totals, filters' counts, the nearest hosts and what they lack, the choice. It
    shares no dict or list with ``trace`` (whose shortfall may be one the scheduler keeps)."""
    placement = trace.get("placement") or {}
    shortfall = placement.get("shortfall") or {}
    return {
        "result": trace.get("result"), "message": trace.get("message") or None,
        "candidates": placement.get("candidates", 0),
        "shortfall": {k: _copied(v) for k, v in shortfall.items() if k != "nearest"} or None,
        "nearest": [{k: _copied(v) for k, v in near.items() if k not in ("uuid", "node")}
                    for near in (shortfall.get("nearest") or [])[:3]],
        "filters": [{"name": f["name"], "in": f["in"], "out": f["out"]} for f in trace.get("filters") or []],
        "chosen": [{"host": s["host"], "alternates": [a["host"] for a in s["alternates"]]}
                   for s in trace.get("selections") or []],
    }


def _copied(value: Any) -> Any:
    """A copy of ``value`` (a shortfall's part: numbers and strings in dicts and lists)."""
    if isinstance(value, dict):
        return {k: _copied(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copied(v) for v in value]
    return value


def trace_text(trace: dict[str, Any], *, hosts: bool = True) -> str:
    """The trace as lines of text (the command's output, and the failing event's ``details``).
    ``hosts=False`` leaves every host name out."""
    lines: list[str] = []
    if trace.get("message"):
        lines.append(trace["message"])
    request = trace.get("request") or {}
    wanted = ", ".join(f"{rc}={n}" for rc, n in sorted((request.get("resources") or {}).items()))
    lines.append(f"request: {wanted or '-'}"
                 + (f"; required traits {', '.join(request['required_traits'])}" if request.get("required_traits")
                    else "")
                 + (f"; zone {request['availability_zone']}" if request.get("availability_zone") else ""))
    placement = trace.get("placement") or {}
    lines.append(f"placement: {placement.get('candidates', 0)} candidates"
                 + (f" ({placement['error']})" if placement.get("error") else ""))
    shortfall = placement.get("shortfall") or {}
    if shortfall.get("unknown_zone"):
        lines.append(f"  availability zone {shortfall['unknown_zone']} has no aggregate and is not the default")
    if "providers" in shortfall:
        lines.append(f"  {shortfall['providers']} providers looked at")
    for rc, facts in sorted((shortfall.get("resources") or {}).items()):
        lines.append(f"  {rc}: {facts['requested']} requested, short on {facts['short_on']} providers, "
                     f"most free {facts['most_free']}")
    for trait, count in sorted((shortfall.get("traits_missing") or {}).items()):
        lines.append(f"  trait {trait} required, missing on {count} providers")
    for trait, count in sorted((shortfall.get("traits_forbidden") or {}).items()):
        lines.append(f"  trait {trait} forbidden, present on {count} providers")
    if shortfall.get("outside_aggregates"):
        lines.append(f"  {shortfall['outside_aggregates']} providers outside the requested aggregates")
    if hosts:
        for near in shortfall.get("nearest") or []:
            lines.append(f"  nearest {near['host']}: {_near_words(near)}")
    for step in trace.get("filters") or []:
        lines.append(f"{step['name']}: {step['in']} -> {step['in'] - step['out']}")
        if hosts:
            lines.extend(f"  {r['host']}: {step['name']}: {r['reason']}" for r in step["rejected"])
            if step["more"]:
                lines.append(f"  ... and {step['more']} more")
    if hosts:
        for w in trace.get("weights") or []:
            scores = ", ".join(f"{k} {v:g}" for k, v in w["scores"].items())
            lines.append(f"weight {w['host']}: {w['weight']:g}" + (f" ({scores})" if scores else ""))
        if trace.get("weights_more"):
            lines.append(f"weight ... and {trace['weights_more']} more hosts")
        for failed in trace.get("claims_failed") or []:
            lines.append(f"claim failed on {failed}")
        for s in trace.get("selections") or []:
            alternates = ", ".join(a["host"] for a in s["alternates"]) or "none"
            lines.append(f"chosen {s['host']} (node {s['node']}); alternates: {alternates}")
    return "\n".join(lines)


def _near_words(near: dict[str, Any]) -> str:
    words = [f"{rc} short by {n}" for rc, n in sorted(near.get("short", {}).items())]
    words += [f"lacks {t}" for t in near.get("missing_traits", [])]
    words += [f"has {t}" for t in near.get("forbidden_traits", [])]
    if near.get("outside_aggregates"):
        words.append("outside the requested aggregates")
    return ", ".join(words) or "fits"


def failure_details(exc: BaseException | None) -> str | None:
    """The trace of a failed scheduling as text (host names included: the failing event's
    ``details``, shown from 2.84 under the admin-only ``events:details`` rule); None when ``exc``
    carries no trace. Reads the trace as the scheduler shares it (``NoValidHost.shared_trace``)."""
    trace = getattr(exc, "shared_trace", None)
    return trace_text(trace)[:65000] if isinstance(trace, dict) else None


def failure_summary(exc: BaseException | None) -> dict[str, Any] | None:
    """The trace summary of a failed scheduling (for error notifications); None without one.
    Reads the trace as the scheduler shares it (``NoValidHost.shared_trace``): the summary
    shares nothing with it."""
    trace = getattr(exc, "shared_trace", None)
    return trace_summary(trace) if isinstance(trace, dict) else None
