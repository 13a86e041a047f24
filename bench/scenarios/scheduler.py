"""Scheduler: ``select_destinations`` time per request and SQL statements per request with
1,000 and 10,000 resource providers (compute nodes split over two cells), plus the placement
allocation-candidates query alone. Statements per request must not grow with the number of
providers."""
from __future__ import annotations

import statistics
import time
import uuid as uuidlib
from typing import Any

DESCRIPTION = "select_destinations with 1,000 and 10,000 providers (time and SQL statements per request)"
SIZES = (1000, 10000)
QUICK_SIZES = (200, 1000)
REQUESTS = 30
MULTI = 10  # instances in one multi-create request


def _reset(env: Any) -> None:
    from cells.context import target_cell
    from cells.models import HostMapping
    from hosts.models import ComputeNode, Service
    from scheduling.models import Allocation, Consumer, Inventory, ResourceProvider

    Allocation.objects.all().delete()
    Consumer.objects.all().delete()
    Inventory.objects.all().delete()
    ResourceProvider.objects.update(root=None, parent=None)
    ResourceProvider.objects.all().delete()
    HostMapping.objects.all().delete()
    for name in ("cell1", "cell2"):
        with target_cell(env.cells[name]):
            ComputeNode.all_objects.all().delete()
            Service.all_objects.all().delete()


def populate(env: Any, count: int) -> None:
    """``count`` compute hosts, half in cell1 and half in cell2, each with a nova-compute
    service, a compute node, a host mapping and a provider with VCPU/MEMORY_MB/DISK_GB
    inventory (sizes vary so the weighers have something to do)."""
    from django.db import transaction
    from django.db.models import F
    from django.utils import timezone

    from cells.context import target_cell
    from cells.models import HostMapping
    from cells.transactions import atomic
    from hosts.models import ComputeNode, Service
    from scheduling.models import Inventory, ResourceClass, ResourceProvider

    _reset(env)
    now = timezone.now()
    hosts = [(f"bench-{i:05d}", str(uuidlib.uuid4()), "cell1" if i % 2 == 0 else "cell2", i) for i in range(count)]
    for cell_name in ("cell1", "cell2"):
        mine = [h for h in hosts if h[2] == cell_name]
        with target_cell(env.cells[cell_name]), atomic(env.cells[cell_name]):
            Service.objects.bulk_create([Service(host=h, binary="nova-compute", topic="compute", last_seen_up=now)
                                         for h, _u, _c, _i in mine], batch_size=2000)
            ids = dict(Service.objects.values_list("host", "id"))
            ComputeNode.objects.bulk_create([
                ComputeNode(uuid=u, host=h, hypervisor_hostname=h, service_id=ids[h], vcpus=16 + i % 16,
                            memory_mb=32768 + 1024 * (i % 32), local_gb=500, cpu_info='{"arch": "x86_64"}')
                for h, u, _c, i in mine], batch_size=2000)
    with transaction.atomic():
        HostMapping.objects.bulk_create([HostMapping(host=h, cell=env.cells[c]) for h, _u, c, _i in hosts],
                                        batch_size=2000)
        ResourceProvider.objects.bulk_create([ResourceProvider(uuid=u, name=h) for h, u, _c, _i in hosts],
                                             batch_size=2000)
        ResourceProvider.objects.update(root_id=F("id"))
        rc = {name: ResourceClass.objects.get_or_create(name=name)[0] for name in ("VCPU", "MEMORY_MB", "DISK_GB")}
        rp_ids = dict(ResourceProvider.objects.values_list("uuid", "id"))
        inventories = []
        for _h, u, _c, i in hosts:
            inventories += [
                Inventory(resource_provider_id=rp_ids[u], resource_class=rc["VCPU"], total=16 + i % 16,
                          max_unit=16 + i % 16, allocation_ratio=4.0),
                Inventory(resource_provider_id=rp_ids[u], resource_class=rc["MEMORY_MB"],
                          total=32768 + 1024 * (i % 32), reserved=512, max_unit=32768 + 1024 * (i % 32)),
                Inventory(resource_provider_id=rp_ids[u], resource_class=rc["DISK_GB"], total=500, max_unit=500),
            ]
        Inventory.objects.bulk_create(inventories, batch_size=3000)


def _spec() -> dict[str, Any]:
    return {
        "project_id": "bench", "user_id": "bench",
        "flavor": {"vcpus": 2, "memory_mb": 2048, "root_gb": 20, "ephemeral_gb": 0, "swap": 0, "extra_specs": {}},
        "image": {"id": "bench-image", "properties": {}}, "availability_zone": None, "num_instances": 1,
        "force_hosts": [], "force_nodes": [], "ignore_hosts": [], "requested_destination": None,
        "scheduler_hints": {},
    }


