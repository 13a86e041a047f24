"""Boot and list: boot N servers through the compute API on H simulated hosts (libvirt test driver,
two cells) with the whole build inline (eager tasks), then list them. Reports servers/s, SQL
statements per boot and per list page, and list latency; statements per boot and per page must not
grow with N."""
from __future__ import annotations

import statistics
import time
from typing import Any

DESCRIPTION = "boot N servers on H hosts in 2 cells through the API, list them (servers/s, SQL per boot/page)"
SIZES = (50, 200)
QUICK_SIZES = (10, 30)
HOSTS, QUICK_HOSTS = 16, 4
PAGE = 50


def _boot(cloud: Any, client: Any, name: str) -> tuple[float, int, str]:
    from bench.env import count_queries

    started = time.perf_counter()
    with count_queries() as counter:
        server = cloud.create_server(client, name, networks="none")
    return time.perf_counter() - started, counter.total, server["id"]


def _list(cloud: Any, client: Any, path: str) -> tuple[float, int, int]:
    from bench.env import count_queries

    started = time.perf_counter()
    with count_queries() as counter:
        response = cloud.get(client, path, version="2.90")
    assert response.status_code == 200, response.content[:500]
    return time.perf_counter() - started, counter.total, len(response.json()["servers"])


def _boot_steps(cloud: Any, client: Any, name: str) -> dict[str, int]:
    """The statements of one boot by the step that issued them (``bench.env.sql_by_step``), most
    first ("other": the test helper's flavor lookup)."""
    from bench.env import sql_by_step

    with sql_by_step() as steps:
        cloud.create_server(client, name, networks="none")
    return dict(sorted(steps.items(), key=lambda item: (-item[1], item[0])))


def run(env: Any) -> dict[str, Any]:
    from django.conf import settings

    from tests.cloud import Cloud

    settings.QUOTA_INSTANCES = settings.QUOTA_CORES = settings.QUOTA_RAM = -1
    settings.NOTIFICATIONS_KEEP = 0
    cloud = Cloud(cells=env.cells)
    hosts = QUICK_HOSTS if env.quick else HOSTS
    for i in range(hosts):
        cloud.add_host(f"bench-host-{i:03d}", cell="cell1" if i % 2 == 0 else "cell2", zone=None, vcpus=4096,
                       memory_mb=4 * 1024 * 1024, disk_gb=100000)
    cloud.add_demo_objects()
    client = cloud.member("bench", "bench")
    rows = []
    booted = 0
    boot_seconds = 0.0
    all_times: list[float] = []
    all_queries: list[int] = []
    try:
        for target in QUICK_SIZES if env.quick else SIZES:
            times, queries = [], []
            started = time.perf_counter()
            while booted < target:
                seconds, statements, last_id = _boot(cloud, client, f"bench-{booted:05d}")
                times.append(seconds)
                queries.append(statements)
                booted += 1
            elapsed = time.perf_counter() - started
            cloud.wait_for_status(client, last_id, "ACTIVE")  # the build ran inside the POST
            boot_seconds += elapsed
            all_times += times
            all_queries += queries
            page_s, page_q, page_n = _list(cloud, client, f"servers/detail?limit={PAGE}")
            brief_s, brief_q, _ = _list(cloud, client, f"servers?limit={PAGE}")
            rows.append({
                "servers": target, "boot_per_s": len(times) / elapsed if elapsed else 0.0,
                "boot_q": statistics.median(queries), "page_q": page_q, "page_ms": page_s * 1000,
                "page_n": page_n, "brief_q": brief_q, "brief_ms": brief_s * 1000,
            })
        sql_steps = _boot_steps(cloud, client, f"bench-{booted:05d}")
        booted += 1
    finally:
        cloud.teardown()
    print(f"   {hosts} hosts in 2 cells; list pages of {PAGE}")
    print(f"   {'servers':>8} {'boots/s':>8} {'SQL/boot':>9} {'detail ms':>10} {'SQL/page':>9} "
          f"{'brief ms':>9} {'SQL/brief':>10}")
    for r in rows:
        print(f"   {r['servers']:>8} {r['boot_per_s']:>8.1f} {r['boot_q']:>9.0f} {r['page_ms']:>10.1f} "
              f"{r['page_q']:>9} {r['brief_ms']:>9.1f} {r['brief_q']:>10}")
    boot_growth = rows[-1]["boot_q"] - rows[0]["boot_q"]
    page_growth = rows[-1]["page_q"] - rows[0]["page_q"]
    print(f"   SQL per boot {'does not grow' if boot_growth <= 0 else f'GROWS by {boot_growth}'}, "
          f"SQL per detail page {'does not grow' if page_growth <= 0 else f'GROWS by {page_growth}'} with N")
    print("   SQL of one more boot by step: " + ", ".join(f"{step} {n}" for step, n in sql_steps.items()))
    return {
        "hosts": hosts, "cells": 2, "page": PAGE, "rows": rows, "boots": booted,
        "boot_per_s": booted / boot_seconds if boot_seconds else 0.0,
        "boot_ms_median": statistics.median(all_times) * 1000, "sql_per_boot": statistics.median(all_queries),
        "sql_per_boot_by_step": sql_steps,
        "method": "POST /servers through the API (DRF test client), build inline with eager tasks, libvirt "
                  "test:///default driver, networks=none, one server per request, sequential",
    }
