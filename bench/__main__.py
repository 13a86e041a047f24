"""Run benchmark scenarios and write one report: ``python -m bench`` (all) or ``python -m bench scheduler``.

The report (Markdown + JSON, ``report.md`` / ``report.json``) goes to ``--out`` (default
``bench/out/``); figures and ratios are printed too."""
from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys
import time
import traceback
from pathlib import Path
from typing import Any

DEFAULT_OUT = Path(__file__).resolve().parent / "out"


def _scenarios() -> list[str]:
    from . import scenarios

    return sorted(m.name for m in pkgutil.iter_modules(scenarios.__path__) if not m.name.startswith("_"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("scenarios", nargs="*", help=f"scenarios to run (default: all of {', '.join(_scenarios())})")
    parser.add_argument("--quick", action="store_true", help="smaller sizes (smoke run)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="report directory (default: bench/out)")
    parser.add_argument("--nova", choices=("auto", "skip"), default="auto",
                        help="Nova side by side: 'auto' runs it when its venv under --out can be made "
                             "(default), 'skip' does not try")
    args = parser.parse_args(argv)
    from . import report
    from .env import BenchEnv, peak_rss_kb

    names = args.scenarios or _scenarios()
    unknown = sorted(set(names) - set(_scenarios()))
    if unknown:
        parser.error(f"unknown scenario(s): {', '.join(unknown)}")
    run_started = time.perf_counter()
    load_at_start = os.getloadavg()
    env = BenchEnv.create(quick=args.quick)
    results: dict[str, Any] = {}
    durations: dict[str, float] = {}
    rss_after: dict[str, int] = {"setup": peak_rss_kb()}
    failed = 0
    try:
        for name in names:
            module = importlib.import_module(f"bench.scenarios.{name}")
            print(f"== {name}: {getattr(module, 'DESCRIPTION', '')}", flush=True)
            started = time.perf_counter()
            env.fresh()
            try:
                results[name] = module.run(env) or {}
            except Exception as exc:  # report and go on with the other scenarios
                failed += 1
                results[name] = {"error": repr(exc)}
                print(f"!! {name} failed: {exc!r}", flush=True)
                traceback.print_exc()
            durations[name] = time.perf_counter() - started
            rss_after[name] = peak_rss_kb()
            print(f"== {name} done in {durations[name]:.1f} s\n", flush=True)
    finally:
        env.close()
    nova: dict[str, Any] = {"run": False, "reason": "skipped with --nova skip"}
    if args.nova == "auto":
        from . import nova_compare

        print("== nova: Nova side by side (same scenarios in Nova's functional test harness)", flush=True)
        started = time.perf_counter()
        nova = nova_compare.side_by_side(args.out, quick=args.quick, results=results, rss_after=rss_after)
        durations["nova"] = time.perf_counter() - started
        print(f"== nova done in {durations['nova']:.1f} s\n", flush=True)
    data = report.build(results=results, durations=durations, rss_after=rss_after, nova=nova, quick=args.quick,
                        total_s=time.perf_counter() - run_started, load_at_start=load_at_start)
    md_path, json_path = report.write(data, args.out)
    print(report.summary_text(data))
    print(f"report: {md_path}\n        {json_path}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
