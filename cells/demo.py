"""Demo cells of DESIGN.md section 9: cell0, cell1 and cell2 as SQLite files under ``var/``
(or, when the API database is PostgreSQL, databases next to it). Idempotent."""
from __future__ import annotations

from collections.abc import Callable

from django.conf import settings

from . import services
from .dburl import sqlite_url
from .models import CellMapping

DEMO_CELLS = ("cell1", "cell2")


def _url(name: str) -> str:
    api = settings.DATABASES["default"]
    if api["ENGINE"].endswith("sqlite3"):
        return sqlite_url(settings.VAR_DIR / f"{name}.sqlite3")
    return services.default_cell0_url().rsplit("_cell0", 1)[0] + f"_{name}"


def setup(out: Callable[[str], None]) -> None:
    _, created = services.map_cell0(database_connection=_url("cell0"))
    if created:
        out("created cell0")
    for name in DEMO_CELLS:
        if CellMapping.objects.filter(name=name).exists():
            continue
        services.create_cell(name=name, database_connection=_url(name), transport_url=f"cloudcore://{name}")
        out(f"created {name}")
