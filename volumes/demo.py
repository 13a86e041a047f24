"""Demo block storage: the default volume type, a ``multiattach`` type (Cinder's capability extra
spec, as devstack makes it for Tempest's ``[volume] volume_type_multiattach``) and the volume
worker (queue ``volume``)."""
from __future__ import annotations

import sys
from collections.abc import Callable

from cloudcore.core.demo import QUIET_WORKER, DemoProcess

from .backends import get_backend
from .models import VolumeType
from .types import default_volume_type

#: the demo's type whose volumes can be attached to several servers at once
MULTIATTACH_TYPE = "multiattach"


def setup(out: Callable[[str], None]) -> None:
    vt = default_volume_type()
    multiattach, _ = VolumeType.objects.get_or_create(
        name=MULTIATTACH_TYPE, defaults={"description": "Volumes attachable to several servers at once",
                                         "extra_specs": {"multiattach": "<is> True"}})
    out(f"volume types {vt.name}, {multiattach.name}; volume pool {get_backend().pool_dir}")


def processes(env: dict[str, str]) -> list[DemoProcess]:
    """The volume worker (create, delete, extend, reimage against the storage pool)."""
    return [DemoProcess("volume", [sys.executable, "-m", "celery", "-A", "cloudcore", "worker", "-Q", "volume",
                                   "-n", "volume@%h", "--pool", "solo", "--loglevel", "WARNING", *QUIET_WORKER],
                        queues=["volume"])]
