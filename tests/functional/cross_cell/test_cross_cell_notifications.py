# ruff: noqa: F811 - the tests take the imported ``xcloud`` fixture by name
"""A cross-cell resize emits Nova's notifications, no others (issue 17, item 10): the exact event
types of the move, its confirm and revert, and of each failure; the same ``resize_prep`` payload
as a same-cell move; the conductor's failures as ``compute_task.migrate_server.error``."""
from __future__ import annotations

from typing import Any

import pytest

from networks.models import Port, PortBinding
from tests.cloud import Cloud
from tests.functional.actions.test_move_notifications import (
    EXCEPTION_FIELDS,
    FLAVOR_FIELDS,
    INSTANCE_FIELDS,
    SCHEDULED,
    Notifications,
)
from tests.functional.cross_cell.test_cross_cell_scenarios import (  # noqa: F401 - xcloud is a fixture
    boot,
    resize_onto_compute3_only,
    resize_to_cell2,
    xcloud,
)

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])

MOVED = [*SCHEDULED, "instance.resize_prep.start", "instance.resize_prep.end", "instance.resize.start",
         "instance.resize.end", "instance.resize_finish.start", "instance.resize_finish.end"]


def test_move_then_confirm_emits_exactly_nova_events(xcloud: Cloud) -> None:
    client = xcloud.member()
    sid = boot(xcloud, client)["id"]
    seen = Notifications(xcloud)
    resize_to_cell2(xcloud, client, sid)
    assert xcloud.action(client, sid, {"confirmResize": None}).status_code == 204
    assert seen.types() == [*MOVED, "instance.resize_confirm.start", "instance.resize_confirm.end"]
    # resize_prep has the payload of a same-cell move (one path), from the destination host
    prep = seen.one("instance.resize_prep.start")
    assert prep["publisher_id"] == f"nova-compute:{xcloud.instance(sid).host}"
    assert prep["payload"]["nova_object.name"] == "InstanceActionResizePrepPayload"
    data = prep["payload"]["nova_object.data"]
    assert set(data) == INSTANCE_FIELDS | {"fault", "new_flavor"} and data["task_state"] == "resize_prep"
    assert set(data["new_flavor"]["nova_object.data"]) == FLAVOR_FIELDS
    assert data["new_flavor"]["nova_object.data"]["name"] == "m1.bigger"


def test_move_then_revert_emits_exactly_nova_events(xcloud: Cloud) -> None:
    client = xcloud.member()
    sid = boot(xcloud, client)["id"]
    seen = Notifications(xcloud)
    resize_to_cell2(xcloud, client, sid)
    assert xcloud.action(client, sid, {"revertResize": None}).status_code == 202
    assert xcloud.show(client, sid)["status"] == "ACTIVE"
    assert seen.types() == [*MOVED, "instance.resize_revert.start", "instance.resize_revert.end"]


def test_failure_in_the_prep_emits_migrate_server_error(xcloud: Cloud) -> None:
    # given a binding of the server's port already on compute3 (the destination's binding fails)
    client = xcloud.member()
    sid = boot(xcloud, client)["id"]
    PortBinding.objects.create(port=Port.objects.get(device_id=sid), host="compute3", status="INACTIVE")
    seen = Notifications(xcloud)
    resize_onto_compute3_only(xcloud, client, sid)
    # then the conductor's failure is Nova's migrate_server error, the server left active
    assert seen.types() == [*SCHEDULED, "instance.resize_prep.start", "compute_task.migrate_server.error"]
    data = seen.one("compute_task.migrate_server.error")["payload"]["nova_object.data"]
    assert data["state"] == "active" and data["instance_uuid"] == sid
    assert set(data["reason"]["nova_object.data"]) == EXCEPTION_FIELDS


def test_failure_at_the_source_host_emits_resize_error_and_migrate_server_error(xcloud: Cloud) -> None:
    client = xcloud.member()
    sid = boot(xcloud, client)["id"]
    xcloud.driver(xcloud.instance(sid).host).fail_destroys = 1
    seen = Notifications(xcloud)
    resize_to_cell2(xcloud, client, sid, expect="ERROR")
    # the source host's compute.exception, then the conductor's: resize.error, migrate_server.error
    assert seen.types() == [*SCHEDULED, "instance.resize_prep.start", "instance.resize_prep.end",
                            "instance.resize.start", "compute.exception", "instance.resize.error",
                            "compute_task.migrate_server.error"]
    error = seen.one("instance.resize.error")["payload"]["nova_object.data"]
    assert error["state"] == "error" and set(error) == INSTANCE_FIELDS | {"fault"}
    assert "injected destroy failure" in error["fault"]["nova_object.data"]["exception_message"]
    task = seen.one("compute_task.migrate_server.error")["payload"]["nova_object.data"]
    assert task["state"] == "error"


def test_failed_confirm_emits_no_resize_confirm_error(xcloud: Cloud) -> None:
    client = xcloud.member()
    sid, source_host = (server := boot(xcloud, client))["id"], xcloud.instance(server["id"]).host
    resize_to_cell2(xcloud, client, sid)
    xcloud.driver(source_host).fail_destroys = 1
    seen = Notifications(xcloud)
    xcloud.action(client, sid, {"confirmResize": None})
    assert xcloud.show(client, sid)["status"] == "ERROR"
    # the source host's failure is its compute.exception; Nova has no instance.resize_confirm.error
    assert seen.types() == ["instance.resize_confirm.start", "compute.exception"]


@pytest.mark.parametrize("where", ["destination", "source"])
def test_failed_revert_emits_no_resize_revert_error(xcloud: Cloud, where: str) -> None:
    client = xcloud.member()
    sid, source_host = (server := boot(xcloud, client))["id"], xcloud.instance(server["id"]).host
    resize_to_cell2(xcloud, client, sid)
    if where == "destination":
        xcloud.driver(xcloud.instance(sid).host).fail_destroys = 1
    else:
        xcloud.driver(source_host).fail_spawns = 1
    seen = Notifications(xcloud)
    xcloud.action(client, sid, {"revertResize": None})
    assert xcloud.show(client, sid)["status"] == "ERROR"
    assert seen.types() == ["instance.resize_revert.start", "compute.exception"]
    exception: dict[str, Any] = seen.one("compute.exception")
    assert exception["payload"]["nova_object.name"] == "ExceptionPayload"
    assert set(exception["payload"]["nova_object.data"]) == EXCEPTION_FIELDS
