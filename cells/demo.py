"""Demo cells of DESIGN.md section 9: cell0, cell1 and cell2 as SQLite files under ``var/``
(or, when the API database is PostgreSQL, databases next to it on its server, created there when
missing, as the API database's user). Idempotent.

Before the processes start, the PostgreSQL servers of the API and cell databases are asked how
many connections they accept (``warnings``): the processes keep theirs (docs/processes.md), and a
server with fewer refuses the last ones under load ("sorry, too many clients already").
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from django.conf import settings
from django.core.management.base import CommandError
from django.db import DatabaseError, connections

from . import registry, services
from .dburl import database_config, sqlite_url
from .models import CellMapping
from .selectors import cell_list

if TYPE_CHECKING:
    from cloudcore.core.demo import DemoProcess

DEMO_CELLS = ("cell1", "cell2")


def _url(name: str) -> str:
    api = settings.DATABASES["default"]
    if api["ENGINE"].endswith("sqlite3"):
        return sqlite_url(settings.VAR_DIR / f"{name}.sqlite3")
    return services.default_cell0_url().rsplit("_cell0", 1)[0] + f"_{name}"


def ensure_database(url: str, out: Callable[[str], None]) -> None:
    """Create the PostgreSQL database of ``url``, on the API database's server, when it does not
    exist yet; CommandError, saying what to do, when the API database's user may not."""
    name = database_config(url)["NAME"]
    api = connections["default"]
    with api.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name])
        if cursor.fetchone():
            return
        try:
            cursor.execute(f"CREATE DATABASE {api.ops.quote_name(name)}")
        except DatabaseError as exc:
            raise CommandError(f"the demo cells' database {name} does not exist and could not be created as "
                               f"{api.settings_dict.get('USER') or 'the API database user'}: {str(exc).strip()}; "
                               f"create it (createdb {name}), or give that user CREATEDB") from exc
    out(f"created database {name}")


def setup(out: Callable[[str], None]) -> None:
    if connections["default"].vendor == "postgresql":
        for name in ("cell0", *DEMO_CELLS):
            ensure_database(_url(name), out)
    _, created = services.map_cell0(database_connection=_url("cell0"))
    if created:
        out("created cell0")
    for name in DEMO_CELLS:
        if CellMapping.objects.filter(name=name).exists():
            continue
        services.create_cell(name=name, database_connection=_url(name), transport_url=f"cloudcore://{name}")
        out(f"created {name}")


def warnings(processes: list[DemoProcess]) -> list[str]:
    """A warning per PostgreSQL server of the cloud's databases that accepts fewer connections than
    ``processes`` may hold (each process's ``connections``; all counted against every server, as
    when the databases share one)."""
    cells = cell_list()
    wanted = sum(process.connections(len(cells)) for process in processes)
    servers: dict[tuple[str, str], str] = {}
    for alias in ["default", *(registry.alias_for(cell) for cell in cells)]:
        config = connections[alias].settings_dict
        if connections[alias].vendor == "postgresql":
            servers.setdefault((str(config.get("HOST") or "localhost"), str(config.get("PORT") or 5432)), alias)
    said = []
    for (host, port), alias in servers.items():
        try:
            with connections[alias].cursor() as cursor:
                cursor.execute("SELECT current_setting('max_connections')::int, "
                               "current_setting('superuser_reserved_connections')::int")
                most, reserved = cursor.fetchone()
        except DatabaseError as exc:  # a cell database down: the cloud starts, its cell shown down
            said.append(f"could not ask the PostgreSQL server at {host}:{port} how many connections it "
                        f"accepts: {str(exc).strip()}")
            continue
        if wanted > most - reserved:
            said.append(f"the processes may hold up to {wanted} connections to the PostgreSQL server at "
                        f"{host}:{port}, which accepts {most - reserved} (max_connections {most}, "
                        f"{reserved} reserved): raise its max_connections, or lower CLOUDCORE_WEB_THREADS, "
                        f"CLOUDCORE_WEB_WORKERS or CLOUDCORE_COMPUTE_CONCURRENCY (docs/processes.md)")
    return said
