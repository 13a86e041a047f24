"""Storage backends for volumes: the interface and the one selector ``get_backend()``."""
from __future__ import annotations

from pathlib import Path
from typing import Protocol

from django.conf import settings


class VolumeBackendError(Exception):
    """The storage backend failed an operation (the volume goes to ``error``)."""


class VolumeBackend(Protocol):
    name: str

    def create(self, volume_id: str, size_gb: int) -> str: ...
    def delete(self, volume_id: str) -> None: ...
    def extend(self, volume_id: str, size_gb: int) -> None: ...
    def copy_image(self, volume_id: str, image_path: Path, size_gb: int) -> None: ...
    def path(self, volume_id: str) -> Path: ...


_backend: VolumeBackend | None = None


def get_backend() -> VolumeBackend:
    """The configured backend (the libvirt directory pool under ``settings.VOLUME_POOL_DIR``)."""
    global _backend
    from .pool import DirPoolBackend

    pool_dir = Path(settings.VOLUME_POOL_DIR)
    if _backend is None or getattr(_backend, "pool_dir", None) != pool_dir:
        _backend = DirPoolBackend(pool_dir)
    return _backend
