"""The launch form's fields as the body of ``POST /servers``."""
from __future__ import annotations

import base64

from django.http import QueryDict

from console.launch_views import launch_body


def form(**fields: str | list[str]) -> QueryDict:
    q = QueryDict(mutable=True)
    for key, value in fields.items():
        q.setlist(key, value if isinstance(value, list) else [value])
    return q


def test_a_bare_form_is_an_image_boot_on_an_automatic_network() -> None:
    assert launch_body(form(name=" web ", flavor="1", image="img"), admin=False) == {
        "server": {"name": "web", "flavorRef": "1", "networks": "auto", "imageRef": "img"}}


def test_boot_from_an_existing_volume_sends_no_image() -> None:
    server = launch_body(form(name="v", flavor="1", boot_source="volume", volume="vol-1", image="img"),
                         admin=False)["server"]
    assert "imageRef" not in server
    assert server["block_device_mapping_v2"] == [{"boot_index": 0, "uuid": "vol-1", "source_type": "volume",
                                                  "destination_type": "volume", "delete_on_termination": False}]


def test_networks_ports_groups_and_configuration() -> None:
    body = launch_body(form(name="n", flavor="1", image="i", network=["net-a", "net-b"], port=["p1"],
                            security_group=["web", ""], user_data="hi", metadata="a=1\n\nb\n", tags="x,, y",
                            min_count="2", max_count="3", server_group="g1", host="compute1"), admin=False)
    server = body["server"]
    assert server["networks"] == [{"uuid": "net-a"}, {"uuid": "net-b"}, {"port": "p1"}]
    assert server["security_groups"] == [{"name": "web"}]
    assert base64.b64decode(server["user_data"]) == b"hi"
    assert server["metadata"] == {"a": "1", "b": ""} and server["tags"] == ["x", "y"]
    assert (server["min_count"], server["max_count"]) == (2, 3)
    assert body["os:scheduler_hints"] == {"group": "g1"}
    assert "host" not in server  # a member's form cannot pick a host


def test_no_network_and_an_admins_host() -> None:
    server = launch_body(form(name="n", flavor="1", image="i", no_network="1", network="net-a", host="c3"),
                         admin=True)["server"]
    assert server["networks"] == "none" and server["host"] == "c3"
