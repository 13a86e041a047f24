"""Run benchmark scenarios: ``python -m bench`` (all) or ``python -m bench scheduler``."""
from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
import time


def _scenarios() -> list[str]:
    from . import scenarios

    return sorted(m.name for m in pkgutil.iter_modules(scenarios.__path__) if not m.name.startswith("_"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("scenarios", nargs="*", help=f"scenarios to run (default: all of {', '.join(_scenarios())})")
    parser.add_argument("--quick", action="store_true", help="smaller sizes (smoke run)")
    args = parser.parse_args(argv)
    from .env import BenchEnv

    names = args.scenarios or _scenarios()
    unknown = sorted(set(names) - set(_scenarios()))
    if unknown:
        parser.error(f"unknown scenario(s): {', '.join(unknown)}")
    env = BenchEnv.create(quick=args.quick)
    failed = 0
    try:
        for name in names:
            module = importlib.import_module(f"bench.scenarios.{name}")
            print(f"== {name}: {getattr(module, 'DESCRIPTION', '')}", flush=True)
            started = time.perf_counter()
            try:
                module.run(env)
            except Exception as exc:  # report and go on with the other scenarios
                failed += 1
                print(f"!! {name} failed: {exc!r}", flush=True)
                import traceback

                traceback.print_exc()
            print(f"== {name} done in {time.perf_counter() - started:.1f} s\n", flush=True)
    finally:
        env.close()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
