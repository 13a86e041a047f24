"""A deterministic count of the scheduling trace's rows (issue 22), for a shared, noisy machine:
instructions per ``select_destinations`` at 1,000 hosts (the scheduler scenario's population),
with the trace's rows and with ``trace_record_save`` left out, counted by callgrind. The
difference is what making and writing the trace's rows costs in instructions (user space:
the time the kernel spends writing SQLite's WAL is not in it). Run it under callgrind, which
is switched on only around the requests::

    CASE=no_valid_host N=20 valgrind --tool=callgrind --instr-atstart=no \\
        --callgrind-out-file=/tmp/cg.out.%p .venv/bin/python -m bench.trace_instructions

then read the two dumps' totals (``grep ^summary /tmp/cg.out.*``: "with-trace" and
"without-trace-rows", each for ``N`` requests). ``CASE=placed`` for placed requests."""
from __future__ import annotations

import os
import subprocess
import uuid
from typing import Any


def main() -> None:
    from .env import BenchEnv

    requests = int(os.environ.get("N", "20"))
    env = BenchEnv.create(quick=False)
    try:
        env.fresh()
        from cloudcore.core.context import RequestContext
        from scheduling import scheduler

        from .scenarios import scheduler as base
        from .scenarios import scheduling_trace

        base.populate(env, 1000)
        ctx = RequestContext(user_id="bench", project_id="bench", request_id="req-bench")
        spec = base._spec() if os.environ.get("CASE") == "placed" else scheduling_trace._impossible_spec()

        def run(count: int) -> None:
            for _ in range(count):
                try:
                    scheduler.select_destinations(ctx, spec, [str(uuid.uuid4())], return_alternates=True)
                except Exception:  # noqa: S110 - NoValidHost is the case measured
                    pass

        def callgrind(*args: str) -> None:
            subprocess.run(["callgrind_control", *args, str(os.getpid())], check=True, capture_output=True)  # noqa: S603, S607

        run(5)  # warm: caches filled, the shortfall kept
        callgrind("-z")
        callgrind("-i", "on")
        run(requests)
        callgrind("-d", "with-trace")
        patched: Any = scheduler
        original = patched.trace_record_save
        patched.trace_record_save = lambda **kwargs: None
        try:
            run(requests)
        finally:
            patched.trace_record_save = original
        callgrind("-d", "without-trace-rows")
        callgrind("-i", "off")
    finally:
        env.close()


if __name__ == "__main__":
    main()
