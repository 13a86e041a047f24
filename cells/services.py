"""Operating cells (the logic behind ``manage.py cell_v2 ...`` and ``db archive_deleted_rows``).

Each function returns a result the command turns into Nova's exit code; none prints. Cell
databases are registered (``registry.alias_for``) and migrated when a cell is created, so a cell
added while processes run is usable at once.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.db import IntegrityError, transaction

from cloudcore.core.exceptions import CloudcoreError, Invalid, NotFound

from . import registry
from .context import target_cell
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
    call_command("migrate", database=registry.alias_for(cell), verbosity=0, interactive=False)


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


def delete_cell(*, cell_uuid: str, force: bool = False) -> None:
    """Delete an empty cell mapping; with ``force`` its host mappings go too (never its servers)."""
    cell = get_cell(cell_uuid)
    hosts = HostMapping.objects.filter(cell=cell)
    if hosts.exists() and not force:
        raise CellHasHosts(uuid=cell_uuid)
    live = _live_instance_uuids(cell)
    if live:
        raise CellHasInstances(uuid=cell_uuid)
    with transaction.atomic():
        hosts.delete()
        InstanceMapping.objects.filter(cell=cell).delete()
        cell.delete()
    registry.forget(cell_uuid)


def _live_instance_uuids(cell: CellMapping) -> list[str]:
    from servers.models import Instance

    try:
        with target_cell(cell):
            return list(Instance.objects.values_list("uuid", flat=True)[:1])
    except Exception:  # an unreachable cell DB: fall back to its mappings
        return list(InstanceMapping.objects.filter(cell=cell).values_list("instance_uuid", flat=True)[:1])


def instance_mapping_create(*, instance_uuid: str, project_id: str, user_id: str | None,
                            cell: CellMapping | None = None) -> InstanceMapping:
    """Map a server (API database); ``cell`` None while it waits for a host."""
    return InstanceMapping.objects.create(instance_uuid=instance_uuid, cell=cell, project_id=project_id,
                                          user_id=user_id)


def host_mapping_delete(host: str) -> None:
    HostMapping.objects.filter(host=host).delete()


@dataclass
class Discovery:
    mapped: list[tuple[str, str]] = field(default_factory=list)  # (host, cell name)
    duplicates: list[str] = field(default_factory=list)


def discover_hosts(*, cell_uuid: str | None = None, by_service: bool = False) -> Discovery:
    """Map every compute host of every non-cell0 cell that has no HostMapping yet (Nova's
    ``discover_hosts``): unmapped ComputeNodes (``mapped=0``), or with ``by_service`` every
    ``nova-compute`` service. Marks nodes ``mapped=1``."""
    from hosts.models import ComputeNode, Service

    cells = [get_cell(cell_uuid)] if cell_uuid else list(CellMapping.objects.exclude(uuid=CELL0_UUID))
    result = Discovery()
    for cell in cells:
        if cell.is_cell0:
            continue
        with target_cell(cell):
            if by_service:
                hosts: set[str] = set(Service.objects.filter(binary="nova-compute").values_list("host", flat=True))
            else:
                hosts = {host for host in ComputeNode.objects.filter(mapped=0).exclude(host=None)
                         .values_list("host", flat=True) if host}
        for host in sorted(hosts):
            existing = HostMapping.objects.filter(host=host).select_related("cell").first()
            if existing is not None:
                if existing.cell_id != cell.id:
                    result.duplicates.append(host)
                continue
            try:
                with transaction.atomic():
                    HostMapping.objects.create(host=host, cell=cell)
            except IntegrityError:
                result.duplicates.append(host)
                continue
            result.mapped.append((host, cell.name or cell.uuid))
        with target_cell(cell):
            ComputeNode.objects.filter(host__in=hosts, mapped=0).update(mapped=1)
    return result


def list_hosts(*, cell_uuid: str | None = None) -> list[HostMapping]:
    qs = HostMapping.objects.select_related("cell").order_by("cell__id", "host")
    if cell_uuid:
        qs = qs.filter(cell=get_cell(cell_uuid))
    return list(qs)


def map_instances(*, cell_uuid: str, max_count: int = 50, reset: bool = False) -> bool:
    """Create InstanceMappings for the cell's instances that lack one, oldest first, at most
    ``max_count`` per call. Returns True when every instance is mapped."""
    from servers.models import Instance

    cell = get_cell(cell_uuid)
    with target_cell(cell):
        rows = list(Instance.objects.order_by("created_at", "id").values_list("uuid", "project_id", "user_id"))
    mapped = set(InstanceMapping.objects.filter(instance_uuid__in=[r[0] for r in rows])
                 .values_list("instance_uuid", flat=True))
    todo = [r for r in rows if r[0] not in mapped]
    for instance_uuid, project_id, user_id in todo[:max_count]:
        InstanceMapping.objects.create(instance_uuid=instance_uuid, cell=cell, project_id=project_id,
                                       user_id=user_id)
    return len(todo) <= max_count


VERIFY_OK, VERIFY_NO_MAPPING, VERIFY_NO_CELL, VERIFY_DELETED, VERIFY_ARCHIVED = 0, 1, 2, 3, 4


def verify_instance(*, instance_uuid: str) -> tuple[int, str]:
    """Nova's verify_instance codes with a sentence for each."""
    from servers.models import Instance

    mapping = InstanceMapping.objects.select_related("cell").filter(instance_uuid=instance_uuid).first()
    if mapping is None:
        return VERIFY_NO_MAPPING, f"Instance {instance_uuid} is not mapped to a cell."
    if mapping.cell is None:
        return VERIFY_NO_CELL, f"Instance {instance_uuid} is not mapped to a cell (build in progress?)."
    with target_cell(mapping.cell):
        row = Instance.all_objects.filter(uuid=instance_uuid).values_list("deleted", flat=True).first()
    if row is None:
        return VERIFY_ARCHIVED, (f"The instance {instance_uuid} has been archived but is still mapped to cell "
                                 f"{mapping.cell.name}.")
    if row:
        return VERIFY_DELETED, (f"The instance {instance_uuid} has been deleted but is still mapped to cell "
                                f"{mapping.cell.name}.")
    return VERIFY_OK, f"Instance {instance_uuid} is in cell: {mapping.cell.name} ({mapping.cell.uuid})"


