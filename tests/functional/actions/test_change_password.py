"""``changePassword`` through the action API on the in-process cloud: the host sets the password
through the guest agent (libvirt's test driver), as Nova's compute manager and libvirt driver do,
and every refusal is Nova's code and message."""
from __future__ import annotations

import base64

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from cells.context import target_cell
from images.models import Image
from servers.models import Instance, InstanceFault
from tests.cloud import Cloud
from tests.conftest import ALL_DATABASES

pytestmark = pytest.mark.django_db(databases=ALL_DATABASES)


def _agent_image(cloud: Cloud, **properties: str) -> None:
    """The demo image asks for the QEMU guest agent (and has ``properties``) from now on."""
    image = Image.objects.get(id=cloud.image_id)
    image.properties = {**(image.properties or {}), "hw_qemu_guest_agent": "yes", **properties}
    image.save(update_fields=["properties"])


def _active(cloud: Cloud, client: object, name: str = "vm1", **fields: object) -> dict:
    server = cloud.create_server(client, name, **fields)
    return cloud.wait_for_status(client, server["id"], "ACTIVE")


def _change(cloud: Cloud, client: object, server_id: str, password: str = "s3cret!") -> object:
    return cloud.action(client, server_id, {"changePassword": {"adminPass": password}})


def _events(cloud: Cloud, client: object, server_id: str) -> tuple[dict, list[dict]]:
    actions = cloud.get(client, f"servers/{server_id}/os-instance-actions").json()["instanceActions"]
    latest = actions[0]
    detail = cloud.get(client, f"servers/{server_id}/os-instance-actions/{latest['request_id']}",
                       version="2.51").json()["instanceAction"]
    return latest, detail["events"]


def test_the_agent_sets_roots_password_and_the_task_is_given_back(cloud: Cloud) -> None:
    # given an ACTIVE server of an image that asks for the guest agent
    _agent_image(cloud)
    client = cloud.member()
    server = _active(cloud, client)
    # when its member changes the password
    response = _change(cloud, client, server["id"])
    # then 202 with no body, the agent got root's new password, and the server has no task left
    assert response.status_code == 202, response.content
    assert response.content == b""
    host = cloud.instance(server["id"]).host
    assert cloud.driver(host).passwords[server["id"]] == ("root", "s3cret!")
    shown = cloud.show(client, server["id"])
    assert (shown["status"], shown["OS-EXT-STS:task_state"]) == ("ACTIVE", None)
    # and the action is recorded with the host's event
    action, events = _events(cloud, client, server["id"])
    assert action["action"] == "changePassword"
    assert [(e["event"], e["result"]) for e in events] == [("compute_set_admin_password", "Success")]


def test_the_user_is_the_images_admin_user_else_administrator_on_windows(cloud: Cloud) -> None:
    # given servers of a Windows image, then of an image naming its admin user
    client = cloud.member()
    _agent_image(cloud, os_type="windows")
    windows = _active(cloud, client, "win")
    _agent_image(cloud, os_admin_user="cloud-user")
    named = _active(cloud, client, "named")
    # when their passwords are changed, then the agent is asked for Administrator, then the named user
    for server, user in ((windows, "Administrator"), (named, "cloud-user")):
        assert _change(cloud, client, server["id"]).status_code == 202
        assert cloud.driver(cloud.instance(server["id"]).host).passwords[server["id"]] == (user, "s3cret!")


def test_an_image_without_the_agent_is_409_and_nothing_changes(cloud: Cloud) -> None:
    # given an ACTIVE server of an image that did not ask for the agent
    client = cloud.member()
    server = _active(cloud, client)
    # when its password is changed, then Nova's 409 and message, no password set, no task left
    response = _change(cloud, client, server["id"])
    assert response.status_code == 409
    assert response.json()["conflictingRequest"]["message"] == "QEMU guest agent is not enabled"
    assert server["id"] not in cloud.driver(cloud.instance(server["id"]).host).passwords
    assert cloud.show(client, server["id"])["OS-EXT-STS:task_state"] is None
    # and the action's event is an Error
    _action, events = _events(cloud, client, server["id"])
    assert [(e["event"], e["result"]) for e in events] == [("compute_set_admin_password", "Error")]


