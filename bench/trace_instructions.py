"""A deterministic count of the scheduling trace's cost (issue 22), for a shared, noisy machine:
instructions per ``select_destinations`` and the trace's part of them, for the cases of the
scheduling_trace scenario (placed, no valid host, no valid host with placement changed before
each request, no valid host with notifications off) at 1,000 and 10,000 hosts (the scheduler
scenario's population), counted by callgrind::

    .venv/bin/python -m bench.trace_instructions            # HOSTS=1000,10000 N=20 CASES=all

runs itself under valgrind once per size and prints, per case, the instructions of a request, of
the trace's steps in it and their share. Collection is switched by callgrind's client requests
(a ten-line C helper compiled at start: ``cc`` and valgrind's headers are needed), so the counts
hold exactly what was asked, nothing of the set-up or of the placement write between requests.

- the trace's steps: the functions the scenario times (``scheduling_trace.PARTS``) but
  ``trace_record_save``, collected only while one of them runs;
- the trace's rows (making them, their INSERTs and their part of the commit of the transaction
  that writes them): the requests counted again with ``trace_record_save`` left out, the difference.

A request that finds no valid host is made as the conductor's build makes it
(``scheduling_trace._conducted``): the scope's rows written in the burial's API transaction, whose
set-up and own two statements (the mapping's UPDATE, the build request's DELETE) are not collected;
its BEGIN, the scope's rows and its COMMIT are (up to a666470 those rows were a
transaction of their own, or one statement in autocommit, when the call ended).

User space only: the kernel's time writing SQLite's WAL is not in it."""
from __future__ import annotations

import contextlib
import ctypes
import os
import re
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

CASES = ("placed", "no_valid_host", "placement_changed", "notifications_off")
#: what each dump of one (case) holds, by the label it is dumped under
RUNS = ("requests", "steps", "without-rows")

_HELPER = r"""
#include <valgrind/callgrind.h>
void cg_collect(void) { CALLGRIND_TOGGLE_COLLECT; }
void cg_dump(const char *label) { CALLGRIND_DUMP_STATS_AT(label); }
void cg_zero(void) { CALLGRIND_ZERO_STATS; }
void cg_start(void) { CALLGRIND_START_INSTRUMENTATION; }
"""


def _helper(directory: str) -> Any:
    source, library = Path(directory, "cg.c"), Path(directory, "cg.so")
    source.write_text(_HELPER)
    subprocess.run(["cc", "-O1", "-shared", "-fPIC", "-o", str(library), str(source)], check=True)  # noqa: S603, S607
    return ctypes.CDLL(str(library))


