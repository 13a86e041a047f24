"""A compute host leaves the API database to the conductor and the API (issue 16, isolation): a build
that fails on its host goes back to the conductor, which picks the next host; the host's build
gets the requested networks in its cast; a delete queues the mapping and drops the request spec
on the API side, so the host's terminate touches neither.

The in-process cloud runs every task eagerly; a recorder notes which tasks ran, with their
arguments, and every statement sent to the API database while a compute task was running."""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any
from unittest.mock import ANY

import pytest
from celery.signals import task_postrun, task_prerun
from django.db import connections
from django.utils import timezone

from cells.context import target_cell
from cells.models import InstanceMapping
from conductor import periodic
from scheduling.models import RequestSpec
from scheduling.placement.services import allocations_get
from servers.models import InstanceAction, Migration

ALL = ["default", "cell0", "cell1", "cell2"]
pytestmark = pytest.mark.django_db(databases=ALL)

API_TABLES = (InstanceMapping._meta.db_table, RequestSpec._meta.db_table)


def allocated_providers(consumer: str) -> set[str]:
    return set(allocations_get(consumer_uuid=consumer).allocations)


@dataclass
class Recorder:
    tasks: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    running: list[str] = field(default_factory=list)
    api_sql_in_compute: list[str] = field(default_factory=list)

    def names(self) -> list[str]:
        return [name for name, _ in self.tasks]

    def compute_sql_on(self, table: str) -> list[str]:
        return [sql for sql in self.api_sql_in_compute if table in sql]


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    rec = Recorder()

    def before(sender: Any = None, kwargs: dict[str, Any] | None = None, **_: Any) -> None:
        # a compute agent's notifications travel to the conductor as casts: transport, not orchestration;
        # the network service's port filter refreshes follow port changes, not the build's flow
        if sender.name not in ("conductor.record_notification", "conductor.record_notifications",
                               "compute.refresh_port_filters"):
            rec.tasks.append((sender.name, dict(kwargs or {})))
        rec.running.append(sender.name)

    def after(sender: Any = None, **_: Any) -> None:
        rec.running.pop()

    def on_api_db(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        # the innermost task decides: a conductor task cast from a compute task is service code
        if rec.running and rec.running[-1].startswith("compute."):
            rec.api_sql_in_compute.append(sql)
        return execute(sql, params, many, context)

    task_prerun.connect(before, weak=False)
    task_postrun.connect(after, weak=False)
    try:
        with connections["default"].execute_wrapper(on_api_db):
            yield rec
    finally:
        task_prerun.disconnect(before)
        task_postrun.disconnect(after)


def test_a_failed_build_goes_back_to_the_conductor_which_casts_it_to_the_alternate(cloud, recorder):
    # given compute2 already carries a server (so the RAM weigher prefers compute1)
    admin = cloud.admin()
    cloud.create_server(admin, "filler", flavor="m1.large", availability_zone="az1:compute2")
    recorder.tasks.clear()
    # and compute1's libvirt fails its next spawn for real
    cloud.driver("compute1").fail_spawns = 1
    client = cloud.member()
    # when a server is booted in az1 on demo-net
    server = cloud.create_server(client, "vm", availability_zone="az1", networks="demo-net")
    # then it is ACTIVE on compute2
    cloud.wait_for_status(client, server["id"], "ACTIVE")
    assert cloud.instance(server["id"]).host == "compute2"
    assert cloud.domain(server["id"]).isActive()
    # and the build went conductor -> compute1 -> conductor (reschedule) -> compute2
    assert recorder.names() == ["conductor.schedule_and_build_instances", "compute.build_and_run_instance",
                                "conductor.reschedule_build", "compute.build_and_run_instance"]
    first, reschedule, second = (kw for _, kw in recorder.tasks[1:])
    assert reschedule["attempt"] == 1 and "injected spawn failure" in reschedule["reason"]
    assert [a["service_host"] for a in first["alternates"]] == ["compute2"]
    assert second["attempt"] == 2 and second["alternates"] == []
    # and each host got the requested networks in its cast, never reading the request spec itself
    for build in (first, second):
        assert [r["network_id"] for r in build["requested_networks"]] == [cloud.network_id]
    assert recorder.compute_sql_on(RequestSpec._meta.db_table) == []
    # and the conductor claimed the alternate: the allocations are compute2's only
    assert allocated_providers(server["id"]) == {cloud.hosts["compute2"]["node_uuid"]}


def test_with_no_alternate_left_the_conductor_errors_the_server_out(cloud, recorder):
    # given both az1 hosts fail their next spawn
    cloud.driver("compute1").fail_spawns = 1
    cloud.driver("compute2").fail_spawns = 1
    client = cloud.member()
    # when a server is booted in az1
    server = cloud.create_server(client, "vm", availability_zone="az1")
    # then the conductor was asked twice and gave up with MaxRetriesExceeded
    assert recorder.names().count("conductor.reschedule_build") == 2
    shown = cloud.wait_for_status(client, server["id"], "ERROR")
    assert shown["fault"]["message"].startswith("Exceeded maximum number of retries.")
    assert allocated_providers(server["id"]) == set()
    assert recorder.compute_sql_on(RequestSpec._meta.db_table) == []


def test_terminate_on_the_host_touches_neither_the_mapping_nor_the_request_spec(cloud, recorder):
    # given an ACTIVE server
    client = cloud.member()
    server = cloud.create_server(client, "vm")
    assert RequestSpec.objects.filter(instance_uuid=server["id"]).exists()
    # when it is deleted
    assert cloud.delete(client, f"servers/{server['id']}").status_code == 204
    # then the host terminated it
    assert "compute.terminate_instance" in recorder.names()
    assert cloud.instance(server["id"]).deleted and cloud.domain(server["id"]) is None
    # and the API side queued the mapping for delete and dropped the request spec
    assert InstanceMapping.objects.get(instance_uuid=server["id"]).queued_for_delete
    assert not RequestSpec.objects.filter(instance_uuid=server["id"]).exists()
    # and no compute task sent a statement about either table to the API database
    for table in API_TABLES:
        assert recorder.compute_sql_on(table) == [], table
    assert cloud.get(client, f"servers/{server['id']}").status_code == 404


def test_a_server_whose_terminate_failed_on_its_host_stays_visible(cloud):
    # given an ACTIVE server whose host fails the next destroy of a guest
    client = cloud.member()
    server = cloud.create_server(client, "vm")
    cloud.driver(cloud.instance(server["id"]).host).fail_destroys = 1
    # when it is deleted and the host's terminate fails
    with pytest.raises(Exception, match="injected destroy failure"):  # eager tasks propagate it into the request
        cloud.delete(client, f"servers/{server['id']}")
    # then the mapping is queued for delete, yet the server is still shown from its cell
    assert InstanceMapping.objects.get(instance_uuid=server["id"]).queued_for_delete
    assert not cloud.instance(server["id"]).deleted
    assert cloud.show(client, server["id"])["OS-EXT-STS:task_state"] == "deleting"


def _resized(cloud: Any, client: Any) -> tuple[dict[str, Any], Migration]:
    server = cloud.create_server(client, "vm", availability_zone="az1")
    bigger = cloud.flavor("m1.bigger", vcpus=2, ram=1024, disk=2)
    assert cloud.action(client, server["id"], {"resize": {"flavorRef": bigger.flavorid}}).status_code == 202
    assert cloud.show(client, server["id"])["status"] == "VERIFY_RESIZE"
    with target_cell(cloud.cell_of(server["id"])):
        return server, Migration.objects.get(instance_uuid=server["id"])


def test_delete_in_verify_resize_confirms_without_compute_work_in_the_api(cloud, recorder):
    # given a server resized within its cell, waiting in VERIFY_RESIZE
    client = cloud.member()
    server, migration = _resized(cloud, client)
    assert migration.source_compute != migration.dest_compute
    recorder.tasks.clear()
    # when it is deleted
    assert cloud.delete(client, f"servers/{server['id']}").status_code == 204
    # then the API ran no compute operation itself: it cast the source guest's destroy to the
    # source host and the terminate to the destination host
    assert recorder.tasks == [
        ("compute.destroy_guest", {"host": migration.source_compute, "instance_uuid": server["id"]}),
        ("compute.terminate_instance", {"ctx": ANY, "instance_uuid": server["id"], "cell_uuid": ANY,
                                        "action": "delete"}),
    ]
    # and the move was confirmed: the migration's claim and the server's are gone, no guest is left
    with target_cell(cloud.cell_of(server["id"])):
        assert Migration.objects.get(uuid=migration.uuid).status == "confirmed"
        actions = list(InstanceAction.objects.filter(instance_uuid=server["id"]).values_list("action", flat=True))
    assert "confirmResize" in actions and "delete" in actions
    assert allocated_providers(migration.uuid) == set() and allocated_providers(server["id"]) == set()
    assert cloud.domain(server["id"]) is None
    assert cloud.get(client, f"servers/{server['id']}").status_code == 404


def test_the_beat_confirms_an_old_resize_by_a_cast_to_the_source_host(cloud, recorder, settings):
    # given a resize waiting in VERIFY_RESIZE for longer than the window
    settings.RESIZE_CONFIRM_WINDOW = 60
    client = cloud.member()
    server, migration = _resized(cloud, client)
    with target_cell(cloud.cell_of(server["id"])):
        Migration.objects.filter(uuid=migration.uuid).update(updated_at=timezone.now() - timedelta(hours=1))
    recorder.tasks.clear()
    # when the conductor's beat runs
    assert periodic.confirm_resizes() == 1
    # then the confirm was cast to the source host, which finished it
    [(name, kwargs)] = recorder.tasks
    assert (name, kwargs["op"], kwargs["migration_uuid"]) == ("compute.run_operation", "confirm_resize", migration.uuid)
    assert cloud.show(client, server["id"])["status"] == "ACTIVE"
    assert allocated_providers(migration.uuid) == set()
