"""createImage: a snapshot image of the server's disk (Location below 2.45, image_id body from 2.45)."""
from __future__ import annotations

import pytest

from images.models import Image
from images.services import image_data_path
from tests.cloud import Cloud

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])


def test_create_image_from_2_45(cloud: Cloud) -> None:
    client = cloud.member()
    server = cloud.create_server(client, "vm1")
    response = cloud.action(client, server["id"], {"createImage": {"name": "snap1", "metadata": {"k": "v"}}},
                            version="2.45")
    assert response.status_code == 202
    image = Image.objects.get(id=response.json()["image_id"])
    assert image.status == "active" and image.name == "snap1"
    assert image.properties["instance_uuid"] == server["id"] and image.properties["k"] == "v"
    assert image.properties["image_type"] == "snapshot" and image.visibility == "private"
    assert image_data_path(image.id).read_bytes() == b"snapshot of " + server["id"].encode()
    assert cloud.show(client, server["id"])["OS-EXT-STS:task_state"] is None
    assert len(cloud.notifications("instance.snapshot.end")) == 1


def test_create_image_location_below_2_45_and_errors(cloud: Cloud) -> None:
    client = cloud.member()
    server = cloud.create_server(client, "vm1")
    response = cloud.action(client, server["id"], {"createImage": {"name": "snap"}}, version="2.44")
    assert response.status_code == 202 and "/image/v2/images/" in response["Location"]
    assert cloud.action(client, server["id"], {"createImage": {}}).status_code == 400
    # metadata keys follow Nova's metadata schema (1-255 of letters, digits and "-_:. "), for
    # createImage, createBackup and rebuild alike
    for bad in ({"": "v"}, {"k" * 256: "v"}, {"a/b": "v"}, {"k": 1}):
        for action in ({"createImage": {"name": "x", "metadata": bad}},
                       {"createBackup": {"name": "x", "backup_type": "daily", "rotation": 1, "metadata": bad}},
                       {"rebuild": {"imageRef": cloud.image_id, "metadata": bad}}):
            assert cloud.action(client, server["id"], action).status_code == 400, (action, bad)
    cloud.action(client, server["id"], {"shelve": None})
    assert cloud.action(client, server["id"], {"createImage": {"name": "x"}}).status_code == 409
