"""A libvirt ``dir`` storage pool backend.

Volume files are raw files ``volume-<id>`` in the pool directory, written by this backend itself
(libvirt's ``test://`` driver keeps pool volumes in memory only); libvirt is used to define the
directory pool where the configured URI supports it.

Fault injection (for tests and operators rehearsing failures): a file ``FAIL_<OPERATION>`` in the
pool directory (``FAIL_REIMAGE``, ``FAIL_CREATE``, ``FAIL_DELETE``, ``FAIL_EXTEND``) makes the next
such operation fail; the file is consumed by the failure.
"""
from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

from django.conf import settings

from .base import VolumeBackendError

log = logging.getLogger(__name__)
GiB = 1024 ** 3
COPY_BLOCK = 1024 * 1024


def sparse_copy(source: Path, target: Path, *, size: int | None = None) -> None:
    """Copy ``source`` to ``target`` keeping it sparse: only the ranges the file system says hold
    data are read (``SEEK_DATA``/``SEEK_HOLE``; every byte where it cannot tell), and zeroed blocks
    among them are seeked over, not written, so a 1 GiB volume holding a few bytes makes a copy of a
    few bytes on disk. ``target`` ends ``size`` bytes long (the source's length by default)."""
    zero = bytes(COPY_BLOCK)
    with open(source, "rb") as src, open(target, "wb") as dst:
        end_of_file = os.fstat(src.fileno()).st_size
        for start, end in data_ranges(src.fileno(), end_of_file):
            src.seek(start)
            dst.seek(start)
            left = end - start
            while left > 0 and (block := src.read(min(left, COPY_BLOCK))):
                if block == zero[:len(block)]:
                    dst.seek(len(block), os.SEEK_CUR)
                else:
                    dst.write(block)
                left -= len(block)
        dst.truncate(end_of_file if size is None else size)


def data_ranges(fd: int, end_of_file: int) -> list[tuple[int, int]]:
    """The ``(start, end)`` ranges of the file that hold data; the whole file where the file system
    cannot tell holes apart."""
    ranges: list[tuple[int, int]] = []
    offset = 0
    try:
        while offset < end_of_file:
            try:
                start = os.lseek(fd, offset, os.SEEK_DATA)
            except OSError:  # ENXIO: nothing but a hole up to the end
                break
            offset = os.lseek(fd, start, os.SEEK_HOLE)
            ranges.append((start, offset))
    except (AttributeError, OSError):  # no SEEK_DATA here
        return [(0, end_of_file)]
    return ranges


class DirPoolBackend:
    name = "pool"

    def __init__(self, pool_dir: Path) -> None:
        self.pool_dir = Path(pool_dir)
        self.pool_dir.mkdir(parents=True, exist_ok=True)
        self._define_pool()

    def _define_pool(self) -> None:
        uri = getattr(settings, "VOLUME_LIBVIRT_URI", "")
        if not uri:
            return
        try:
            import libvirt

            conn = libvirt.open(uri)
            self._conn = conn  # the test:// driver keeps its pools only while the connection lives
            if "cloudcore-volumes" not in {p.name() for p in conn.listAllStoragePools()}:
                xml = (f"<pool type='dir'><name>cloudcore-volumes</name><target><path>{self.pool_dir}</path>"
                       "</target></pool>")
                pool = conn.storagePoolDefineXML(xml, 0)
                pool.create(0)
        except Exception:  # the pool is a convenience for operators; files are ours either way
            log.warning("could not define the libvirt volume pool at %s", uri, exc_info=True)

    def capacity(self) -> tuple[float, float]:
        """``(total, free)`` GiB of the file system the pool directory is on (what the pool's
        sparse volume files can grow into)."""
        stats = os.statvfs(self.pool_dir)
        return (round(stats.f_blocks * stats.f_frsize / GiB, 2), round(stats.f_bavail * stats.f_frsize / GiB, 2))

    def _fault(self, operation: str) -> None:
        flag = self.pool_dir / f"FAIL_{operation.upper()}"
        if flag.exists():
            reason = flag.read_text().strip() or f"injected {operation} failure"
            flag.unlink(missing_ok=True)
            raise VolumeBackendError(reason)

    def inject_fault(self, operation: str, reason: str = "") -> None:
        (self.pool_dir / f"FAIL_{operation.upper()}").write_text(reason)

    def path(self, volume_id: str) -> Path:
        return self.pool_dir / f"volume-{volume_id}"

    def create(self, volume_id: str, size_gb: int) -> str:
        self._fault("create")
        path = self.path(volume_id)
        with open(path, "wb") as fh:
            fh.truncate(size_gb * GiB)  # sparse
        return str(path)

    def delete(self, volume_id: str) -> None:
        self._fault("delete")
        self.path(volume_id).unlink(missing_ok=True)

    def extend(self, volume_id: str, size_gb: int) -> None:
        self._fault("extend")
        with open(self.path(volume_id), "r+b") as fh:
            fh.truncate(size_gb * GiB)

    def copy_image(self, volume_id: str, image_path: Path, size_gb: int) -> None:
        """Write the image's bytes at the start of the volume; the rest of the volume is zeroed
        (reimage destroys every byte the volume held)."""
        self._fault("reimage")
        target = self.path(volume_id)
        tmp = target.with_suffix(".tmp")
        with open(image_path, "rb") as src, open(tmp, "wb") as dst:
            shutil.copyfileobj(src, dst)
            if dst.tell() > size_gb * GiB:
                tmp.unlink(missing_ok=True)
                raise VolumeBackendError("image is larger than the volume")
            dst.truncate(size_gb * GiB)
        os.replace(tmp, target)

    # -- snapshots: a copy of the volume file next to it (sparse where the volume is) -----------
    def snapshot_path(self, snapshot_id: str) -> Path:
        return self.pool_dir / f"snapshot-{snapshot_id}"

    def snapshot_create(self, volume_id: str, snapshot_id: str) -> None:
        self._fault("snapshot")
        target = self.snapshot_path(snapshot_id)
        tmp = target.with_suffix(".tmp")
        sparse_copy(self.path(volume_id), tmp)
        os.replace(tmp, target)

    def snapshot_delete(self, snapshot_id: str) -> None:
        self._fault("snapshot_delete")
        self.snapshot_path(snapshot_id).unlink(missing_ok=True)

    def copy_snapshot(self, snapshot_id: str, volume_id: str, size_gb: int) -> None:
        """A new volume starts with the snapshot's bytes, grown to its own size."""
        self._copy_grown(self.snapshot_path(snapshot_id), volume_id, size_gb)

    def copy_volume(self, source_volume_id: str, volume_id: str, size_gb: int) -> None:
        """A clone starts with its source volume's bytes, grown to its own size."""
        self._fault("clone")
        self._copy_grown(self.path(source_volume_id), volume_id, size_gb)

    def _copy_grown(self, source: Path, volume_id: str, size_gb: int) -> None:
        target = self.path(volume_id)
        tmp = target.with_suffix(".tmp")
        sparse_copy(source, tmp)
        with open(tmp, "r+b") as fh:
            fh.truncate(size_gb * GiB)
        os.replace(tmp, target)
