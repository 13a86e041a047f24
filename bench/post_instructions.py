"""A deterministic count of ``POST /servers`` in the web process (issue 23 item 2), for a shared,
noisy machine: instructions of ``N`` boots through the API (DRF test client), one server each,
``networks: none``, as the live_load scenario's clients send them. Tasks are not run here: the
cast to the conductor is published to kombu's in-memory transport (Celery's message building and
kombu's publish are counted, the Redis socket round trip is not), so what is counted is the web's
share of a boot. The request bodies are made before counting: the test helper's look-up of the
flavor by name (an ORM query built for every call, 1.75M instructions, a fifth of what was counted
before post4) is the client's work, not the web's. Counted by callgrind, which is switched on only
around the requests::

    N=20 valgrind --tool=callgrind --instr-atstart=no \\
        --callgrind-out-file=/tmp/cg.out.%p .venv/bin/python -m bench.post_instructions

then read the dump's total (``grep ^totals /tmp/cg.out.*.1``, for ``N`` requests). Without
valgrind (``PROFILE=1``) it prints a cProfile of the requests instead (``SORT=cumulative`` to
sort by cumulative time)."""
from __future__ import annotations

import os
from typing import Any


def main() -> None:
    requests = int(os.environ.get("N", "20"))
    from .env import one_host_cloud, profile_or_count

    # the casts go to an in-memory broker and stay there: the conductor's side is not counted
    with one_host_cloud() as (cloud, client):
        from servers.models import Flavor

        flavor = Flavor.objects.get(name="m1.tiny").flavorid
        serial = iter(range(10**6))

        def bodies(count: int) -> list[dict[str, Any]]:
            # the bodies the live_load clients send
            return [{"server": {"name": f"post-{next(serial):05d}", "flavorRef": flavor, "imageRef": cloud.image_id,
                                "networks": "none"}} for _ in range(count)]

        def run(requests: list[dict[str, Any]]) -> None:
            for body in requests:
                response = cloud.post(client, "servers", body, version="2.90")
                assert response.status_code == 202, response.content

        run(bodies(5))  # warm: caches filled, the broker's connection and the token remembered
        counted = bodies(requests)
        profile_or_count("posts", lambda: run(counted))


if __name__ == "__main__":
    main()
