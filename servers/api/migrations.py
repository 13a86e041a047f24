"""``GET /os-migrations``: migrations of every cell, newest first, with Nova's filters and
per-microversion shape (2.23 migration_type, 2.59 uuid + paging, 2.80 user/project). Hidden
rows are left out and a uuid present in two cells (a cross-cell move) is shown once, the newer
record winning.

Who reads what is Nova's (its project manager persona): ``...:os-migrations:index`` (a project
manager or admin) lets one list the migrations of one's own project, asked for by ``project_id``;
listing every project's, or another's, also takes ``...:index:all_projects`` (admin); the host
fields are null unless ``...:index:host`` (admin) allows them. A server's live migrations
(``/servers/{id}/migrations``) hide their hosts the same way (``...:servers:migrations:index:host``)."""
from __future__ import annotations

from typing import Any

from django.db.models import Q
from django.utils.dateparse import parse_datetime
from rest_framework.request import Request
from rest_framework.response import Response

from cells.context import target_cell
from cells.scatter import failed, scatter_gather
from cells.selectors import cell_list
from cloudcore.core.api.paging import page_of
from cloudcore.core.api.validation import VersionedSchema
from cloudcore.core.api.versioned import Since, present
from cloudcore.core.api.views import ComputeAPIView
from cloudcore.core.exceptions import InstanceInvalidState, Invalid, NotFound
from cloudcore.core.policy import authorize, can

from ..choices import MigrationStatus, MigrationType
from ..models import Migration
from ..presenter import MIGRATION_FIELDS, SERVER_MIGRATION_FIELDS, without_hosts
from ..selectors import live_migrations_in_progress, migration_of_instance
from ..services.guards import record_target
from ..services.live_migrate import (
    MigrationNotFoundForInstance,
    live_migration_abort,
    live_migration_force_complete,
)
from .schemas import MIGRATION_QUERY
from .servers import get_server


def _newer(a: Migration, b: Migration) -> Migration:
    """Nova's rule for a uuid seen twice: compare updated_at, else updated vs created, else created."""
    a_stamp, b_stamp = a.updated_at or a.created_at, b.updated_at or b.created_at
    return a if a_stamp >= b_stamp else b


class MigrationsView(ComputeAPIView):
    query_parameters = frozenset({
        "hidden", "host", "instance_uuid", "migration_type", "source_compute", "status", "limit", "marker",
        "changes-since", "changes-before", "user_id", "project_id"
    })

    def get(self, request: Request) -> Response:
        own = {"project_id": self.ctx.project_id}
        authorize(self.ctx, "os_compute_api:os-migrations:index", own)
        # the project asked for (any microversion, as Nova's filter reads it; documented from 2.80)
        project_id = request.query_params.get("project_id")
        if not project_id or project_id != self.ctx.project_id:
            authorize(self.ctx, "os_compute_api:os-migrations:index:all_projects", own)
        with_hosts = can(self.ctx, "os_compute_api:os-migrations:index:host", own)
        params = MIGRATION_QUERY.only(request.query_params.dict(), self.version)
        q = Q(hidden=False)
        if project_id:
            q &= Q(project_id=project_id)
        for key in ("status", "instance_uuid", "migration_type", "source_compute", "user_id"):
            if params.get(key):
                q &= Q(**{key: params[key]})
        if params.get("host"):
            q &= Q(source_compute=params["host"]) | Q(dest_compute=params["host"])
        for key, lookup in (("changes-since", "updated_at__gte"), ("changes-before", "updated_at__lte")):
            if params.get(key):
                stamp = parse_datetime(params[key])
                if stamp is None:
                    raise Invalid(f"Invalid input for query parameters {key}.")
                q &= Q(**{lookup: stamp})
        limit = None
        if params.get("limit"):
            try:
                limit = int(params["limit"])
            except ValueError:
                raise Invalid("Invalid input for query parameters limit.") from None
            if limit < 0:
                raise Invalid("Invalid input for query parameters limit.")

        def per_cell(_cell: Any) -> list[Migration]:
            return list(Migration.objects.filter(q))

        seen: dict[str, Migration] = {}
        cells = cell_list(cell0=False)
        for result in scatter_gather(per_cell, cells).values():
            if failed(result):
                continue
            for m in result:  # type: ignore[union-attr]
                seen[m.uuid] = _newer(seen[m.uuid], m) if m.uuid in seen else m
        items = sorted(seen.values(), key=lambda m: (m.created_at, m.uuid), reverse=True)
        items = page_of(items, marker=params.get("marker"), limit=limit)
        shown = [present(MIGRATION_FIELDS, m, self.version) for m in items]
        body: dict[str, Any] = {"migrations": shown if with_hosts else [without_hosts(m) for m in shown]}
        if limit and len(items) == limit:
            body["migrations_links"] = [{"rel": "next", "href": f"/compute/v2.1/os-migrations?limit={limit}"
                                         f"&marker={items[-1].uuid}"}]
        return Response(body)