def test_a_failing_agent_is_409_without_the_cause_and_an_unresponsive_one_501(cloud: Cloud) -> None:
    # given an ACTIVE server with the agent, on a host whose agent calls fail
    _agent_image(cloud)
    client = cloud.member()
    server = _active(cloud, client)
    driver = cloud.driver(cloud.instance(server["id"]).host)
    driver.fail_set_passwords = 1
    # when the password is changed, then Nova's 409 names no cause, and the server stays ACTIVE
    response = _change(cloud, client, server["id"])
    assert response.status_code == 409
    assert response.json()["conflictingRequest"]["message"] == (
        f"Failed to set admin password on {server['id']} because error setting admin password")
    shown = cloud.show(client, server["id"])
    assert (shown["status"], shown["OS-EXT-STS:task_state"]) == ("ACTIVE", None)
    # and the fault kept is that error, never the password
    with target_cell(cloud.cell_of(server["id"])):
        fault = InstanceFault.objects.filter(instance_uuid=server["id"]).latest("id")
    assert (fault.code, "s3cret!" in fault.message + fault.details) == (409, False)
    # when the agent does not answer, then Nova's 501
    driver.fail_set_passwords, driver.set_password_error = 1, "unresponsive"
    response = _change(cloud, client, server["id"])
    assert response.status_code == 501
    assert response.json()["notImplemented"]["message"] == "Unable to set password on instance"
    assert cloud.show(client, server["id"])["OS-EXT-STS:task_state"] is None
    # and the next change works
    assert _change(cloud, client, server["id"]).status_code == 202


def test_wrong_states_and_locks_are_409(cloud: Cloud) -> None:
    # given a stopped server with the agent
    _agent_image(cloud)
    client = cloud.member()
    server = _active(cloud, client)
    assert cloud.action(client, server["id"], {"os-stop": None}).status_code == 202
    # when its password is changed, then Nova's invalid-state 409
    response = _change(cloud, client, server["id"])
    assert response.status_code == 409
    assert response.json()["conflictingRequest"]["message"] == (
        f"Cannot 'changePassword' instance {server['id']} while it is in vm_state stopped")
    # given it started again and locked by an admin: the member is refused, the admin is not
    assert cloud.action(client, server["id"], {"os-start": None}).status_code == 202
    admin = cloud.admin()
    assert cloud.action(admin, server["id"], {"lock": None}).status_code == 202
    assert _change(cloud, client, server["id"]).status_code == 409
    assert _change(cloud, admin, server["id"]).status_code == 202


def test_a_guest_that_is_not_running_is_409(cloud: Cloud) -> None:
    # given an ACTIVE server whose guest stopped on its own (the database has not seen it yet)
    _agent_image(cloud)
    client = cloud.member()
    server = _active(cloud, client)
    cloud.domain(server["id"]).destroy()
    # when its password is changed, then Nova's 409 for a guest that does not run
    response = _change(cloud, client, server["id"])
    assert response.status_code == 409
    assert response.json()["conflictingRequest"]["message"] == (
        f"Failed to set admin password on {server['id']} because instance {server['id']} is not running")


def test_with_an_rsa_key_pair_the_encrypted_password_is_readable_by_its_owner(cloud: Cloud) -> None:
    # given a server with the agent, booted with an RSA key pair whose private key the user keeps
    _agent_image(cloud)
    client = cloud.member()
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = private.public_key().public_bytes(serialization.Encoding.OpenSSH,
                                               serialization.PublicFormat.OpenSSH).decode()
    assert cloud.post(client, "os-keypairs", {"keypair": {"name": "k1", "public_key": public}},
                      version="2.1").status_code == 200
    server = _active(cloud, client, key_name="k1")
    assert cloud.get(client, f"servers/{server['id']}/os-server-password").json() == {"password": ""}
    # when its password is changed
    assert _change(cloud, client, server["id"], "n3w-pass").status_code == 202
    # then os-server-password gives the password encrypted with the key, which its private key opens
    encrypted = cloud.get(client, f"servers/{server['id']}/os-server-password").json()["password"]
    assert private.decrypt(base64.b64decode(encrypted), padding.PKCS1v15()) == b"n3w-pass"
    with target_cell(cloud.cell_of(server["id"])):
        assert "n3w-pass" not in str(Instance.objects.get(uuid=server["id"]).system_metadata)
