"""Volume type encryption through Cinder's API (``/types/{id}/encryption``, admins): create, show
(``{}`` without a spec), show one item, update and delete, each refused while the type has volumes;
volumes of an encrypted type are ``encrypted``, and the compute API refuses to attach one (this
cloud's compute has no key manager) instead of giving the guest its raw bytes."""
from __future__ import annotations

from typing import Any

import pytest

from tests.functional.volumes.test_volume_api import call

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])
SPEC = {"provider": "luks", "cipher": "aes-xts-plain64", "key_size": 256, "control_location": "front-end"}


def _type(admin: Any, name: str) -> str:
    created = call(admin, "post", "/volume/v3/types", {"volume_type": {"name": name}})
    assert created.status_code == 200, created.content
    return str(created.json()["volume_type"]["id"])


def test_encryption_create_show_update_delete(bfv: Any) -> None:
    admin = bfv.admin()
    type_id = _type(admin, "enc-crud")
    url = f"/volume/v3/types/{type_id}/encryption"
    # a type without a spec shows {}
    assert call(admin, "get", url).json() == {}
    # when a spec is created, it is answered with its id and shown
    created = call(admin, "post", url, {"encryption": SPEC})
    assert created.status_code == 200, created.content
    body = created.json()["encryption"]
    assert set(body) == {"volume_type_id", "encryption_id", *SPEC} and body["volume_type_id"] == type_id
    shown = call(admin, "get", url).json()
    assert {k: shown[k] for k in SPEC} == SPEC and shown["encryption_id"] == body["encryption_id"]
    assert call(admin, "get", f"{url}/cipher").json() == {"cipher": "aes-xts-plain64"}
    missing = call(admin, "get", f"{url}/nope")
    assert missing.status_code == 404
    # a second spec is refused
    again = call(admin, "post", url, {"encryption": SPEC})
    assert again.status_code == 400 and "already exists" in again.json()["badRequest"]["message"]
    # update changes what it names
    change = {"provider": "SomeProvider", "key_size": 128, "control_location": "back-end"}
    updated = call(admin, "put", f"{url}/{body['encryption_id']}", {"encryption": change})
    assert updated.status_code == 200 and updated.json() == {"encryption": change}
    shown = call(admin, "get", url).json()
    assert (shown["provider"], shown["key_size"], shown["control_location"], shown["cipher"]) == (
        "SomeProvider", 128, "back-end", "aes-xts-plain64")
    # delete removes it; a second delete is a 404
    assert call(admin, "delete", f"{url}/provider").status_code == 202
    assert call(admin, "get", url).json() == {}
    assert call(admin, "delete", f"{url}/provider").status_code == 404


def test_encryption_refusals(bfv: Any) -> None:
    admin, member = bfv.admin(), bfv.member()
    type_id = _type(admin, "enc-refusals")
    url = f"/volume/v3/types/{type_id}/encryption"
    # members may not, bad bodies are 400, unknown types 404
    denied = call(member, "post", url, {"encryption": SPEC})
    assert denied.status_code == 403 and "volume_type_encryption:create" in denied.content.decode()
    assert call(member, "get", url).status_code == 403
    assert call(admin, "post", url, {"encryption": {"cipher": "x"}}).status_code == 400
    assert call(admin, "post", url, {"encryption": {**SPEC, "control_location": "middle"}}).status_code == 400
    assert call(admin, "post", url, {"encryption": {**SPEC, "extra": 1}}).status_code == 400
    assert call(admin, "post", "/volume/v3/types/nope/encryption", {"encryption": SPEC}).status_code == 404


def test_volumes_of_an_encrypted_type_are_encrypted_and_lock_the_spec(bfv: Any) -> None:
    admin, member = bfv.admin(), bfv.member()
    type_id = _type(admin, "enc-used")
    url = f"/volume/v3/types/{type_id}/encryption"
    enc_id = call(admin, "post", url, {"encryption": SPEC}).json()["encryption"]["encryption_id"]
    # when a volume of the type is created it is encrypted; one of the default type is not
    vol = call(member, "post", "/volume/v3/volumes", {"volume": {"size": 1, "volume_type": "enc-used"}})
    assert vol.status_code == 202 and vol.json()["volume"]["encrypted"] is True
    vid = vol.json()["volume"]["id"]
    assert call(member, "get", f"/volume/v3/volumes/{vid}").json()["volume"]["encrypted"] is True
    plain = call(member, "post", "/volume/v3/volumes", {"volume": {"size": 1}}).json()["volume"]
    assert plain["encrypted"] is False
    # then the spec can be neither changed nor deleted, nor created on a used type, while it has volumes
    for method, path, body, verb in (("put", f"{url}/{enc_id}", {"encryption": {"key_size": 512}}, "update"),
                                     ("delete", f"{url}/{enc_id}", None, "delete")):
        refused = call(admin, method, path, body)
        assert refused.status_code == 400, refused.content
        assert refused.json()["badRequest"]["message"] == f"Cannot {verb} encryption specification. Volume type in use."
    used = _type(admin, "enc-late")
    call(member, "post", "/volume/v3/volumes", {"volume": {"size": 1, "volume_type": "enc-late"}})
    refused = call(admin, "post", f"/volume/v3/types/{used}/encryption", {"encryption": SPEC})
    assert refused.json()["badRequest"]["message"] == "Cannot create encryption specification. Volume type in use."

    # and the compute API will not attach it to a server (no key manager: it would be plaintext)
    server = bfv.create_server(member, "enc-vm")
    refused = bfv.post(member, f"servers/{server['id']}/os-volume_attachments", {"volumeAttachment": {"volumeId": vid}})
    assert refused.status_code == 400, refused.content
    assert "is encrypted" in refused.json()["badRequest"]["message"]
    assert call(member, "get", f"/volume/v3/volumes/{vid}").json()["volume"]["status"] == "available"
    # once the volume is gone, the spec can go
    assert call(member, "delete", f"/volume/v3/volumes/{vid}").status_code == 202
    assert call(admin, "delete", f"{url}/{enc_id}").status_code == 202


def test_booting_from_an_encrypted_volume_is_refused(bfv: Any) -> None:
    admin, member = bfv.admin(), bfv.member()
    type_id = _type(admin, "enc-boot")
    call(admin, "post", f"/volume/v3/types/{type_id}/encryption", {"encryption": SPEC})
    # given an existing encrypted volume, a boot from it is refused before anything is recorded
    vid = call(member, "post", "/volume/v3/volumes", {"volume": {"size": 1, "volume_type": "enc-boot",
                                                                 "imageRef": bfv.image_a}}).json()["volume"]["id"]
    bdm = [{"boot_index": 0, "uuid": vid, "source_type": "volume", "destination_type": "volume"}]
    refused = bfv.create_server(member, "enc-boot", image=None, block_device_mapping_v2=bdm, expect=400)
    assert "is encrypted" in refused["badRequest"]["message"]
    # a boot whose new root volume would be of the encrypted type fails its build, and the volume goes
    bdm = [{"boot_index": 0, "uuid": bfv.image_a, "source_type": "image", "destination_type": "volume",
            "volume_size": 1, "volume_type": "enc-boot", "delete_on_termination": True}]
    server = bfv.create_server(member, "enc-new", image=None, block_device_mapping_v2=bdm, version="2.67")
    assert bfv.show(member, server["id"])["status"] == "ERROR"
    volumes = call(member, "get", "/volume/v3/volumes/detail").json()["volumes"]
    assert [v["id"] for v in volumes] == [vid]
