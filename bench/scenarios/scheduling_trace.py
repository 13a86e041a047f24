"""Scheduling trace (issue 22): what recording the trace of each decision costs per request with
1,000 and 10,000 hosts, for a request that is placed (filter steps, weights, selections, the
summary for the end notification, the trace record insert) and for one that finds no valid host
(the shortfall computed over every provider of the scheduler's placement copy, then the same).
Each part is timed by wrapping its function for the duration; its share is of the whole
``select_destinations`` time. The weighers' per-weigher shares are filled inside ``weigh_hosts``
and are not separated (a dict write per host and weigher)."""
from __future__ import annotations

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
        out.append(_row(count, "no valid host", base.where_the_time_goes(REQUESTS, PARTS, _impossible_spec())))
    print(f"   {'hosts':>7} {'case':>14} {'request ms':>11} {'trace ms':>9} {'share':>7}")
    for r in out:
        print(f"   {r['hosts']:>7} {r['case']:>14} {r['total_ms']:>11.2f} {r['trace_ms']:>9.3f} "
              f"{r['share_pct']:>6.1f}%")
        for part in r["parts"]:
            if part["ms"]:
                print(f"   {'':>7} {part['ms']:>8.3f} ms  {part['step']}")
    return {"rows": out, "requests": REQUESTS,
            "method": "select_destinations() in-process on the scheduler scenario's population; each trace "
                      "function wrapped with a timer (mean ms per request)"}
