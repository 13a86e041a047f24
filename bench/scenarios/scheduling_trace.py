"""Scheduling trace (issue 22): what recording the trace of each decision costs per request with
1,000 and 10,000 hosts, for a request that is placed (filter steps, weights, selections, the
summary for the end notification, the trace record) and for one that finds no valid host
(the shortfall over every provider of the scheduler's placement copy, then the same).
Each part is timed by wrapping its function for the duration; its share is of the whole
``select_destinations`` time.

The trace record is not written by its own statement: the scheduler's request scope writes it
with the start and end notifications' records in one transaction when ``select_destinations``
ends (``cloudcore.core.scope.write_together``, inside the timed request). Its cost is making the
rows (``trace_record_save``, timed in the request) plus its rows' part of that transaction: the
transaction's time in the requests (mean, with what the machine's load and SQLite's checkpoints
add to it) times the trace rows' fraction of it, found after the requests by writing the last
request's rows again, alternately with and without the trace rows (the difference of the
medians over the median with them; the difference never less than the trace rows' INSERT
statement alone). With notifications off ("notifications off") the transaction holds the trace
rows alone, and the whole of it is the trace's.

The scheduler walks the providers for a shortfall once and keeps it: a run of identical requests
that do not fit while placement does not change is answered from it as it is ("no valid host",
timed after a first such request); the case "no valid host, placement changed" writes an
allocation (untimed) before each request, so that every request finds the copy reloaded for one
provider and the kept shortfall updated for it (taken out of the counts as it was, put back in
as it is). The weighers' per-weigher shares are filled inside ``weigh_hosts`` and are not
separated (a dict write per host and weigher)."""
from __future__ import annotations

import contextlib
import itertools
import statistics
import time
from collections.abc import Callable, Iterator
from typing import Any

from django.test import override_settings

from . import scheduler as base

DESCRIPTION = "scheduling trace cost per request with 1,000 and 10,000 hosts (placed and no valid host)"
SIZES = (1000, 10000)
QUICK_SIZES = (200, 1000)
REQUESTS = 30
#: pairs of transactions (with and without the trace rows) timed for the record's marginal cost
REPLAYS = 60

