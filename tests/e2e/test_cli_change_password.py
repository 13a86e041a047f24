"""``changePassword`` with the real ``openstack`` CLI on the live cloud: ``server set --password``
asks the server's host, which sets the password through the guest agent (libvirt's test driver)
when the image asked for one, and refuses with Nova's 409 when it did not; with an RSA key pair the
encrypted password is kept for ``os-server-password``, which openstacksdk reads and the key's
private half opens; ``server set --no-password`` forgets it."""
from __future__ import annotations

import base64
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from .cloud import LiveCloud
from .test_cli_security_groups import wait_active

pytestmark = [pytest.mark.slow, pytest.mark.e2e]


def test_change_password_with_the_cli(live_cloud: LiveCloud, tmp_path: Path) -> None:
    cloud = live_cloud
    # given an image that asks for the QEMU guest agent, and an RSA key pair whose private key we keep
    disk = tmp_path / "agent.raw"
    disk.write_bytes(b"\0" * 65536)
    cloud.openstack("image", "create", "--disk-format", "raw", "--container-format", "bare", "--file", str(disk),
                    "--property", "hw_qemu_guest_agent=yes", "agent-image")
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = tmp_path / "key.pub"
    public.write_bytes(private.public_key().public_bytes(serialization.Encoding.OpenSSH,
                                                         serialization.PublicFormat.OpenSSH))
    cloud.openstack("keypair", "create", "--public-key", str(public), "pw-key")
    # and a server of it with the key pair, and a server of the demo image (no agent asked for)
    cloud.openstack("server", "create", "--flavor", "m1.tiny", "--image", "agent-image", "--network", "demo-net",
                    "--key-name", "pw-key", "pw-vm")
    cloud.openstack("server", "create", "--flavor", "m1.tiny", "--image", "tiny", "--network", "demo-net",
                    "pw-plain-vm")
    wait_active(cloud, "pw-vm")
    wait_active(cloud, "pw-plain-vm")

    # when the password of the server with the agent is set, then the CLI succeeds and the server is ACTIVE with no task
    cloud.openstack("server", "set", "--password", "n3w-Pass", "pw-vm")
    shown = cloud.openstack_json("server", "show", "pw-vm")
    assert (shown["status"], shown.get("OS-EXT-STS:task_state")) == ("ACTIVE", None), shown
    # and the encrypted password openstacksdk reads opens with the private key
    conn = cloud.sdk()
    server = conn.compute.find_server("pw-vm")
    encrypted = conn.compute.get_server_password(server)
    assert private.decrypt(base64.b64decode(encrypted), padding.PKCS1v15()) == b"n3w-Pass"
    # and the action list has the changePassword, its host's event a success
    actions = cloud.openstack_json("server", "event", "list", "pw-vm")
    assert actions[0]["Action"] == "changePassword", actions
    # when the password is forgotten, then os-server-password is empty
    cloud.openstack("server", "set", "--no-password", "pw-vm")
    assert conn.compute.get_server_password(server) == ""

    # when the password of the server without the agent is set, then Nova's 409 reaches the CLI
    refused = cloud.openstack("server", "set", "--password", "n3w-Pass", "pw-plain-vm", check=False)
    assert refused.returncode != 0 and "QEMU guest agent is not enabled" in refused.stderr, refused.stderr
    assert cloud.openstack_json("server", "show", "pw-plain-vm").get("OS-EXT-STS:task_state") is None

    for name in ("pw-vm", "pw-plain-vm"):
        cloud.openstack("server", "delete", "--wait", name)
