"""``manage.py db archive_deleted_rows`` (Nova's ``nova-manage db archive_deleted_rows``)."""
from __future__ import annotations

from datetime import datetime
from typing import Any

from django.utils.dateparse import parse_datetime

from cells.dbcommands import DB_SUBCOMMANDS
from cells.selectors import cell_list

from .services.archive import archive_deleted_rows


def _archive_args(p: Any) -> None:
    p.add_argument("--max_rows", "--max-rows", dest="max_rows", default="1000")
    p.add_argument("--verbose", action="store_true")
    p.add_argument("--until-complete", "--until_complete", dest="until_complete", action="store_true")
    p.add_argument("--purge", action="store_true", help="accepted: archiving already purges (no shadow tables)")
    p.add_argument("--all-cells", "--all_cells", dest="all_cells", action="store_true")
    p.add_argument("--before")


def _archive_run(o: dict[str, Any], out: Any, err: Any) -> int:
    """Nova's codes: 0 nothing archived, 1 rows archived, 2 invalid max_rows, 4 invalid --before."""
    try:
        max_rows = int(o["max_rows"])
        if max_rows < 1:
            raise ValueError
    except ValueError:
        err.write("Invalid input received: max_rows must be >= 1")
        return 2
    before: datetime | None = None
    if o.get("before"):
        before = parse_datetime(o["before"])
        if before is None:
            err.write(f"Invalid value for --before: {o['before']}")
            return 4
    cells = cell_list()
    total: dict[str, int] = {}
    while True:
        result = archive_deleted_rows(max_rows=max_rows, cells=cells, before=before)
        for table, n in result.rows.items():
            total[table] = total.get(table, 0) + n
        if not o["until_complete"] or not result.instance_uuids:
            break
    if o["verbose"]:
        if total:
            for table, n in sorted(total.items()):
                out.write(f"{table}: {n}")
        else:
            out.write("Nothing was archived.")
    return 1 if total else 0


DB_SUBCOMMANDS["archive_deleted_rows"] = (_archive_args, _archive_run)
