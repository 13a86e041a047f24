"""User messages (``/messages``, 3.3+) recorded by the volume worker's real failures: no back end
for the volume's type (Tempest's way to make one), a disabled back end, the back end failing a
create or an extend; listed, shown and deleted by the project, invisible to others."""
from __future__ import annotations

from typing import Any

import pytest

from tests.functional.volumes.test_volume_api import call

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])
V = "/volume/v3/volumes"
M = "/volume/v3/messages"


def _create(client: Any, **fields: Any) -> dict[str, Any]:
    created = call(client, "post", V, {"volume": {"size": 1, **fields}})
    assert created.status_code == 202, created.content
    return call(client, "get", f"{V}/{created.json()['volume']['id']}").json()["volume"]


def _messages_of(client: Any, volume_id: str) -> list[dict[str, Any]]:
    return [m for m in call(client, "get", M).json()["messages"] if m.get("resource_uuid") == volume_id]


def test_no_valid_backend_records_a_message_the_project_reads_and_deletes(bfv: Any) -> None:
    admin, member = bfv.admin(), bfv.member()
    # given a type whose capabilities the back end lacks (Tempest's bad protocol and vendor)
    call(admin, "post", "/volume/v3/types", {"volume_type": {"name": "bad", "extra_specs": {
        "storage_protocol": "nope-protocol", "vendor_name": "nope-vendor"}}})
    # when a volume of it is created, the worker finds no back end: the volume is in error
    created = call(member, "post", V, {"volume": {"size": 1, "volume_type": "bad"}})
    vol = call(member, "get", f"{V}/{created.json()['volume']['id']}").json()["volume"]
    assert vol["status"] == "error"
    # then its project has Cinder's message for it, with the create's request id
    found = _messages_of(member, vol["id"])
    assert len(found) == 1
    msg = found[0]
    assert (msg["event_id"], msg["message_level"], msg["resource_type"]) == ("VOLUME_VOLUME_001_003", "ERROR",
                                                                             "VOLUME")
    assert msg["user_message"] == "schedule allocate volume:Could not find any available weighted backend."
    assert msg["request_id"] == created["x-openstack-request-id"]
    assert msg["guaranteed_until"] > msg["created_at"] and [link["rel"] for link in msg["links"]] == ["self",
                                                                                                     "bookmark"]
    assert call(member, "get", f"{M}/{msg['id']}").json() == {"message": msg}
    # the 3.5 filters find it, sort and page
    assert [m["id"] for m in call(member, "get", f"{M}?event_id=VOLUME_VOLUME_001_003",
                                  version="volume 3.5").json()["messages"]] == [msg["id"]]
    assert call(member, "get", f"{M}?resource_uuid=nope", version="volume 3.5").json() == {"messages": []}
    assert len(call(member, "get", f"{M}?limit=1&sort=created_at:asc", version="volume 3.5").json()["messages"]) == 1
    # below 3.3 there are no messages, and another project sees none of this one's
    assert call(member, "get", M, version="volume 3.2").status_code == 404
    other = bfv.member("demo2", "demo2")
    assert _messages_of(other, vol["id"]) == []
    assert call(other, "get", f"{M}/{msg['id']}").status_code == 404
    assert call(other, "delete", f"{M}/{msg['id']}").status_code == 404
    # an admin sees it too; when the member deletes it, it is gone
    assert _messages_of(admin, vol["id"]) == [msg]
    assert call(member, "delete", f"{M}/{msg['id']}").status_code == 204
    assert call(member, "get", f"{M}/{msg['id']}").status_code == 404


def test_a_disabled_backend_and_backend_failures_record_their_messages(bfv: Any) -> None:
    from volumes.backends import get_backend
    from volumes.servicegroup import worker_heartbeat, worker_hosts

    admin, member = bfv.admin(), bfv.member()
    worker_heartbeat()
    host = dict(worker_hosts())["cinder-volume"]
    # when the back end's service is disabled, a new volume finds no back end
    call(admin, "put", "/volume/v3/os-services/disable", {"host": host, "binary": "cinder-volume"})
    refused = _create(member)
    assert refused["status"] == "error"
    assert [m["event_id"] for m in _messages_of(member, refused["id"])] == ["VOLUME_VOLUME_001_003"]
    call(admin, "put", "/volume/v3/os-services/enable", {"host": host, "binary": "cinder-volume"})
    # when the back end fails the create, the message says the driver failed
    get_backend().inject_fault("create", "disk on fire")
    broken = _create(member)
    assert broken["status"] == "error"
    assert [m["user_message"] for m in _messages_of(member, broken["id"])] == [
        "create volume from backend storage:Driver failed to create the volume."]
    # a capabilities: spec the back end does not report finds no back end either
    call(admin, "post", "/volume/v3/types", {"volume_type": {"name": "dedup", "extra_specs": {
        "capabilities:dedup": "<is> True", "tier": "gold"}}})
    assert _create(member, volume_type="dedup")["status"] == "error"
    # a volume that works records nothing, also with an operator's own label and satisfied specs;
    # when its extend fails, the message says so
    call(admin, "post", "/volume/v3/types", {"volume_type": {"name": "gold", "extra_specs": {
        "tier": "gold", "storage_protocol": "file", "capabilities:total_capacity_gb": ">= 0.001",
        "vendor_name": "<or> cloudcore <or> other", "multiattach": "<is> True"}}})
    good = _create(member, volume_type="gold")
    assert good["status"] == "available" and _messages_of(member, good["id"]) == []
    get_backend().inject_fault("extend")
    assert call(member, "post", f"{V}/{good['id']}/action", {"os-extend": {"new_size": 2}}).status_code == 202
    assert call(member, "get", f"{V}/{good['id']}").json()["volume"]["status"] == "error_extending"
    assert [m["event_id"] for m in _messages_of(member, good["id"])] == ["VOLUME_VOLUME_007_010"]
