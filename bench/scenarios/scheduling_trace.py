"""Scheduling trace (issue 22): what recording the trace of each decision costs per request with
1,000 and 10,000 hosts, for a request that is placed (filter steps, weights, selections, the
summary for the end notification, the trace record) and for one that finds no valid host
(the shortfall over every provider of the scheduler's placement copy, then the same).
Each part is timed by wrapping its function for the duration; its share is of the whole
``select_destinations`` time.

The trace's rows (its body, stored once per distinct body under its digest, and a record per
server naming it; ``scheduling.services.traces``) are not written by their own statements. For a
placed request the scheduler's request scope writes them with the start and end notifications' records in one
transaction when ``select_destinations`` ends (the scope's group commit, ``scope._write_batch``,
inside the timed request), each model's rows by one plain INSERT. Their cost is making the rows
(``trace_record_save``: the JSON and its digest, timed in the request) plus their part of that
transaction: the transaction's time in the requests (mean, with what the machine's load and
SQLite's checkpoints add to it) times the trace rows' fraction of it, found after the requests
by writing the last request's rows again, alternately with and without the trace rows, by the
same group commit as the requests (so that without them the notification alone is one INSERT in
autocommit, and with them the transaction of several models' rows is counted as theirs: the
replay used ``write_together``'s ``atomic`` both ways before, which left that difference out)
(the difference of the medians over the median with them; the difference never less than the
trace rows' INSERT statements alone). When the requests stored a new body each (placed: the body
names the server), each replay writes its body under a new digest, as a request would; when
they named a body stored already (the same failure again), the replay's body INSERT finds it
and writes nothing, as theirs did.

A request that finds no valid host is measured as the conductor's build makes it
(``_conducted``): the conductor's request scope is open around the call, and the failed server's
burial writes the scope's rows (the trace's, the start notification's) as the first statements of
its API-database transaction, with the server's mapping pointed at cell0 and its build request
deleted (``conductor.build.bury_in_cell0``; ``_burial`` makes that transaction, without the
failure's two notifications, which would only make it bigger). That transaction is timed apart
and is not the scheduling's: the request's time is the call's, plus the scope's rows' part of the
burial's transaction; the trace's cost is its steps plus the trace rows' part of it. Both parts are
the transaction's mean time in the requests times a fraction found by doing the burial of a new
server again after the requests, ``REPLAYS`` times each with all the rows, without the trace rows,
and without any (difference of the medians over the median with all; the trace rows' never less
than their INSERTs alone). Before (up to a666470) the rows had a transaction of their own when
the call ended (a record alone, notifications off: one statement in autocommit), and the burial's
two statements on the API database were two more commits; the trace rows' cost was then their
part of that transaction, as it still is for a placed request.

The scheduler walks the providers for a shortfall once and keeps it: a run of identical requests
that do not fit while placement does not change is answered from it as it is ("no valid host",
timed after a first such request); the case "no valid host, placement changed" writes an
allocation (untimed) before each request, so that every request finds the copy reloaded for one
provider and the kept shortfall updated for it (taken out of the counts as it was, put back in
as it is). That write (a VCPU moved between two of 50 providers; the request lacks RAM) leaves
the answer as it was: built again and equal to the last, it is given as the same object, so the
trace shares the kept shortfall named by host, as in "no valid host" (the update, the answer
built and compared are still counted). A write that changes the answer (a nearest provider's
RAM) would cost, besides, the copy and naming of the new answer and a new body. The weighers'
per-weigher shares are filled inside ``weigh_hosts`` and are not separated (a dict write per
host and weigher)."""
from __future__ import annotations

import contextlib
import itertools
import statistics
import time
import uuid
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
    ("trace: summary for the end notification", "scheduling.scheduler", "trace_summary"),
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
BURIED = "trace: record rows' part of the burial's API transaction"


