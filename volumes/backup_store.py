"""The backup store: the files under ``BACKUP_DIR`` that hold backups' bytes (Cinder's posix
backup driver's job), written and read only by the volume worker.

A full backup is one sparse file, ``<name>``, as long as the volume, a copy of its bytes. An
incremental backup holds only the blocks (``BLOCK`` bytes each) that differ from its parent's
image: ``<name>`` is a sparse file as long as the volume with those blocks at their offsets
(holes elsewhere), and ``<name>.changed`` lists their indexes (a block that became zeroes is in
the list and a hole in the file). A backup's image is its chain replayed: the full backup's file,
then each incremental's changed blocks in order, cut to the last one's length. ``<name>.volume.json``
keeps the volume's own metadata at the time of the backup.
"""
from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from django.conf import settings

from .backends.pool import COPY_BLOCK, data_ranges, sparse_copy

BLOCK = COPY_BLOCK


def data_path(name: str) -> Path:
    return Path(settings.BACKUP_DIR) / name


def changed_path(name: str) -> Path:
    return Path(settings.BACKUP_DIR) / f"{name}.changed"


def exists(name: str) -> bool:
    return data_path(name).exists()


def remove(name: str) -> None:
    data_path(name).unlink(missing_ok=True)
    changed_path(name).unlink(missing_ok=True)
    volume_meta_path(name).unlink(missing_ok=True)


def volume_meta_path(name: str) -> Path:
    return Path(settings.BACKUP_DIR) / f"{name}.volume.json"


def write_volume_meta(name: str, meta: dict[str, Any]) -> None:
    """What the backed-up volume said about itself (its metadata, bootable flag, image metadata),
    kept next to the bytes so that a restore gives it back, as Cinder's backups do."""
    volume_meta_path(name).write_text(json.dumps(meta))


def read_volume_meta(name: str) -> dict[str, Any]:
    path = volume_meta_path(name)
    meta = json.loads(path.read_text()) if path.exists() else {}
    return meta if isinstance(meta, dict) else {}


def write_full(source: Path, name: str) -> None:
    """``name`` becomes a sparse copy of ``source`` (made under a temporary name, then moved in place)."""
    target = data_path(name)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    sparse_copy(source, tmp)
    os.replace(tmp, target)


def write_incremental(source: Path, chain: Sequence[str], name: str) -> int:
    """``name`` holds the blocks of ``source`` that differ from the image of ``chain`` (the data
    names from the full backup to the parent). Only the ranges that hold data in either are read.
    Returns how many blocks changed."""
    target = data_path(name)
    target.parent.mkdir(parents=True, exist_ok=True)
    parent_image = target.with_name(target.name + ".parent.tmp")
    tmp = target.with_name(target.name + ".tmp")
    try:
        replay(chain, parent_image)
        changed = _diff(source, parent_image, tmp)
        changed_path(name).write_text(json.dumps(changed))
        os.replace(tmp, target)
    finally:
        parent_image.unlink(missing_ok=True)
        tmp.unlink(missing_ok=True)
    return len(changed)


def _blocks(fd: int, length: int) -> set[int]:
    return {i for start, end in data_ranges(fd, length) for i in range(start // BLOCK, (end + BLOCK - 1) // BLOCK)}


def _diff(source: Path, parent: Path, target: Path) -> list[int]:
    zero = bytes(BLOCK)
    changed: list[int] = []
    with open(source, "rb") as src, open(parent, "rb") as old, open(target, "wb") as dst:
        length = os.fstat(src.fileno()).st_size
        candidates = _blocks(src.fileno(), length) | _blocks(old.fileno(), os.fstat(old.fileno()).st_size)
        for index in sorted(i for i in candidates if i * BLOCK < length):
            src.seek(index * BLOCK)
            new = src.read(BLOCK)
            old.seek(index * BLOCK)
            before = old.read(len(new))
            before += bytes(len(new) - len(before))
            if new != before:
                changed.append(index)
                if new != zero[:len(new)]:
                    dst.seek(index * BLOCK)
                    dst.write(new)
        dst.truncate(length)
    return changed


def replay(chain: Sequence[str], target: Path, *, size: int | None = None) -> None:
    """Write the image of ``chain`` (full backup first) into ``target``, ``size`` bytes long (the
    last backup's length by default)."""
    sparse_copy(data_path(chain[0]), target)
    with open(target, "r+b") as dst:
        for name in chain[1:]:
            indexes = json.loads(changed_path(name).read_text())
            with open(data_path(name), "rb") as src:
                for index in indexes:
                    src.seek(index * BLOCK)
                    block = src.read(BLOCK)
                    dst.seek(index * BLOCK)
                    dst.write(block)
                dst.truncate(os.fstat(src.fileno()).st_size)
        if size is not None:
            dst.truncate(size)
