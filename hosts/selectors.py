"""Reads of services and compute nodes in the targeted cell (``cells.target_cell``), for the other
apps, which never query ``hosts.models`` themselves."""
from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from django.db.models import QuerySet
from django.utils import timezone

from cells.context import current_alias
from cells.transactions import connection_for
from cloudcore.core.prepared import prepared_in_objects
from cloudcore.core.serverprepared import server_prepared

from .models import ComputeNode, Service

COMPUTE_BINARY = "nova-compute"


def service_list(*, binary: str | None = None) -> list[Service]:
    """Live services by host (of one ``binary`` if given)."""
    qs = Service.objects.order_by("host")
    if binary is not None:
        qs = qs.filter(binary=binary)
    return list(qs)


def compute_service_count() -> int:
    return Service.objects.filter(binary=COMPUTE_BINARY).count()


def enabled_compute_service_exists(*, hosts: Iterable[str] | None = None,
                                   exclude_hosts: Iterable[str] | None = None) -> bool:
    """Is there a live, enabled nova-compute service (on one of ``hosts``; not on
    ``exclude_hosts``)?"""
    qs = Service.objects.filter(binary=COMPUTE_BINARY, disabled=False, deleted=False)
    if hosts is not None:
        qs = qs.filter(host__in=list(hosts))
    if exclude_hosts:
        qs = qs.exclude(host__in=list(exclude_hosts))
    return qs.exists()


def service_field_names() -> list[str]:
    """The column attributes of a service row (for ``compute_node_values(service__<name>)``)."""
    return [f.attname for f in Service._meta.concrete_fields]


def compute_services_values(hosts: Iterable[str], fields: Iterable[str]) -> dict[str, dict[str, Any]]:
    """``{host: {field: value}}`` of the live nova-compute services of ``hosts``."""
    rows = Service.objects.filter(host__in=list(hosts), binary=COMPUTE_BINARY, deleted=False).values(*fields)
    return {row["host"]: row for row in rows}


def compute_nodes() -> list[ComputeNode]:
    """Live compute nodes."""
    return list(ComputeNode.objects.all())


def compute_node_values(*fields: str, uuids: Iterable[str] | None = None, hosts: Iterable[str] | None = None,
                        nodes: Iterable[str] | None = None, updated_after: datetime | None = None,
                        ) -> list[dict[str, Any]]:
    """Live compute nodes as ``{field: value}`` rows (``service__<field>`` follows the node's
    service), filtered by uuid, host, hypervisor hostname or last update when given (empty
    filters are no filter, except ``uuids``)."""
    qs = ComputeNode.objects.filter(deleted=False)
    if updated_after is not None:
        qs = qs.filter(updated_at__gt=updated_after)
    if uuids is not None:
        qs = qs.filter(uuid__in=list(uuids))
    if hosts:
        qs = qs.filter(host__in=list(hosts))
    if nodes:
        qs = qs.filter(hypervisor_hostname__in=list(nodes))
    return list(qs.values(*fields))


def compute_node_uuids(host: str) -> list[str]:
    """Uuids of ``host``'s live compute nodes."""
    return list(ComputeNode.objects.filter(host=host, deleted=False).values_list("uuid", flat=True))


def compute_node_ids_by_name() -> dict[tuple[str | None, str | None], int]:
    """``{(host, hypervisor hostname): node id}`` of every node, deleted ones included."""
    return {(n.host, n.hypervisor_hostname): n.id for n in ComputeNode.all_objects.all()}


def compute_services(hosts: Iterable[str]) -> dict[str, Service]:
    """``{host: service}`` of the nova-compute services of ``hosts`` (in the targeted cell). The
    statement for one host (a server's show: a client's status poll) is built once per process for
    each cell's database (``prepared_in_objects``)."""
    found = prepared_in_objects(f"hosts.compute_services.{current_alias()}", _compute_services, sorted(hosts))
    return {s.host: s for s in found}


def _compute_services(hosts: Any) -> QuerySet[Service]:
    return Service.objects.filter(host__in=hosts, binary=COMPUTE_BINARY)


def compute_node_get(uuid: str) -> ComputeNode | None:
    """The live compute node ``uuid``, or None."""
    return ComputeNode.objects.filter(uuid=uuid).first()


def compute_node_exists(host: str) -> bool:
    """Does ``host`` have a live compute node in the targeted cell?"""
    return ComputeNode.objects.filter(host=host).exists()


def _fingerprint_sql(connection: Any) -> tuple[str, list[Any]]:
    """``SELECT`` list (aliased ``f0`` ..) and parameters of ``compute_fingerprint``'s figures."""
    node, service = ComputeNode._meta.db_table, Service._meta.db_table
    compute = f"{connection.ops.quote_name('binary')} = %s"

    def figures(table: str, where: str) -> list[str]:
        live = f"WHERE {where}" if where else ""
        also = f"{where} AND " if where else ""
        # table names from the models, values as parameters
        return [f"(SELECT {figure} FROM {table} {where_clause})"  # noqa: S608
                for figure, where_clause in (("COUNT(*)", live), ("COUNT(*)", f"WHERE {also}deleted = %s"),
                                             ("MAX(id)", live), ("MAX(created_at)", live),
                                             ("MAX(updated_at)", live))]

    columns = [*figures(node, ""), f"(SELECT SUM(service_id) FROM {node})", *figures(service, compute)]  # noqa: S608
    return (", ".join(f"{column} AS f{i}" for i, column in enumerate(columns)),
            [True, COMPUTE_BINARY, COMPUTE_BINARY, True, COMPUTE_BINARY, COMPUTE_BINARY, COMPUTE_BINARY])


