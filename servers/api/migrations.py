"""``GET /os-migrations`` (admin): migrations of every cell, newest first, with Nova's filters and
per-microversion shape (2.23 migration_type, 2.59 uuid + paging, 2.80 user/project). Hidden
rows are left out and a uuid present in two cells (a cross-cell move) is shown once, the newer
record winning."""
from __future__ import annotations

from typing import Any

from django.db.models import Q
from django.utils.dateparse import parse_datetime
from rest_framework.request import Request
from rest_framework.response import Response

from cells.scatter import failed, scatter_gather
from cells.selectors import cell_list
from cloudcore.core.api.paging import page_of
from cloudcore.core.api.versioned import present
from cloudcore.core.api.views import ComputeAPIView
from cloudcore.core.exceptions import Invalid
from cloudcore.core.policy import authorize

from ..models import Migration
from ..presenter import MIGRATION_FIELDS
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
        authorize(self.ctx, "os_compute_api:os-migrations:index", {"project_id": self.ctx.project_id})
        params = MIGRATION_QUERY.only(request.query_params.dict(), self.version)
        q = Q(hidden=False)
        for key in ("status", "instance_uuid", "migration_type", "source_compute", "user_id", "project_id"):
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
        body: dict[str, Any] = {"migrations": [present(MIGRATION_FIELDS, m, self.version) for m in items]}
        if limit and len(items) == limit:
            body["migrations_links"] = [{"rel": "next", "href": f"/compute/v2.1/os-migrations?limit={limit}"
                                         f"&marker={items[-1].uuid}"}]
        return Response(body)


class ServerMigrationsView(ComputeAPIView):
    """``GET /servers/{id}/migrations``: in-progress live migrations (cloudcore has none)."""

    def get(self, request: Request, server_id: str) -> Response:

        get_server(self.ctx, server_id, "os_compute_api:servers:migrations:index", self.version)
        return Response({"migrations": []})