# --- archive ---------------------------------------------------------------------------------

#: Cell models whose rows belong to an instance (by ``instance_uuid``), purged with it.
_CHILDREN = ("BlockDeviceMapping", "InstanceFault", "Tag", "VirtualInterface", "Migration", "InstanceAction")


@dataclass
class ArchiveResult:
    rows: dict[str, int] = field(default_factory=dict)
    instance_uuids: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(self.rows.values())


def archive_deleted_rows(*, max_rows: int = 1000, cells: list[CellMapping] | None = None,
                         before: Any = None) -> ArchiveResult:
    """Remove soft-deleted servers (and every row hanging off them) from the cell databases, at
    most ``max_rows`` instances per call, then their InstanceMappings, RequestSpecs and
    BuildRequests from the API database.

    cloudcore keeps no shadow tables: archiving removes the rows for good (Nova's archive
    followed by ``--purge``). Other soft-deleted cell rows (migrations, services, nodes) go too.
    """
    from django.apps import apps

    from hosts.models import ComputeNode, Service
    from scheduling.models import RequestSpec
    from servers.models import BuildRequest, Instance, InstanceActionEvent

    result = ArchiveResult()
    targets = cells if cells is not None else [c for c in CellMapping.objects.all()]
    budget = max_rows
    for cell in targets:
        if budget <= 0:
            break
        with target_cell(cell):
            qs = Instance.all_objects.filter(deleted=True)
            if before is not None:
                qs = qs.filter(deleted_at__lt=before)
            uuids = list(qs.order_by("id").values_list("uuid", flat=True)[:budget])
            with transaction.atomic(using=registry.alias_for(cell)):
                if uuids:
                    events = InstanceActionEvent.all_objects.filter(action__instance_uuid__in=uuids)
                    _count(result, "instance_actions_events", events.delete())
                    for name in _CHILDREN:
                        model = apps.get_model("servers", name)
                        rows = model._base_manager.filter(instance_uuid__in=uuids)
                        _count(result, model._meta.db_table, rows.delete())
                    _count(result, "instances", Instance.all_objects.filter(uuid__in=uuids).delete())
                for model in (apps.get_model("servers", "Migration"), Service, ComputeNode):
                    extra = model._base_manager.filter(deleted=True)
                    if before is not None:
                        extra = extra.filter(deleted_at__lt=before)
                    _count(result, model._meta.db_table, extra.delete())
        budget -= len(uuids)
        result.instance_uuids.extend(uuids)
    if result.instance_uuids:
        _count(result, "instance_mappings",
               InstanceMapping.objects.filter(instance_uuid__in=result.instance_uuids).delete())
        _count(result, "request_specs", RequestSpec.objects.filter(instance_uuid__in=result.instance_uuids).delete())
        _count(result, "build_requests",
               BuildRequest.objects.filter(instance_uuid__in=result.instance_uuids).delete())
    return result


def _count(result: ArchiveResult, table: str, deleted: tuple[int, dict[str, int]]) -> None:
    if deleted[0]:
        result.rows[table] = result.rows.get(table, 0) + deleted[0]