def _as_fingerprint(row: Iterable[Any]) -> tuple[Any, ...]:
    figures = list(row)
    return (1, *figures[:6]), (2, *figures[6:], 0)


def compute_fingerprint() -> tuple[Any, ...]:
    """Of the targeted cell, in one statement: (rows, deleted rows, highest id, newest created_at,
    newest updated_at, sum of service links) of the compute nodes, then the same (links: 0) of
    the nova-compute services. Any write to either table changes it (the scheduler's cache key).
    Each figure is its own subquery so that it is read from an index (``models`` declares them)
    rather than by scanning every row of the cell."""
    connection = connection_for(ComputeNode)
    columns, params = _fingerprint_sql(connection)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {columns}", params)
        return _as_fingerprint(cursor.fetchone()[:11])


def _problem_ids_sql(connection: Any, down_after_seconds: int) -> tuple[str, list[Any]]:
    """The ids of the targeted cell's nova-compute services with a problem (see
    ``compute_fingerprint_and_problems``) as SQL and parameters. Each condition is its own indexed
    branch (``binary`` with ``disabled``, ``forced_down``, ``last_seen_up``), so the cost
    follows the services with a problem, not the services of the cell; "column = %s" rather
    than Django's bare boolean column, which SQLite reads by scanning."""
    ops = connection.ops
    cutoff = ops.adapt_datetimefield_value(timezone.now() - timedelta(seconds=down_after_seconds))
    table, compute = Service._meta.db_table, f"{ops.quote_name('binary')} = %s"
    return (f"SELECT id FROM {table} WHERE {compute} AND disabled = %s "  # noqa: S608 - table name from the model
            f"UNION SELECT id FROM {table} WHERE {compute} AND forced_down = %s "
            f"UNION SELECT id FROM {table} WHERE {compute} AND last_seen_up < %s "
            f"UNION SELECT id FROM {table} WHERE {compute} AND last_seen_up IS NULL "
            f"AND COALESCE(updated_at, created_at) < %s",
            [COMPUTE_BINARY, True, COMPUTE_BINARY, True, COMPUTE_BINARY, cutoff, COMPUTE_BINARY, cutoff])


def compute_fingerprint_and_problems(fields: Iterable[str], *, down_after_seconds: int,
                                     ) -> tuple[tuple[Any, ...], list[dict[str, Any]]]:
    """``compute_fingerprint()`` and the targeted cell's nova-compute services (as ``fields``
    rows) that are disabled, forced down, or whose last heartbeat (``last_seen_up``, else
    ``updated_at``, else ``created_at``, as ``service_is_up`` reads it) is older than
    ``down_after_seconds``, in one statement: the fingerprint's figures joined to the services
    with a problem (a row of figures alone when there is none). The services' columns are
    converted as the ORM would."""
    connection = connection_for(Service)
    fields = list(fields)
    figures, figure_params = _fingerprint_sql(connection)
    problems, problem_params = _problem_ids_sql(connection, down_after_seconds)
    columns = {f.attname: f for f in Service._meta.concrete_fields}
    cols = [columns[name].get_col("s") for name in fields]
    converters = [(col, connection.ops.get_db_converters(col) + col.get_db_converters(connection)) for col in cols]
    selected = ", ".join(f"s.{connection.ops.quote_name(col.target.column)}" for col in cols)
    table = Service._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(server_prepared(  # (planning it took longer than running it: prepared once per connection)
            f"SELECT fp.*, s.id, {selected} FROM (SELECT {figures}) AS fp "  # noqa: S608 - names from the models
            f"LEFT JOIN {table} AS s ON s.deleted = %s AND s.id IN ({problems})"),
            [*figure_params, False, *problem_params])
        rows = cursor.fetchall()
    found = []
    for row in rows:
        if row[11] is None:  # no service has a problem
            continue
        values = row[12:]
        converted = {}
        for name, value, (col, funcs) in zip(fields, values, converters, strict=True):
            for func in funcs:
                value = func(value, col, connection)
            converted[name] = value
        found.append(converted)
    return _as_fingerprint(rows[0][:11]), found


# --- used by compute/ ---------------------------------------------------------------------------
def service_for_host(host: str, *, binary: str = COMPUTE_BINARY) -> Service | None:
    """The live ``binary`` service of ``host``, or None."""
    return Service.objects.filter(host=host, binary=binary).first()


def service_get_by_id(service_id: int) -> Service | None:
    """The live service with row id ``service_id``, or None."""
    return Service.objects.filter(id=service_id).first()


def compute_node_get_by_id(node_id: int) -> ComputeNode | None:
    """The live compute node with row id ``node_id``, or None."""
    return ComputeNode.objects.filter(id=node_id).first()


def compute_node_get_any(uuid: str) -> ComputeNode | None:
    """The compute node ``uuid``, deleted or not, or None."""
    return ComputeNode.all_objects.filter(uuid=uuid).first()


def compute_node_for_host(host: str | None, hypervisor_hostname: str | None) -> ComputeNode | None:
    """The live compute node ``hypervisor_hostname`` of ``host``, or None."""
    return ComputeNode.objects.filter(host=host, hypervisor_hostname=hypervisor_hostname).first()


# --- used by cross-cell ---


def compute_service_min_version() -> int | None:
    """The lowest version of the nova-compute services in the targeted cell; None without any."""
    versions = list(Service.objects.filter(binary=COMPUTE_BINARY).values_list("version", flat=True))
    return min(versions) if versions else None
