"""The compute's way to Glance: ``/image/v2/images`` over HTTP as the cloud's service user.

nova-compute reads image metadata from Glance (spawn, rebuild), creates and uploads snapshot
images (createImage, shelve) and deletes them (unshelve drops the shelve snapshot, a failed
snapshot deletes its image); it never touches Glance's database. The image *bytes* of a spawn are
read from the shared image store's file (``data_path``, as Nova reads an image whose
``direct_url`` is a ``file://`` location): a path, no database.

Every function is keyword-only and returns plain data (``ImageInfo``), never a model row.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cloudcore.core.exceptions import NotFound
from images.services import SNAPSHOT_DISK_FORMAT, image_data_path

from .session import expect, service_adapter

SERVICE = "image"
#: Chunk size of a snapshot upload (the body is streamed, never held whole in memory).
CHUNK = 1024 * 1024
#: The attributes of Glance's image schema; every other key of an image body is a custom property.
CORE_ATTRIBUTES = frozenset({
    "id", "name", "status", "visibility", "protected", "os_hidden", "checksum", "os_hash_algo", "os_hash_value",
    "owner", "size", "virtual_size", "min_ram", "min_disk", "disk_format", "container_format", "created_at",
    "updated_at", "tags", "self", "file", "schema", "direct_url", "locations",
})


class ImageNotFound(NotFound):
    message = "Image %(image_id)s could not be found."


@dataclass(frozen=True)
class ImageInfo:
    """What the compute needs of an image (Glance's image body, custom properties apart)."""

    id: str
    name: str | None
    status: str
    disk_format: str | None
    container_format: str | None
    size: int
    min_disk: int
    min_ram: int
    owner: str | None
    properties: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_body(cls, body: dict[str, Any]) -> ImageInfo:
        return cls(
            id=str(body["id"]), name=body.get("name"), status=str(body.get("status") or ""),
            disk_format=body.get("disk_format"), container_format=body.get("container_format"),
            size=int(body.get("size") or 0), min_disk=int(body.get("min_disk") or 0),
            min_ram=int(body.get("min_ram") or 0), owner=body.get("owner"),
            properties={k: v for k, v in body.items() if k not in CORE_ATTRIBUTES},
        )


def data_path(*, image_id: str) -> Path:
    """The file holding ``image_id``'s bytes on the shared image store (read-only for the compute)."""
    return image_data_path(image_id)


def image_show(*, image_id: str) -> ImageInfo:
    """``GET /v2/images/{id}``; ImageNotFound when Glance has no such image."""
    resp = service_adapter(SERVICE).get(f"/v2/images/{image_id}")
    if resp.status_code == 404:
        raise ImageNotFound(image_id=image_id)
    return ImageInfo.from_body(expect(resp, 200, service=SERVICE).json())


def images_with_properties(**properties: str) -> list[ImageInfo]:
    """``GET /v2/images?<property>=<value>...``: the images with all of these custom properties,
    newest first (the service user sees every project's)."""
    resp = service_adapter(SERVICE).get("/v2/images", params={**properties, "sort_key": "created_at",
                                                               "sort_dir": "desc"})
    return [ImageInfo.from_body(body) for body in expect(resp, 200, service=SERVICE).json()["images"]]


def snapshot_image_create(*, name: str, owner: str, instance_uuid: str, base: ImageInfo | None = None,
                          properties: dict[str, Any] | None = None) -> ImageInfo:
    """A queued private snapshot image owned by the server's project (``owner``: the service user
    is an admin, whom Glance lets create an image for another project)."""
    props = {"instance_uuid": instance_uuid, "image_type": "snapshot", **(properties or {})}
    body = {
        **{k: str(v) for k, v in props.items()},
        "name": name, "owner": owner, "visibility": "private",
        "disk_format": SNAPSHOT_DISK_FORMAT,  # what the driver writes, whatever the base image's format
        "container_format": (base.container_format if base else None) or "bare",
        "min_disk": base.min_disk if base else 0, "min_ram": base.min_ram if base else 0,
    }
    resp = service_adapter(SERVICE).post("/v2/images", json=body)
    return ImageInfo.from_body(expect(resp, 201, service=SERVICE).json())


def _chunks(source: Path) -> Iterator[bytes]:
    with open(source, "rb") as fh:
        while block := fh.read(CHUNK):
            yield block


def image_upload(*, image_id: str, source: Path) -> None:
    """``PUT /v2/images/{id}/file`` with ``source``'s bytes: Glance stores them and the image
    becomes active (a refused or failed upload raises ``ServiceCallFailed``)."""
    resp = service_adapter(SERVICE).put(f"/v2/images/{image_id}/file", data=_chunks(source),
                                        headers={"Content-Type": "application/octet-stream"})
    expect(resp, 204, service=SERVICE)


def image_delete(*, image_id: str) -> None:
    """``DELETE /v2/images/{id}``; an image already gone is fine."""
    resp = service_adapter(SERVICE).delete(f"/v2/images/{image_id}")
    expect(resp, 204, 404, service=SERVICE)
