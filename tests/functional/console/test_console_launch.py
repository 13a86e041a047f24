"""The launch form posts every option of ``POST /servers`` through the compute API; a refusal
is shown on the form in the API's words, with what was typed kept."""
from __future__ import annotations

import base64
from typing import Any

import pytest

from tests.apihelpers import auth_client, make_identity

from .conftest import login

pytestmark = pytest.mark.django_db(transaction=True, databases=["default", "cell0", "cell1", "cell2"])


def test_the_form_offers_every_option(cloud: Any) -> None:
    client = login("demo", "demo", ["member"])
    body = client.get("/servers/new/").content.decode()
    for field in ("name", "flavor", "boot_source", "image", "volume", "volume_size", "delete_on_termination",
                  "network", "port", "no_network", "security_group", "key_name", "availability_zone",
                  "server_group", "user_data", "config_drive", "metadata", "tags", "min_count", "max_count"):
        assert f'name="{field}"' in body, field
    assert "<option>az1</option>" in body and 'name="host"' not in body  # the host is an admin's choice


def test_admin_is_offered_a_host(cloud: Any) -> None:
    body = login("admin", "admin", ["admin"]).get("/servers/new/").content.decode()
    assert 'name="host"' in body and "<option>compute3</option>" in body


def test_member_launches_with_every_option(cloud: Any) -> None:
    user, project = make_identity("demo", project="demo", roles=["member"], password="pw")
    api = auth_client(user, project)
    assert cloud.post(api, "os-keypairs", {"keypair": {"name": "k1"}}, version="2.1").status_code == 200
    group = cloud.post(api, "os-server-groups", {"server_group": {"name": "g", "policy": "anti-affinity"}},
                       version="2.64").json()["server_group"]
    client = login("demo", "demo", ["member"])
    # when the member posts the form with most options set
    response = client.post("/servers/new/", {
        "name": "full", "flavor": "1", "boot_source": "image", "image": cloud.image_id, "network": cloud.network_id,
        "key_name": "k1", "availability_zone": "az2", "server_group": group["id"], "user_data": "#cloud-config\n",
        "config_drive": "1", "metadata": "role=web\nowner = ops", "tags": "a, b", "description": "the full one"})
    # then the server page follows and the API shows each option on the server
    assert response.status_code == 302 and response["Location"].startswith("/servers/")
    server_id = response["Location"].rstrip("/").rsplit("/", 1)[1]
    shown = cloud.show(api, server_id, version="2.96")
    assert shown["status"] == "ACTIVE", shown.get("fault")
    assert shown["key_name"] == "k1" and shown["metadata"] == {"role": "web", "owner": "ops"}
    assert sorted(shown["tags"]) == ["a", "b"] and shown["description"] == "the full one"
    assert shown["OS-EXT-AZ:availability_zone"] == "az2" and shown["config_drive"] in (True, "True")
    assert list(shown["addresses"]) == ["demo-net"]
    assert server_id in cloud.get(api, f"os-server-groups/{group['id']}").json()["server_group"]["members"]
    admin_view = cloud.show(cloud.admin(), server_id, version="2.96")
    assert base64.b64decode(admin_view["OS-EXT-SRV-ATTR:user_data"]) == b"#cloud-config\n"


def test_min_and_max_count_launch_several(cloud: Any) -> None:
    user, project = make_identity("demo", project="demo", roles=["member"], password="pw")
    client = login("demo", "demo", ["member"])
    response = client.post("/servers/new/", {"name": "many", "flavor": "1", "image": cloud.image_id,
                                             "min_count": "2", "max_count": "2"})
    assert response.status_code == 302
    names = sorted(s["name"] for s in cloud.get(auth_client(user, project), "servers").json()["servers"])
    assert names == ["many-1", "many-2"]


def test_admin_launches_on_a_chosen_host(cloud: Any) -> None:
    client = login("admin", "admin", ["admin"])
    response = client.post("/servers/new/", {"name": "pinned", "flavor": "1", "image": cloud.image_id,
                                             "host": "compute3", "no_network": "1"})
    assert response.status_code == 302
    server_id = response["Location"].rstrip("/").rsplit("/", 1)[1]
    shown = cloud.show(cloud.admin(), server_id, version="2.96")
    assert shown["OS-EXT-SRV-ATTR:host"] == "compute3" and shown["addresses"] == {}


def test_boot_from_a_new_volume(cloud: Any) -> None:
    user, project = make_identity("demo", project="demo", roles=["member"], password="pw")
    client = login("demo", "demo", ["member"])
    response = client.post("/servers/new/", {"name": "bfv", "flavor": "1", "boot_source": "volume_from_image",
                                             "image": cloud.image_id, "volume_size": "2",
                                             "delete_on_termination": "1"})
    assert response.status_code == 302, response.content.decode()[:3000]
    server_id = response["Location"].rstrip("/").rsplit("/", 1)[1]
    shown = cloud.show(auth_client(user, project), server_id, version="2.96")
    assert shown["image"] == "" and len(shown["os-extended-volumes:volumes_attached"]) == 1
    assert shown["os-extended-volumes:volumes_attached"][0]["delete_on_termination"] is True


@pytest.mark.parametrize(("form", "words"), [
    ({"name": "x", "flavor": "no-such-flavor"}, "Invalid flavorRef provided."),
    ({"name": "x", "flavor": "1", "min_count": "0"}, "min_count"),
    ({"name": "x", "flavor": "1", "tags": "bad/tag"}, "tags"),
])
def test_a_refusal_is_shown_on_the_form_in_the_apis_words(cloud: Any, form: dict, words: str) -> None:
    client = login("demo", "demo", ["member"])
    response = client.post("/servers/new/", {**form, "image": cloud.image_id, "metadata": "keep=me"})
    assert 400 <= response.status_code < 500
    body = response.content.decode()
    assert "Could not create the server: " in body and words in body
    assert "keep=me</textarea>" in body  # what was typed is kept