def measure(env: Any, count: int, requests: int = REQUESTS) -> dict[str, float]:
    from bench.env import count_queries
    from cloudcore.core.context import RequestContext
    from scheduling.placement.services import allocation_candidates
    from scheduling.scheduler import select_destinations

    ctx = RequestContext.system()
    times, queries, cand_times = [], [], []
    for _ in range(5):
        started = time.perf_counter()
        allocation_candidates(resources={"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 20}, limit=1000)
        cand_times.append(time.perf_counter() - started)
    for _ in range(requests):
        with count_queries() as counter:
            started = time.perf_counter()
            select_destinations(ctx, _spec(), [str(uuidlib.uuid4())], return_alternates=True)
            times.append(time.perf_counter() - started)
        queries.append(counter.total)
    multi_times, multi_queries = [], []
    for _ in range(max(1, requests // 6)):
        spec = {**_spec(), "num_instances": MULTI}
        with count_queries() as counter:
            started = time.perf_counter()
            select_destinations(ctx, spec, [str(uuidlib.uuid4()) for _ in range(MULTI)], return_alternates=True)
            multi_times.append(time.perf_counter() - started)
        multi_queries.append(counter.total)
    return {
        "multi_ms": statistics.median(multi_times) * 1000, "multi_queries": max(multi_queries),
        "providers": count, "median_ms": statistics.median(times) * 1000, "p95_ms": sorted(times)[int(len(times) * .95)
                                                                                              - 1] * 1000,
        "candidates_ms": statistics.median(cand_times) * 1000, "queries": statistics.median(queries),
        "queries_max": max(queries),
    }


#: (what, module, attribute): the steps of select_destinations timed by ``where_the_time_goes``
PHASES = (
    ("notifications (start and end, made and deferred)", "scheduling.scheduler", "_notify"),
    ("rows written as the scheduler's scope ends (notifications, trace; one transaction)", "cloudcore.core.scope",
     "write_together"),
    ("cell mappings", "scheduling.scheduler", "_schedulable_cells"),
    ("cells: node copy check (fingerprint) and services with a problem", "scheduling.scheduler", "_cells_view"),
    ("placement: allocation candidates from the provider copy", "scheduling.placement.services",
     "allocation_candidates"),
    ("  of which: provider copy refresh (stamp, changed providers)", "scheduling.placement.cache.ProviderCache",
     "_refresh"),
    ("zones, aggregate metadata, host states", "scheduling.scheduler", "_host_states"),
    ("filters", "scheduling.scheduler", "filter_hosts"),
    ("weighers (chosen host and alternates)", "scheduling.scheduler", "weigh_hosts"),
    ("claim in placement", "scheduling.placement.services", "claim_allocation_request"),
)


def where_the_time_goes(requests: int = REQUESTS, phases: tuple[tuple[str, str, str], ...] = PHASES,
                        spec: dict[str, Any] | None = None, between: Any = None) -> list[dict[str, Any]]:
    """Mean milliseconds per single-instance request (``spec``, default ``_spec()``) spent in
    each step of ``phases`` (each function wrapped with a timer for the duration), and the rest
    ("other"). A request that finds no valid host counts like any other. ``between()`` runs
    before each request, untimed (e.g. a placement write, so that nothing is answered from
    before)."""
    import importlib

    from cloudcore.core.context import RequestContext
    from cloudcore.core.exceptions import NoValidHost
    from scheduling.scheduler import select_destinations

    spent: dict[str, float] = {label: 0.0 for label, _m, _a in phases}
    restore = []

    def timed(label: str, func: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return func(*args, **kwargs)
            finally:
                spent[label] += time.perf_counter() - started
        return wrapper

    for label, module, attribute in phases:
        try:
            owner: Any = importlib.import_module(module)
        except ImportError:  # a class inside a module
            module_name, _, class_name = module.rpartition(".")
            owner = getattr(importlib.import_module(module_name), class_name)
        original = getattr(owner, attribute)
        restore.append((owner, attribute, original))
        setattr(owner, attribute, timed(label, original))
    ctx = RequestContext.system()
    try:
        untimed = 0.0
        started = time.perf_counter()
        for _ in range(requests):
            if between is not None:
                paused = time.perf_counter()
                between()
                untimed += time.perf_counter() - paused
            try:
                select_destinations(ctx, spec or _spec(), [str(uuidlib.uuid4())], return_alternates=True)
            except NoValidHost:
                pass
        total = time.perf_counter() - started - untimed
    finally:
        for owner, attribute, original in reversed(restore):
            setattr(owner, attribute, original)
    rows = [{"step": label, "ms": spent[label] / requests * 1000} for label, _m, _a in phases]
    accounted = sum(v for label, v in spent.items() if not label.startswith(" "))
    rows.append({"step": "other (glue: fits, selections, alternates)", "ms": (total - accounted) / requests * 1000})
    rows.append({"step": "total", "ms": total / requests * 1000})
    return rows


def run(env: Any) -> dict[str, Any]:
    rows = []
    phases: list[dict[str, Any]] = []
    for count in QUICK_SIZES if env.quick else SIZES:
        started = time.perf_counter()
        populate(env, count)
        print(f"   {count} providers created in {time.perf_counter() - started:.1f} s", flush=True)
        rows.append(measure(env, count))
        phases = where_the_time_goes()
    print(f"   {'providers':>10} {'select ms (median)':>19} {'p95 ms':>8} {'candidates ms':>14} "
          f"{'SQL/request':>12} {'SQL max':>8} {f'{MULTI} inst. ms':>12} {f'SQL {MULTI} inst.':>12}")
    for r in rows:
        print(f"   {r['providers']:>10} {r['median_ms']:>19.1f} {r['p95_ms']:>8.1f} {r['candidates_ms']:>14.1f} "
              f"{r['queries']:>12.0f} {r['queries_max']:>8} {r['multi_ms']:>12.1f} {r['multi_queries']:>12}")
    growth = rows[-1]["queries_max"] - rows[0]["queries_max"]
    print(f"   SQL statements per request {'do not grow' if growth <= 0 else f'GROW by {growth}'} with the "
          f"number of providers (a multi-create claims all its instances in one transaction)", flush=True)
    print(f"   where the time goes at {rows[-1]['providers']} hosts (ms per single-instance request):")
    for phase in phases:
        print(f"   {phase['ms']:>8.2f}  {phase['step']}")
    return {"rows": rows, "requests": REQUESTS, "multi": MULTI, "phases": phases, "phases_hosts": rows[-1]["providers"],
            "method": "select_destinations() called in-process (RequestContext.system()), compute nodes bulk-"
                      "inserted half in cell1 and half in cell2, placement inventories VCPU/MEMORY_MB/DISK_GB"}
