"""Server list at scale: ``GET /servers/detail`` latency and SQL statements per request with 100,
1,000 and 10,000 servers of one project spread evenly over cell1 and cell2.

The first ``BOOTED`` servers are booted for real through the compute API (half with only cell1's
hosts enabled, half with only cell2's); the rest are bulk row inserts (``bulk_create``) into each
cell database (Instance + BlockDeviceMapping rows copied from the booted servers of that cell, with
new uuids, names and creation times) plus their InstanceMapping and RequestSpec rows in the API
database (each spec the booted server's, with the copy's ``instance_uuid``, as Nova keeps one per
server, written by ``request_specs_create`` as a boot writes it), so the list reads exactly what it
would read for booted servers: from 2.96 on (the pinned zone, and 2.100's scheduler hints) a page
reads, of every row's request spec, the zone, the group's uuid and the hints from the spec row's own
columns of them, never the spec (``servers.selectors.request_spec_keys_of``; until list6 they were
read out of the spec with SQLite's ``json_extract``, which parsed each whole spec). Each size is
measured with the default page (no ``limit``: the API's maximum page of 1,000, as Nova's
``max_limit``) and with ``limit=50``, one warm-up request first.
SQL statements are counted with ``CaptureQueriesContext`` on every connection."""
from __future__ import annotations

import contextlib
import statistics
import time
import uuid as uuidlib
from datetime import timedelta
from typing import Any

DESCRIPTION = "GET /servers/detail with 100 / 1,000 / 10,000 servers in 2 cells (latency, SQL per request)"
SIZES = (100, 1000, 10000)
QUICK_SIZES = (20, 100, 400)
BOOTED, QUICK_BOOTED = 100, 20
REPEATS, QUICK_REPEATS = 5, 2
SMALL_PAGE = 50
#: The full detail page is also measured at the first and at the newest microversion (Nova is
#: measured at the same two).
VERSIONS = ("2.1", "latest")


def _enable_only(cloud: Any, cell: str) -> None:
    from cells.context import target_cell
    from hosts.models import Service

    for name in ("cell1", "cell2"):
        with target_cell(cloud.cells[name]):
            Service.objects.update(disabled=name != cell)


def insert_copies(cloud: Any, cell_name: str, count: int, serial: int, prefix: str = "list-") -> None:
    """``count`` more servers in ``cell_name``, copied from the servers booted there (those named
    ``prefix``...), named ``copy-<serial + k>``, each with a copy of its template's request spec.
    Also used by the functional test that the list's statements do not grow with the rows."""
    from django.utils import timezone

    from cells.context import target_cell
    from cells.models import InstanceMapping
    from cells.transactions import api_atomic, atomic
    from scheduling.services.request_specs import request_specs_create, request_specs_get
    from servers.models import BlockDeviceMapping, Instance

    cell = cloud.cells[cell_name]
    with target_cell(cell):
        templates = list(Instance.objects.filter(display_name__startswith=prefix).order_by("id"))
        bdms: dict[str, list[Any]] = {}
        for bdm in BlockDeviceMapping.objects.filter(instance_uuid__in=[t.uuid for t in templates]):
            bdms.setdefault(bdm.instance_uuid, []).append(bdm)
        assert templates, f"no booted server in {cell_name} to copy"
        template_specs = request_specs_get(t.uuid for t in templates)
        oldest = min(t.created_at for t in templates)
        instances, new_bdms, mappings = [], [], []
        specs: dict[str, dict[str, Any]] = {}
        for k in range(count):
            template = templates[k % len(templates)]
            new_uuid = str(uuidlib.uuid4())
            name = f"copy-{serial + k:05d}"
            instance = Instance(**{f.attname: getattr(template, f.attname) for f in Instance._meta.concrete_fields
                                   if not f.primary_key})
            instance.uuid, instance.display_name, instance.hostname = new_uuid, name, name
            # older than the booted ones, one millisecond apart: a stable, realistic sort order
            instance.created_at = oldest - timedelta(milliseconds=serial + k + 1)
            instance.updated_at = timezone.now()
            instances.append(instance)
            for bdm in bdms.get(template.uuid, []):
                copy = BlockDeviceMapping(**{f.attname: getattr(bdm, f.attname)
                                             for f in BlockDeviceMapping._meta.concrete_fields if not f.primary_key})
                copy.uuid, copy.instance_uuid = str(uuidlib.uuid4()), new_uuid
                new_bdms.append(copy)
            mappings.append(InstanceMapping(instance_uuid=new_uuid, cell=cell, project_id=template.project_id,
                                            user_id=template.user_id))
            if template.uuid in template_specs:
                specs[new_uuid] = {**template_specs[template.uuid], "instance_uuid": new_uuid}
        with atomic(cell):
            Instance.objects.bulk_create(instances, batch_size=500)
            BlockDeviceMapping.objects.bulk_create(new_bdms, batch_size=500)
    with api_atomic():
        InstanceMapping.objects.bulk_create(mappings, batch_size=1000)
        batch = list(specs.items())
        for start in range(0, len(batch), 500):
            request_specs_create(dict(batch[start:start + 500]))


