"""Storage backends for volumes: the interface and the one selector ``get_backend()``."""
from __future__ import annotations

from pathlib import Path

from django.conf import settings

from .base import VolumeBackend, VolumeBackendError
from .pool import DirPoolBackend

__all__ = ["DirPoolBackend", "VolumeBackend", "VolumeBackendError", "get_backend"]

_backend: VolumeBackend | None = None


def get_backend() -> VolumeBackend:
    """The configured backend (the libvirt directory pool under ``settings.VOLUME_POOL_DIR``)."""
    global _backend
    pool_dir = Path(settings.VOLUME_POOL_DIR)
    if _backend is None or getattr(_backend, "pool_dir", None) != pool_dir:
        _backend = DirPoolBackend(pool_dir)
    return _backend
