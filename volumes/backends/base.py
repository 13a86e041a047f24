"""The storage backend interface and its error (apart from ``get_backend()``, so that a backend
module imports them without importing the package that selects it)."""
from __future__ import annotations

from pathlib import Path
from typing import Protocol


class VolumeBackendError(Exception):
    """The storage backend failed an operation (the volume goes to ``error``)."""


class VolumeBackend(Protocol):
    name: str
    pool_dir: Path

    def create(self, volume_id: str, size_gb: int) -> str: ...
    def delete(self, volume_id: str) -> None: ...
    def extend(self, volume_id: str, size_gb: int) -> None: ...
    def copy_image(self, volume_id: str, image_path: Path, size_gb: int) -> None: ...
    def path(self, volume_id: str) -> Path: ...
