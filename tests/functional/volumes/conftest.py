from __future__ import annotations

from typing import Any

import pytest

from tests.cloud import cloud  # noqa: F401

IMAGE_A = b"A-image-bytes " * 100
IMAGE_B = b"B-image-bytes: the new root " * 200


def make_image(name: str, data: bytes) -> str:
    from images.models import Image
    from images.services import image_data_path

    image = Image.objects.create(name=name, status="active", visibility="public", disk_format="raw",
                                 container_format="bare", size=len(data), owner="admin")
    path = image_data_path(image.id)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return image.id


@pytest.fixture
def bfv(cloud: Any, settings: Any, tmp_path: Any) -> Any:  # noqa: F811
    """The test cloud with a volume pool under tmp_path, COMPUTE_REBUILD_BFV on every host and two
    images with real bytes (``bfv.image_a``, ``bfv.image_b``)."""
    from scheduling.placement import services as placement

    settings.VOLUME_POOL_DIR = tmp_path / "pool"
    settings.IMAGE_STORE_DIR = tmp_path / "images"
    settings.REIMAGE_TIMEOUT_PER_GB = 1
    for host in cloud.hosts.values():
        placement.traits_add(rp=host["node_uuid"], traits=["COMPUTE_REBUILD_BFV"])
    cloud.image_a = make_image("img-a", IMAGE_A)
    cloud.image_b = make_image("img-b", IMAGE_B)
    return cloud
