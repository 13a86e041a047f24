"""Demo block storage: the default volume type and the volume worker (queue ``volume``)."""
from __future__ import annotations

import sys
from collections.abc import Callable

from cloudcore.core.demo import QUIET_WORKER, DemoProcess

from .backends import get_backend
from .types import default_volume_type


def setup(out: Callable[[str], None]) -> None:
    vt = default_volume_type()
    out(f"volume type {vt.name}; volume pool {get_backend().pool_dir}")


def processes(env: dict[str, str]) -> list[DemoProcess]:
    """The volume worker (create, delete, extend, reimage against the storage pool)."""
    return [DemoProcess("volume", [sys.executable, "-m", "celery", "-A", "cloudcore", "worker", "-Q", "volume",
                                   "-n", "volume@%h", "--pool", "solo", "--loglevel", "WARNING", *QUIET_WORKER],
                        queues=["volume"])]
