"""Demo objects of the servers app (DESIGN.md section 9): the four m1 flavors (idempotent)."""
from __future__ import annotations

from collections.abc import Callable

from cloudcore.core.demo import QUIET_WORKER, DemoProcess, threads_connections

from .models import Flavor

#: flavorid, name, vCPUs, RAM (MiB), root disk (GiB)
DEMO_FLAVORS = (
    ("1", "m1.tiny", 1, 512, 1),
    ("2", "m1.small", 1, 2048, 20),
    ("3", "m1.medium", 2, 4096, 40),
    ("4", "m1.large", 4, 8192, 80),
)


def setup(out: Callable[[str], None]) -> None:
    for flavorid, name, vcpus, ram, disk in DEMO_FLAVORS:
        _, created = Flavor.objects.update_or_create(
            flavorid=flavorid, defaults={"name": name, "vcpus": vcpus, "memory_mb": ram, "root_gb": disk},
        )
        if created:
            out(f"servers: created flavor {name}")


def processes(env: dict[str, str]) -> list:
    """The conductor worker (build orchestration, DESIGN.md section 1). A thread pool: a
    cross-cell move holds its thread while it waits for a compute host's answer (up to
    ``LONG_RPC_TIMEOUT``), and the other threads go on with builds, moves and beat's work.
    Beat, and the two console proxies (``manage.py console_proxy``: VNC and serial).

    The workers run without gossip, mingle and worker heartbeats (nothing here reads them; they
    are broker round trips every few seconds), and the conductor's threads keep their database
    connections between tasks (``CLOUDCORE_DB_CONN_MAX_AGE``, as the web process's do): see
    docs/processes.md."""
    import sys

    from django.conf import settings


    beat_schedule = str(settings.VAR_DIR / "celerybeat-schedule")
    return [
        DemoProcess("conductor", [sys.executable, "-m", "celery", "-A", "cloudcore", "worker", "-Q", "conductor",
                                  "-n", "conductor@%h", "--pool", "threads",
                                  "--concurrency", str(settings.CONDUCTOR_CONCURRENCY), "--loglevel", "WARNING",
                                  *QUIET_WORKER],
                    env={"CLOUDCORE_DB_CONN_MAX_AGE": env.get("CLOUDCORE_DB_CONN_MAX_AGE", "300")},
                    queues=["conductor"],
                    connections=lambda cells: threads_connections(settings.CONDUCTOR_CONCURRENCY, cells)),
        DemoProcess("beat", [sys.executable, "-m", "celery", "-A", "cloudcore", "beat", "--loglevel", "WARNING",
                             "--schedule", beat_schedule]),
        DemoProcess("novncproxy", [sys.executable, "manage.py", "console_proxy", "--kind", "novnc"]),
        DemoProcess("serialproxy", [sys.executable, "manage.py", "console_proxy", "--kind", "serial"]),
    ]
