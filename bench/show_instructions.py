"""A deterministic count of the status poll (issue 23 item 2), the request a web process serves most
while boots run (the live_load scenario's clients poll ``GET /servers/{id}`` every half second until
ACTIVE, about 5 polls per boot), for a shared, noisy machine: instructions of ``N`` polls of a server
being built (placed in its cell by the conductor, its build not yet run on the host) and then ``N``
of an ACTIVE one, at 2.90 as the live clients ask. ``N`` servers are accepted through the API
(``networks: none``) and their conductor tasks run here by hand; each is polled once while its
build waits for the host, then the host's builds are run and each is polled once more, ACTIVE: every
poll reads another server, as the clients' do. Counted by callgrind, which is switched on only around the polls::

    N=20 valgrind --tool=callgrind --instr-atstart=no \\
        --callgrind-out-file=/tmp/cg.out.%p .venv/bin/python -m bench.show_instructions

then read each dump's total (``grep -H '^desc: Trigger\\|^totals' /tmp/cg.out.*.[0-9]*``: dump 1 the
``N`` polls of servers being built, dump 2 the ``N`` polls of ACTIVE servers). Without valgrind
(``PROFILE=1``) it prints a cProfile of both sets of polls instead (``SORT=cumulative`` to sort by
cumulative time)."""
from __future__ import annotations

import os
from typing import Any

#: the microversion the live_load scenario's clients send (``OpenStack-API-Version: compute 2.90``)
VERSION = "2.90"


def main() -> None:
    polls = int(os.environ.get("N", "20"))
    from .env import one_host_cloud, profile_or_count

    # the casts go to an in-memory broker and stay there: the conductor's and the host's tasks are
    # run here, by hand, outside the counted polls
    with one_host_cloud() as (cloud, client):
        from compute import rpc as compute_rpc
        from compute.tasks import build_and_run_instance_task
        from conductor import rpc
        from conductor.tasks import schedule_and_build_instances_task

        builds: list[dict[str, Any]] = []
        hosts: dict[str, dict[str, Any]] = {}
        cast, host_cast = rpc.schedule_and_build_instances, compute_rpc.build_and_run_instance

        def recorded(**kwargs: Any) -> None:  # the task's arguments, as the worker gets them
            builds.append({**kwargs, "ctx": kwargs["ctx"].to_dict()})
            cast(**kwargs)

        def host_recorded(**kwargs: Any) -> None:
            hosts[kwargs["instance_uuid"]] = {key: value for key, value in kwargs.items() if key != "host"} | {
                "ctx": kwargs["ctx"].to_dict()}
            host_cast(**kwargs)

        rpc.schedule_and_build_instances, compute_rpc.build_and_run_instance = recorded, host_recorded
        try:
            servers = [cloud.create_server(client, f"show-{i:05d}", networks="none")["id"] for i in range(5 + polls)]
            for kwargs in builds:
                schedule_and_build_instances_task.run(**kwargs)
        finally:
            rpc.schedule_and_build_instances, compute_rpc.build_and_run_instance = cast, host_cast

        def poll(ids: list[str], status: str) -> None:
            for server_id in ids:
                response = cloud.get(client, f"servers/{server_id}", version=VERSION)
                assert response.status_code == 200, response.content[:300]
                assert response.json()["server"]["status"] == status, response.json()["server"]["status"]

        poll(servers[:5], "BUILD")  # warm: caches filled, the token remembered
        profile_or_count("polls of servers being built", lambda: poll(servers[5:], "BUILD"))
        for server_id in servers:
            build_and_run_instance_task.run(**hosts[server_id])
        poll(servers[:5], "ACTIVE")
        profile_or_count("polls of ACTIVE servers", lambda: poll(servers[5:], "ACTIVE"))


if __name__ == "__main__":
    main()