def _get(cloud: Any, client: Any, path: str, repeats: int, version: str = "2.90") -> dict[str, Any]:
    from bench.env import capture_queries, served_heap

    times, statements, returned = [], [], 0
    cloud.get(client, path, version=version)  # warm-up (caches, SQLite pages after the bulk insert), not counted
    with served_heap():
        for _ in range(repeats):
            with capture_queries() as queries:
                started = time.perf_counter()
                response = cloud.get(client, path, version=version)
                times.append(time.perf_counter() - started)
            assert response.status_code == 200, response.content[:500]
            statements.append(queries.total)
            returned = len(response.json()["servers"])
    return {"ms": statistics.median(times) * 1000, "min_ms": min(times) * 1000, "sql": max(statements),
            "returned": returned, "sql_by_db": queries.by_alias}


#: Where one full detail page spends its time: (label, module, attribute) of the steps timed with a
#: wall-clock wrapper around them (nested: the extras and the bodies are inside "render").
STEPS = (
    ("server_list: cell queries + rows to Instance objects", "servers.api.servers", "server_list"),
    ("render: extras + bodies (total)", "servers.api.servers", "render"),
    ("  render: addresses and security groups (ports of the page)", "servers.api.servers",
     "_addresses_and_group_names"),
    ("  render: request spec keys of the page", "servers.api.servers", "request_spec_keys_of"),
    ("  render: present_server, all rows", "servers.api.servers", "present_server"),
    ("JSON rendering of the response", "cloudcore.core.api.views", "OpenStackJSONRenderer.render"),
)


