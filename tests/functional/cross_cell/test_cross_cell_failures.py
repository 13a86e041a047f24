# ruff: noqa: F811 - the tests take the imported ``xcloud`` fixture by name
"""Cross-cell resize (seed 5): failures half-way through a step, and the rest of the seed's test
matrix (issue 17, items 8, 9 and 11).

Faults are injected into the real components: a virt driver's hook (``tests.cloud``) or one write
of a real database failing (``failing_write``: the statement is refused as a database refuses it,
once), never a mock of the workflow. Each failure test first proves the move got to the step
(what existed at the moment of the fault), then that nothing of it is left.
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.db import connections
from django.db.utils import OperationalError

from cells.context import target_cell
from cells.models import InstanceMapping
from networks.models import PortBinding
from scheduling.placement.services import provider_usages
from servers.models import BlockDeviceMapping, Instance, Migration
from tests.cloud import Cloud
from tests.functional.cross_cell.test_cross_cell_conductor import fault_messages, guest_id
from tests.functional.cross_cell.test_cross_cell_scenarios import (  # noqa: F401 - xcloud is a fixture
    assert_rolled_back,
    boot,
    in_cell,
    live_attachments,
    migration_uuid,
    node,
    providers,
    resize_onto_compute3_only,
    resize_to_cell2,
    rows,
    set_cell_enabled,
    xcloud,
)

# real autocommit, as the conductor runs in production: a refused statement breaks no enclosing
# transaction (inside a test transaction the ORM would mark it for rollback)
pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"], transaction=True)

WRITES = ("INSERT", "UPDATE", "DELETE")


@contextlib.contextmanager
def failing_write(alias: str, table: str, *, when: Callable[[str, tuple[Any, ...]], bool] = lambda s, p: True,
                  then: Callable[[], Any] = lambda: None) -> Iterator[dict[str, Any]]:
    """The first write to ``table`` in database ``alias`` that ``when(sql, params)`` matches fails
    (an ``OperationalError``, as a locked or lost database gives); ``then()`` runs at that moment
    and its answer is kept in ``["seen"]``; ``["failed"]`` counts the failures (0 or 1)."""
    state: dict[str, Any] = {"failed": 0, "seen": None}

    def wrapper(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if (not state["failed"] and sql.lstrip().upper().startswith(WRITES) and f'"{table}"' in sql
                and when(sql, tuple(params or ()))):
            state["failed"] = 1
            state["seen"] = then()
            raise OperationalError(f"injected failure writing {table}")
        return execute(sql, params, many, context)

    with connections[alias].execute_wrapper(wrapper):
        yield state


def names_a_context(sql: str, params: tuple[Any, ...]) -> bool:
    # a JSON parameter is a string on SQLite, an adapter holding the value (``adapted``) on PostgreSQL
    return '"migration_context"' in sql and any("cross_cell" in str(getattr(p, "adapted", p)) for p in params)


def dest_bindings(sid: str) -> list[tuple[str, str]]:
    return sorted(PortBinding.objects.filter(port__device_id=sid, host__in=["compute3", "compute4"])
                  .values_list("host", "status"))


# --- item 8: prep at destination failing half-way -------------------------------------------------


def test_prep_at_destination_failing_after_the_destination_claimed_leaves_nothing(xcloud: Cloud) -> None:
    from volumes.models import Volume

    # given a volume-backed server with two ports in cell1
    client = xcloud.member()
    server = boot(xcloud, client, volume_backed=True,
                  networks=[{"uuid": xcloud.network_id}, {"uuid": xcloud.network_id}])
    sid, source_host = server["id"], xcloud.instance(server["id"]).host
    with target_cell(xcloud.cells["cell1"]):
        root = BlockDeviceMapping.objects.get(instance_uuid=sid).volume_id
    before = guest_id(xcloud, sid)

    def what_exists() -> dict[str, Any]:
        with target_cell(xcloud.cells["cell2"]):
            claimed = Instance.all_objects.get(uuid=sid).migration_context
        return {"bindings": dest_bindings(sid), "attachments": len(live_attachments(root)), "claimed": claimed}

    # when the last write of the prep (the source copy's migration context, after the
    # destination host claimed its node) fails in the source cell's database
    with failing_write("cell1", "servers_instance", when=names_a_context, then=what_exists) as fault:
        resize_onto_compute3_only(xcloud, client, sid)
    # then the prep had got there: both ports bound inactive on compute3, a second (empty)
    # attachment for the volume, the destination's migration context in the target cell
    assert fault["failed"] == 1
    assert fault["seen"]["bindings"] == [("compute3", "INACTIVE"), ("compute3", "INACTIVE")]
    assert fault["seen"]["attachments"] == 2
    assert fault["seen"]["claimed"]["new_host"] == "compute3"
    # and nothing of it is left: no binding on compute3, the root volume attached to the source
    # only, no target rows, no migration context on the source, the allocations back
    assert_rolled_back(xcloud, client, sid, source_host, status="ACTIVE")
    assert [(a.attach_status, a.attached_host) for a in live_attachments(root)] == [("attached", source_host)]
    assert Volume.objects.get(pk=root).status == "in-use"
    assert any("injected failure writing servers_instance" in m for m in fault_messages(xcloud, sid))
    assert guest_id(xcloud, sid) == before  # the source guest was never touched


def test_failure_right_after_the_prep_undoes_the_prep(xcloud: Cloud) -> None:
    # given an image-backed server; the prep at the destination succeeds
    client = xcloud.member()
    server = boot(xcloud, client)
    sid, source_host = server["id"], xcloud.instance(server["id"]).host

    def source_context() -> Any:
        return Instance.all_objects.get(uuid=sid).migration_context  # cell1 is targeted by the writer

    # when the next write, the source server's task_state ``resize_migrating``, fails
    with failing_write("cell1", "servers_instance", when=lambda sql, p: "resize_migrating" in p,
                       then=source_context) as fault:
        resize_onto_compute3_only(xcloud, client, sid)
    # then it failed after the source had the mirrored migration context ...
    assert fault["failed"] == 1 and fault["seen"]["new_host"] == "compute3"
    # ... and the whole prep is undone: the context, the bindings, the target rows, allocations
    assert_rolled_back(xcloud, client, sid, source_host, status="ACTIVE")
    assert xcloud.domain(sid).isActive()


# --- item 9: finishing at the destination fails ---------------------------------------------------


def assert_destination_cleaned(cloud: Cloud, client: Any, sid: str, source_host: str) -> None:
    """ERROR in the source cell with the mapping there; no guest of the server on any host (they
    all share one test:/// connection); the target cell's rows, the destination's bindings and
    allocations gone."""
    assert_rolled_back(cloud, client, sid, source_host, status="ERROR")
    assert cloud.domain(sid) is None
    assert providers(sid) == {node(cloud, source_host)}
    assert nothing_used_in_cell2(cloud)


def nothing_used_in_cell2(cloud: Cloud) -> bool:
    return not any(any(provider_usages(rp=node(cloud, h)).values()) for h in ("compute3", "compute4"))


def spawned_on_destination(cloud: Cloud, sid: str) -> bool:
    return any(sid in cloud.driver(h).spawned for h in ("compute3", "compute4"))


def test_destination_driver_failing_after_its_spawn_destroys_the_guest(xcloud: Cloud) -> None:
    # given a stopped server (the destination spawns it, then powers it off) and destinations
    # whose power-off fails
    client = xcloud.member()
    server = boot(xcloud, client, stopped=True)
    sid, source_host = server["id"], xcloud.instance(server["id"]).host
    for host in ("compute3", "compute4"):
        xcloud.driver(host).fail_power_offs = 1
    # when resized into cell2
    resize_to_cell2(xcloud, client, sid, expect="ERROR")
    # then the guest had been spawned on the destination, and it is gone with everything else
    assert spawned_on_destination(xcloud, sid)
    assert "injected power off failure" in xcloud.show(client, sid)["fault"]["message"]
    assert_destination_cleaned(xcloud, client, sid, source_host)


def test_target_cell_write_failing_after_the_spawn_destroys_the_guest(xcloud: Cloud) -> None:
    client = xcloud.member()
    server = boot(xcloud, client)
    sid, source_host = server["id"], xcloud.instance(server["id"]).host
    # when the destination's last write (its migration ``finished``) fails in the target cell
    with failing_write("cell2", "servers_migration", when=lambda sql, p: "finished" in p,
                       then=lambda: xcloud.domain(sid) is not None) as fault:
        resize_to_cell2(xcloud, client, sid, expect="ERROR")
    # then there was a guest on the destination at that moment; now there is none, nor a target
    # row, a binding or an allocation of the destination, nor the temporary image
    assert fault == {"failed": 1, "seen": True}
    assert spawned_on_destination(xcloud, sid)
    assert_destination_cleaned(xcloud, client, sid, source_host)
    # and a hard reboot recovers the server in the source cell
    assert xcloud.action(client, sid, {"reboot": {"type": "HARD"}}).status_code == 202
    assert xcloud.show(client, sid)["status"] == "ACTIVE"
    assert xcloud.instance(sid).host == source_host


@pytest.mark.parametrize("alias, table, when", [
    ("default", "cells_instancemapping", lambda sql, p: True),  # the mapping to the target
    ("cell1", "servers_instance", lambda sql, p: '"hidden"' in sql and True in p),  # hiding the source
], ids=["mapping", "hide-source"])
def test_a_failed_flip_of_the_mapping_is_rolled_back(xcloud: Cloud, alias: str, table: str, when: Any) -> None:
    client = xcloud.member()
    server = boot(xcloud, client)
    sid, source_host = server["id"], xcloud.instance(server["id"]).host
    # when the flip to the target cell fails half-way
    with failing_write(alias, table, when=when,
                       then=lambda: (xcloud.domain(sid) is not None, rows(xcloud, "cell2", sid)["hidden"])
                       ) as fault:
        resize_to_cell2(xcloud, client, sid, expect="ERROR")
    # then the destination had finished (a guest, the target copy shown) when the flip failed
    assert fault == {"failed": 1, "seen": (True, [False])}
    # and the flip is undone: mapped to cell1, the source copy shown, the destination cleaned
    assert InstanceMapping.objects.get(instance_uuid=sid).cell.name == "cell1"
    assert_destination_cleaned(xcloud, client, sid, source_host)
    listed = xcloud.get(client, "servers/detail").json()["servers"]
    assert [s["id"] for s in listed] == [sid]


# --- item 11: the rest of the seed's matrix -------------------------------------------------------


def test_revert_when_the_source_cell_is_at_capacity(xcloud: Cloud) -> None:
    # given cell1's two hosts full once the server is on one of them (8192 MB each)
    client = xcloud.member()
    server = boot(xcloud, client)
    sid, source_host = server["id"], xcloud.instance(server["id"]).host
    xcloud.flavor("m1.filler", vcpus=1, ram=7680, disk=1)
    xcloud.flavor("m1.whole", vcpus=1, ram=8192, disk=1)
    for name, flavor in (("whole", "m1.whole"), ("filler", "m1.filler")):
        assert xcloud.show(client, xcloud.create_server(client, name, flavor=flavor)["id"])["status"] == "ACTIVE"
    for host in ("compute1", "compute2"):
        assert provider_usages(rp=node(xcloud, host))["MEMORY_MB"] == 8192
    # when the server is resized into cell2: the source's share stays held for a revert
    resize_to_cell2(xcloud, client, sid)
    assert provider_usages(rp=node(xcloud, source_host))["MEMORY_MB"] == 8192
    assert providers(migration_uuid(xcloud, sid)) == {node(xcloud, source_host)}
    # and a new server finds no room in cell1 (cell2 closed)
    set_cell_enabled(xcloud, "cell2", False)
    assert xcloud.show(client, xcloud.create_server(client, "late")["id"])["status"] == "ERROR"
    # when reverted
    assert xcloud.action(client, sid, {"revertResize": None}).status_code == 202
    # then it is back on its source host in the full cell, with its old flavor
    shown = xcloud.show(client, sid)
    assert shown["status"] == "ACTIVE" and shown["flavor"]["original_name"] == "m1.tiny"
    assert xcloud.cell_of(sid) == "cell1" and xcloud.instance(sid).host == source_host
    assert providers(sid) == {node(xcloud, source_host)}
    assert provider_usages(rp=node(xcloud, source_host))["MEMORY_MB"] == 8192
    assert nothing_used_in_cell2(xcloud)


def refreshed_usage(cloud: Cloud, *hosts: str) -> dict[str, dict[str, int]]:
    """os-hypervisors after each compute worker's periodic refresh of its node."""
    from compute.resource_tracker import update_usage
    from hosts.models import ComputeNode

    for host in hosts:
        with target_cell(cloud.cells[cloud.hosts[host]["cell"]]):
            update_usage(node=ComputeNode.objects.get(uuid=node(cloud, host)), driver=cloud.drivers[host])
    detail = cloud.get(cloud.admin(), "os-hypervisors/detail", version="2.87").json()["hypervisors"]
    fields = ("vcpus_used", "memory_mb_used", "local_gb_used", "running_vms")
    return {h["hypervisor_hostname"]: {f: h[f] for f in fields} for h in detail if h["hypervisor_hostname"] in hosts}


@pytest.mark.parametrize("finish", ["confirmResize", "revertResize"])
def test_hypervisor_usage_on_both_hosts_during_and_after_the_move(xcloud: Cloud, settings: Any,
                                                                  finish: str) -> None:
    reserved = settings.RESERVED_HOST_MEMORY_MB
    client = xcloud.member()
    server = boot(xcloud, client)  # m1.tiny: 1 vCPU, 512 MB, 1 GB
    sid, source_host = server["id"], xcloud.instance(server["id"]).host
    tiny = {"vcpus_used": 1, "memory_mb_used": 512 + reserved, "local_gb_used": 1, "running_vms": 1}
    bigger = {"vcpus_used": 2, "memory_mb_used": 1024 + reserved, "local_gb_used": 2}
    empty = {"vcpus_used": 0, "memory_mb_used": reserved, "local_gb_used": 0, "running_vms": 0}
    # when resized into cell2 (m1.bigger: 2 vCPUs, 1024 MB, 2 GB)
    resize_to_cell2(xcloud, client, sid)
    dest_host = xcloud.instance(sid).host
    during = refreshed_usage(xcloud, source_host, dest_host)
    # then during VERIFY_RESIZE the source still counts the old flavor (its copy, kept for a
    # revert), the destination the new one; each counts the server once, as Nova does
    assert during == {source_host: tiny, dest_host: {**bigger, "running_vms": 1}}
    # and after the confirm only the destination, after the revert only the source
    assert xcloud.action(client, sid, {finish: None}).status_code in (202, 204)
    after = refreshed_usage(xcloud, source_host, dest_host)
    if finish == "confirmResize":
        assert after == {source_host: empty, dest_host: {**bigger, "running_vms": 1}}
    else:
        assert after == {source_host: tiny, dest_host: empty}


def test_a_block_device_tag_survives_the_move(xcloud: Cloud) -> None:
    # given a volume-backed server whose root volume is tagged ``root``
    client = xcloud.member()
    server = boot(xcloud, client, volume_backed=True)
    sid = server["id"]

    def tags() -> list[Any]:
        body = xcloud.get(client, f"servers/{sid}/os-volume_attachments", version="2.70").json()
        return [a["tag"] for a in body["volumeAttachments"]]

    assert tags() == ["root"]
    # when resized into cell2, then the target cell's block device keeps the tag
    resize_to_cell2(xcloud, client, sid)
    with target_cell(xcloud.cells["cell2"]):
        assert list(BlockDeviceMapping.objects.filter(instance_uuid=sid).values_list("tag", flat=True)) == ["root"]
    assert tags() == ["root"]
    # and once confirmed (the source rows gone) it is still there
    assert xcloud.action(client, sid, {"confirmResize": None}).status_code == 204
    assert rows(xcloud, "cell1", sid)["bdms"] == 0
    assert tags() == ["root"]


def test_revert_failing_before_the_flip_errors_the_server_in_the_target_cell(xcloud: Cloud) -> None:
    client = xcloud.member()
    server = boot(xcloud, client)
    sid = server["id"]
    resize_to_cell2(xcloud, client, sid)
    # when the revert's first write in the source cell (its migration ``reverting``) fails
    with failing_write("cell1", "servers_migration", when=lambda sql, p: "reverting" in p) as fault:
        assert xcloud.action(client, sid, {"revertResize": None}).status_code == 202
    assert fault["failed"] == 1
    # then the server is ERROR where it is mapped (cell2), the migration there ``error``, with
    # the fault; the source copy stays hidden for the operator
    shown = xcloud.show(client, sid)
    assert shown["status"] == "ERROR" and "injected failure writing servers_migration" in shown["fault"]["message"]
    assert xcloud.cell_of(sid) == "cell2"
    assert rows(xcloud, "cell2", sid)["migrations"] == ["error"]
    assert rows(xcloud, "cell1", sid)["hidden"] == [True]


@pytest.mark.parametrize("where", ["destination-destroy", "source-spawn"])
def test_revert_failing_after_the_flip_errors_the_server_in_the_source_cell(xcloud: Cloud, where: str) -> None:
    client = xcloud.member()
    server = boot(xcloud, client)
    sid, source_host = server["id"], xcloud.instance(server["id"]).host
    resize_to_cell2(xcloud, client, sid)
    dest_host = xcloud.instance(sid).host
    # when the destination cannot destroy its guest, or the source cannot spawn it again
    if where == "destination-destroy":
        xcloud.driver(dest_host).fail_destroys = 1
    else:
        xcloud.driver(source_host).fail_spawns = 1
    assert xcloud.action(client, sid, {"revertResize": None}).status_code == 202
    # then the server is ERROR in the source cell, where the mapping already points, with the
    # fault, and the source migration ``error``
    shown = xcloud.show(client, sid)
    injected = "destroy" if where == "destination-destroy" else "spawn"
    assert shown["status"] == "ERROR" and f"injected {injected} failure" in shown["fault"]["message"]
    assert xcloud.cell_of(sid) == "cell1"
    assert rows(xcloud, "cell1", sid)["hidden"] == [False]
    assert rows(xcloud, "cell1", sid)["migrations"] == ["error"]
    if where == "source-spawn":  # the destination was cleaned before the source failed
        assert rows(xcloud, "cell2", sid)["hidden"] == []
        assert dest_bindings(sid) == []
    # and a hard reboot recovers it on the source host
    assert xcloud.action(client, sid, {"reboot": {"type": "HARD"}}).status_code == 202
    assert xcloud.show(client, sid)["status"] == "ACTIVE"
    assert xcloud.instance(sid).host == source_host


def test_cross_cell_move_is_set_before_any_write_to_the_target_cell(xcloud: Cloud) -> None:
    client = xcloud.member()
    server = boot(xcloud, client)
    sid = server["id"]

    def source_flag() -> list[bool]:
        with target_cell(xcloud.cells["cell1"]):
            return list(Migration.all_objects.filter(instance_uuid=sid).values_list("cross_cell_move", flat=True))

    # when the first write into cell2 fails (the target DB setup), the flag is looked at then
    with failing_write("cell2", "servers_instance", when=lambda sql, p: sql.lstrip().upper().startswith("INSERT"),
                       then=source_flag) as fault:
        resize_to_cell2(xcloud, client, sid, expect="ACTIVE")
    # then the source migration was already marked, and stays marked once it ended in error
    assert fault == {"failed": 1, "seen": [True]}
    with target_cell(xcloud.cells["cell1"]):
        migration = Migration.objects.get(instance_uuid=sid)
    assert migration.status == "error" and migration.cross_cell_move is True
    # and a move that goes through copies the flag into the target cell's migration
    resize_to_cell2(xcloud, client, sid)
    with target_cell(xcloud.cells["cell2"]):
        copied = dict(Migration.objects.filter(instance_uuid=sid).values_list("status", "cross_cell_move"))
    assert copied == {"error": True, "finished": True}
    assert in_cell(xcloud, "cell1", sid).hidden is True