#: (what, module, attribute): the trace's own steps
PARTS = (
    ("trace: filter steps (hosts out, reasons)", "scheduling.trace.SchedulingTrace", "filtered"),
    ("trace: weights of the best hosts", "scheduling.trace.SchedulingTrace", "weighed"),
    ("trace: chosen host and alternates", "scheduling.trace.SchedulingTrace", "selected"),
    ("trace: summary for the end notification", "scheduling.trace.SchedulingTrace", "summary"),
    ("trace: record rows made (written at the scope's end)", "scheduling.scheduler", "trace_record_save"),
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


RECORD = "trace: record rows' part of the scope's one transaction"


class _ScopeWrites:
    """What the request scope wrote while ``_scope_writes`` was active: the time spent in its
    transactions (``scope.write_together``) and the rows of the last one (``(database, groups)``)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.last: list[Any] = []


@contextlib.contextmanager
def _scope_writes() -> Iterator[_ScopeWrites]:
    from cloudcore.core import scope

    seen = _ScopeWrites()
    original = scope.write_together

    def timed(database: str, groups: list[Any]) -> Any:
        seen.last[:] = [(database, [(model, list(rows)) for model, rows in groups])]
        started = time.perf_counter()
        try:
            return original(database, groups)
        finally:
            seen.seconds += time.perf_counter() - started

    scope.write_together = timed  # type: ignore[assignment]
    try:
        yield seen
    finally:
        scope.write_together = original  # type: ignore[assignment]


def _copy(row: Any) -> Any:
    fields = [f for f in type(row)._meta.concrete_fields if not f.primary_key]
    return type(row)(**{f.attname: getattr(row, f.attname) for f in fields})


def _record_cost(last: list[Any], replays: int = REPLAYS) -> tuple[float, float]:
    """(the trace rows' fraction of the scope's transaction, ms of their INSERT statement alone):
    the last request's rows written again ``replays`` times with and without the trace rows,
    alternately; the fraction is the difference of the medians (never less than the INSERT's
    median) over the median with them (the rows are left in the bench's database)."""
    from cloudcore.core import scope
    from scheduling.models import SchedulingTraceRecord

    if not last:
        return 0.0, 0.0
    database, groups = last[0]
    manager = SchedulingTraceRecord._default_manager
    with_trace, without, inserts = [], [], []
    original_insert = manager.bulk_create

    def timed_insert(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return original_insert(*args, **kwargs)
        finally:
            inserts.append(time.perf_counter() - started)

    for _ in range(replays):
        for keep_trace, into in ((True, with_trace), (False, without)):
            batch = [(model, [_copy(r) for r in rows]) for model, rows in groups
                     if keep_trace or model is not SchedulingTraceRecord]
            if not batch:  # the trace rows were all of it
                into.append(0.0)
                continue
            started = time.perf_counter()
            manager.bulk_create = timed_insert  # type: ignore[method-assign]
            try:
                scope.write_together(database, batch)
            finally:
                del manager.bulk_create
            into.append(time.perf_counter() - started)
    if not inserts:
        return 0.0, 0.0
    insert = statistics.median(inserts)
    whole = statistics.median(with_trace)
    marginal = max(whole - statistics.median(without), insert)
    return min(marginal / whole, 1.0), insert * 1000


def _measured(spec: dict[str, Any] | None = None, between: Any = None, requests: int = REQUESTS,
              replays: int = REPLAYS) -> list[dict[str, Any]]:
    """``where_the_time_goes`` over ``PARTS``, plus the trace rows' part of the scope's
    transactions: their time in the requests (mean) times the trace rows' fraction of it."""
    with _scope_writes() as writes:
        rows = base.where_the_time_goes(requests, PARTS, spec, between=between)
    fraction, insert = _record_cost(writes.last, replays)
    transaction_ms = writes.seconds / requests * 1000
    rows.append({"step": RECORD, "ms": transaction_ms * fraction})
    rows.append({"step": f"  (the scope's transaction: {transaction_ms:.3f} ms per request, the trace rows "
                         f"{100 * fraction:.0f}% of it when replayed; their INSERT alone)", "ms": insert})
    return rows


def _row(count: int, case: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    total = next(r["ms"] for r in rows if r["step"] == "total")
    trace_ms = sum(r["ms"] for r in rows if r["step"].startswith("trace:"))  # not the lines in brackets
    return {"hosts": count, "case": case, "total_ms": total, "trace_ms": trace_ms,
            "share_pct": 100.0 * trace_ms / total if total else 0.0,
            "parts": [r for r in rows if r["step"].startswith(("trace:", "  ("))]}


def run(env: Any) -> dict[str, Any]:
    out = []
    for count in QUICK_SIZES if env.quick else SIZES:
        base.populate(env, count)
        base.where_the_time_goes(3)  # warm the caches
        out.append(_row(count, "placed", _measured()))
        base.where_the_time_goes(1, spec=_impossible_spec())  # the shortfall kept: this case's steady state
        out.append(_row(count, "no valid host", _measured(_impossible_spec())))
        out.append(_row(count, "no valid host, placement changed",
                        _measured(_impossible_spec(), between=_placement_write())))
        with override_settings(NOTIFICATIONS_ENABLED=False):  # the trace's transaction is its own
            out.append(_row(count, "no valid host, notifications off", _measured(_impossible_spec())))
    print(f"   {'hosts':>7} {'case':>32} {'request ms':>11} {'trace ms':>9} {'share':>7}")
    for r in out:
        print(f"   {r['hosts']:>7} {r['case']:>32} {r['total_ms']:>11.2f} {r['trace_ms']:>9.3f} "
              f"{r['share_pct']:>6.1f}%")
        for part in r["parts"]:
            if part["ms"]:
                print(f"   {'':>7} {part['ms']:>8.3f} ms  {part['step']}")
    return {"rows": out, "requests": REQUESTS,
            "method": "select_destinations() in-process on the scheduler scenario's population; each trace "
                      "function wrapped with a timer (mean ms per request); the trace rows' part of the "
                      "transaction the scheduler's scope ends with: its mean time per request times their "
                      f"fraction of it (the last request's rows written again {REPLAYS} times with and "
                      f"{REPLAYS} times without them, difference of the medians over the median with them)"}
