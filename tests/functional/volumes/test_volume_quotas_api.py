"""Cinder's os-quota-sets for volumes, snapshots and gigabytes: show (with usage), defaults,
update and reset by admins, and the limits enforced on volume create, snapshot create and extend
with Cinder's 413."""
from __future__ import annotations

from typing import Any

import pytest

from tests.functional.volumes.test_volume_api import call

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])


def _project_id(name: str) -> str:
    from identity.models import Project

    return str(Project.objects.get(name=name).id)


def test_show_defaults_update_and_reset(bfv: Any) -> None:
    admin, member = bfv.admin(), bfv.member()
    demo = _project_id("demo")
    path = f"/volume/v3/{demo}/os-quota-sets/{demo}"
    # given the demo project with one 2 GiB volume and a snapshot of it
    vid = call(member, "post", "/volume/v3/volumes", {"volume": {"size": 2}}).json()["volume"]["id"]
    call(member, "post", "/volume/v3/snapshots", {"snapshot": {"volume_id": vid}})
    # then the member reads its quotas: Cinder's defaults, per type too
    shown = call(member, "get", path).json()["quota_set"]
    assert shown["id"] == demo
    assert {k: shown[k] for k in ("volumes", "snapshots", "gigabytes", "per_volume_gigabytes")} == {
        "volumes": 10, "snapshots": 10, "gigabytes": 1000, "per_volume_gigabytes": -1}
    assert shown["volumes___DEFAULT__"] == -1
    assert call(member, "get", f"{path}/defaults").json()["quota_set"]["gigabytes"] == 1000
    # and with usage=true each resource has limit/in_use/reserved (snapshots count in gigabytes)
    used = call(member, "get", f"{path}?usage=true").json()["quota_set"]
    assert used["volumes"] == {"limit": 10, "in_use": 1, "reserved": 0, "allocated": 0}
    assert used["gigabytes"] == {"limit": 1000, "in_use": 4, "reserved": 0, "allocated": 0}
    assert used["snapshots"]["in_use"] == 1 and used["volumes___DEFAULT__"]["in_use"] == 1
    # and another project's quotas are not the member's to read; updates are the admin's
    assert call(member, "get", f"/volume/v3/os-quota-sets/{_project_id('admin')}").status_code == 403
    assert call(member, "put", path, {"quota_set": {"volumes": 20}}).status_code == 403
    # when the admin updates them, the new limits read back (no id in the update's answer)
    updated = call(admin, "put", path, {"quota_set": {"volumes": 5, "gigabytes": "50"}})
    assert updated.status_code == 200, updated.content
    assert "id" not in updated.json()["quota_set"] and updated.json()["quota_set"]["gigabytes"] == 50
    assert call(member, "get", path).json()["quota_set"]["volumes"] == 5
    # and bad keys, bad values and (with skip_validation false) limits below usage are 400s
    for body in ({"quota_set": {"colour": 1}}, {"quota_set": {"volumes": -2}}, {"quota_set": {"volumes": "many"}},
                 {"quota_set": {"gigabytes": 3}, "skip_validation": False}):
        refused = call(admin, "put", path, body)
        assert refused.status_code == 400, body
    # when they are reset, the defaults are back
    assert call(admin, "delete", path).status_code == 200
    assert call(member, "get", path).json()["quota_set"]["volumes"] == 10


def test_limits_are_enforced_with_413(bfv: Any) -> None:
    admin, member = bfv.admin(), bfv.member()
    demo = _project_id("demo")
    call(admin, "put", f"/volume/v3/os-quota-sets/{demo}", {"quota_set": {"volumes": 1, "snapshots": 1,
                                                                           "gigabytes": 3}})
    vid = call(member, "post", "/volume/v3/volumes", {"volume": {"size": 1}}).json()["volume"]["id"]
    # a second volume passes the volumes limit
    refused = call(member, "post", "/volume/v3/volumes", {"volume": {"size": 1}})
    assert refused.status_code == 413
    message = refused.json()["overLimit"]["message"]
    assert message == "Maximum number of volumes allowed (1) exceeded for quota 'volumes'."
    # a snapshot fits (1 + 1 GiB), a second one does not
    snap = {"snapshot": {"volume_id": vid}}
    assert call(member, "post", "/volume/v3/snapshots", snap).status_code == 202
    assert call(member, "post", "/volume/v3/snapshots", snap).status_code == 413
    # growing the volume past the gigabytes is refused and leaves it as it was
    grown = call(member, "post", f"/volume/v3/volumes/{vid}/action", {"os-extend": {"new_size": 3}})
    assert grown.status_code == 413 and "gigabytes quota" in grown.json()["overLimit"]["message"]
    shown = call(member, "get", f"/volume/v3/volumes/{vid}").json()["volume"]
    assert (shown["size"], shown["status"]) == (1, "available")
    # and the limits view reports the same quotas and usage
    absolute = call(member, "get", "/volume/v3/limits").json()["limits"]["absolute"]
    assert (absolute["maxTotalVolumes"], absolute["totalVolumesUsed"], absolute["totalSnapshotsUsed"],
            absolute["totalGigabytesUsed"]) == (1, 1, 1, 2)


