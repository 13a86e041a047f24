"""compute.rpc: one typed function per registered compute operation, sent to the host's queue."""
from __future__ import annotations

import inspect
from types import SimpleNamespace
from typing import Any

import pytest

from compute import registry, rpc
from compute.drivers import register_driver, unregister_driver


def test_every_registered_operation_has_its_rpc_function_and_nothing_else_is_dispatched_by_name() -> None:
    # given the registry filled by ComputeConfig.ready()
    names = registry.names()
    # then each operation has a keyword-only function of the same name in compute.rpc
    assert names, "the registry is empty: ComputeConfig.ready() did not fill it"
    for name in names:
        fn = getattr(rpc, name)
        params = inspect.signature(fn).parameters.values()
        assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params), name
        assert {"ctx", "host", "instance_uuid", "cell_uuid"} <= {p.name for p in params}, name


def test_an_unknown_operation_is_refused() -> None:
    with pytest.raises(registry.UnknownOperation):
        registry.runner_for("no_such_operation")


def test_queue_for_names_the_host_queue_and_refuses_no_host() -> None:
    assert rpc.queue_for("compute7") == "compute.compute7"
    with pytest.raises(ValueError):
        rpc.queue_for(None)


def test_destroy_guest_reaches_the_hosts_driver() -> None:
    # given a driver registered for host h1 in this (eager) process
    destroyed: list[tuple[Any, bool]] = []
    driver = SimpleNamespace(destroy=lambda *, instance, destroy_disks: destroyed.append((instance.uuid,
                                                                                            destroy_disks)))
    register_driver("h1", driver)
    try:
        # when the guest of a server whose rows are gone is destroyed through the RPC
        rpc.destroy_guest(host="h1", instance_uuid="u-1")
    finally:
        unregister_driver("h1")
    # then the host's driver destroyed it with its disks
    assert destroyed == [("u-1", True)]
