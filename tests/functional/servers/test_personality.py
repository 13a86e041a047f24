"""Personality (create and rebuild below 2.57): the files are checked as Nova checks them (400 for
contents that are not base64, 403 past the project's injected-file limits) and reach the guest's
config drive as ``openstack/content/NNNN`` listed in ``meta_data.json``. Create refused the field
with 400 (Tempest's ``test_server_personality``)."""
from __future__ import annotations

import base64
import json

import pytest

from compute.virt.configdrive import config_drive_files
from tests.cloud import Cloud

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _drive(cloud: Cloud, server_id: str) -> dict[str, bytes]:
    return config_drive_files(cloud.instance(server_id), [])


def test_create_and_rebuild_put_the_files_on_the_config_drive(cloud: Cloud) -> None:
    # given a member who boots at 2.56 with a config drive and one personality file
    client = cloud.member()
    server = cloud.create_server(client, "pers1", version="2.56", config_drive=True,
                                 personality=[{"path": "/test.txt", "contents": _b64("This is a test file.")}])
    cloud.wait_for_status(client, server["id"], "ACTIVE")
    # then the drive lists it in meta_data.json and holds its contents
    drive = _drive(cloud, server["id"])
    meta = json.loads(drive["openstack/latest/meta_data.json"])
    assert meta["files"] == [{"path": "/test.txt", "content_path": "/content/0000"}]
    assert drive["openstack/content/0000"] == b"This is a test file."
    # when it is rebuilt with another file, that file replaces the first
    personality = [{"path": "rebuild.txt", "contents": _b64("Test server rebuild.")}]
    rebuilt = cloud.action(client, server["id"], {"rebuild": {"imageRef": cloud.image_id, "personality": personality}},
                           version="2.56")
    assert rebuilt.status_code == 202, rebuilt.content
    cloud.wait_for_status(client, server["id"], "ACTIVE")
    drive = _drive(cloud, server["id"])
    assert json.loads(drive["openstack/latest/meta_data.json"])["files"] == [
        {"path": "rebuild.txt", "content_path": "/content/0000"}]
    assert drive["openstack/content/0000"] == b"Test server rebuild."


def test_personality_is_checked_like_nova(cloud: Cloud) -> None:
    client = cloud.member()
    # the project's limit (5 files) is allowed
    five = [{"path": f"/test{i}.txt", "contents": _b64(f"file {i}")} for i in range(5)]
    assert cloud.create_server(client, "pers5", version="2.56", personality=five)["id"]
    # one more is a 403 with Nova's words
    six = cloud.create_server(client, "pers6", version="2.56", expect=403,
                              personality=[*five, {"path": "/test5.txt", "contents": _b64("file 5")}])
    assert six["forbidden"]["message"] == "Personality file limit exceeded"
    # a path or a content past its limit too
    long_path = cloud.create_server(client, "persp", version="2.56", expect=403,
                                    personality=[{"path": "/" + "p" * 255, "contents": _b64("x")}])
    assert long_path["forbidden"]["message"] == "Personality file path exceeds maximum 255"
    big = cloud.create_server(client, "persc", version="2.56", expect=403,
                              personality=[{"path": "/big", "contents": _b64("x" * 10241)}])
    assert big["forbidden"]["message"] == "Personality file content exceeds maximum 10240"
    # contents that are not base64 are a 400
    plain = cloud.create_server(client, "persb", version="2.56", expect=400,
                                personality=[{"path": "/etc/testfile.txt", "contents": "This is a test file."}])
    assert plain["badRequest"]["message"] == "Personality content for /etc/testfile.txt cannot be decoded"
    # and from 2.57 the field is gone (400), as in Nova
    cloud.create_server(client, "pers57", version="2.57", expect=400,
                        personality=[{"path": "/a", "contents": _b64("a")}])
