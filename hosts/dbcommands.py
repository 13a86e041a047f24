"""``manage.py db online_data_migrations [--max-count N]`` (Nova's codes: 0 done, 1 more
remaining, 2 errors, 127 bad --max-count)."""
from __future__ import annotations

from typing import Any

from cells.dbcommands import DB_SUBCOMMANDS

from .services.online_migrations import online_data_migrations, remaining


def _args(p: Any) -> None:
    p.add_argument("--max-count", "--max_count", dest="max_count", default=None)


def _run(o: dict[str, Any], out: Any, err: Any) -> int:
    max_count = None
    if o.get("max_count") is not None:
        try:
            max_count = int(o["max_count"])
            if max_count < 1:
                raise ValueError
        except ValueError:
            err.write("Must supply a positive value for max_count")
            return 127
    result = online_data_migrations(max_count=max_count)
    out.write(f"populate_compute_links: {result.found} rows matched query, {result.done} migrated, "
              f"{result.errors} errors")
    if result.errors:
        return 2
    if max_count is not None and remaining():
        return 1
    return 0


DB_SUBCOMMANDS["online_data_migrations"] = (_args, _run)
