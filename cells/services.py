"""Operating cells: the cell registry's part of ``manage.py cell_v2 ...`` (the parts that read a
cell's servers or compute nodes are the servers' and hosts' services, above this app).

Each function returns a result the command turns into Nova's exit code; none prints. Cell
databases are registered (``registry.alias_for``) and migrated when a cell is created, so a cell
added while processes run is usable at once.
"""
from __future__ import annotations

import enum
from collections.abc import Callable

from django.conf import settings
from django.core.management import call_command
from django.db import DatabaseError, IntegrityError, transaction
from django.db.models import QuerySet
from django.utils import timezone

from cloudcore.core.exceptions import CloudcoreError, Invalid, NotFound
from cloudcore.core.prepared import prepared_update
from cloudcore.core.scope import insert_plain_now

from . import registry
from .dburl import InvalidDatabaseURL, database_config, sqlite_url
from .models import CELL0_NAME, CELL0_UUID, CellMapping, HostMapping, InstanceMapping


class CellExists(CloudcoreError):
    code = 409
    message = ("The specified transport_url and/or database_connection combination already exists for "
               "another cell with uuid %(uuid)s.")


class CellNotFound(NotFound):
    message = "Cell with uuid %(uuid)s was not found."


class CellHasHosts(CloudcoreError):
    code = 409
    message = "There are existing hosts mapped to cell with uuid %(uuid)s."


class CellHasInstances(CloudcoreError):
    code = 409
    message = "There are existing instances mapped to cell with uuid %(uuid)s."


class CellDatabaseFailed(Invalid):
    message = "Could not migrate the cell's database %(database)s: %(error)s. No cell was created."


def default_cell0_url() -> str:
    """cell0's database next to the API database (Nova: ``<main db>_cell0``)."""
    api = settings.DATABASES["default"]
    if api["ENGINE"].endswith("sqlite3"):
        return sqlite_url(settings.VAR_DIR / "cell0.sqlite3")
    host = api.get("HOST") or "localhost"
    port = f":{api['PORT']}" if api.get("PORT") else ""
    user = api.get("USER") or ""
    password = f":{api['PASSWORD']}" if api.get("PASSWORD") else ""
    auth = f"{user}{password}@" if user else ""
    return f"postgres://{auth}{host}{port}/{api['NAME']}_cell0"


def _migrate(cell: CellMapping) -> None:
    """Migrate the new ``cell``'s database; when that fails (a database missing or unreachable), the
    mapping goes again (CellDatabaseFailed), so that no cell names a database nothing can read: every
    later ``migrate`` and list across cells would fail on it or show it down."""
    try:
        call_command("migrate", database=registry.alias_for(cell), verbosity=0, interactive=False)
    except DatabaseError as exc:
        registry.forget(cell.uuid)
        cell.delete()
        raise CellDatabaseFailed(database=database_config(cell.database_connection)["NAME"],
                                 error=(str(exc).strip().splitlines() or [type(exc).__name__])[-1]) from exc


def map_cell0(*, database_connection: str | None = None, migrate: bool = True) -> tuple[CellMapping, bool]:
    """Create cell0 (fixed uuid) unless it exists; returns (mapping, created)."""
    existing = CellMapping.objects.filter(uuid=CELL0_UUID).first()
    if existing is not None:
        return existing, False
    url = database_connection or default_cell0_url()
    database_config(url)  # raises InvalidDatabaseURL
    cell = CellMapping.objects.create(uuid=CELL0_UUID, name=CELL0_NAME, transport_url="none:///",
                                      database_connection=url)
    if migrate:
        _migrate(cell)
    return cell, True


def create_cell(
    *, name: str | None, database_connection: str | None, transport_url: str | None, disabled: bool = False,
    migrate: bool = True,
) -> CellMapping:
    """Create and migrate a cell. Invalid (400) for a missing or bad URL; CellExists when another
    cell already uses the same transport URL or database connection (Nova's rule)."""
    if not database_connection:
        raise Invalid("Must specify --database_connection if [database]/connection is not specified "
                      "in the configuration file.")
    if not transport_url:
        transport_url = settings.CELERY_BROKER_URL
    try:
        database_config(database_connection)
    except InvalidDatabaseURL as exc:
        raise Invalid(str(exc)) from exc
    clash = (CellMapping.objects.filter(database_connection=database_connection).first()
             or CellMapping.objects.filter(transport_url=transport_url).exclude(transport_url="none:///").first())
    if clash is not None:
        raise CellExists(uuid=clash.uuid)
    cell = CellMapping.objects.create(name=name, database_connection=database_connection,
                                      transport_url=transport_url, disabled=disabled)
    if migrate:
        _migrate(cell)
    return cell


