"""Images end to end with the real ``openstack`` CLI against the live cloud: a qcow2 image uploaded
(its format read from its bytes) and booted on the test driver, a mislabelled one refused, an image
shared with another project that accepts it, and a protected image that cannot be deleted."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from .cloud import LiveCloud
from .test_cli_security_groups import wait_active

pytestmark = [pytest.mark.slow, pytest.mark.e2e]


def test_qcow2_images_sharing_and_a_mislabelled_upload_with_the_cli(live_cloud: LiveCloud, tmp_path: Path) -> None:
    cloud = live_cloud
    disk = tmp_path / "x.qcow2"
    subprocess.run(["qemu-img", "create", "-f", "qcow2", str(disk), "8M"], check=True,  # noqa: S607
                   capture_output=True)
    try:
        # a qcow2 image uploaded by the demo project, shared
        cloud.openstack("image", "create", "--disk-format", "qcow2", "--container-format", "bare",
                        "--file", str(disk), "--shared", "e2e-qcow2")
        image = cloud.openstack_json("image", "show", "e2e-qcow2")
        assert image["status"] == "active" and image["disk_format"] == "qcow2", image
        assert image["virtual_size"] == 8 * 1024 * 1024, image

        # the same bytes labelled raw are refused with Glance's message
        refused = cloud.openstack("image", "create", "--disk-format", "raw", "--container-format", "bare",
                                  "--file", str(disk), "e2e-mislabelled", check=False)
        assert refused.returncode != 0 and "does not match disk_format raw" in refused.stderr, refused.stderr
        assert not [i for i in cloud.openstack_json("image", "list") if i["Name"] == "e2e-mislabelled"
                    and i["Status"] == "active"]

        # a server boots from the qcow2 image on the test driver
        cloud.openstack("server", "create", "--flavor", "m1.tiny", "--image", "e2e-qcow2", "--network", "demo-net",
                        "e2e-qcow2-vm")
        shown = wait_active(cloud, "e2e-qcow2-vm")
        assert image["id"] in str(shown["image"]), shown

        # shared with demo2, which sees it in its list only after accepting
        demo2 = cloud.openstack_json("project", "show", "demo2", cloud="cloudcore-admin")["id"]
        cloud.openstack("image", "add", "project", "e2e-qcow2", demo2)
        members = cloud.openstack_json("image", "member", "list", "e2e-qcow2")
        assert [(m["Member ID"], m["Status"]) for m in members] == [(demo2, "pending")], members
        listed = cloud.openstack_json("image", "list", cloud="cloudcore-demo2")
        assert image["id"] not in {i["ID"] for i in listed}
        cloud.openstack("image", "set", "--accept", image["id"], cloud="cloudcore-demo2")
        listed = cloud.openstack_json("image", "list", cloud="cloudcore-demo2")
        assert image["id"] in {i["ID"] for i in listed}

        # protected: the delete is refused until it is unprotected
        cloud.openstack("image", "set", "--protected", "e2e-qcow2")
        assert cloud.openstack("image", "delete", "e2e-qcow2", check=False).returncode != 0
        cloud.openstack("image", "set", "--unprotected", "e2e-qcow2")
    finally:
        cloud.openstack("server", "delete", "--wait", "e2e-qcow2-vm", check=False)
        for leftover in cloud.openstack_json("image", "list"):
            if leftover["Name"] in ("e2e-qcow2", "e2e-mislabelled"):
                cloud.openstack("image", "set", "--unprotected", leftover["ID"], check=False)
                cloud.openstack("image", "delete", leftover["ID"], check=False)


def test_a_server_snapshot_holds_the_servers_disk(live_cloud: LiveCloud) -> None:
    """``openstack server image create``: the compute host uploads the disk to the image service in a
    chunked request (no Content-Length), which the web stored as an empty image until 4161a81. The
    test driver's disk is the image it booted from, so the snapshot has that image's bytes."""
    cloud = live_cloud
    try:
        cloud.openstack("server", "create", "--flavor", "m1.tiny", "--image", "tiny", "--network", "demo-net",
                        "e2e-snap-src")
        wait_active(cloud, "e2e-snap-src")
        cloud.openstack("server", "image", "create", "--wait", "--name", "e2e-snap", "e2e-snap-src")
        source = cloud.openstack_json("image", "show", "tiny")
        snapshot = cloud.openstack_json("image", "show", "e2e-snap")
        assert snapshot["status"] == "active", snapshot
        assert (snapshot["size"], snapshot["checksum"]) == (source["size"], source["checksum"]), snapshot
        assert snapshot["size"] > 0
        # and a server boots from it
        cloud.openstack("server", "create", "--flavor", "m1.tiny", "--image", "e2e-snap", "--network", "demo-net",
                        "e2e-snap-copy")
        assert wait_active(cloud, "e2e-snap-copy")["status"] == "ACTIVE"
    finally:
        for name in ("e2e-snap-copy", "e2e-snap-src"):
            cloud.openstack("server", "delete", "--wait", name, check=False)
        cloud.openstack("image", "delete", "e2e-snap", check=False)
