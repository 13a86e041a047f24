"""A deterministic count of everything the conductor does per boot (issue 23 item 2), for a shared,
noisy machine: ``bench.build_instructions`` counts its build task alone; a boot also sends it every
notification the compute host emits while it builds (``conductor.record_notification``, one task
each: instance.create.start, the three task-state updates, the ACTIVE update and
instance.create.end). Here ``N`` servers are accepted through the API (``networks: none``, one
each), the conductor's build task run for each, then the compute host's build (the tests'
``TestVirtDriver``, run as the cell's compute agent), every cast it sends to the conductor
recorded. Those conductor tasks are then run as the conductor's worker runs them: through Celery's
tracer (``celery.app.trace.build_tracer``, not eager: the task's signals and our pre/post-run
connection handling included; the broker's message decoding and ack are not), with the conductor's
``CLOUDCORE_DB_CONN_MAX_AGE`` (300, its threads keep their connections). Each kind of task is
counted in a dump of its own by callgrind, which is switched on only around them::

    N=20 valgrind --tool=callgrind --instr-atstart=no \\
        --callgrind-out-file=/tmp/cg.out.%p .venv/bin/python -m bench.conductor_instructions

then read each dump's total (``grep ^totals /tmp/cg.out.*.[12]``: ``.1`` the ``N`` builds, ``.2``
the notification tasks of ``N`` boots); it prints how many tasks of each kind a boot sends. Without
valgrind (``PROFILE=1``) it prints a cProfile of each instead (``SORT=cumulative`` to sort by
cumulative time)."""
from __future__ import annotations

import os
import uuid
from collections import Counter
from typing import Any


def main() -> None:
    builds = int(os.environ.get("N", "20"))
    os.environ.setdefault("CLOUDCORE_DB_CONN_MAX_AGE", "300")  # as run_cloud starts the conductor
    from .env import one_host_cloud, profile_or_count, recorded_casts

    with one_host_cloud() as (cloud, client):
        from celery import current_app
        from celery.app.trace import build_tracer

        import compute.rpc
        from compute.tasks import build_and_run_instance_task, serve_cell
        from conductor import rpc

        def accept() -> None:
            for i in range(5 + builds):
                cloud.create_server(client, f"conductor-{i:05d}", networks="none")

        accepted = recorded_casts(rpc, "schedule_and_build_instances", accept)

        def tracer_run(tasks: list[tuple[str, dict[str, Any]]]) -> None:
            for name, kwargs in tasks:
                task_id = str(uuid.uuid4())
                tracers[name](task_id, (), kwargs, {"id": task_id, "delivery_info": {"routing_key": rpc.QUEUE}})

        tracers = {name: build_tracer(name, current_app.tasks[name], app=current_app, eager=False)
                   for name in (rpc.SCHEDULE_AND_BUILD_INSTANCES, rpc.RECORD_NOTIFICATION)}
        builds_of = [(rpc.SCHEDULE_AND_BUILD_INSTANCES, kwargs) for kwargs in accepted]

        def place() -> None:
            tracer_run(builds_of[:5])  # warm: caches filled, the statements prepared
            profile_or_count("builds", lambda: tracer_run(builds_of[5:]))

        host_casts = recorded_casts(compute.rpc, "build_and_run_instance", place, drop=("host",))
        assert len(host_casts) == len(accepted), "every server is cast to the host"

        # every cast the compute host's builds send to the conductor, in order
        sent: list[tuple[str, dict[str, Any]]] = []
        send = rpc._send

        def recorded_send(task_name: str, **kwargs: Any) -> None:
            sent.append((task_name, kwargs))
            send(task_name, **kwargs)

        serve_cell(cloud.cells["cell1"])  # as ``manage.py compute`` does at start-up
        rpc._send = recorded_send
        try:
            for kwargs in host_casts:
                build_and_run_instance_task.run(**kwargs)
        finally:
            rpc._send = send
        kinds = Counter(name for name, _ in sent)
        print("   per boot, the compute host sends the conductor: "
              + ", ".join(f"{count / len(host_casts):g} x {name}" for name, count in kinds.items()), flush=True)
        assert set(kinds) == {rpc.RECORD_NOTIFICATION}, kinds
        per_boot = len(sent) // len(host_casts)
        tracer_run(sent[:5 * per_boot])  # warm
        profile_or_count("notifications", lambda: tracer_run(sent[5 * per_boot:]))


if __name__ == "__main__":
    main()