def get_cell(cell_uuid: str) -> CellMapping:
    cell = CellMapping.objects.filter(uuid=cell_uuid).first()
    if cell is None:
        raise CellNotFound(uuid=cell_uuid)
    return cell


def delete_cell(*, cell_uuid: str, has_instances: Callable[[CellMapping], bool], force: bool = False) -> None:
    """Delete an empty cell mapping; with ``force`` its host mappings go too (never its servers).
    ``has_instances(cell)`` tells whether the cell still holds servers (the servers app knows)."""
    cell = get_cell(cell_uuid)
    hosts = HostMapping.objects.filter(cell=cell)
    if hosts.exists() and not force:
        raise CellHasHosts(uuid=cell_uuid)
    if has_instances(cell):
        raise CellHasInstances(uuid=cell_uuid)
    with transaction.atomic():
        hosts.delete()
        InstanceMapping.objects.filter(cell=cell).delete()
        cell.delete()
    registry.forget(cell_uuid)


def instance_mapping_create(*, instance_uuid: str, project_id: str, user_id: str | None,
                            cell: CellMapping | None = None) -> InstanceMapping:
    """Map a server (API database); ``cell`` None while it waits for a host."""
    return InstanceMapping.objects.create(instance_uuid=instance_uuid, cell=cell, project_id=project_id,
                                          user_id=user_id)


def instance_mappings_create(*, instance_uuids: list[str], project_id: str, user_id: str | None) -> None:
    """Map new servers waiting for a host (cell NULL): the rows ``instance_mapping_create`` would
    store, in one INSERT (in the caller's transaction, if any)."""
    insert_plain_now([InstanceMapping(instance_uuid=instance_uuid, cell=None, project_id=project_id, user_id=user_id)
                      for instance_uuid in instance_uuids])


def host_mapping_delete(host: str) -> None:
    HostMapping.objects.filter(host=host).delete()


class HostMapOutcome(enum.Enum):
    MAPPED = "mapped"
    ALREADY_MAPPED = "already mapped"  # to this cell
    DUPLICATE = "duplicate"  # mapped to another cell


def host_map(*, host: str, cell: CellMapping) -> HostMapOutcome:
    """Map ``host`` to ``cell`` unless it is mapped already (a race with another mapper counts as a
    duplicate)."""
    existing = HostMapping.objects.filter(host=host).first()
    if existing is not None:
        return HostMapOutcome.ALREADY_MAPPED if existing.cell_id == cell.id else HostMapOutcome.DUPLICATE
    try:
        with transaction.atomic():
            HostMapping.objects.create(host=host, cell=cell)
    except IntegrityError:
        return HostMapOutcome.DUPLICATE
    return HostMapOutcome.MAPPED


def list_hosts(*, cell_uuid: str | None = None) -> list[HostMapping]:
    qs = HostMapping.objects.select_related("cell").order_by("cell__id", "host")
    if cell_uuid:
        qs = qs.filter(cell=get_cell(cell_uuid))
    return list(qs)


def instance_mappings_delete(instance_uuids: list[str]) -> tuple[int, dict[str, int]]:
    """Delete the mappings of archived servers (``QuerySet.delete``'s counts)."""
    return InstanceMapping.objects.filter(instance_uuid__in=instance_uuids).delete()


def instance_mapping_set_cell(instance_uuid: str, cell: CellMapping | None) -> int:
    """Point a server's mapping at ``cell`` (None: back to "not in a cell yet", a BuildRequest);
    returns how many mappings changed (0: the server has none). The conductor's, for every build:
    its ``UPDATE`` built once per process (``prepared_update``: building it cost more than running it)."""
    return prepared_update("cells.instance_mapping_set_cell", _mapping_of, (instance_uuid,),
                           cell_id=cell.id if cell is not None else None, updated_at=timezone.now())


def _mapping_of(instance_uuid: str) -> QuerySet[InstanceMapping]:
    return InstanceMapping.objects.filter(instance_uuid=instance_uuid)


def instance_mappings_queue_for_delete(instance_uuids: list[str]) -> int:
    """Mark servers' mappings queued for delete (the API side's delete, before the host's work)."""
    return InstanceMapping.objects.filter(instance_uuid__in=instance_uuids).update(queued_for_delete=True)


# --- used by conductor/ ---------------------------------------------------------------------------
def instance_mapping_claim_cell(instance_uuid: str, cell: CellMapping) -> int:
    """Point a server's mapping at ``cell`` only while it is in no cell yet (compare-and-swap);
    returns how many mappings changed (0 or 1)."""
    return InstanceMapping.objects.filter(instance_uuid=instance_uuid, cell__isnull=True).update(cell=cell)
