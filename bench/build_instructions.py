"""A deterministic count of the conductor's share of a boot (issue 23 item 2), for a shared, noisy
machine: instructions of ``N`` runs of ``schedule_and_build_instances_task`` (the conductor's task
for one ``POST /servers``: the build request read, scheduling and the placement claim, the instance
made in its cell, the cast to the compute host), as ``bench.post_instructions`` counts the web's
share. The servers are accepted first through the API (``networks: none``, one each), their casts
to the conductor recorded; the compute hosts' casts go to kombu's in-memory transport and are not
run. Counted by callgrind, which is switched on only around the tasks::

    N=20 valgrind --tool=callgrind --instr-atstart=no \\
        --callgrind-out-file=/tmp/cg.out.%p .venv/bin/python -m bench.build_instructions

then read the dump's total (``grep ^totals /tmp/cg.out.*.1``, for ``N`` builds). Without
valgrind (``PROFILE=1``) it prints a cProfile of the tasks instead (``SORT=cumulative`` to sort
by cumulative time)."""
from __future__ import annotations

import os
from typing import Any


def main() -> None:
    builds = int(os.environ.get("N", "20"))
    from .env import one_host_cloud, profile_or_count, recorded_casts

    # the casts go to an in-memory broker and stay there: each task is run here, by hand
    with one_host_cloud() as (cloud, client):
        from conductor import rpc
        from conductor.tasks import schedule_and_build_instances_task

        def accept() -> None:
            for i in range(5 + builds):
                cloud.create_server(client, f"build-{i:05d}", networks="none")

        casts = recorded_casts(rpc, "schedule_and_build_instances", accept)

        def run(tasks: list[dict[str, Any]]) -> None:
            for kwargs in tasks:
                schedule_and_build_instances_task.run(**kwargs)

        run(casts[:5])  # warm: caches filled, the statements prepared, the broker's connection up
        profile_or_count("builds", lambda: run(casts[5:]))


if __name__ == "__main__":
    main()
