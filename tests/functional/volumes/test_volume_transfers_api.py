"""Volume transfers through Cinder's API: offer (the volume awaits the transfer), list, show,
cancel, and accept by another project with the auth key; the 3.55 /volume-transfers path with
no_snapshots, and 3.57's project fields."""
from __future__ import annotations

from typing import Any

import pytest

from tests.functional.volumes.test_snapshots_api import _volume
from tests.functional.volumes.test_volume_api import call

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])
OLD = "/volume/v3/os-volume-transfer"
NEW = "/volume/v3/volume-transfers"


def test_offer_list_show_and_cancel_a_transfer(bfv: Any) -> None:
    member = bfv.member()
    vol = _volume(member, name="offered")
    # when the owner offers it (the legacy path, before 3.55)
    created = call(member, "post", OLD, {"transfer": {"volume_id": vol["id"], "name": "t1"}}, version="volume 3.0")
    assert created.status_code == 202, created.content
    body = created.json()["transfer"]
    # then the answer carries the auth key once, and no 3.55+ fields
    assert set(body) == {"id", "created_at", "name", "volume_id", "auth_key", "links"}
    assert (body["name"], body["volume_id"]) == ("t1", vol["id"]) and len(body["auth_key"]) == 16
    assert call(member, "get", f"/volume/v3/volumes/{vol['id']}").json()["volume"]["status"] == "awaiting-transfer"
    # and the volume cannot be offered twice nor deleted meanwhile
    assert call(member, "post", OLD, {"transfer": {"volume_id": vol["id"]}}).status_code == 400
    assert call(member, "delete", f"/volume/v3/volumes/{vol['id']}").status_code == 400
    # the brief list, the detailed list and show
    (brief,) = call(member, "get", OLD).json()["transfers"]
    assert set(brief) == {"id", "name", "volume_id", "links"} and brief["id"] == body["id"]
    (detail,) = call(member, "get", f"{OLD}/detail", version="volume 3.0").json()["transfers"]
    assert set(detail) == {"id", "created_at", "name", "volume_id", "links"}
    shown = call(member, "get", f"{OLD}/{body['id']}", version="volume 3.57").json()["transfer"]
    owner = call(bfv.admin(), "get", f"/volume/v3/volumes/{vol['id']}").json()["volume"]["os-vol-tenant-attr:tenant_id"]
    assert (shown["source_project_id"], shown["destination_project_id"], shown["accepted"], shown["no_snapshots"]) \
        == (owner, None, False, False)
    # another project sees nothing
    assert call(bfv.member(name="alt", project="alt"), "get", f"{OLD}/{body['id']}").status_code == 404
    # cancelling gives the volume back
    assert call(member, "delete", f"{OLD}/{body['id']}").status_code == 202
    assert call(member, "get", f"/volume/v3/volumes/{vol['id']}").json()["volume"]["status"] == "available"
    assert call(member, "get", OLD).json()["transfers"] == []
    assert call(member, "get", f"{OLD}/{body['id']}").status_code == 404


def test_another_project_accepts_with_the_auth_key(bfv: Any) -> None:
    member, admin = bfv.member(), bfv.admin()
    vol = _volume(member, name="moving")
    snap = call(member, "post", "/volume/v3/snapshots", {"snapshot": {"volume_id": vol["id"]}}).json()["snapshot"]
    # /volume-transfers needs 3.55
    assert call(member, "post", NEW, {"transfer": {"volume_id": vol["id"]}}, version="volume 3.54").status_code == 404
    created = call(member, "post", NEW, {"transfer": {"volume_id": vol["id"], "no_snapshots": False}},
                   version="volume 3.57")
    assert created.status_code == 202, created.content
    body = created.json()["transfer"]
    assert body["no_snapshots"] is False and body["accepted"] is False and body["destination_project_id"] is None
    # a wrong key is a 400
    wrong = call(admin, "post", f"{NEW}/{body['id']}/accept", {"accept": {"auth_key": "nope"}}, version="volume 3.57")
    assert wrong.status_code == 400
    # the right key moves the volume and its snapshot to the accepting project
    accepted = call(admin, "post", f"{NEW}/{body['id']}/accept", {"accept": {"auth_key": body["auth_key"]}},
                    version="volume 3.57")
    assert accepted.status_code == 202, accepted.content
    assert set(accepted.json()["transfer"]) == {"id", "name", "volume_id", "links"}
    assert call(member, "get", f"/volume/v3/volumes/{vol['id']}").status_code == 404
    moved = call(admin, "get", f"/volume/v3/volumes/{vol['id']}").json()["volume"]
    assert moved["status"] == "available"
    assert [v["id"] for v in call(admin, "get", "/volume/v3/volumes").json()["volumes"]] == [vol["id"]]
    assert [s["id"] for s in call(admin, "get", "/volume/v3/snapshots").json()["snapshots"]] == [snap["id"]]
    # and the transfer is gone
    assert call(member, "get", f"{NEW}/{body['id']}", version="volume 3.57").status_code == 404
