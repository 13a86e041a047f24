"""A deterministic count of full ``GET /servers/detail`` pages (issue 23 item 3), for a shared,
noisy machine: instructions of ``N`` requests at each of 2.90 (the list_scale scenario's "detail"
column), 2.1 and the latest microversion, a page of 1,000 servers (of ``SIZE`` in two cells, as in
the list_scale scenario: the copies with their request specs, whose zone, group and hints a page
reads from 2.96 on, from the spec rows' own columns of them),
counted by callgrind, which is switched on only around the requests::

    SIZE=1000 N=3 valgrind --tool=callgrind --instr-atstart=no \\
        --callgrind-out-file=/tmp/cg.out.%p .venv/bin/python -m bench.list_instructions

then read each microversion's total (``grep -H '^desc: Trigger\\|^totals' /tmp/cg.out.*.[0-9]*``: one
dump of ``N`` requests per microversion, numbered in the order asked), the set-up's heap frozen first
as the served web's is. ``VERSIONS=latest`` counts one microversion only. Without valgrind
(``PROFILE=1``) it prints a cProfile of the requests at the latest microversion instead.

Measured (list6, SIZE=1000 N=3): the latest microversion's page 334.6M -> 306.5M instructions (-8.4%)
once the zone, group and hints were read from the request spec rows' own columns instead of out of
each spec by SQLite's ``json_extract`` (which parsed the whole spec, flavor and image, of every row);
2.90 and 2.1, which read no spec, unchanged (281.0M, 259.4M a page)."""
from __future__ import annotations

import cProfile
import os
import pstats

#: The microversions asked: list_scale's full page is asked at 2.90, and at 2.1 and latest.
VERSIONS = ("2.90", "2.1", "latest")


def main() -> None:
    from .env import BenchEnv, callgrind_dump, served_heap

    size = int(os.environ.get("SIZE", "1000"))
    requests = int(os.environ.get("N", "5"))
    # under callgrind the set-up takes minutes: the hosts' heartbeats must not age out meanwhile
    # (the servers would land in cell0, the hosts' status would read DOWN)
    os.environ.setdefault("CLOUDCORE_SERVICE_DOWN_TIME", "86400")
    env = BenchEnv.create(quick=False)
    try:
        env.fresh()
        from .scenarios import list_scale

        cloud, client = list_scale.make_cloud(env)
        booted = 20
        for i in range(booted):
            list_scale._enable_only(cloud, "cell1" if i < booted // 2 else "cell2")
            cloud.create_server(client, f"list-{i:05d}", networks="none")
        missing = size - booted
        list_scale.insert_copies(cloud, "cell1", missing // 2, serial=booted)
        list_scale.insert_copies(cloud, "cell2", missing - missing // 2, serial=booted + missing // 2)

        def run(version: str | None, count: int) -> None:
            for _ in range(count):
                response = cloud.get(client, "servers/detail", version=version)
                assert response.status_code == 200, response.content[:300]

        versions = os.environ.get("VERSIONS", ",".join(VERSIONS)).split(",")
        for version in versions:
            run(version, 2)  # warm: caches filled
        if os.environ.get("PROFILE"):
            profile = cProfile.Profile()
            profile.enable()
            run("latest", requests)
            profile.disable()
            pstats.Stats(profile).sort_stats(os.environ.get("SORT", "tottime")).print_stats(45)
            return

        # the set-up's heap frozen as the served web's is (list_scale's served_heap): a full collection
        # would walk the thousands of rows inserted, in whichever microversion's requests it falls
        with served_heap():
            for version in versions:  # one dump per microversion, in the order asked
                callgrind_dump(f"detail-{version}", lambda version=version: run(version, requests))
        cloud.teardown()
    finally:
        env.close()


if __name__ == "__main__":
    main()
