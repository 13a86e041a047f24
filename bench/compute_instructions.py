"""A deterministic count of the compute host's share of a boot (issue 23 item 2), for a shared,
noisy machine: instructions of ``N`` runs of ``build_and_run_instance_task`` (the compute host's
task for one server: the instance read, the build's event, the task states, the guest spawned,
the server ACTIVE and the event finished), as ``bench.post_instructions`` counts the web's share
and ``bench.build_instructions`` the conductor's. The servers are accepted first through the API
(``networks: none``, one each) and the conductor's task run by hand for each, its casts to the
compute host recorded. The host's driver is the live cloud's: ``compute.virt.libvirt.LibvirtDriver``
on libvirt's test driver (``test:///default``), the task run as the cell's compute agent (as an
isolated ``manage.py compute`` worker runs it), so what the host hands back is counted with it: its
notifications cast to the conductor (the six of a build in two casts: the four before the spawn, the
last two after it) on kombu's in-memory transport (the Redis socket round trip is not counted), the
instance's updates and the action's event in the cell database (the conductor's share of those
notifications: ``bench.notification_instructions``).
Counted by callgrind, which is switched on only around the compute tasks::

    N=20 valgrind --tool=callgrind --instr-atstart=no \\
        --callgrind-out-file=/tmp/cg.out.%p .venv/bin/python -m bench.compute_instructions

then read the dump's total (``grep ^totals /tmp/cg.out.*.1``, for ``N`` builds); one more build,
not counted, prints its SQL statements by database (each a PostgreSQL round trip, plus the health
check of each database a task uses). Without
valgrind (``PROFILE=1``) it prints a cProfile of the tasks instead (``SORT=cumulative`` to sort
by cumulative time)."""
from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any


@contextlib.contextmanager
def _removed(path: Path) -> Iterator[None]:
    try:
        yield
    finally:
        shutil.rmtree(path, ignore_errors=True)


def libvirt_test_driver(state: Path) -> Any:
    """The live cloud's driver on libvirt's test driver, its hosts' files under ``state``."""
    def driver(host: str) -> Any:
        from compute.virt.libvirt import LibvirtDriver

        return LibvirtDriver(host=host, uri="test:///default", state_path=state / host)
    return driver


def placed_builds(cloud: Any, client: Any, count: int, prefix: str) -> list[dict[str, Any]]:
    """``count`` servers accepted through the API (``networks: none``) and placed by the
    conductor's task: its casts to the compute host, as the host's worker gets them."""
    import compute.rpc
    from conductor import rpc
    from conductor.tasks import schedule_and_build_instances_task

    from .env import recorded_casts

    def accept() -> None:
        for i in range(count):
            cloud.create_server(client, f"{prefix}-{i:05d}", networks="none")

    def place() -> None:
        for kwargs in accepted:
            schedule_and_build_instances_task.run(**kwargs)

    accepted = recorded_casts(rpc, "schedule_and_build_instances", accept)
    # as the host's worker gets them (the host only chose its queue)
    casts = recorded_casts(compute.rpc, "build_and_run_instance", place, drop=("host",))
    assert len(casts) == len(accepted), "every server is cast to the host"
    return casts


def main() -> None:
    builds = int(os.environ.get("N", "20"))
    from .env import capture_queries, one_host_cloud, profile_or_count

    state = Path(tempfile.mkdtemp(prefix="cloudcore-bench-compute-"))

    with one_host_cloud(driver_factory=libvirt_test_driver(state)) as (cloud, client), _removed(state):
        from compute.tasks import build_and_run_instance_task, serve_cell

        casts = placed_builds(cloud, client, 5 + builds + 1, "compute")
        serve_cell(cloud.cells["cell1"])  # as ``manage.py compute`` does at start-up for its host's cell

        def run(tasks: list[dict[str, Any]]) -> None:
            for kwargs in tasks:
                build_and_run_instance_task.run(**kwargs)

        run(casts[:5])  # warm: caches filled, the statements prepared, the broker's connection up
        profile_or_count("compute builds", lambda: run(casts[5:-1]))
        with capture_queries() as statements:  # one more, not counted: its statements by database
            run(casts[-1:])
        print(f"   statements of one build by database: {statements.by_alias}", flush=True)
        from cells.context import target_cell
        from servers.models import Instance

        with target_cell(cloud.cells["cell1"]):
            states = set(Instance.objects.values_list("vm_state", flat=True))
        assert states == {"active"}, f"every server built: {states}"


if __name__ == "__main__":
    main()
