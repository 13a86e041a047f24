"""createBackup: a backup image of the server's disk with Nova's properties, the oldest backups of
the same type beyond ``rotation`` deleted; ``image_id`` body from 2.45, ``Location`` below."""
from __future__ import annotations

from typing import Any

import pytest

from images.models import Image
from tests.cloud import Cloud

from .test_pause_suspend_rescue import active_server, conflict, last_action

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])


def backup(cloud: Cloud, client: Any, sid: str, name: str, backup_type: str = "daily", rotation: Any = 2,
           version: str = "2.45") -> Any:
    return cloud.action(client, sid, {"createBackup": {"name": name, "backup_type": backup_type,
                                                       "rotation": rotation}}, version=version)


def backups_of(sid: str, backup_type: str) -> list[str]:
    return [i.name for i in Image.objects.filter(status="active").order_by("created_at")
            if i.properties.get("instance_uuid") == sid and i.properties.get("backup_type") == backup_type]


def test_backup_image_with_novas_properties(cloud: Cloud) -> None:
    # given an active server
    client = cloud.member()
    sid = active_server(cloud, client)["id"]
    # when it is backed up at 2.45
    response = cloud.action(client, sid, {"createBackup": {"name": "b1", "backup_type": "daily", "rotation": 1,
                                                           "metadata": {"k": "v"}}}, version="2.45")
    # then the body names the image, active with the backup's properties
    assert response.status_code == 202 and "Location" not in response
    image = Image.objects.get(id=response.json()["image_id"])
    assert image.status == "active" and image.name == "b1" and image.owner == cloud.instance(sid).project_id
    assert image.properties["image_type"] == "backup" and image.properties["backup_type"] == "daily"
    assert image.properties["instance_uuid"] == sid and image.properties["k"] == "v"
    assert image.properties["base_image_ref"] == cloud.instance(sid).image_ref
    shown = cloud.show(client, sid)
    assert shown["status"] == "ACTIVE" and shown["OS-EXT-STS:task_state"] is None
    action = last_action(cloud, sid)
    assert action["action"] == "createBackup"
    assert [(e["event"], e["result"]) for e in action["events"]] == [("compute_backup_instance", "Success")]
    assert [len(cloud.notifications(f"instance.snapshot.{p}")) for p in ("start", "end")] == [1, 1]


def test_rotation_deletes_the_oldest_backups_of_the_type(cloud: Cloud) -> None:
    client = cloud.member()
    sid = active_server(cloud, client)["id"]
    for name in ("d1", "d2", "d3"):
        assert backup(cloud, client, sid, name, rotation=2).status_code == 202
    assert backup(cloud, client, sid, "w1", backup_type="weekly", rotation="2").status_code == 202
    # the oldest daily is gone, the weekly one is another type's
    assert backups_of(sid, "daily") == ["d2", "d3"] and backups_of(sid, "weekly") == ["w1"]
    assert backup(cloud, client, sid, "d4", rotation=1).status_code == 202
    assert backups_of(sid, "daily") == ["d4"]
    # a rotation of 0 keeps none (the new one neither); below 2.45 then no Location
    response = backup(cloud, client, sid, "d5", rotation=0, version="2.44")
    assert response.status_code == 202 and "Location" not in response and not response.content
    assert backups_of(sid, "daily") == []


def test_location_below_2_45_and_errors(cloud: Cloud) -> None:
    client = cloud.member()
    sid = active_server(cloud, client)["id"]
    response = backup(cloud, client, sid, "b", version="2.44")
    assert response.status_code == 202 and "/image/v2/images/" in response["Location"]
    # Nova's schema: name, backup_type and a non-negative rotation are required
    for body in ({"name": "b", "backup_type": "daily"}, {"name": "b", "rotation": 1},
                 {"name": "b", "backup_type": "daily", "rotation": -1},
                 {"name": "b", "backup_type": "daily", "rotation": "x"},
                 {"name": "", "backup_type": "daily", "rotation": 1},
                 {"name": "b", "backup_type": "daily", "rotation": 1, "extra": 1}):
        assert cloud.action(client, sid, {"createBackup": body}).status_code == 400, body
    # a wrong state: 409; policy: a reader is refused, another project does not see the server
    assert cloud.action(client, sid, {"shelve": None}).status_code == 202
    assert conflict(backup(cloud, client, sid, "x")) == (
        f"Cannot 'createBackup' instance {sid} while it is in vm_state shelved_offloaded")
    reader = cloud.member("reader", "demo", roles=("reader",))
    denied = backup(cloud, reader, sid, "x")
    assert denied.status_code == 403
    assert denied.json()["forbidden"]["message"] == (
        "Policy doesn't allow os_compute_api:os-create-backup to be performed.")
    assert backup(cloud, cloud.member("mallory", "demo2"), sid, "x").status_code == 404
