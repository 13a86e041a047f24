"""Cinder's admin and legacy actions through HTTP: os-reset_status and os-force_delete on volumes
and snapshots, os-update_snapshot_status, the legacy os-attach / os-detach / os-force_detach, and
a volume's image metadata actions."""
from __future__ import annotations

from typing import Any

import pytest

from tests.functional.volumes.test_snapshots_api import _volume
from tests.functional.volumes.test_volume_api import call

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])


def _act(client: Any, vid: str, body: Any, kind: str = "volumes") -> Any:
    return call(client, "post", f"/volume/v3/{kind}/{vid}/action", body)


def _show(client: Any, vid: str, kind: str = "volume") -> dict[str, Any]:
    return call(client, "get", f"/volume/v3/{kind}s/{vid}").json()[kind]


def test_admin_resets_a_volumes_status_and_force_deletes_it(bfv: Any) -> None:
    member, admin = bfv.member(), bfv.admin()
    vol = _volume(member)
    # a member may not reset a status
    refused = _act(member, vol["id"], {"os-reset_status": {"status": "error"}})
    assert refused.status_code == 403
    # an admin resets it (202), and the volume shows it
    assert _act(admin, vol["id"], {"os-reset_status": {"status": "error"}}).status_code == 202
    assert _show(member, vol["id"])["status"] == "error"
    # an unknown status or an empty body is a 400
    assert _act(admin, vol["id"], {"os-reset_status": {"status": "sideways"}}).status_code == 400
    assert _act(admin, vol["id"], {"os-reset_status": {}}).status_code == 400
    # a creating volume cannot be deleted by its owner, but an admin's force delete removes it
    assert _act(admin, vol["id"], {"os-reset_status": {"status": "creating"}}).status_code == 202
    assert call(member, "delete", f"/volume/v3/volumes/{vol['id']}").status_code == 400
    assert _act(member, vol["id"], {"os-force_delete": {}}).status_code == 403
    assert _act(admin, vol["id"], {"os-force_delete": {}}).status_code == 202
    assert call(member, "get", f"/volume/v3/volumes/{vol['id']}").status_code == 404


def test_snapshot_reset_update_status_and_force_delete(bfv: Any) -> None:
    member, admin = bfv.member(), bfv.admin()
    vol = _volume(member)
    snap = call(member, "post", "/volume/v3/snapshots", {"snapshot": {"volume_id": vol["id"]}}).json()["snapshot"]
    assert _act(member, snap["id"], {"os-reset_status": {"status": "creating"}}, "snapshots").status_code == 403
    assert _act(admin, snap["id"], {"os-reset_status": {"status": "creating"}}, "snapshots").status_code == 202
    assert _show(admin, snap["id"], "snapshot")["status"] == "creating"
    # the owner reports progress of a creating snapshot
    updated = _act(member, snap["id"], {"os-update_snapshot_status": {"status": "error", "progress": "80%"}},
                   "snapshots")
    assert updated.status_code == 202, updated.content
    shown = _show(admin, snap["id"], "snapshot")
    assert (shown["status"], shown["os-extended-snapshot-attributes:progress"]) == ("error", "80%")
    # but not once it is no longer creating
    again = _act(member, snap["id"], {"os-update_snapshot_status": {"status": "available"}}, "snapshots")
    assert again.status_code == 400
    # an admin force-deletes a snapshot whatever its status
    assert _act(admin, snap["id"], {"os-reset_status": {"status": "error_deleting"}}, "snapshots").status_code == 202
    assert _act(admin, snap["id"], {"os-force_delete": {}}, "snapshots").status_code == 202
    assert call(member, "get", f"/volume/v3/snapshots/{snap['id']}").status_code == 404
    assert _act(admin, snap["id"], {"os-bogus": {}}, "snapshots").status_code == 400


def test_legacy_attach_and_detach(bfv: Any) -> None:
    member, admin = bfv.member(), bfv.admin()
    vol = _volume(member)
    server = "8c5f7a5e-4bde-4e1c-8c49-7a4a0e6b3f11"
    attached = _act(member, vol["id"], {"os-attach": {"instance_uuid": server, "mountpoint": "/dev/vdb"}})
    assert attached.status_code == 202, attached.content
    shown = _show(member, vol["id"])
    assert shown["status"] == "in-use"
    (att,) = shown["attachments"]
    assert (att["server_id"], att["device"], att["id"], att["volume_id"]) == (server, "/dev/vdb", vol["id"],
                                                                              vol["id"])
    # in use, a second attach is refused; neither or both targets are a 400
    assert _act(member, vol["id"], {"os-attach": {"instance_uuid": server, "mountpoint": "/dev/vdc"}}).status_code \
        == 400
    assert _act(member, vol["id"], {"os-attach": {"mountpoint": "/dev/vdc"}}).status_code == 400
    # os-detach removes the one attachment
    assert _act(member, vol["id"], {"os-detach": {}}).status_code == 202
    shown = _show(member, vol["id"])
    assert (shown["status"], shown["attachments"]) == ("available", [])
    # an admin force-detaches a host attachment by its id
    assert _act(member, vol["id"], {"os-attach": {"host_name": "h1", "mountpoint": "/dev/sdb"}}).status_code == 202
    att_id = _show(member, vol["id"])["attachments"][0]["attachment_id"]
    assert _act(member, vol["id"], {"os-force_detach": {"attachment_id": att_id}}).status_code == 403
    assert _act(admin, vol["id"], {"os-force_detach": {"attachment_id": att_id, "connector": None}}).status_code \
        == 202
    assert _show(member, vol["id"])["status"] == "available"
    # and detaching a volume with nothing attached succeeds and leaves it available (Cinder's no-op)
    assert _act(member, vol["id"], {"os-detach": {}}).status_code == 202
    assert _show(member, vol["id"])["status"] == "available"


def test_volume_image_metadata_actions(bfv: Any) -> None:
    member = bfv.member()
    vol = _volume(member)
    set_ = _act(member, vol["id"], {"os-set_image_metadata": {"metadata": {"image_id": "x", "kernel_id": "k"}}})
    assert set_.status_code == 200 and set_.json() == {"metadata": {"image_id": "x", "kernel_id": "k"}}
    assert _show(member, vol["id"])["volume_image_metadata"] == {"image_id": "x", "kernel_id": "k"}
    unset = _act(member, vol["id"], {"os-unset_image_metadata": {"key": "kernel_id"}})
    assert unset.status_code == 200
    shown = _act(member, vol["id"], {"os-show_image_metadata": None})
    assert shown.status_code == 200 and shown.json() == {"metadata": {"image_id": "x"}}
    assert _act(member, vol["id"], {"os-unset_image_metadata": {"key": "nope"}}).status_code == 404
