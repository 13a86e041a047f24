"""``OS-DCF:diskConfig`` is kept, as Nova keeps it (``auto_disk_config``): the value a create,
rebuild, resize or update names is the one shown afterwards; without one the image's
``auto_disk_config`` property decides (MANUAL when it has none), and an image that disables it
refuses AUTO with 400. (Tempest's ``test_disk_config``: every value read back was MANUAL.)"""
from __future__ import annotations

import pytest

from tests.cloud import Cloud

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])


def _image(cloud: Cloud, name: str, **properties: str) -> str:
    from images.models import Image

    return Image.objects.create(name=name, status="active", visibility="public", disk_format="raw",
                                container_format="bare", size=1024, owner="admin", properties=properties).id


def _disk_config(cloud: Cloud, client: object, server_id: str) -> str:
    return cloud.show(client, server_id)["OS-DCF:diskConfig"]


def test_create_update_rebuild_and_resize_keep_the_disk_config_asked_for(cloud: Cloud) -> None:
    # given a server created with AUTO
    client = cloud.member()
    server = cloud.create_server(client, "dcf1", **{"OS-DCF:diskConfig": "AUTO"})
    # then the create answer and the server say AUTO
    assert server["OS-DCF:diskConfig"] == "AUTO"
    cloud.wait_for_status(client, server["id"], "ACTIVE")
    assert _disk_config(cloud, client, server["id"]) == "AUTO"
    assert cloud.instance(server["id"]).auto_disk_config is True
    # when it is updated to MANUAL, the update answer and the server say MANUAL
    updated = cloud.put(client, f"servers/{server['id']}", {"server": {"OS-DCF:diskConfig": "MANUAL"}})
    assert updated.status_code == 200, updated.content
    assert updated.json()["server"]["OS-DCF:diskConfig"] == "MANUAL"
    assert _disk_config(cloud, client, server["id"]) == "MANUAL"
    # when it is rebuilt with AUTO, the rebuild answer and the server say AUTO
    rebuilt = cloud.action(client, server["id"], {"rebuild": {"imageRef": cloud.image_id,
                                                              "OS-DCF:diskConfig": "AUTO"}})
    assert rebuilt.status_code == 202, rebuilt.content
    assert rebuilt.json()["server"]["OS-DCF:diskConfig"] == "AUTO"
    cloud.wait_for_status(client, server["id"], "ACTIVE")
    assert _disk_config(cloud, client, server["id"]) == "AUTO"
    # when a rebuild names none, the server keeps AUTO
    assert cloud.action(client, server["id"], {"rebuild": {"imageRef": cloud.image_id}}).status_code == 202
    cloud.wait_for_status(client, server["id"], "ACTIVE")
    assert _disk_config(cloud, client, server["id"]) == "AUTO"
    # when it is resized with MANUAL, the server says MANUAL (and still after the confirm)
    bigger = cloud.flavor("dcf.bigger", ram=1024)
    resized = cloud.action(client, server["id"], {"resize": {"flavorRef": bigger.flavorid,
                                                             "OS-DCF:diskConfig": "MANUAL"}})
    assert resized.status_code == 202, resized.content
    cloud.wait_for_status(client, server["id"], "VERIFY_RESIZE")
    assert _disk_config(cloud, client, server["id"]) == "MANUAL"
    assert cloud.action(client, server["id"], {"confirmResize": None}).status_code == 204
    cloud.wait_for_status(client, server["id"], "ACTIVE")
    assert _disk_config(cloud, client, server["id"]) == "MANUAL"


def test_without_a_value_the_image_decides_and_may_refuse_auto(cloud: Cloud) -> None:
    client = cloud.member()
    # a plain image: MANUAL
    plain = cloud.create_server(client, "dcf-plain")
    assert plain["OS-DCF:diskConfig"] == "MANUAL"
    # an image whose auto_disk_config property is true: AUTO
    auto = cloud.create_server(client, "dcf-auto", image=_image(cloud, "dcf-auto", auto_disk_config="True"))
    assert auto["OS-DCF:diskConfig"] == "AUTO"
    cloud.wait_for_status(client, auto["id"], "ACTIVE")
    assert _disk_config(cloud, client, auto["id"]) == "AUTO"
    # an image that disables it refuses AUTO at create and at rebuild, with Nova's words
    disabled = _image(cloud, "dcf-off", auto_disk_config="Disabled")
    refused = cloud.create_server(client, "dcf-no", image=disabled, expect=400, **{"OS-DCF:diskConfig": "AUTO"})
    assert refused["badRequest"]["message"] == f"Requested image {disabled} has automatic disk resize disabled."
    rebuild = cloud.action(client, auto["id"], {"rebuild": {"imageRef": disabled, "OS-DCF:diskConfig": "AUTO"}})
    assert rebuild.status_code == 400, rebuild.content
    assert cloud.show(client, auto["id"])["status"] == "ACTIVE"
    # and it takes MANUAL
    manual = cloud.create_server(client, "dcf-man", image=disabled, **{"OS-DCF:diskConfig": "MANUAL"})
    assert manual["OS-DCF:diskConfig"] == "MANUAL"