def where_the_time_goes(cloud: Any, client: Any, path: str, version: str, repeats: int) -> dict[str, Any]:
    """Median wall ms per request in each of ``STEPS`` over ``repeats`` requests of ``path``;
    "other" is the rest of the request (middleware, token, DRF, the test client)."""
    import importlib
    from unittest import mock

    from bench.env import served_heap

    spent: dict[str, float] = {}

    def timed(label: str, fn: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[label] = spent.get(label, 0.0) + time.perf_counter() - started
        return wrapper

    per_request: list[dict[str, float]] = []
    with contextlib.ExitStack() as stack:
        for label, module_name, attr in STEPS:
            owner: Any = importlib.import_module(module_name)
            *path_to, name = attr.split(".")
            for part in path_to:
                owner = getattr(owner, part)
            stack.enter_context(mock.patch.object(owner, name, timed(label, getattr(owner, name))))
        cloud.get(client, path, version=version)
        stack.enter_context(served_heap())
        for _ in range(repeats):
            spent.clear()
            started = time.perf_counter()
            cloud.get(client, path, version=version)
            spent["total"] = time.perf_counter() - started
            per_request.append(dict(spent))
    out = {label: statistics.median(r.get(label, 0.0) for r in per_request) * 1000 for label, _, _ in STEPS}
    total = statistics.median(r["total"] for r in per_request) * 1000
    top = [label for label, _, _ in STEPS if not label.startswith(" ")]
    out["other (middleware, token, DRF, test client)"] = max(total - sum(out[label] for label in top), 0.0)
    out["total"] = total
    return out


def make_cloud(env: Any) -> tuple[Any, Any]:
    """The scenario's cloud (four hosts, two per cell, no quota) and its lister's client."""
    from django.conf import settings

    from tests.cloud import Cloud

    settings.QUOTA_INSTANCES = settings.QUOTA_CORES = settings.QUOTA_RAM = -1
    settings.NOTIFICATIONS_KEEP = 0
    cloud = Cloud(cells=env.cells)
    for i in range(4):
        cloud.add_host(f"list-host-{i}", cell="cell1" if i < 2 else "cell2", zone=None, vcpus=4096,
                       memory_mb=4 * 1024 * 1024, disk_gb=100000)
    cloud.add_demo_objects()
    return cloud, cloud.member("lister", "lister")


def run(env: Any) -> dict[str, Any]:
    from cells.context import target_cell
    from servers.models import Instance

    sizes = QUICK_SIZES if env.quick else SIZES
    booted_target = min(QUICK_BOOTED if env.quick else BOOTED, sizes[0])
    repeats = QUICK_REPEATS if env.quick else REPEATS
    cloud, client = make_cloud(env)
    rows = []
    breakdown: dict[str, float] = {}
    breakdown_at = 0
    try:
        boot_started = time.perf_counter()
        for i in range(booted_target):
            _enable_only(cloud, "cell1" if i < booted_target // 2 else "cell2")
            cloud.create_server(client, f"list-{i:05d}", networks="none")
        boot_s = time.perf_counter() - boot_started
        total = booted_target
        for size in sizes:
            insert_started = time.perf_counter()
            missing = size - total
            for cell_name, count in (("cell1", missing // 2), ("cell2", missing - missing // 2)):
                if count > 0:
                    insert_copies(cloud, cell_name, count, serial=total)
                    total += count
            insert_s = time.perf_counter() - insert_started
            if size == 1000 or size == sizes[1]:
                breakdown = where_the_time_goes(cloud, client, "servers/detail", "latest", repeats)
                breakdown_at = size
            per_cell = {}
            for cell_name in ("cell1", "cell2"):
                with target_cell(cloud.cells[cell_name]):
                    per_cell[cell_name] = Instance.objects.count()
            full = _get(cloud, client, "servers/detail", repeats)
            small = _get(cloud, client, f"servers/detail?limit={SMALL_PAGE}", repeats)
            by_version = {v: _get(cloud, client, "servers/detail", repeats, version=v) for v in VERSIONS}
            rows.append({"servers": size, "per_cell": per_cell, "booted": booted_target,
                         "inserted": size - booted_target, "insert_s": insert_s,
                         "detail_ms": full["ms"], "detail_min_ms": full["min_ms"], "detail_sql": full["sql"],
                         "detail_returned": full["returned"], "detail_sql_by_db": full["sql_by_db"],
                         "page_ms": small["ms"], "page_sql": small["sql"], "page_returned": small["returned"],
                         "by_version": {v: {k: m[k] for k in ("ms", "min_ms", "sql", "returned")}
                                        for v, m in by_version.items()}})
    finally:
        cloud.teardown()
    print(f"   {booted_target} servers booted through the API in {boot_s:.1f} s, the rest bulk-inserted; "
          f"median of {repeats} requests")
    print(f"   {'servers':>8} {'cell1/cell2':>12} {'detail ms':>10} {'rows':>6} {'SQL':>5} "
          f"{f'limit={SMALL_PAGE} ms':>13} {'SQL':>5} " + " ".join(f"{f'@{v} ms':>10} {'SQL':>4}" for v in VERSIONS))
    for r in rows:
        split = f"{r['per_cell']['cell1']}/{r['per_cell']['cell2']}"
        print(f"   {r['servers']:>8} {split:>12} {r['detail_ms']:>10.1f} {r['detail_returned']:>6} "
              f"{r['detail_sql']:>5} {r['page_ms']:>13.1f} {r['page_sql']:>5} "
              + " ".join(f"{r['by_version'][v]['ms']:>10.1f} {r['by_version'][v]['sql']:>4}" for v in VERSIONS),
              flush=True)
    print(f"   where the time of one full page goes ({breakdown_at} servers, latest, median ms): "
          + ", ".join(f"{label.strip()} {ms:.1f}" for label, ms in breakdown.items()), flush=True)
    return {
        "breakdown": breakdown, "breakdown_at": breakdown_at,
        "rows": rows, "booted": booted_target, "versions": list(VERSIONS), "repeats": repeats, "small_page": SMALL_PAGE,
        "max_page": rows[-1]["detail_returned"],
        "method": f"{booted_target} servers booted through POST /servers (eager build, libvirt test driver, "
                  f"networks=none), the others bulk row inserts (Instance + BlockDeviceMapping copied from the "
                  f"booted servers of the same cell, InstanceMapping in the API DB); GET as the owning project's "
                  f"member through the DRF test client, microversion 2.90 (and the full page again at "
                  f"{' and '.join(VERSIONS)})",
    }