class _ScopeWrites:
    """What the request scope wrote while ``_scope_writes`` was active: the time spent in its
    transactions (``scope.write_together``) and the rows of the last one (``(database, groups,
    plain)``)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.last: list[Any] = []


@contextlib.contextmanager
def _scope_writes() -> Iterator[_ScopeWrites]:
    from cloudcore.core import scope

    seen = _ScopeWrites()
    originals = scope.write_together, scope._write_batch

    def timed(database: str, groups: list[Any], plain: Any = None) -> Any:
        seen.last[:] = [(database, [(model, list(rows)) for model, rows in groups], dict(plain or {}))]
        started = time.perf_counter()
        try:
            return originals[0](database, groups, plain)
        finally:
            seen.seconds += time.perf_counter() - started

    def timed_batch(database: str, batch: list[Any]) -> Any:
        # the group commit's transaction (the path a scope's rows take when no other thread is
        # writing): its rows as one group each, as ``write_together`` would take them
        seen.last[:] = [(database, [(model, list(rows)) for pending in batch for model, rows in pending.groups],
                         {model: ignore for pending in batch for model, ignore in pending.plain.items()})]
        started = time.perf_counter()
        try:
            return originals[1](database, batch)
        finally:
            seen.seconds += time.perf_counter() - started

    scope.write_together, scope._write_batch = timed, timed_batch  # type: ignore[assignment]
    try:
        yield seen
    finally:
        scope.write_together, scope._write_batch = originals  # type: ignore[assignment]


def _copy(row: Any) -> Any:
    if isinstance(row, dict):  # a row given by its values (``scope.insert_values``)
        return dict(row)
    opts = type(row)._meta
    fields = [f for f in opts.concrete_fields if f is not opts.auto_field]
    return type(row)(**{f.attname: getattr(row, f.attname) for f in fields})


def _trace_models() -> tuple[Any, ...]:
    from scheduling.models import SchedulingTraceBody, SchedulingTraceRecord

    return SchedulingTraceBody, SchedulingTraceRecord


def _replayed(model: Any, rows: list[Any], fresh_bodies: bool, turn: int) -> list[Any]:
    """Copies of ``rows`` to write again; with ``fresh_bodies``, bodies (and the records naming
    them) under a digest of their own for this replay, so that the body is written as it was."""
    copies = [_copy(r) for r in rows]
    if fresh_bodies:
        for row in copies:
            for name in ("digest", "body_digest"):
                if isinstance(row, dict) and name in row:
                    row[name] = f"{row[name][:24]}-replay{turn}"
                elif hasattr(row, name):
                    setattr(row, name, f"{getattr(row, name)[:24]}-replay{turn}")
    return copies


@contextlib.contextmanager
def _trace_inserts_timed() -> Iterator[list[float]]:
    """While active, the seconds spent in the trace rows' plain INSERTs (``scope.insert_plain`` of
    the trace's models), in the list's one item."""
    from cloudcore.core import scope

    trace_models = _trace_models()
    original = scope.insert_plain
    spent = [0.0]

    def timed(database: str, model: Any, rows: list[Any], **kwargs: Any) -> None:
        started = time.perf_counter()
        try:
            original(database, model, rows, **kwargs)
        finally:
            if model in trace_models:
                spent[0] += time.perf_counter() - started

    scope.insert_plain = timed  # type: ignore[assignment]
    try:
        yield spent
    finally:
        scope.insert_plain = original  # type: ignore[assignment]


def _record_cost(last: list[Any], replays: int = REPLAYS, fresh_bodies: bool = False) -> tuple[float, float]:
    """(the trace rows' fraction of the scope's transaction, ms of their INSERT statements
    alone): the last request's rows written again ``replays`` times with and without the trace
    rows, alternately (``fresh_bodies``: see ``_replayed``); the fraction is the difference of
    the medians (never less than the INSERTs' median) over the median with them (the rows are
    left in the bench's database)."""
    from cloudcore.core import scope

    if not last:
        return 0.0, 0.0
    database, groups, plain = last[0]
    trace_models = _trace_models()
    with_trace, without, inserts = [], [], []
    for turn in range(replays):
        for keep_trace, into in ((True, with_trace), (False, without)):
            batch = [(model, _replayed(model, rows, fresh_bodies, turn)) for model, rows in groups
                     if keep_trace or model not in trace_models]
            if not batch:  # the trace rows were all of it
                into.append(0.0)
                continue
            with _trace_inserts_timed() as spent:
                started = time.perf_counter()
                scope._write_batch(database, [scope._Pending(batch, plain)])  # (as the requests' rows)
                into.append(time.perf_counter() - started)
            if keep_trace:
                inserts.append(spent[0])
    if not any(inserts):
        return 0.0, 0.0
    insert = statistics.median(inserts)
    whole = statistics.median(with_trace)
    marginal = max(whole - statistics.median(without), insert)
    return min(marginal / whole, 1.0), insert * 1000


def _accepted(instance_uuid: str) -> Any:
    """The API's rows of a server accepted and not yet scheduled, which a failed build's burial
    changes: its mapping (no cell yet) and its build request (untimed set-up). The mapping."""
    from cells.models import InstanceMapping
    from servers.models import BuildRequest

    BuildRequest.objects.create(instance_uuid=instance_uuid, project_id="bench", instance={"uuid": instance_uuid})
    return InstanceMapping.objects.create(instance_uuid=instance_uuid, project_id="bench")


def _burial(mapping: Any, cell0: Any, batch: list[Any] | None = None, plain: Any = None,
            own: Callable[[], Any] = contextlib.nullcontext) -> None:
    """The API-database transaction of a failed build's burial (``conductor.build.bury_in_cell0``):
    the mapping pointed at cell0, the build request deleted, and the rows the request scope
    deferred (``api_atomic(with_deferred=True)``; ``batch``: those rows given, written as it
    writes them). The failure's two notifications, which the
    burial also writes in it, are left out: the transaction is smaller than the burial's, so the
    trace rows' part of it is if anything overstated. ``own()``: a context around the burial's
    own two statements (callgrind's collection switched off in it: ``bench.trace_instructions``)."""
    from cells.transactions import api_atomic, api_db
    from cloudcore.core import scope
    from servers.services.build_requests import build_request_delete

    mapping.cell = cell0
    with api_atomic(with_deferred=True):
        if batch:  # as ``scope.atomic_with_deferred`` writes them: first, one INSERT per model
            for model, rows in batch:
                scope._write_model(api_db(), model, rows, plain or {})
        with own():
            mapping.save(update_fields=["cell", "updated_at"])
            build_request_delete(mapping.instance_uuid)


class _Burials:
    """The conducted requests' burials (``_conducted``): the time of their API transactions, and the
    time to take out of the requests' (those transactions and their set-up)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.untimed = 0.0
        #: the last burial's deferred rows (``(database, groups, plain)``, as ``_ScopeWrites.last``)
        self.last: list[Any] = []


@contextlib.contextmanager
def _conducted(own: Callable[[], Any] = contextlib.nullcontext) -> Iterator[_Burials]:
    """``select_destinations`` as the conductor's build calls it (``conductor.build.
    schedule_and_build_instances``): inside the conductor's request scope, a NoValidHost buried:
    the scope's rows (the trace's, the start notification's) written in the burial's API
    transaction (``_burial``), which is timed apart and taken out of the request's time. ``own()``:
    a context around the burial's set-up and own statements (``_burial``)."""
    from cells.selectors import cell0_get
    from cloudcore.core import scope
    from cloudcore.core.exceptions import NoValidHost
    from scheduling import scheduler

    burials = _Burials()
    cell0 = cell0_get()
    original = scheduler.select_destinations

    def conducted(ctx: Any, spec: dict[str, Any], instance_uuids: list[str], return_alternates: bool = False) -> Any:
        with scope.request_scope():
            try:
                return original(ctx, spec, instance_uuids, return_alternates)
            except NoValidHost:
                paused = time.perf_counter()
                with own():
                    mapping = _accepted(instance_uuids[0])
                    deferred = scope.current()
                    if deferred is not None:
                        burials.last[:] = [(None, [(model, list(rows)) for model, rows in deferred.rows.items()],
                                            dict(deferred.plain))]
                started = time.perf_counter()
                _burial(mapping, cell0, own=own)
                ended = time.perf_counter()
                burials.seconds += ended - started
                burials.untimed += ended - paused
                raise

    scheduler.select_destinations = conducted  # type: ignore[assignment]
    try:
        yield burials
    finally:
        scheduler.select_destinations = original  # type: ignore[assignment]


