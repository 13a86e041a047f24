"""Demo images ``tiny`` and ``tiny-alt``: small public raw disk images (1 MiB, a marker string at
their start, each its own), two so that a rebuild has a new image to take (a volume-backed
server's rebuild among them) and a list can be filtered by image.

With a real kernel and initramfs at ``CLOUDCORE_DEMO_KERNEL`` / ``CLOUDCORE_DEMO_RAMDISK`` it
also registers ``tiny-kernel`` (aki) and ``tiny-ramdisk`` (ari) and points both at them for
direct kernel boot on real QEMU. Idempotent.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from cloudcore.core.context import RequestContext
from cloudcore.core.env import env_str
from identity.selectors import project_find_by_name

from . import services
from .models import Image

MARKER = b"CLOUDCORE-TINY-IMAGE\n"
SIZE = 1024 * 1024
#: the demo's images and the marker at the start of each
DEMO_IMAGES = (("tiny", MARKER), ("tiny-alt", b"CLOUDCORE-TINY-ALT-IMAGE\n"))


def _admin_ctx() -> RequestContext:
    admin = project_find_by_name("admin")
    return RequestContext(user_id=None, project_id=admin.id if admin else None, roles=["admin"], is_admin=True)


def _register(ctx: RequestContext, name: str, data: bytes, disk_format: str, container_format: str,
              **props: str) -> Image:
    image = Image.objects.filter(name=name, deleted=False).first()
    if image is None:
        image = services.image_create(ctx, name=name, disk_format=disk_format, container_format=container_format,
                                      visibility="public", **props)
    if image.status != "active":
        services.image_upload(ctx, image, [data])
    return image


def setup(out: Callable[[str], None]) -> None:
    ctx = _admin_ctx()
    props: dict[str, str] = {}
    kernel, ramdisk = env_str("DEMO_KERNEL", ""), env_str("DEMO_RAMDISK", "")
    if kernel and ramdisk and Path(kernel).is_file() and Path(ramdisk).is_file():
        k = _register(ctx, "tiny-kernel", Path(kernel).read_bytes(), "aki", "aki")
        r = _register(ctx, "tiny-ramdisk", Path(ramdisk).read_bytes(), "ari", "ari")
        props = {"kernel_id": k.id, "ramdisk_id": r.id}
    for name, marker in DEMO_IMAGES:
        existed = Image.objects.filter(name=name, deleted=False, status="active").exists()
        _register(ctx, name, marker + bytes(SIZE - len(marker)), "raw", "bare", **props)
        if not existed:
            out(f"images: registered image {name}")
