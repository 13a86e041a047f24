"""Instance disks as Nova's libvirt driver makes them: an image is fetched once per host into the
image cache (``<state_path>/_base/<image id>``, kept in the image's own format, raw or qcow2) and
each instance's root disk is a qcow2 overlay on it (``qemu-img create -b <base> -F <format>``),
sized to the flavor's root disk (never smaller than the image). A snapshot flattens the overlay
into the image's format (``qemu-img convert``). A cached image no instance disk of the host is
based on any more is removed by the compute host's periodic cleaner once it has been unused long
enough (``clean_cache``; Nova's image cache manager).

``qemu-img`` (Debian's qemu-utils) does the work; its failures are ``VirtDriverError``.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .driver import VirtDriverError

GiB = 1024**3
#: the formats the cache keeps as they are; anything else (ami, ...) is raw bytes to qemu
FORMATS = ("raw", "qcow2")


class FlavorDiskSmallerThanImage(VirtDriverError):
    message = ("Flavor's disk is too small for requested image. Flavor disk is %(flavor_size)i bytes, "
               "image is %(image_size)i bytes.")


def image_format(image_meta: dict[str, Any]) -> str:
    fmt = str(image_meta.get("disk_format") or "raw")
    return fmt if fmt in FORMATS else "raw"


def _qemu_img(*args: str, host: str) -> str:
    try:
        done = subprocess.run(["qemu-img", *args], capture_output=True, text=True, timeout=300, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        raise VirtDriverError(host=host, reason=f"qemu-img {args[0]}: {exc}") from exc
    if done.returncode != 0:
        raise VirtDriverError(host=host, reason=f"qemu-img {args[0]}: {done.stderr.strip()}")
    return done.stdout


def virtual_size(path: Path, fmt: str, *, host: str) -> int:
    info = json.loads(_qemu_img("info", "--output=json", "-f", fmt, str(path), host=host))
    return int(info["virtual-size"])


def cached_image(cache_dir: Path, image_meta: dict[str, Any], *, host: str) -> Path:
    """The image's file in this host's cache, fetched (copied from the store) the first time; a
    partial fetch never shows under the final name."""
    cached = cache_dir / str(image_meta["id"])
    if cached.exists():
        os.utime(cached)  # last use, for the cache's cleaner
        return cached
    source = Path(str(image_meta.get("path") or ""))
    if not source.is_file():
        raise VirtDriverError(host=host, reason=f"the data of image {image_meta['id']} is missing ({source})")
    return fetch_into_cache(source, cached)


def fetch_into_cache(source: Path, cached: Path) -> Path:
    """Copy ``source`` to ``cached`` (a file of the cache) unless it is there; a partial copy
    never shows under the final name."""
    if cached.exists():
        os.utime(cached)
        return cached
    cached.parent.mkdir(parents=True, exist_ok=True)
    cached.parent.chmod(0o755)
    fd, tmp = tempfile.mkstemp(dir=cached.parent, prefix=".fetch-")
    os.close(fd)
    try:
        copy_sparse(source, Path(tmp))
        Path(tmp).chmod(0o644)  # the hypervisor reads it as the overlays' backing file
        os.replace(tmp, cached)
    finally:
        Path(tmp).unlink(missing_ok=True)
    return cached


def copy_sparse(source: Path, target: Path) -> None:
    """Copy a disk file keeping its holes (a blank raw disk stays small), as ``cp --sparse``."""
    done = subprocess.run(["cp", "--sparse=always", str(source), str(target)], capture_output=True, text=True,
                          timeout=600, check=False)
    if done.returncode != 0:
        shutil.copyfile(source, target)


def create_overlay(base: Path, base_format: str, target: Path, *, root_gb: int, host: str) -> None:
    """A qcow2 overlay on ``base``, of the flavor's root disk size (the image's own size when the
    flavor says 0); refused when the flavor's disk is smaller than the image."""
    image_size = virtual_size(base, base_format, host=host)
    size = root_gb * GiB
    if size and size < image_size:
        raise FlavorDiskSmallerThanImage(host=host, flavor_size=size, image_size=image_size)
    _qemu_img("create", "-q", "-f", "qcow2", "-b", str(base), "-F", base_format, str(target),
              str(max(size, image_size)), host=host)
    target.chmod(0o644)


def create_blank(target: Path, *, size_bytes: int, host: str) -> None:
    """An empty qcow2 disk of ``size_bytes`` (a blank ephemeral or swap disk)."""
    _qemu_img("create", "-q", "-f", "qcow2", str(target), str(size_bytes), host=host)
    target.chmod(0o644)


def formatted_base(cache_dir: Path, *, size_gb: int, fs_format: str, host: str) -> Path:
    """A raw file system of ``size_gb`` made with ``mkfs -t fs_format`` in the image cache
    (``ephemeral_<size>_<format>``, as Nova caches its formatted ephemeral bases), made once per
    host; instance ephemeral disks are qcow2 overlays on it."""
    base = cache_dir / f"ephemeral_{size_gb}_{fs_format}"
    if base.exists():
        os.utime(base)
        return base
    cache_dir.mkdir(parents=True, exist_ok=True)
    cache_dir.chmod(0o755)
    fd, tmp = tempfile.mkstemp(dir=cache_dir, prefix=".fetch-")
    os.close(fd)
    try:
        os.truncate(tmp, size_gb * GiB)
        done = subprocess.run(["mkfs", "-t", fs_format, *(["-F"] if fs_format.startswith("ext") else []),
                               "-L", "ephemeral0", tmp], capture_output=True, text=True, timeout=300, check=False)
        if done.returncode != 0:
            raise VirtDriverError(host=host, reason=f"mkfs -t {fs_format}: {done.stderr.strip()}")
        Path(tmp).chmod(0o644)
        os.replace(tmp, base)
    finally:
        Path(tmp).unlink(missing_ok=True)
    return base


def rebase(disk: Path, base: Path, base_format: str, *, host: str) -> None:
    """Point a qcow2 overlay copied from another host at this host's cached copy of its image
    (same bytes, so an unsafe rebase: only the header changes)."""
    _qemu_img("rebase", "-u", "-f", "qcow2", "-b", str(base), "-F", base_format, str(disk), host=host)


def grow(disk: Path, *, root_gb: int, host: str) -> None:
    """Grow a qcow2 disk to ``root_gb`` (a resize to a bigger flavor); never shrinks it."""
    if root_gb and virtual_size(disk, "qcow2", host=host) < root_gb * GiB:
        _qemu_img("resize", "-q", "-f", "qcow2", str(disk), str(root_gb * GiB), host=host)


def flatten(disk: Path, target: Path, fmt: str, *, host: str) -> None:
    """The disk with its backing chain, as one standalone file in ``fmt`` (a snapshot)."""
    _qemu_img("convert", "-f", "qcow2", "-O", fmt, str(disk), str(target), host=host)


def clean_cache(cache_dir: Path, in_use: Iterable[Path], *, min_age_seconds: float) -> list[Path]:
    """Remove the cached images no disk is based on and not used for ``min_age_seconds`` (their
    last fetch or use); returns what was removed. Partial fetches older than that go too."""
    if not cache_dir.is_dir():
        return []
    keep = {Path(p).resolve() for p in in_use}
    now = time.time()
    removed = []
    for cached in cache_dir.iterdir():
        if cached.resolve() in keep or not cached.is_file():
            continue
        if now - cached.stat().st_mtime >= min_age_seconds:
            cached.unlink(missing_ok=True)
            removed.append(cached)
    return removed