def _buried_cost(last: list[Any], replays: int = REPLAYS, fresh_bodies: bool = False) -> tuple[float, float, float]:
    """(the trace rows' fraction of the burial's transaction, the scope's rows' fraction of it, ms of
    the trace rows' INSERT statements alone): the burial of a new server (``_burial``) done again
    ``replays`` times with the last request's rows, without the trace rows and without any of the
    scope's rows, in turn; a fraction is the difference of the medians (the trace rows' never less
    than their INSERTs' median) over the median with them all."""
    from cells.selectors import cell0_get

    if not last:
        return 0.0, 0.0, 0.0
    _database, groups, plain = last[0]
    trace_models = _trace_models()
    cell0 = cell0_get()
    whole: list[float] = []
    without_trace: list[float] = []
    alone: list[float] = []
    inserts: list[float] = []
    for turn in range(replays):
        for keep, into in (("all", whole), ("no trace", without_trace), ("none", alone)):
            batch = [(model, _replayed(model, rows, fresh_bodies, turn)) for model, rows in groups
                     if keep == "all" or keep == "no trace" and model not in trace_models]
            mapping = _accepted(f"bench-burial-{uuid.uuid4()}")
            with _trace_inserts_timed() as spent:
                started = time.perf_counter()
                _burial(mapping, cell0, batch, plain)
                into.append(time.perf_counter() - started)
            if keep == "all":
                inserts.append(spent[0])
    insert = statistics.median(inserts)
    total = statistics.median(whole)
    trace = max(total - statistics.median(without_trace), insert)
    rows = max(total - statistics.median(alone), trace)
    return min(trace / total, 1.0), min(rows / total, 1.0), insert * 1000