class _Collector:
    """Callgrind's collection switched on and off by client requests (nesting counted)."""

    def __init__(self, lib: Any) -> None:
        self.lib, self.depth = lib, 0

    def on(self) -> None:
        self.depth += 1
        if self.depth == 1:
            self.lib.cg_collect()

    def off(self) -> None:
        self.depth -= 1
        if self.depth == 0:
            self.lib.cg_collect()

    def dump(self, label: str) -> None:
        self.lib.cg_dump(label.encode())

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Nothing collected inside (when collecting)."""
        collecting = self.depth > 0
        if collecting:
            self.lib.cg_collect()
        try:
            yield
        finally:
            if collecting:
                self.lib.cg_collect()

    def wrap(self, func: Callable[..., Any]) -> Callable[..., Any]:
        def collected(*args: Any, **kwargs: Any) -> Any:
            self.on()
            try:
                return func(*args, **kwargs)
            finally:
                self.off()
        return collected


def _measure(hosts: int, requests: int, cases: list[str]) -> None:
    """Inside valgrind: for each case, ``requests`` requests dumped under ``case:run`` for each of
    ``RUNS``."""
    import importlib

    from .env import BenchEnv

    os.environ.setdefault("CLOUDCORE_SERVICE_DOWN_TIME", "86400")  # set-up under valgrind is slow
    env = BenchEnv.create(quick=False)
    with tempfile.TemporaryDirectory() as directory:
        cg = _Collector(_helper(directory))
        try:
            env.fresh()
            from django.test import override_settings

            from cloudcore.core.context import RequestContext
            from scheduling import scheduler

            from .scenarios import scheduler as base
            from .scenarios import scheduling_trace

            base.populate(env, hosts)
            ctx = RequestContext(user_id="bench", project_id="bench", request_id="req-bench")
            cg.lib.cg_start()
            cg.lib.cg_zero()

            def run(spec: dict[str, Any], count: int, between: Callable[[], None] | None,
                    collect_requests: bool) -> None:
                for _ in range(count):
                    if between is not None:
                        between()
                    if collect_requests:
                        cg.on()
                    try:
                        scheduler.select_destinations(ctx, spec, [str(uuid.uuid4())], return_alternates=True)
                    except Exception:  # noqa: S110 - NoValidHost is the case measured
                        pass
                    finally:
                        if collect_requests:
                            cg.off()

            steps = []
            for _label, module, attribute in scheduling_trace.PARTS:
                if attribute == "trace_record_save":
                    continue
                try:
                    owner: Any = importlib.import_module(module)
                except ImportError:  # a class inside a module
                    module_name, _, class_name = module.rpartition(".")
                    owner = getattr(importlib.import_module(module_name), class_name)
                steps.append((owner, attribute, getattr(owner, attribute)))

            for case in cases:
                spec = base._spec() if case == "placed" else scheduling_trace._impossible_spec()
                between = scheduling_trace._placement_write() if case == "placement_changed" else None
                settings = override_settings(NOTIFICATIONS_ENABLED=case != "notifications_off")
                # a failure as the conductor's build has it: the scope's rows in the burial's API
                # transaction, the burial's set-up and own statements not collected
                conducted = contextlib.nullcontext() if case == "placed" else scheduling_trace._conducted(cg.paused)
                with settings, conducted:
                    run(spec, 5, between, False)  # warm: caches filled, the shortfall kept
                    run(spec, requests, between, True)
                    cg.dump(f"{case}:requests")
                    for owner, attribute, original in steps:
                        setattr(owner, attribute, cg.wrap(original))
                    try:
                        run(spec, requests, between, False)
                    finally:
                        for owner, attribute, original in steps:
                            setattr(owner, attribute, original)
                    cg.dump(f"{case}:steps")
                    patched: Any = scheduler
                    original_save = patched.trace_record_save
                    patched.trace_record_save = lambda **kwargs: None
                    try:
                        run(spec, requests, between, True)
                    finally:
                        patched.trace_record_save = original_save
                    cg.dump(f"{case}:without-rows")
        finally:
            env.close()


def _totals(prefix: str) -> dict[str, int]:
    """``{label: instructions}`` of the dumps ``prefix.*``."""
    found = {}
    for path in sorted(Path(prefix).parent.glob(Path(prefix).name + ".*")):
        text = path.read_text(errors="replace")
        label = re.search(r"^desc: Trigger: Client Request: (.*)$", text, re.M)
        total = re.search(r"^(?:totals|summary): (\d+)", text, re.M)
        if label and total:
            found[label.group(1).strip()] = int(total.group(1))
    return found


def main() -> None:
    if os.environ.get("_TRACE_INSTRUCTIONS_INSIDE"):
        _measure(int(os.environ["HOSTS"]), int(os.environ.get("N", "20")), os.environ["CASES"].split(","))
        return
    sizes = [int(s) for s in os.environ.get("HOSTS", "1000,10000").split(",")]
    requests = int(os.environ.get("N", "20"))
    cases = [c for c in os.environ.get("CASES", ",".join(CASES)).split(",") if c]
    print(f"{'hosts':>6} {'case':>18} {'request Ir':>12} {'steps Ir':>10} {'rows Ir':>10} {'share':>7}")
    with tempfile.TemporaryDirectory() as directory:
        for hosts in sizes:
            prefix = str(Path(directory, f"cg.{hosts}"))
            subprocess.run(  # noqa: S603
                ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--collect-atstart=no",  # noqa: S607
                 f"--callgrind-out-file={prefix}", sys.executable, "-m", "bench.trace_instructions"],
                check=True, capture_output=True,
                env={**os.environ, "_TRACE_INSTRUCTIONS_INSIDE": "1", "HOSTS": str(hosts), "N": str(requests),
                     "CASES": ",".join(cases)})
            totals = _totals(prefix)
            for case in cases:
                whole = totals[f"{case}:requests"] / requests
                steps = totals[f"{case}:steps"] / requests
                rows = whole - totals[f"{case}:without-rows"] / requests
                print(f"{hosts:>6} {case:>18} {whole:>12,.0f} {steps:>10,.0f} {rows:>10,.0f} "
                      f"{100 * (steps + rows) / whole:>6.2f}%", flush=True)


if __name__ == "__main__":
    main()
