"""Demo image ``tiny``: a small public raw disk image (1 MiB, a marker string at its start).

With a real kernel and initramfs at ``CLOUDCORE_DEMO_KERNEL`` / ``CLOUDCORE_DEMO_RAMDISK`` it
also registers ``tiny-kernel`` (aki) and ``tiny-ramdisk`` (ari) and points ``tiny`` at them for
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
    existed = Image.objects.filter(name="tiny", deleted=False, status="active").exists()
    _register(ctx, "tiny", MARKER + bytes(SIZE - len(MARKER)), "raw", "bare", **props)
    if not existed:
        out("images: registered image tiny")