class ServerMigrationsView(ComputeAPIView):
    """``GET /servers/{id}/migrations`` (2.23+): the server's live migrations in progress."""

    available_from = (2, 23)

    def get(self, request: Request, server_id: str) -> Response:
        record = get_server(self.ctx, server_id, "os_compute_api:servers:migrations:index", self.version)
        if record.instance is None or record.cell is None:
            return Response({"migrations": []})
        with target_cell(record.cell):
            migrations = live_migrations_in_progress(record.uuid)
        shown = [present(SERVER_MIGRATION_FIELDS, m, self.version) for m in migrations]
        if not can(self.ctx, "os_compute_api:servers:migrations:index:host", record_target(record)):
            shown = [without_hosts(m) for m in shown]
        return Response({"migrations": shown})


class ServerMigrationView(ComputeAPIView):
    """``GET`` (2.23+) one live migration in progress; ``DELETE`` (2.24+) aborts it (202)."""

    available_from = (2, 23)

    def get(self, request: Request, server_id: str, migration_id: str) -> Response:
        record = get_server(self.ctx, server_id, "os_compute_api:servers:migrations:show", self.version)
        migration = None
        if record.instance is not None and record.cell is not None:
            with target_cell(record.cell):
                migration = migration_of_instance(record.uuid, migration_id)
        if migration is None:
            raise MigrationNotFoundForInstance(migration_id=migration_id, instance_id=record.uuid)
        if (migration.migration_type != MigrationType.LIVE_MIGRATION
                or migration.status not in MigrationStatus.LIVE_IN_PROGRESS):
            raise NotFound(f"In-progress live migration {migration_id} is not found for server {record.uuid}.")
        return Response({"migration": present(SERVER_MIGRATION_FIELDS, migration, self.version)})

    def delete(self, request: Request, server_id: str, migration_id: str) -> Response:
        if self.version < (2, 24):
            raise NotFound("The resource could not be found.")  # Nova: no such method at this version
        instance, cell = _writable(self, server_id)
        with target_cell(cell):
            live_migration_abort(actor=self.ctx, instance=instance, migration_id=migration_id,
                                 abort_queued=SERVER_MIGRATION_FEATURES.has("abort_queued", self.version))
        return Response(status=202)


class ServerMigrationActionView(ComputeAPIView):
    """``POST /servers/{id}/migrations/{id}/action`` ``{"force_complete": null}`` (2.22+): 202."""

    available_from = (2, 22)

    def post(self, request: Request, server_id: str, migration_id: str) -> Response:
        FORCE_COMPLETE.validate(self.body(), self.version)
        instance, cell = _writable(self, server_id)
        with target_cell(cell):
            live_migration_force_complete(actor=self.ctx, instance=instance, migration_id=migration_id)
        return Response(status=202)


#: 2.65: a queued (or preparing) live migration may be aborted
SERVER_MIGRATION_FEATURES = Since({"abort_queued": (2, 65)})
FORCE_COMPLETE = VersionedSchema(("2.22", None, {
    "type": "object", "properties": {"force_complete": {"type": "null"}}, "required": ["force_complete"],
    "additionalProperties": False}))


def _writable(view: ComputeAPIView, server_id: str) -> tuple[Any, Any]:
    record = get_server(view.ctx, server_id, version=view.version)
    if record.instance is None or record.cell is None:
        raise InstanceInvalidState(method="live migration", instance_uuid=record.uuid, attr="vm_state",
                                   state="building")
    return record.instance, record.cell
