"""A deterministic count of ``POST /servers`` in the web process (issue 23 item 2), for a shared,
noisy machine: instructions of ``N`` boots through the API (DRF test client), one server each,
``networks: none``, as the live_load scenario's clients send them. Tasks are not run here: the
cast to the conductor is published to kombu's in-memory transport (Celery's message building and
kombu's publish are counted, the Redis socket round trip is not), so what is counted is the web's
share of a boot. Counted by callgrind, which is switched on only around the requests::

    N=20 valgrind --tool=callgrind --instr-atstart=no \\
        --callgrind-out-file=/tmp/cg.out.%p .venv/bin/python -m bench.post_instructions

then read the dump's total (``grep ^totals /tmp/cg.out.*.1``, for ``N`` requests). Without
valgrind (``PROFILE=1``) it prints a cProfile of the requests instead (``SORT=cumulative`` to
sort by cumulative time)."""
from __future__ import annotations

import os


def main() -> None:
    requests = int(os.environ.get("N", "20"))
    from .env import one_host_cloud, profile_or_count

    # the casts go to an in-memory broker and stay there: the conductor's side is not counted
    with one_host_cloud() as (cloud, client):
        serial = iter(range(10**6))

        def run(count: int) -> None:
            for _ in range(count):
                cloud.create_server(client, f"post-{next(serial):05d}", networks="none")

        run(5)  # warm: caches filled, the broker's connection and the token remembered
        profile_or_count("posts", lambda: run(requests))


if __name__ == "__main__":
    main()
