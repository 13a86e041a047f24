"""Which virt driver serves which host in this process.

A compute worker registers its driver at start-up (``register_driver(host, driver)``); compute
tasks find it with ``driver_for(host)``. In-process functional tests register one libvirt
test-driver per simulated host the same way.
"""
from __future__ import annotations

import threading
from typing import Any

from cloudcore.core.exceptions import CloudcoreError

_lock = threading.Lock()
_drivers: dict[str, Any] = {}


class NoDriverForHost(CloudcoreError):
    message = "No virt driver is running for host %(host)s in this process."


def register_driver(host: str, driver: Any) -> None:
    with _lock:
        _drivers[host] = driver


def unregister_driver(host: str) -> None:
    with _lock:
        _drivers.pop(host, None)


def driver_for(host: str) -> Any:
    try:
        return _drivers[host]
    except KeyError:
        raise NoDriverForHost(host=host) from None


def registered_hosts() -> list[str]:
    return sorted(_drivers)
