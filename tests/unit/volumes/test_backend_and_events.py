"""The directory pool backend (real files, fault injection) and the external-event waiter."""
from __future__ import annotations

from pathlib import Path

import pytest

from volumes.backends import VolumeBackendError
from volumes.backends.pool import DirPoolBackend, GiB


def test_pool_creates_sparse_volume_and_reimage_overwrites_everything(tmp_path: Path) -> None:
    backend = DirPoolBackend(tmp_path / "pool")
    backend.create("v1", 1)
    path = backend.path("v1")
    assert path.stat().st_size == GiB
    with open(path, "r+b") as fh:
        fh.seek(4096)
        fh.write(b"old data")
    image = tmp_path / "img"
    image.write_bytes(b"new image")
    backend.copy_image("v1", image, 1)
    data = path.read_bytes()
    assert data[:9] == b"new image" and b"old data" not in data[:8192] and len(data) == GiB


def test_injected_fault_fails_once(tmp_path: Path) -> None:
    backend = DirPoolBackend(tmp_path / "pool")
    backend.create("v1", 1)
    image = tmp_path / "img"
    image.write_bytes(b"x")
    backend.inject_fault("reimage", "boom")
    with pytest.raises(VolumeBackendError, match="boom"):
        backend.copy_image("v1", image, 1)
    backend.copy_image("v1", image, 1)  # the flag is consumed


@pytest.mark.django_db(databases="__all__")
def test_event_before_wait_and_timeout(cells: dict) -> None:
    from cells.context import target_cell
    from cells.isolation import compute_agent
    from servers.services.external_events import InstanceEventTimeout, _deliver, expect_event, wait_for_event

    cell = cells["cell1"]
    # given a waiter registered first (a compute agent: the row is in its own cell), an event
    # delivered before the wait starts is seen (eager mode)
    with compute_agent(cell), target_cell(cell):
        record = expect_event(instance_uuid="i1", name="volume-reimaged", tag="v1")
    with target_cell(cell):
        _deliver("i1", "volume-reimaged", "v1", "failed")
    with compute_agent(cell), target_cell(cell):
        assert wait_for_event(record, timeout=1) == "failed"
        # and no event in time is a timeout
        record = expect_event(instance_uuid="i1", name="volume-reimaged", tag="v1")
        with pytest.raises(InstanceEventTimeout):
            wait_for_event(record, timeout=0.2, poll=0.05)
    # a stale event from before the registration does not satisfy a new wait
    with target_cell(cell):
        _deliver("i1", "volume-reimaged", "v2", "completed")
    with compute_agent(cell), target_cell(cell):
        record = expect_event(instance_uuid="i1", name="volume-reimaged", tag="v2")
        with pytest.raises(InstanceEventTimeout):
            wait_for_event(record, timeout=0.1, poll=0.05)


def test_pool_is_defined_on_the_configured_libvirt_uri(tmp_path: Path, settings: object) -> None:
    settings.VOLUME_LIBVIRT_URI = "test:///default"  # type: ignore[attr-defined]
    backend = DirPoolBackend(tmp_path / "pool")
    pool = backend._conn.storagePoolLookupByName("cloudcore-volumes")
    assert pool.isActive() and str(tmp_path / "pool") in pool.XMLDesc()


def test_sparse_copy_keeps_the_holes_and_every_byte(tmp_path):
    from volumes.backends.pool import GiB, sparse_copy

    # given a 1 GiB volume file holding two marks, the rest a hole
    source = tmp_path / "volume"
    with open(source, "wb") as fh:
        fh.truncate(GiB)
        fh.write(b"HEAD")
        fh.seek(GiB // 2)
        fh.write(b"MIDDLE")
    target = tmp_path / "copy"
    sparse_copy(source, target)
    # then the copy has the same size and bytes, and takes the space of its data, not of 1 GiB
    assert target.stat().st_size == GiB
    with open(target, "rb") as fh:
        assert fh.read(4) == b"HEAD"
        fh.seek(GiB // 2 - 2)
        assert fh.read(10) == b"\0\0MIDDLE\0\0"
    assert target.stat().st_blocks * 512 < 64 * 1024 * 1024
