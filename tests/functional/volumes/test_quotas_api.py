"""Cinder's ``os-quota-sets`` through HTTP: show (with usage), defaults, update with its key and
usage checks, delete, the policies, the 413s on volume and snapshot create, and ``/limits``."""
from __future__ import annotations

from typing import Any

import pytest

from identity.models import Project
from tests.functional.volumes.test_volume_api import call

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])

CINDER_DEFAULTS = {"volumes": 10, "snapshots": 10, "gigabytes": 1000, "backups": 10, "backup_gigabytes": 1000,
                   "per_volume_gigabytes": -1, "groups": 10}


def demo_id() -> str:
    return Project.objects.get(name="demo").id


def quota_url(target: str, *, project: str | None = None, suffix: str = "") -> str:
    prefix = f"/volume/v3/{project}" if project else "/volume/v3"
    return f"{prefix}/os-quota-sets/{target}{suffix}"


def project_wide(quota_set: dict[str, Any]) -> dict[str, Any]:
    """The id and the project-wide keys of a quota set (the per-type ``volumes_<type>`` ones left out)."""
    return {key: value for key, value in quota_set.items() if key == "id" or key in CINDER_DEFAULTS}


def fault(response: Any) -> tuple[int, str, str]:
    (name, body), = response.json().items()
    assert body["code"] == response.status_code
    return response.status_code, name, body["message"]


def test_show_defaults_and_usage_in_both_url_forms(bfv: Any) -> None:
    # given a member of demo with one 2 GiB volume
    client = bfv.member()
    project = demo_id()
    assert call(client, "post", "/volume/v3/volumes", {"volume": {"size": 2}}).status_code == 202
    # when it reads its quota set, with and without the project in the URL
    for url in (quota_url(project), quota_url(project, project=project)):
        shown = call(client, "get", url)
        # then it carries its id and Cinder's defaults
        assert shown.status_code == 200
        assert project_wide(shown.json()["quota_set"]) == {"id": project, **CINDER_DEFAULTS}
    assert call(client, "get", quota_url(project) + "?usage=False").json()["quota_set"]["volumes"] == 10
    defaults = call(client, "get", quota_url(project, suffix="/defaults"))
    assert project_wide(defaults.json()["quota_set"]) == {"id": project, **CINDER_DEFAULTS}
    # and with usage every key has limit, in_use, reserved and allocated
    usage = call(client, "get", quota_url(project) + "?usage=True").json()["quota_set"]
    assert usage["id"] == project and set(usage) >= {"id", *CINDER_DEFAULTS}
    assert usage["volumes"] == {"limit": 10, "in_use": 1, "reserved": 0, "allocated": 0}
    assert usage["gigabytes"] == {"limit": 1000, "in_use": 2, "reserved": 0, "allocated": 0}
    assert fault(call(client, "get", quota_url(project) + "?usage=maybe"))[:2] == (400, "badRequest")


def test_only_an_admin_updates_and_deletes_and_members_read_only_their_own(bfv: Any) -> None:
    client, admin = bfv.member(), bfv.admin()
    bfv.member("bob", project="demo2")
    project, other = demo_id(), Project.objects.get(name="demo2").id
    assert fault(call(client, "get", quota_url(other)))[:2] == (403, "forbidden")
    assert fault(call(client, "put", quota_url(project), {"quota_set": {"volumes": 50}}))[:2] == (403, "forbidden")
    assert fault(call(client, "delete", quota_url(project)))[:2] == (403, "forbidden")
    # when the admin sets limits, the answer is the whole set without its id
    updated = call(admin, "put", quota_url(project), {"quota_set": {"volumes": 3, "gigabytes": "20"}})
    assert updated.status_code == 200, updated.content
    assert project_wide(updated.json()["quota_set"]) == {**CINDER_DEFAULTS, "volumes": 3, "gigabytes": 20}
    assert call(client, "get", quota_url(project)).json()["quota_set"]["volumes"] == 3
    # and a delete takes the project back to the defaults (200, no body)
    deleted = call(admin, "delete", quota_url(project))
    assert deleted.status_code == 200 and not deleted.content
    assert project_wide(call(client, "get", quota_url(project)).json()["quota_set"]) == {"id": project,
                                                                                         **CINDER_DEFAULTS}


@pytest.mark.parametrize(("body", "words"), [
    ({"quota_set": {"volumes": 3, "bogus": 1, "nope": 2}}, "Bad key(s) in quota set: bogus,nope"),
    ({"quota_set": {"volumes": -2}}, "volumes must be an integer between -1"),
    ({"quota_set": {"volumes": "x"}}, "volumes must be an integer"),
    ({"quota": {"volumes": 3}}, ""),
])
def test_bad_updates_are_400(bfv: Any, body: dict[str, Any], words: str) -> None:
    bfv.member()
    code, name, message = fault(call(bfv.admin(), "put", quota_url(demo_id()), body))
    assert (code, name) == (400, "badRequest") and words in message


