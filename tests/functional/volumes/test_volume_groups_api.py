"""Generic volume groups through Cinder's API as the clients call it: group types and their specs
(3.11, admins), groups (3.13: create, list, show, update with add/remove volumes, delete with
delete-volumes), group snapshots (3.14) and groups created from a group snapshot or a source group
(3.14), the admins' reset_status (3.19 / 3.20); each below its microversion a 404."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from tests.functional.volumes.test_volume_api import call

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])
V = "volume 3.20"


def _group_type(admin: Any, name: str = "gt-1", **extra: Any) -> dict[str, Any]:
    created = call(admin, "post", "/volume/v3/group_types", {"group_type": {"name": name, **extra}}, version=V)
    assert created.status_code == 202, created.content
    return dict(created.json()["group_type"])


def _group(client: Any, group_type: str, volume_types: list[str], name: str = "grp") -> dict[str, Any]:
    created = call(client, "post", "/volume/v3/groups",
                   {"group": {"name": name, "group_type": group_type, "volume_types": volume_types}}, version=V)
    assert created.status_code == 202, created.content
    return dict(created.json()["group"])


def _volume(client: Any, **extra: Any) -> dict[str, Any]:
    created = call(client, "post", "/volume/v3/volumes", {"volume": {"size": 1, **extra}}, version=V)
    assert created.status_code == 202, created.content
    return dict(created.json()["volume"])


def _vtype(admin: Any, name: str = "vt-grp") -> str:
    created = call(admin, "post", "/volume/v3/types", {"volume_type": {"name": name}})
    return str(created.json()["volume_type"]["id"])


def test_group_types_and_specs(bfv: Any) -> None:
    admin, member = bfv.admin(), bfv.member()
    # below 3.11 there are no group types
    assert call(admin, "get", "/volume/v3/group_types", version="volume 3.10").status_code == 404
    gt = _group_type(admin, "gt-specs", description="d", group_specs={"consistent_group_snapshot_enabled": "<is> True"})
    assert gt["group_specs"] == {"consistent_group_snapshot_enabled": "<is> True"} and gt["is_public"] is True
    url = f"/volume/v3/group_types/{gt['id']}"
    # members see public types without specs and cannot create
    shown = call(member, "get", url, version=V).json()["group_type"]
    assert shown["name"] == "gt-specs" and "group_specs" not in shown
    assert call(member, "post", "/volume/v3/group_types", {"group_type": {"name": "x"}}, version=V).status_code == 403
    # update, list, duplicate name
    updated = call(admin, "put", url, {"group_type": {"name": "gt-renamed", "is_public": False}}, version=V)
    assert updated.status_code == 200 and updated.json()["group_type"]["name"] == "gt-renamed"
    assert call(member, "get", url, version=V).status_code == 404
    names = [t["name"] for t in call(admin, "get", "/volume/v3/group_types?is_public=false", version=V).json()[
        "group_types"]]
    assert names == ["gt-renamed"]
    _group_type(admin, "gt-other")
    assert call(admin, "put", url, {"group_type": {"name": "gt-other"}}, version=V).status_code == 409
    # specs: set, list, show one, update one, delete one
    specs_set = call(admin, "post", f"{url}/group_specs", {"group_specs": {"k1": "v1"}}, version=V)
    assert specs_set.status_code == 202 and specs_set.json() == {"group_specs": {"k1": "v1"}}
    specs = call(admin, "get", f"{url}/group_specs", version=V).json()["group_specs"]
    assert specs == {"consistent_group_snapshot_enabled": "<is> True", "k1": "v1"}
    assert call(admin, "get", f"{url}/group_specs/k1", version=V).json() == {"k1": "v1"}
    assert call(admin, "put", f"{url}/group_specs/k1", {"k1": "v2"}, version=V).json() == {"k1": "v2"}
    assert call(admin, "put", f"{url}/group_specs/k1", {"k9": "v2"}, version=V).status_code == 400
    assert call(admin, "delete", f"{url}/group_specs/k1", version=V).status_code == 202
    assert call(admin, "get", f"{url}/group_specs/k1", version=V).status_code == 404
    # delete
    assert call(admin, "delete", url, version=V).status_code == 202
    assert call(admin, "get", url, version=V).status_code == 404


def test_group_lifecycle_update_and_delete_with_volumes(bfv: Any) -> None:
    admin, member = bfv.admin(), bfv.member()
    gt, vt = _group_type(admin), _vtype(admin)
    # below 3.13 there are no groups
    assert call(member, "get", "/volume/v3/groups", version="volume 3.12").status_code == 404
    grp = _group(member, gt["id"], [vt])
    assert set(grp) == {"id", "name"}
    shown = call(member, "get", f"/volume/v3/groups/{grp['id']}", version=V).json()["group"]
    assert (shown["status"], shown["group_type"], shown["volume_types"]) == ("available", gt["id"], [vt])
    assert shown["group_snapshot_id"] is None and "project_id" not in shown
    assert call(member, "get", f"/volume/v3/groups/{grp['id']}", version="volume 3.58").json()["group"][
        "project_id"]
    assert [g["id"] for g in call(member, "get", "/volume/v3/groups", version=V).json()["groups"]] == [grp["id"]]
    assert call(member, "get", "/volume/v3/groups/detail", version=V).json()["groups"][0]["status"] == "available"
    # a volume is created into it (its type must be one of the group's)
    inside = _volume(member, volume_type="vt-grp", group_id=grp["id"])
    assert call(member, "get", f"/volume/v3/volumes/{inside['id']}", version=V).json()["volume"]["group_id"] == grp[
        "id"]
    wrong = call(member, "post", "/volume/v3/volumes", {"volume": {"size": 1, "group_id": grp["id"]}}, version=V)
    assert wrong.status_code == 400 and "Invalid volume_type" in wrong.content.decode()
    # update: rename, add a volume of the type, remove it again
    outside = _volume(member, volume_type="vt-grp")
    assert call(member, "put", f"/volume/v3/groups/{grp['id']}",
                {"group": {"name": "renamed", "add_volumes": outside["id"]}}, version=V).status_code == 202
    listed = call(member, "get", f"/volume/v3/groups/{grp['id']}?list_volume=True", version="volume 3.25").json()
    assert listed["group"]["name"] == "renamed" and sorted(listed["group"]["volumes"]) == sorted(
        [inside["id"], outside["id"]])
    plain = _volume(member)
    refused = call(member, "put", f"/volume/v3/groups/{grp['id']}", {"group": {"add_volumes": plain["id"]}},
                   version=V)
    assert refused.status_code == 400 and "not supported by the group" in refused.content.decode()
    assert call(member, "put", f"/volume/v3/groups/{grp['id']}", {"group": {"remove_volumes": outside["id"]}},
                version=V).status_code == 202
    assert call(member, "get", f"/volume/v3/volumes/{outside['id']}", version=V).json()["volume"]["group_id"] is None
    # delete without delete-volumes is refused while it has volumes; with it, they go too
    refused = call(member, "post", f"/volume/v3/groups/{grp['id']}/action", {"delete": {}}, version=V)
    assert refused.status_code == 400 and "delete-volumes flag is required" in refused.content.decode()
    assert call(member, "post", f"/volume/v3/groups/{grp['id']}/action", {"delete": {"delete-volumes": True}},
                version=V).status_code == 202
    assert call(member, "get", f"/volume/v3/groups/{grp['id']}", version=V).status_code == 404
    assert call(member, "get", f"/volume/v3/volumes/{inside['id']}", version=V).status_code == 404
    assert call(member, "get", f"/volume/v3/volumes/{outside['id']}", version=V).status_code == 200
    # another project sees nothing; the type cannot go while a group uses it
    other = _group(member, gt["id"], [vt], name="g2")
    assert call(bfv.member("eve", "demo2"), "get", f"/volume/v3/groups/{other['id']}", version=V).status_code == 404
    assert call(admin, "delete", f"/volume/v3/group_types/{gt['id']}", version=V).status_code == 400


def test_group_snapshots_and_groups_from_sources(bfv: Any) -> None:
    admin, member = bfv.admin(), bfv.member()
    gt, vt = _group_type(admin), _vtype(admin)
    grp = _group(member, gt["id"], [vt])
    vols = [_volume(member, volume_type="vt-grp", group_id=grp["id"]) for _ in range(2)]
    pool = Path(settings.VOLUME_POOL_DIR)
    for i, vol in enumerate(vols):
        with open(pool / f"volume-{vol['id']}", "r+b") as fh:
            fh.write(f"GROUP-{i}".encode())
    # below 3.14 there are no group snapshots
    assert call(member, "get", "/volume/v3/group_snapshots", version="volume 3.13").status_code == 404
    created = call(member, "post", "/volume/v3/group_snapshots",
                   {"group_snapshot": {"group_id": grp["id"], "name": "gs"}}, version=V)
    assert created.status_code == 202, created.content
    gs_id = created.json()["group_snapshot"]["id"]
    shown = call(member, "get", f"/volume/v3/group_snapshots/{gs_id}", version=V).json()["group_snapshot"]
    assert (shown["status"], shown["group_id"], shown["name"]) == ("available", grp["id"], "gs")
    snaps = call(member, "get", "/volume/v3/snapshots/detail", version=V).json()["snapshots"]
    assert sorted(s["volume_id"] for s in snaps if s["group_snapshot_id"] == gs_id) == sorted(v["id"] for v in vols)
    assert [g["id"] for g in call(member, "get", "/volume/v3/group_snapshots/detail", version=V).json()[
        "group_snapshots"]] == [gs_id]

    # a group from the group snapshot: a volume from each snapshot, with its bytes
    from_snap = call(member, "post", "/volume/v3/groups/action",
                     {"create-from-src": {"name": "from-gs", "group_snapshot_id": gs_id}}, version=V)
    assert from_snap.status_code == 202, from_snap.content
    new_group = call(member, "get", f"/volume/v3/groups/{from_snap.json()['group']['id']}", version=V).json()["group"]
    assert (new_group["status"], new_group["group_snapshot_id"]) == ("available", gs_id)
    members = [v for v in call(member, "get", "/volume/v3/volumes/detail", version=V).json()["volumes"]
               if v["group_id"] == new_group["id"]]
    assert len(members) == 2 and {v["status"] for v in members} == {"available"}
    assert sorted((pool / f"volume-{v['id']}").read_bytes()[:7] for v in members) == [b"GROUP-0", b"GROUP-1"]
    # a group from a source group: a clone of each volume
    from_group = call(member, "post", "/volume/v3/groups/action",
                      {"create-from-src": {"name": "from-grp", "source_group_id": grp["id"]}}, version=V)
    assert from_group.status_code == 202
    clone_group = from_group.json()["group"]["id"]
    clones = [v for v in call(member, "get", "/volume/v3/volumes/detail", version=V).json()["volumes"]
              if v["group_id"] == clone_group]
    assert sorted(v["source_volid"] for v in clones) == sorted(v["id"] for v in vols)
    # both sources at once, or neither, is a 400
    assert call(member, "post", "/volume/v3/groups/action", {"create-from-src": {}}, version=V).status_code == 400

    # a group with group snapshots cannot go; the group snapshot can, with its snapshots
    refused = call(member, "post", f"/volume/v3/groups/{grp['id']}/action", {"delete": {"delete-volumes": True}},
                   version=V)
    assert refused.status_code == 400
    assert call(member, "delete", f"/volume/v3/group_snapshots/{gs_id}", version=V).status_code == 202
    assert call(member, "get", f"/volume/v3/group_snapshots/{gs_id}", version=V).status_code == 404
    assert not [s for s in call(member, "get", "/volume/v3/snapshots/detail", version=V).json()["snapshots"]
                if s["group_snapshot_id"] == gs_id]
    assert call(member, "post", f"/volume/v3/groups/{grp['id']}/action", {"delete": {"delete-volumes": True}},
                version=V).status_code == 202


def test_reset_status_of_groups_and_group_snapshots(bfv: Any) -> None:
    admin, member = bfv.admin(), bfv.member()
    gt, vt = _group_type(admin), _vtype(admin)
    grp = _group(member, gt["id"], [vt])
    action = f"/volume/v3/groups/{grp['id']}/action"
    assert call(member, "post", action, {"reset_status": {"status": "error"}}, version=V).status_code == 403
    assert call(admin, "post", action, {"reset_status": {"status": "error"}}, version="volume 3.19").status_code == 400
    assert call(admin, "post", action, {"reset_status": {"status": "error"}}, version=V).status_code == 202
    assert call(member, "get", f"/volume/v3/groups/{grp['id']}", version=V).json()["group"]["status"] == "error"
    assert call(admin, "post", action, {"reset_status": {"status": "bogus"}}, version=V).status_code == 400
    call(admin, "post", action, {"reset_status": {"status": "available"}}, version=V)
    gs_id = call(member, "post", "/volume/v3/group_snapshots", {"group_snapshot": {"group_id": grp["id"]}},
                 version=V).json()["group_snapshot"]["id"]
    gs_action = f"/volume/v3/group_snapshots/{gs_id}/action"
    too_old = call(admin, "post", gs_action, {"reset_status": {"status": "error"}}, version="volume 3.18")
    assert too_old.status_code == 404
    assert call(admin, "post", gs_action, {"reset_status": {"status": "error"}}, version=V).status_code == 202
    assert call(member, "get", f"/volume/v3/group_snapshots/{gs_id}", version=V).json()["group_snapshot"][
        "status"] == "error"