def test_the_default_quota_class_sets_every_projects_defaults(bfv: Any) -> None:
    admin, member = bfv.admin(), bfv.member()
    demo = _project_id("demo")
    path = "/volume/v3/os-quota-class-sets/default"
    # an admin reads the default class: Cinder's defaults, with the class name as id
    shown = call(admin, "get", path)
    assert shown.status_code == 200, shown.content
    body = shown.json()["quota_class_set"]
    assert (body["id"], body["volumes"], body["gigabytes"], body["per_volume_gigabytes"]) == ("default", 10, 1000, -1)
    # a member may neither read nor write it
    assert call(member, "get", path).status_code == 403
    assert call(member, "put", path, {"quota_class_set": {"volumes": 1}}).status_code == 403
    # when the admin raises defaults (a per-type one too), the answer has them and no id
    call(admin, "post", "/volume/v3/types", {"volume_type": {"name": "gold"}})
    updated = call(admin, "put", path, {"quota_class_set": {"volumes": 11, "volumes_gold": 3}})
    assert updated.status_code == 200, updated.content
    body = updated.json()["quota_class_set"]
    assert "id" not in body and (body["volumes"], body["volumes_gold"], body["snapshots"]) == (11, 3, 10)
    # then every project's defaults and limits follow, unless it set its own
    defaults = call(member, "get", f"/volume/v3/os-quota-sets/{demo}/defaults").json()["quota_set"]
    assert (defaults["volumes"], defaults["volumes_gold"]) == (11, 3)
    assert call(member, "get", f"/volume/v3/os-quota-sets/{demo}").json()["quota_set"]["volumes"] == 11
    # and an unknown resource or a bad limit is a 400
    assert call(admin, "put", path, {"quota_class_set": {"bogus": 1}}).status_code == 400
    assert call(admin, "put", path, {"quota_class_set": {"volumes": -2}}).status_code == 400


def test_boolean_word_parameters_take_the_words_and_refuse_others_with_their_messages(bfv: Any) -> None:
    """usage, skip_validation, is_public, cascade and force take true/false, 1/0, yes/no and
    on/off in any case; any other word is a 400 naming the parameter as Cinder words it."""
    admin, member = bfv.admin(), bfv.member()
    demo = _project_id("demo")
    path = f"/volume/v3/{demo}/os-quota-sets/{demo}"
    vid = call(member, "post", "/volume/v3/volumes", {"volume": {"size": 1}}).json()["volume"]["id"]

    def refused(response: Any) -> str:
        assert response.status_code == 400, response.content
        return str(response.json()["badRequest"]["message"])

    # usage: ON is a yes (limit/in_use per resource), Off a no, maybe a 400
    assert call(member, "get", f"{path}?usage=ON").json()["quota_set"]["volumes"]["in_use"] == 1
    assert call(member, "get", f"{path}?usage=Off").json()["quota_set"]["volumes"] == 10
    assert refused(call(member, "get", f"{path}?usage=maybe")) == (
        "Invalid input received: Invalid value 'maybe' for usage.")
    # skip_validation: "no" checks the limit against usage (1 volume of 1 GiB), "yes" does not
    assert call(admin, "put", path, {"quota_set": {"volumes": 0}, "skip_validation": "no"}).status_code == 400
    assert call(admin, "put", path, {"quota_set": {"volumes": 0}, "skip_validation": "yes"}).status_code == 200
    assert refused(call(admin, "put", path, {"quota_set": {"volumes": 5}, "skip_validation": "sure"})) == (
        "Invalid input received: Invalid value 'sure' for skip_validation.")
    call(admin, "delete", path)
    # is_public: a filter word or none
    assert call(admin, "get", "/volume/v3/types?is_public=0").status_code == 200
    assert refused(call(admin, "get", "/volume/v3/types?is_public=public")) == "Invalid is_public filter [public]"
    # force of a snapshot of a volume
    bad_force = call(member, "post", "/volume/v3/snapshots", {"snapshot": {"volume_id": vid, "force": "always"}})
    assert refused(bad_force) == "Invalid input received: always is not a valid boolean value for force."
    forced = call(member, "post", "/volume/v3/snapshots", {"snapshot": {"volume_id": vid, "force": "No"}})
    assert forced.status_code == 202
    # cascade of a volume delete: a word it does not know is refused and the volume stays
    assert refused(call(member, "delete", f"/volume/v3/volumes/{vid}?cascade=all")) == (
        "Invalid input received: Invalid value 'all' for cascade.")
    assert call(member, "delete", f"/volume/v3/volumes/{vid}?cascade=TRUE").status_code == 202
