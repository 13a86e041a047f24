"""Cinder, as nova-compute reaches it: the block storage API (``volumev3``) as the service user.

Attachments use the API of microversion 3.44 (create with or without a connector, update with the
host connector, ``os-complete``, delete), reimage uses ``os-reimage`` (3.68). Every function is
keyword-only and returns plain values, never rows; a refused call raises ``ServiceCallFailed``.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from .session import expect, service_adapter

#: the microversion nova uses for the attachments API (``os-complete`` exists from 3.44)
ATTACHMENTS_VERSION = "3.44"
#: the microversion of ``os-reimage`` (Cinder 3.68)
REIMAGE_VERSION = "3.68"
SERVICE = "volume"


@dataclass(frozen=True)
class Attachment:
    id: str
    volume_id: str
    instance_uuid: str | None
    status: str
    connection_info: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class VolumeInfo:
    id: str
    status: str
    size: int
    project_id: str | None


def _attachment(body: dict[str, Any]) -> Attachment:
    att = body["attachment"]
    return Attachment(id=str(att["id"]), volume_id=str(att["volume_id"]), instance_uuid=att.get("instance"),
                      status=str(att.get("status", "")), connection_info=dict(att.get("connection_info") or {}))


def attachment_create(*, volume_id: str, instance_uuid: str, connector: dict[str, Any] | None = None,
                      mode: str = "rw") -> Attachment:
    """``POST /attachments``: without ``connector`` the volume only becomes ``reserved``."""
    body: dict[str, Any] = {"volume_uuid": volume_id, "instance_uuid": instance_uuid, "mode": mode}
    if connector is not None:
        body["connector"] = connector
    resp = service_adapter("volumev3").post("/attachments", json={"attachment": body},
                                            microversion=ATTACHMENTS_VERSION)
    return _attachment(expect(resp, 200, service=SERVICE).json())


def attachment_update(*, attachment_id: str, connector: dict[str, Any], mountpoint: str | None = None) -> Attachment:
    """``PUT /attachments/{id}`` with the host connector (the mount point rides in it, as nova
    sends it); the answer carries the ``connection_info`` the virt driver attaches."""
    sent = {**connector, "mountpoint": mountpoint} if mountpoint else dict(connector)
    resp = service_adapter("volumev3").put(f"/attachments/{attachment_id}", json={"attachment": {"connector": sent}},
                                           microversion=ATTACHMENTS_VERSION)
    return _attachment(expect(resp, 200, service=SERVICE).json())


def attachment_complete(*, attachment_id: str) -> None:
    """``POST /attachments/{id}/action`` ``os-complete``: the volume becomes ``in-use``."""
    resp = service_adapter("volumev3").post(f"/attachments/{attachment_id}/action", json={"os-complete": None},
                                            microversion=ATTACHMENTS_VERSION)
    expect(resp, 200, 204, service=SERVICE)


def attachment_delete(*, attachment_id: str) -> None:
    resp = service_adapter("volumev3").delete(f"/attachments/{attachment_id}", microversion=ATTACHMENTS_VERSION)
    expect(resp, 200, 204, service=SERVICE)


def volume_get(*, volume_id: str) -> VolumeInfo:
    resp = service_adapter("volumev3").get(f"/volumes/{volume_id}", microversion=ATTACHMENTS_VERSION)
    vol = expect(resp, 200, service=SERVICE).json()["volume"]
    return VolumeInfo(id=str(vol["id"]), status=str(vol["status"]), size=int(vol.get("size") or 0),
                      project_id=vol.get("os-vol-tenant-attr:tenant_id"))


def volume_wait_settled(*, volume_id: str, waiting: tuple[str, ...] = ("creating", "downloading"),
                        timeout: float = 180.0, interval: float = 1.0) -> VolumeInfo:
    """Poll the volume until its status leaves ``waiting`` (or ``timeout`` seconds pass), as nova
    waits for a volume it had created for a block device; returns the last answer."""
    deadline = time.monotonic() + timeout
    while True:
        vol = volume_get(volume_id=volume_id)
        if vol.status not in waiting or time.monotonic() >= deadline:
            return vol
        time.sleep(interval)


def volume_delete(*, volume_id: str) -> None:
    """``DELETE /volumes/{id}`` (the volume worker frees it); a volume already gone is no error."""
    resp = service_adapter("volumev3").delete(f"/volumes/{volume_id}", microversion=ATTACHMENTS_VERSION)
    expect(resp, 202, 204, 404, service=SERVICE)


def volume_reimage(*, volume_id: str, image_id: str, reimage_reserved: bool = False) -> None:
    """``os-reimage`` (3.68): the volume's data is replaced by the image; Cinder posts
    ``volume-reimaged`` to the servers it is attached to when done."""
    resp = service_adapter("volumev3").post(
        f"/volumes/{volume_id}/action",
        json={"os-reimage": {"image_id": image_id, "reimage_reserved": reimage_reserved}},
        microversion=REIMAGE_VERSION)
    expect(resp, 202, service=SERVICE)
