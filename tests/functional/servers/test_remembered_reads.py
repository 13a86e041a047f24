"""What ``POST /servers`` reads and each process remembers (the flavor with its extra specs, the
image, the project's quota limits, its default security group: ``cloudcore.core.stamps``) is read
again once it changed. Each test boots once (the reads remembered), changes the row through the
API a client would use, and boots again."""
from __future__ import annotations

from typing import Any

import pytest

from tests.cloud import Cloud

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])


def _flavor(cloud: Cloud, admin: Any, flavorid: str) -> dict[str, Any]:
    response = cloud.post(admin, "flavors", {"flavor": {"name": flavorid, "ram": 512, "vcpus": 1, "disk": 1,
                                                        "id": flavorid}})
    assert response.status_code == 200, response.content
    return response.json()["flavor"]


def test_a_deleted_flavor_is_refused(cloud: Cloud) -> None:
    client, admin = cloud.member(), cloud.admin()
    _flavor(cloud, admin, "gone")
    cloud.create_server(client, "before", flavor="gone", networks="none")
    # when the flavor is deleted
    assert cloud.delete(admin, "flavors/gone").status_code == 202
    # then the next boot with it is refused
    refused = cloud.create_server(client, "after", flavor="gone", networks="none", expect=400)
    assert refused["badRequest"]["message"] == "Invalid flavorRef provided."


def test_a_flavor_s_new_extra_spec_is_the_next_server_s(cloud: Cloud) -> None:
    client, admin = cloud.member(), cloud.admin()
    _flavor(cloud, admin, "specced")
    before = cloud.create_server(client, "before", flavor="specced", networks="none")
    # when an extra spec is set on the flavor
    response = cloud.post(admin, "flavors/specced/os-extra_specs", {"extra_specs": {"acme:colour": "blue"}})
    assert response.status_code == 200, response.content
    after = cloud.create_server(client, "after", flavor="specced", networks="none")
    # then the server booted after has it, the one before does not
    assert cloud.show(client, before["id"], version="2.47")["flavor"]["extra_specs"] == {}
    assert cloud.show(client, after["id"], version="2.47")["flavor"]["extra_specs"] == {"acme:colour": "blue"}


def test_a_deactivated_image_is_refused_until_reactivated(cloud: Cloud) -> None:
    client, admin = cloud.member(), cloud.admin()
    cloud.create_server(client, "before", networks="none")
    image = f"/image/v2/images/{cloud.image_id}"
    # when the image is deactivated
    assert cloud.post(admin, f"{image}/actions/deactivate").status_code == 204
    # then a boot from it is refused
    refused = cloud.create_server(client, "deactivated", networks="none", expect=400)
    assert refused["badRequest"]["message"] == f"Image {cloud.image_id} is not active."
    # and accepted once it is active again
    assert cloud.post(admin, f"{image}/actions/reactivate").status_code == 204
    cloud.create_server(client, "reactivated", networks="none")


def test_a_lowered_quota_is_enforced_on_the_next_boot(cloud: Cloud) -> None:
    client, admin = cloud.member(), cloud.admin()
    project_id = cloud.show(admin, cloud.create_server(client, "first", networks="none")["id"])["tenant_id"]
    # when the project's instances quota is lowered to what it uses
    response = cloud.put(admin, f"os-quota-sets/{project_id}", {"quota_set": {"instances": 1}})
    assert response.status_code == 200, response.content
    # then the next boot is over it
    refused = cloud.create_server(client, "second", networks="none", expect=403)
    assert "Quota exceeded for instances" in refused["forbidden"]["message"], refused
    # and a quota raised again lets it through
    response = cloud.put(admin, f"os-quota-sets/{project_id}", {"quota_set": {"instances": 2}})
    assert response.status_code == 200, response.content
    cloud.create_server(client, "third", networks="none")


def test_a_deleted_default_group_is_made_again_for_the_next_server(cloud: Cloud) -> None:
    client, admin = cloud.member(), cloud.admin()
    first = cloud.create_server(client, "first", networks="demo-net")
    groups = cloud.get(client, f"servers/{first['id']}/os-security-groups").json()["security_groups"]
    assert [g["name"] for g in groups] == ["default"]
    old = groups[0]["id"]
    # when the server is gone and an admin deletes the project's default group
    assert cloud.delete(client, f"servers/{first['id']}").status_code == 204
    assert cloud.delete(admin, f"/network/v2.0/security-groups/{old}").status_code == 204
    # then the next server gets the project's new default group
    second = cloud.create_server(client, "second", networks="demo-net")
    groups = cloud.get(client, f"servers/{second['id']}/os-security-groups").json()["security_groups"]
    assert [g["name"] for g in groups] == ["default"] and groups[0]["id"] != old
    listed = cloud.get(client, "/network/v2.0/security-groups?name=default").json()["security_groups"]
    assert [g["id"] for g in listed] == [groups[0]["id"]]
