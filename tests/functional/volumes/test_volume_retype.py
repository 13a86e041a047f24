"""``os-retype`` through Cinder's API: an available or in-use volume changes type in place on its
back end, a needed migration is refused, multiattach changes are refused while in use, and the
per-type quota follows the volume."""
from __future__ import annotations

from typing import Any

import pytest

from tests.functional.volumes.test_volume_api import call

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])
V = "/volume/v3/volumes"


def _type(admin: Any, name: str, **specs: str) -> dict[str, Any]:
    created = call(admin, "post", "/volume/v3/types", {"volume_type": {"name": name, "extra_specs": specs}})
    assert created.status_code == 200, created.content
    return created.json()["volume_type"]


def _volume(client: Any, type_name: str, size: int = 1) -> dict[str, Any]:
    created = call(client, "post", V, {"volume": {"size": size, "volume_type": type_name}})
    assert created.status_code == 202, created.content
    vol = call(client, "get", f"{V}/{created.json()['volume']['id']}").json()["volume"]
    assert vol["status"] == "available"
    return vol


def _retype(client: Any, vid: str, new_type: str, policy: str | None = None) -> Any:
    body: dict[str, Any] = {"new_type": new_type}
    if policy is not None:
        body["migration_policy"] = policy
    return call(client, "post", f"{V}/{vid}/action", {"os-retype": body})


def test_retype_on_the_same_back_end(bfv: Any) -> None:
    admin, member = bfv.admin(), bfv.member()
    _type(admin, "src", volume_backend_name="pool")
    dst = _type(admin, "dst", volume_backend_name="pool", storage_protocol="file")
    _type(admin, "anywhere")
    vol = _volume(member, "src")
    # when the owner retypes it to a type of the same back end, it needs no migration
    assert _retype(member, vol["id"], "dst").status_code == 202
    shown = call(member, "get", f"{V}/{vol['id']}", version="volume 3.63").json()["volume"]
    assert (shown["volume_type"], shown["volume_type_id"], shown["status"]) == ("dst", dst["id"], "available")
    # and a type that names no back end fits anywhere, by id as well as by name
    assert _retype(member, vol["id"], "anywhere", "never").status_code == 202
    # the same type again, an unknown type or a bad policy are refused
    same = _retype(member, vol["id"], "anywhere")
    assert same.status_code == 400 and "same as original" in same.json()["badRequest"]["message"]
    assert _retype(member, vol["id"], "nope").status_code == 404
    assert _retype(member, vol["id"], "dst", "sometimes").status_code == 400
    assert call(member, "post", f"{V}/{vol['id']}/action", {"os-retype": {}}).status_code == 400
    # and another project does not see the volume
    assert _retype(bfv.member("demo2", "demo2"), vol["id"], "dst").status_code == 404


def test_a_needed_migration_or_a_bad_state_is_refused(bfv: Any) -> None:
    admin, member = bfv.admin(), bfv.member()
    _type(admin, "here", volume_backend_name="pool")
    _type(admin, "there", volume_backend_name="lvm-2")
    _type(admin, "iscsi", storage_protocol="iSCSI")
    vol = _volume(member, "here")
    # a type of another back end needs a migration: never allowed with policy never (the default)
    refused = _retype(member, vol["id"], "there")
    assert refused.status_code == 400 and "requires migration" in refused.json()["badRequest"]["message"]
    # and with on-demand there is no other back end to take the volume
    on_demand = _retype(member, vol["id"], "there", "on-demand")
    assert on_demand.status_code == 400 and "No valid backend" in on_demand.json()["badRequest"]["message"]
    # as for a type whose other capabilities this back end lacks
    assert "requires migration" in _retype(member, vol["id"], "iscsi").json()["badRequest"]["message"]
    assert call(member, "get", f"{V}/{vol['id']}").json()["volume"]["volume_type"] == "here"
    # a volume in error cannot be retyped
    call(admin, "post", f"{V}/{vol['id']}/action", {"os-reset_status": {"status": "error"}})
    bad = _retype(member, vol["id"], "there", "on-demand")
    assert bad.status_code == 400 and "must be available or in-use" in bad.json()["badRequest"]["message"]


def test_in_use_volume_keeps_its_multiattach_and_quota_follows_the_type(bfv: Any) -> None:
    admin, member = bfv.admin(), bfv.member()
    _type(admin, "plain")
    _type(admin, "plain2")
    _type(admin, "shared", multiattach="<is> True")
    vol = _volume(member, "plain", size=2)
    # given the volume is in use
    attached = call(member, "post", f"{V}/{vol['id']}/action",
                    {"os-attach": {"mountpoint": "/dev/vdb", "host_name": "host-1"}})
    assert attached.status_code == 202
    assert call(member, "get", f"{V}/{vol['id']}").json()["volume"]["status"] == "in-use"
    # then it cannot become multiattach, but may change to another plain type
    refused = _retype(member, vol["id"], "shared")
    assert refused.status_code == 400 and "multiattach" in refused.json()["badRequest"]["message"]
    assert _retype(member, vol["id"], "plain2").status_code == 202
    # and the per-type usage moved with it
    from identity.models import Project

    demo = str(Project.objects.get(name="demo").id)
    usage = call(member, "get", f"/volume/v3/os-quota-sets/{demo}?usage=True").json()["quota_set"]
    assert (usage["volumes_plain"]["in_use"], usage["volumes_plain2"]["in_use"]) == (0, 1)
    assert usage["gigabytes_plain2"]["in_use"] == 2
    # when the target type's gigabytes quota is too small, the retype is a 413
    call(admin, "put", f"/volume/v3/os-quota-sets/{demo}", {"quota_set": {"gigabytes_plain": 1}})
    over = _retype(member, vol["id"], "plain")
    assert over.status_code == 413 and "gigabytes_plain" in over.json()["overLimit"]["message"]
    # once detached it may become multiattach
    call(member, "post", f"{V}/{vol['id']}/action", {"os-detach": {}})
    assert _retype(member, vol["id"], "shared").status_code == 202
    assert call(member, "get", f"{V}/{vol['id']}").json()["volume"]["multiattach"] is True