def test_a_limit_below_usage_is_refused_only_without_skip_validation(bfv: Any) -> None:
    # given demo holding one volume
    client, admin = bfv.member(), bfv.admin()
    assert call(client, "post", "/volume/v3/volumes", {"volume": {"size": 1}}).status_code == 202
    url = quota_url(demo_id())
    # when the admin asks for 0 volumes with validation, then 400 in Cinder's words
    code, _, message = fault(call(admin, "put", url, {"quota_set": {"volumes": 0}, "skip_validation": False}))
    assert code == 400 and "Current usage is 1 and the requested limit is 0" in message
    # and Cinder's default (skip_validation true) stores it, the id key is ignored
    assert call(admin, "put", url, {"quota_set": {"volumes": 0, "id": "x"}}).json()["quota_set"]["volumes"] == 0


def test_volume_and_snapshot_creates_are_held_to_the_projects_quotas(bfv: Any) -> None:
    # given demo allowed 2 volumes, 4 GiB, volumes of at most 3 GiB and one snapshot
    client, admin = bfv.member(), bfv.admin()
    call(admin, "put", quota_url(demo_id()),
         {"quota_set": {"volumes": 2, "gigabytes": 4, "per_volume_gigabytes": 3, "snapshots": 1}})

    def create(size: int) -> Any:
        return call(client, "post", "/volume/v3/volumes", {"volume": {"size": size}})

    # a volume bigger than per_volume_gigabytes
    response = create(4)
    assert fault(response) == (413, "overLimit", "Requested volume size 4G is larger than maximum allowed limit 3G.")
    assert response.json()["overLimit"]["retryAfter"] == "0"
    first = create(2).json()["volume"]
    # past gigabytes: 2 used + 3 would exceed 4
    assert fault(create(3)) == (413, "overLimit", "Requested volume or snapshot exceeds allowed gigabytes quota. "
                                "Requested 3G, quota is 4G and 2G has been consumed.")
    assert create(1).status_code == 202
    # past the volumes count
    assert fault(create(1)) == (413, "overLimit",
                                "Maximum number of volumes allowed (2) exceeded for quota 'volumes'.")
    # a snapshot counts against gigabytes (3 used + 2 > 4) and snapshots
    refused = call(client, "post", "/volume/v3/snapshots", {"snapshot": {"volume_id": first["id"]}})
    assert fault(refused)[2].startswith("Requested volume or snapshot exceeds allowed gigabytes quota.")
    call(admin, "put", quota_url(demo_id()), {"quota_set": {"gigabytes": 5}})
    snap = call(client, "post", "/volume/v3/snapshots", {"snapshot": {"volume_id": first["id"]}})
    assert snap.status_code == 202, snap.content
    # and /limits shows the project's limits and usage
    absolute = call(client, "get", "/volume/v3/limits").json()["limits"]["absolute"]
    assert (absolute["maxTotalVolumes"], absolute["maxTotalVolumeGigabytes"], absolute["maxTotalSnapshots"]) == (
        2, 5, 1)
    assert (absolute["totalVolumesUsed"], absolute["totalGigabytesUsed"], absolute["totalSnapshotsUsed"]) == (
        2, 5, 1)
    # with room in gigabytes, the snapshots count refuses the second
    call(admin, "put", quota_url(demo_id()), {"quota_set": {"gigabytes": -1}})
    again = call(client, "post", "/volume/v3/snapshots", {"snapshot": {"volume_id": first["id"]}})
    assert fault(again) == (413, "overLimit", "Maximum number of snapshots allowed (1) exceeded")


def test_snapshot_count_limit(bfv: Any) -> None:
    client, admin = bfv.member(), bfv.admin()
    vol = call(client, "post", "/volume/v3/volumes", {"volume": {"size": 1}}).json()["volume"]
    call(admin, "put", quota_url(demo_id()), {"quota_set": {"snapshots": 0}})
    refused = call(client, "post", "/volume/v3/snapshots", {"snapshot": {"volume_id": vol["id"]}})
    assert fault(refused) == (413, "overLimit", "Maximum number of snapshots allowed (0) exceeded")


def test_extensions_list_quota_sets(bfv: Any) -> None:
    extensions = call(bfv.member(), "get", "/volume/v3/extensions").json()["extensions"]
    assert "os-quota-sets" in {e["alias"] for e in extensions}
