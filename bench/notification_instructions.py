"""A deterministic count of the conductor's share of a boot's notifications (issue 23 item 2): the
six a compute host emits for one build (``instance.create.start``, four ``instance.update``,
``instance.create.end``), kept by the conductor's task (their records in the API database) and
published on the ``notifications`` exchange (kombu's in-memory transport: the Redis round trip is
not counted). The builds are run first, as in ``bench.compute_instructions`` (the host's driver on
libvirt's test driver, the task run as the cell's compute agent), and what each hands to the
conductor recorded; then the conductor's task bodies are counted (not Celery's receipt of each
message in a worker, which comes on top per task). ``MODE=together`` (the default): two
``record_notifications_task`` per build, as the hosts send them (the four before the spawn, the
last two after it); ``MODE=one``: six
``record_notification_task``, one per notification, as they were sent before. Counted by callgrind,
switched on only around the conductor's tasks::

    N=20 MODE=together valgrind --tool=callgrind --instr-atstart=no \\
        --callgrind-out-file=/tmp/cg.out.%p .venv/bin/python -m bench.notification_instructions

then read the dump's total (``grep ^totals /tmp/cg.out.*.1``, for ``N - 5`` builds: five warm the
process first). Without valgrind (``PROFILE=1``) it prints a cProfile instead."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from .compute_instructions import _removed, libvirt_test_driver, placed_builds


def main() -> None:
    builds = int(os.environ.get("N", "20"))
    together = os.environ.get("MODE", "together") != "one"
    from .env import one_host_cloud, profile_or_count

    state = Path(tempfile.mkdtemp(prefix="cloudcore-bench-notifications-"))

    with one_host_cloud(driver_factory=libvirt_test_driver(state)) as (cloud, client), _removed(state):
        from compute.tasks import build_and_run_instance_task, serve_cell
        from conductor import rpc
        from conductor.tasks import record_notification_task, record_notifications_task

        casts = placed_builds(cloud, client, builds, "notified")
        serve_cell(cloud.cells["cell1"])
        handed: list[list[dict[str, Any]]] = []
        cast = rpc.record_notifications
        rpc.record_notifications = lambda *, messages: handed.append(list(messages))  # kept below
        try:
            for kwargs in casts:
                build_and_run_instance_task.run(**kwargs)
        finally:
            rpc.record_notifications = cast
        assert [len(messages) for messages in handed] == [4, 2] * builds, "six notifications per build, in two casts"

        def keep(batches: list[list[dict[str, Any]]]) -> None:
            for messages in batches:
                if together:
                    record_notifications_task.run(messages=messages)
                else:
                    for message in messages:
                        record_notification_task.run(message=message)

        keep(handed[:10])  # warm (five builds): the statement prepared, the broker's connection up
        profile_or_count("conductor notification records", lambda: keep(handed[10:]))


if __name__ == "__main__":
    main()
