"""Scheduling trace (issue 22): what recording the trace of each decision costs per request with
1,000 and 10,000 hosts, for a request that is placed (filter steps, weights, selections, the
summary for the end notification, the trace record insert) and for one that finds no valid host
(the shortfall over every provider of the scheduler's placement copy, then the same).
Each part is timed by wrapping its function for the duration; its share is of the whole
``select_destinations`` time. The scheduler walks the providers for a shortfall once and keeps
it: a run of identical requests that do not fit while placement does not change is answered
from it as it is ("no valid host", timed after a first such request); the case "no valid host,
placement changed" writes an allocation (untimed) before each request, so that every request
finds the copy reloaded for one provider and the kept shortfall updated for it (taken out of the
counts as it was, put back in as it is). The weighers' per-weigher shares are filled inside ``weigh_hosts`` and are not
separated (a dict write per host and weigher)."""
from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from . import scheduler as base

DESCRIPTION = "scheduling trace cost per request with 1,000 and 10,000 hosts (placed and no valid host)"
SIZES = (1000, 10000)
QUICK_SIZES = (200, 1000)
REQUESTS = 30

#: (what, module, attribute): the trace's own steps
PARTS = (
    ("trace: filter steps (hosts out, reasons)", "scheduling.trace.SchedulingTrace", "filtered"),
    ("trace: weights of the best hosts", "scheduling.trace.SchedulingTrace", "weighed"),
    ("trace: chosen host and alternates", "scheduling.trace.SchedulingTrace", "selected"),
    ("trace: summary for the end notification", "scheduling.trace.SchedulingTrace", "summary"),
    ("trace: record insert (one statement)", "scheduling.scheduler", "trace_record_save"),
    ("trace: shortfall over every provider (no valid host only)", "scheduling.scheduler", "placement_shortfall"),
    ("trace: the fault's words", "scheduling.trace.SchedulingTrace", "user_reason"),
)


def _impossible_spec() -> dict[str, Any]:
    spec = base._spec()
    spec["flavor"] = {**spec["flavor"], "memory_mb": 10 ** 7}
    return spec


def _placement_write() -> Callable[[], None]:
    """Before each request: one consumer's allocation moved to the next of 50 providers (a
    placement write, as any claim elsewhere in the cloud would make)."""
    from scheduling.models import ResourceProvider
    from scheduling.placement import services as placement

    uuids = list(ResourceProvider.objects.order_by("id").values_list("uuid", flat=True)[:50])
    turn = itertools.count()

    def write() -> None:
        placement.allocations_put(consumer_uuid="bench-trace-churn", project_id="bench", user_id="bench",
                                  allocations={uuids[next(turn) % len(uuids)]: {"VCPU": 1}})
    return write


def _row(count: int, case: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    total = next(r["ms"] for r in rows if r["step"] == "total")
    trace_ms = sum(r["ms"] for r in rows if r["step"].startswith("trace:"))
    return {"hosts": count, "case": case, "total_ms": total, "trace_ms": trace_ms,
            "share_pct": 100.0 * trace_ms / total if total else 0.0,
            "parts": [r for r in rows if r["step"].startswith("trace:")]}


def run(env: Any) -> dict[str, Any]:
    out = []
    for count in QUICK_SIZES if env.quick else SIZES:
        base.populate(env, count)
        base.where_the_time_goes(3)  # warm the caches
        out.append(_row(count, "placed", base.where_the_time_goes(REQUESTS, PARTS)))
        base.where_the_time_goes(1, spec=_impossible_spec())  # the shortfall kept: this case's steady state
        out.append(_row(count, "no valid host", base.where_the_time_goes(REQUESTS, PARTS, _impossible_spec())))
        out.append(_row(count, "no valid host, placement changed", base.where_the_time_goes(
            REQUESTS, PARTS, _impossible_spec(), between=_placement_write())))
    print(f"   {'hosts':>7} {'case':>32} {'request ms':>11} {'trace ms':>9} {'share':>7}")
    for r in out:
        print(f"   {r['hosts']:>7} {r['case']:>32} {r['total_ms']:>11.2f} {r['trace_ms']:>9.3f} "
              f"{r['share_pct']:>6.1f}%")
        for part in r["parts"]:
            if part["ms"]:
                print(f"   {'':>7} {part['ms']:>8.3f} ms  {part['step']}")
    return {"rows": out, "requests": REQUESTS,
            "method": "select_destinations() in-process on the scheduler scenario's population; each trace "
                      "function wrapped with a timer (mean ms per request)"}
