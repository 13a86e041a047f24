"""Volumes made from another volume (and the size rules of every source), ``os-extend`` offline and,
from 3.42, of an attached volume with Nova's ``volume-extended`` event, and delete refused for a
volume with snapshots unless ``cascade=true``."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from tests.functional.volumes.conftest import IMAGE_A
from tests.functional.volumes.test_volume_api import call

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])
V = "/volume/v3/volumes"
REFUSED = ("Invalid volume: Volume status must be available or error or error_restoring or error_extending or "
           "error_managing and must not be migrating, attached, belong to a group, have snapshots, awaiting a "
           "transfer, or be disassociated from snapshots after volume transfer.")


def _volume(client: Any, **fields: Any) -> dict[str, Any]:
    created = call(client, "post", V, {"volume": fields})
    assert created.status_code == 202, created.content
    return call(client, "get", f"{V}/{created.json()['volume']['id']}").json()["volume"]


def _file(kind: str, ident: str) -> Path:
    return Path(settings.VOLUME_POOL_DIR) / f"{kind}-{ident}"


def test_a_volume_from_another_volume_carries_its_bytes_type_and_size(bfv: Any) -> None:
    admin, member = bfv.admin(), bfv.member()
    call(admin, "post", "/volume/v3/types", {"volume_type": {"name": "fast"}})
    # given a bootable source volume of type "fast", made from an image
    source = _volume(member, size=2, imageRef=bfv.image_a, volume_type="fast")
    # when it is cloned without size or type
    clone = _volume(member, source_volid=source["id"], name="clone")
    # then the clone has the source's bytes, size, type and bootable flag
    assert (clone["status"], clone["size"], clone["source_volid"], clone["volume_type"]) == (
        "available", 2, source["id"], "fast")
    assert clone["bootable"] == "true" and clone["volume_image_metadata"]["image_id"] == bfv.image_a
    assert _file("volume", clone["id"]).read_bytes()[:len(IMAGE_A)] == IMAGE_A
    # and a bigger clone is fine, a smaller one is Cinder's 400
    assert _volume(member, source_volid=source["id"], size=3)["size"] == 3
    small = call(member, "post", V, {"volume": {"source_volid": source["id"], "size": 1}})
    assert small.status_code == 400 and "must be >= original volume size" in small.json()["badRequest"]["message"]
    # and an image sets the size when none is given (1 GiB for the tiny image); sources do not mix
    assert _volume(member, imageRef=bfv.image_a)["size"] == 1
    both = call(member, "post", V, {"volume": {"source_volid": source["id"], "imageRef": bfv.image_a}})
    assert both.status_code == 400
    assert call(member, "post", V, {"volume": {"name": "sizeless"}}).status_code == 400
    # and another project's volume is not there for a clone
    assert call(bfv.member("demo2", "demo2"), "post", V, {"volume": {"source_volid": source["id"]}}
                ).status_code == 404


def test_extend_offline_and_in_use_from_3_42_with_the_volume_extended_event(bfv: Any) -> None:
    from cells.context import target_cell
    from cells.models import InstanceMapping
    from servers.models import InstanceEventRecord

    member = bfv.member()
    vol = _volume(member, size=1)
    act = f"{V}/{vol['id']}/action"
    # an available volume grows offline; not growing is a 400
    assert call(member, "post", act, {"os-extend": {"new_size": 2}}, version="volume 3.0").status_code == 202
    shown = call(member, "get", f"{V}/{vol['id']}").json()["volume"]
    assert (shown["size"], shown["status"]) == (2, "available")
    assert _file("volume", vol["id"]).stat().st_size == 2 * 1024 ** 3
    same = call(member, "post", act, {"os-extend": {"new_size": 2}})
    assert same.status_code == 400 and "greater than current size" in same.json()["badRequest"]["message"]
    assert call(member, "post", act, {"os-extend": {"new_size": "big"}}).status_code == 400
    assert call(member, "post", act, {"os-extend": {}}).status_code == 400
    # given the volume attached to a server
    server = bfv.create_server(member, "holder")
    attached = bfv.post(member, f"servers/{server['id']}/os-volume_attachments",
                        {"volumeAttachment": {"volumeId": vol["id"]}})
    assert attached.status_code == 200, attached.content
    # when it is extended before 3.42, Cinder's 400; from 3.42 it grows and the server hears of it
    old = call(member, "post", act, {"os-extend": {"new_size": 3}}, version="volume 3.41")
    assert old.status_code == 400 and "must be available to extend" in old.json()["badRequest"]["message"]
    assert call(member, "post", act, {"os-extend": {"new_size": 3}}, version="volume 3.42").status_code == 202
    shown = call(member, "get", f"{V}/{vol['id']}").json()["volume"]
    assert (shown["size"], shown["status"]) == (3, "in-use")
    cell = InstanceMapping.objects.select_related("cell").get(instance_uuid=server["id"]).cell
    with target_cell(cell):
        events = list(InstanceEventRecord.objects.filter(instance_uuid=server["id"], name="volume-extended")
                      .values_list("tag", "status", "received"))
    assert events == [(vol["id"], "completed", True)]
    # and, as Nova does, the server has an extend_volume action (its owner sees it) whose host event
    # compute_extend_volume succeeded
    listed = bfv.get(member, f"servers/{server['id']}/os-instance-actions").json()["instanceActions"]
    (extend,) = [a for a in listed if a["action"] == "extend_volume"]
    # recorded for the server's owner (the volume worker's event carries no user), as strings
    assert isinstance(extend["user_id"], str) and isinstance(extend["project_id"], str)
    shown = bfv.get(bfv.admin(), f"servers/{server['id']}/os-instance-actions/{extend['request_id']}",
                    version="2.51").json()["instanceAction"]
    assert [(e["event"], e["result"]) for e in shown["events"]] == [("compute_extend_volume", "Success")]
    assert shown["events"][0]["finish_time"]


def test_delete_with_snapshots_needs_cascade(bfv: Any) -> None:
    member = bfv.member()
    vol = _volume(member, size=1)
    snap = call(member, "post", "/volume/v3/snapshots", {"snapshot": {"volume_id": vol["id"]}}).json()["snapshot"]
    # a volume with a snapshot: Cinder's one message
    refused = call(member, "delete", f"{V}/{vol['id']}")
    assert refused.status_code == 400 and refused.json()["badRequest"]["message"] == REFUSED
    assert call(member, "delete", f"{V}/{vol['id']}?cascade=maybe").status_code == 400
    assert call(member, "get", f"{V}/{vol['id']}").json()["volume"]["status"] == "available"
    # with cascade=true the snapshots go with it, bytes and all
    assert call(member, "delete", f"{V}/{vol['id']}?cascade=true").status_code == 202
    assert call(member, "get", f"{V}/{vol['id']}").status_code == 404
    assert call(member, "get", f"/volume/v3/snapshots/{snap['id']}").status_code == 404
    assert not _file("snapshot", snap["id"]).exists() and not _file("volume", vol["id"]).exists()


def test_delete_of_an_attached_volume_is_refused_with_the_same_message(bfv: Any) -> None:
    member = bfv.member()
    vol = _volume(member, size=1)
    server = bfv.create_server(member, "holder")
    bfv.post(member, f"servers/{server['id']}/os-volume_attachments", {"volumeAttachment": {"volumeId": vol["id"]}})
    for query in ("", "?cascade=true"):
        refused = call(member, "delete", f"{V}/{vol['id']}{query}")
        assert refused.status_code == 400 and refused.json()["badRequest"]["message"] == REFUSED