def _measured(spec: dict[str, Any] | None = None, between: Any = None, requests: int = REQUESTS,
              replays: int = REPLAYS, buried: bool = False) -> list[dict[str, Any]]:
    """``where_the_time_goes`` over ``PARTS``, plus the trace rows' part of the transaction that
    writes them: the scope's own (``buried`` False: their time in the requests, mean, times the
    trace rows' fraction of it), or, ``buried``, the burial's (``_conducted``): the burial's
    transaction, mean, times the trace rows' fraction of it; the request's time is then the
    scheduling call's, without the burial, plus the scope's rows' part of the burial's transaction."""
    from scheduling.models import SchedulingTraceBody

    bodies = SchedulingTraceBody.objects.count()
    with _scope_writes() as writes, _conducted() if buried else contextlib.nullcontext() as burials:
        rows = base.where_the_time_goes(requests, PARTS, spec, between=between)
    fresh_bodies = SchedulingTraceBody.objects.count() - bodies > requests / 2
    if burials is None:
        fraction, insert = _record_cost(writes.last, replays, fresh_bodies)
        transaction_ms = writes.seconds / requests * 1000
        rows.append({"step": RECORD, "ms": transaction_ms * fraction})
        rows.append({"step": f"  (the scope's transaction: {transaction_ms:.3f} ms per request, the trace rows "
                             f"{100 * fraction:.0f}% of it when replayed; their INSERTs alone, "
                             f"{'a new body each' if fresh_bodies else 'the body stored already'})", "ms": insert})
        return rows
    fraction, scope_fraction, insert = _buried_cost(burials.last, replays, fresh_bodies)
    transaction_ms = burials.seconds / requests * 1000
    scope_rows_ms = transaction_ms * scope_fraction
    for row in rows:  # the burial is not the scheduling's; its rows' part of it is
        if row["step"] == "total" or row["step"].startswith("other"):
            row["ms"] += scope_rows_ms - burials.untimed / requests * 1000
    rows.append({"step": BURIED, "ms": transaction_ms * fraction})
    rows.append({"step": f"  (the burial's API transaction: {transaction_ms:.3f} ms per request, the scope's rows "
                         f"{100 * scope_fraction:.0f}% of it, {scope_rows_ms:.3f} ms, counted in the request; the "
                         f"trace rows {100 * fraction:.0f}%; their INSERTs alone, "
                         f"{'a new body each' if fresh_bodies else 'the body stored already'})", "ms": insert})
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
        with _conducted():  # the shortfall kept, the burial's path warm: this case's steady state
            base.where_the_time_goes(3, spec=_impossible_spec())
        out.append(_row(count, "no valid host", _measured(_impossible_spec(), buried=True)))
        out.append(_row(count, "no valid host, placement changed",
                        _measured(_impossible_spec(), between=_placement_write(), buried=True)))
        with override_settings(NOTIFICATIONS_ENABLED=False):  # the scope's rows are the trace's alone
            out.append(_row(count, "no valid host, notifications off", _measured(_impossible_spec(), buried=True)))
    print(f"   {'hosts':>7} {'case':>32} {'request ms':>11} {'trace ms':>9} {'share':>7}")
    for r in out:
        print(f"   {r['hosts']:>7} {r['case']:>32} {r['total_ms']:>11.2f} {r['trace_ms']:>9.3f} "
              f"{r['share_pct']:>6.1f}%")
        for part in r["parts"]:
            if part["ms"]:
                print(f"   {'':>7} {part['ms']:>8.3f} ms  {part['step']}")
    return {"rows": out, "requests": REQUESTS,
            "method": "select_destinations() in-process on the scheduler scenario's population; each trace "
                      "function wrapped with a timer (mean ms per request); the trace rows' (body and "
                      "records) part of the transaction the scheduler's scope ends with: its mean time per "
                      "request times their fraction of it (the last request's rows written again "
                      f"{REPLAYS} times with and {REPLAYS} times without them, difference of the medians "
                      "over the median with them; a replayed body under a new digest when the requests "
                      "stored a new body each); the share is the sum of the trace's parts over the mean "
                      "select_destinations time; a request that finds no valid host as the conductor's build "
                      "makes it: the scope's rows written in the burial's API transaction, which is timed apart, "
                      "its part for the scope's rows (and of those the trace's) found by doing the burial again "
                      "with all, without the trace's and without any of the rows"}
