"""Backups beyond the full copy, through Cinder's API as the clients call it: incremental backups
(a parent chain; a restore replays it and gives the bytes the volume had), backups of snapshots,
backup update (3.9, metadata 3.43), the admin's ``export_record``/``import_record`` round trip and
``os-reset_status``."""
from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from tests.functional.volumes.test_backups_and_hosts_api import _pool, _volume
from tests.functional.volumes.test_volume_api import call

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])
MiB = 1024 ** 2


@pytest.fixture
def backups(bfv: Any, settings: Any, tmp_path: Path) -> Any:
    settings.BACKUP_DIR = tmp_path / "backups"
    return bfv


def _write(volume_id: str, offset: int, data: bytes) -> None:
    with open(_pool(volume_id), "r+b") as fh:
        fh.seek(offset)
        fh.write(data)


def _read(volume_id: str, offset: int, length: int) -> bytes:
    with open(_pool(volume_id), "rb") as fh:
        fh.seek(offset)
        return fh.read(length)


def _backup(client: Any, volume_id: str, **extra: Any) -> dict[str, Any]:
    created = call(client, "post", "/volume/v3/backups", {"backup": {"volume_id": volume_id, **extra}})
    assert created.status_code == 202, created.content
    shown = call(client, "get", f"/volume/v3/backups/{created.json()['backup']['id']}").json()["backup"]
    assert shown["status"] == "available", shown
    return dict(shown)


def _restore(client: Any, backup_id: str) -> str:
    restored = call(client, "post", f"/volume/v3/backups/{backup_id}/restore", {"restore": {}})
    assert restored.status_code == 202, restored.content
    volume_id = restored.json()["restore"]["volume_id"]
    assert call(client, "get", f"/volume/v3/volumes/{volume_id}").json()["volume"]["status"] == "available"
    return str(volume_id)


def test_incremental_backups_chain_restore_and_delete_order(backups: Any) -> None:
    client = backups.member()
    vol = _volume(client, name="chained")
    # given a full backup of a volume holding A at 0
    _write(vol["id"], 0, b"AAAA")
    full = _backup(client, vol["id"], name="full")
    assert (full["is_incremental"], full["has_dependent_backups"]) == (False, False)
    # when block 0 is zeroed, B written at 5 MiB and an incremental backup made
    _write(vol["id"], 0, b"\0\0\0\0")
    _write(vol["id"], 5 * MiB, b"BBBB")
    incr1 = _backup(client, vol["id"], name="incr1", incremental=True)
    # then it builds on the full one, holding only the two changed blocks
    assert incr1["is_incremental"] is True
    assert call(client, "get", f"/volume/v3/backups/{full['id']}").json()["backup"]["has_dependent_backups"] is True
    from volumes.models import Backup

    assert Backup.objects.get(pk=incr1["id"]).parent_id == full["id"]
    store = Path(settings.BACKUP_DIR)
    assert json.loads((store / f"backup-{incr1['id']}.changed").read_text()) == [0, 5]
    assert (store / f"backup-{incr1['id']}").stat().st_blocks * 512 <= 2 * MiB
    # and a second incremental builds on the first
    _write(vol["id"], 7 * MiB + 3, b"CCCC")
    incr2 = _backup(client, vol["id"], name="incr2", incremental=True)
    assert Backup.objects.get(pk=incr2["id"]).parent_id == incr1["id"]
    assert json.loads((store / f"backup-{incr2['id']}.changed").read_text()) == [7]

    # when each is restored into a new volume, it has the bytes the volume had at that backup
    from_incr2 = _restore(client, incr2["id"])
    assert _read(from_incr2, 0, 4) == b"\0\0\0\0"
    assert (_read(from_incr2, 5 * MiB, 4), _read(from_incr2, 7 * MiB + 3, 4)) == (b"BBBB", b"CCCC")
    from_incr1 = _restore(client, incr1["id"])
    assert (_read(from_incr1, 5 * MiB, 4), _read(from_incr1, 7 * MiB + 3, 4)) == (b"BBBB", b"\0\0\0\0")
    from_full = _restore(client, full["id"])
    assert (_read(from_full, 0, 4), _read(from_full, 5 * MiB, 4)) == (b"AAAA", b"\0\0\0\0")

    # a backup that others build on cannot be deleted, not even forced by an admin
    refused = call(client, "delete", f"/volume/v3/backups/{full['id']}")
    assert refused.status_code == 400
    assert refused.json() == {"badRequest": {"code": 400, "message":
                                             "Invalid backup: Incremental backups exist for this backup."}}
    forced = call(backups.admin(), "post", f"/volume/v3/backups/{incr1['id']}/action", {"os-force_delete": {}})
    assert forced.status_code == 400
    # newest first, they go
    for backup in (incr2, incr1, full):
        assert call(client, "delete", f"/volume/v3/backups/{backup['id']}").status_code == 202
    assert call(client, "get", "/volume/v3/backups").json()["backups"] == []
    assert sorted(p.name for p in store.iterdir()) == []


def test_incremental_backup_needs_an_available_parent(backups: Any) -> None:
    client = backups.member()
    vol = _volume(client)
    full = _backup(client, vol["id"])
    from volumes.models import Backup

    Backup.objects.filter(pk=full["id"]).update(status="error")
    refused = call(client, "post", "/volume/v3/backups", {"backup": {"volume_id": vol["id"], "incremental": True}})
    assert refused.status_code == 400
    assert refused.json()["badRequest"]["message"] == (
        "Invalid backup: The parent backup must be available for incremental backup.")


def test_backup_of_a_snapshot(backups: Any) -> None:
    client = backups.member()
    vol = _volume(client, name="snapped")
    other = _volume(client, name="other")
    # given a snapshot taken while the volume held SNAP, and the volume changed since
    _write(vol["id"], 0, b"SNAP")
    snap = call(client, "post", "/volume/v3/snapshots", {"snapshot": {"volume_id": vol["id"]}}).json()["snapshot"]
    _write(vol["id"], 0, b"LATE")
    # when the snapshot is backed up
    backup = _backup(client, vol["id"], snapshot_id=snap["id"])
    # then the backup names it, holds its bytes, and the snapshot and the volume are available again
    assert backup["snapshot_id"] == snap["id"]
    shown_snap = call(client, "get", f"/volume/v3/snapshots/{snap['id']}").json()["snapshot"]
    assert shown_snap["status"] == "available"
    assert backup["data_timestamp"] == shown_snap["created_at"]
    assert call(client, "get", f"/volume/v3/volumes/{vol['id']}").json()["volume"]["status"] == "available"
    assert _read(_restore(client, backup["id"]), 0, 4) == b"SNAP"
    # a snapshot of another volume, or an unknown one, is refused
    mismatch = call(client, "post", "/volume/v3/backups", {"backup": {"volume_id": other["id"],
                                                                       "snapshot_id": snap["id"]}})
    assert mismatch.status_code == 400 and "does not match with snapshot.volume_id" in mismatch.content.decode()
    unknown = call(client, "post", "/volume/v3/backups", {"backup": {"volume_id": vol["id"], "snapshot_id": "nope"}})
    assert unknown.status_code == 404


def test_backup_update(backups: Any) -> None:
    client = backups.member()
    vol = _volume(client)
    bid = _backup(client, vol["id"], name="before")["id"]
    url = f"/volume/v3/backups/{bid}"
    # before 3.9 there is no update
    assert call(client, "put", url, {"backup": {"name": "x"}}, version="volume 3.8").status_code == 404
    # 3.9 updates name and description, answering with the summary
    updated = call(client, "put", url, {"backup": {"name": "after", "description": "d"}}, version="volume 3.9")
    assert updated.status_code == 200, updated.content
    assert set(updated.json()["backup"]) == {"id", "name", "links"} and updated.json()["backup"]["name"] == "after"
    # metadata only from 3.43, where it is shown
    refused = call(client, "put", url, {"backup": {"metadata": {"k": "v"}}}, version="volume 3.42")
    assert refused.status_code == 400
    assert call(client, "put", url, {"backup": {"metadata": {"k": "v"}}}, version="volume 3.43").status_code == 200
    shown = call(client, "get", url, version="volume 3.43").json()["backup"]
    assert (shown["name"], shown["description"], shown["metadata"]) == ("after", "d", {"k": "v"})
    # another project cannot
    assert call(backups.member("eve", "demo2"), "put", url, {"backup": {"name": "x"}}).status_code == 404


def _with_id(url: str, new_id: str) -> str:
    record = json.loads(base64.b64decode(url))
    record["id"] = new_id
    return base64.b64encode(json.dumps(record).encode()).decode()


def test_export_and_import_record_round_trip(backups: Any) -> None:
    client, admin = backups.member(), backups.admin()
    vol = _volume(client)
    _write(vol["id"], 3 * MiB, b"EXPORTED")
    bid = _backup(client, vol["id"])["id"]
    # only admins export
    assert call(client, "get", f"/volume/v3/backups/{bid}/export_record").status_code == 403
    exported = call(admin, "get", f"/volume/v3/backups/{bid}/export_record")
    assert exported.status_code == 200, exported.content
    record = exported.json()["backup-record"]
    assert set(record) == {"backup_service", "backup_url"}
    assert record["backup_service"].startswith("cinder.backup.drivers.")
    # the record as it is names a backup that exists
    same = call(admin, "post", "/volume/v3/backups/import_record", {"backup-record": record})
    assert same.status_code == 400 and "already exists" in same.json()["badRequest"]["message"]
    # imported under another id, it is a backup of the same data
    new_id = "0d7a4c11-8f5b-4c3e-9a6e-2b9e64c0f001"
    imported = call(admin, "post", "/volume/v3/backups/import_record",
                    {"backup-record": {**record, "backup_url": _with_id(record["backup_url"], new_id)}})
    assert imported.status_code == 201, imported.content
    assert set(imported.json()["backup"]) == {"id", "name", "links"} and imported.json()["backup"]["id"] == new_id
    shown = call(admin, "get", f"/volume/v3/backups/{new_id}").json()["backup"]
    assert (shown["status"], shown["volume_id"], shown["size"]) == ("available", vol["id"], 1)
    assert new_id in [b["id"] for b in call(admin, "get", "/volume/v3/backups/detail").json()["backups"]]
    assert _read(_restore(admin, new_id), 3 * MiB, 8) == b"EXPORTED"
    # the original deleted, the data stays for the import; deleting that too removes it
    assert call(client, "delete", f"/volume/v3/backups/{bid}").status_code == 202
    data = Path(settings.BACKUP_DIR) / f"backup-{bid}"
    assert data.exists()
    assert call(admin, "delete", f"/volume/v3/backups/{new_id}").status_code == 202
    assert not data.exists()
    # records that cannot be read, or of another service, are refused; so are non-admins
    bad = call(admin, "post", "/volume/v3/backups/import_record",
               {"backup-record": {"backup_service": record["backup_service"], "backup_url": "not-base64!"}})
    assert bad.status_code == 400 and "Can't parse backup record" in bad.content.decode()
    other = call(admin, "post", "/volume/v3/backups/import_record",
                 {"backup-record": {**record, "backup_service": "cinder.backup.drivers.swift.SwiftBackupDriver"}})
    assert other.status_code == 400
    assert call(client, "post", "/volume/v3/backups/import_record", {"backup-record": record}).status_code == 403
    # an import whose data is gone ends in error
    gone = call(admin, "post", "/volume/v3/backups/import_record",
                {"backup-record": {**record, "backup_url": _with_id(record["backup_url"], new_id)}})
    assert gone.status_code == 201
    assert call(admin, "get", f"/volume/v3/backups/{new_id}").json()["backup"]["status"] == "error"


def test_backup_reset_status(backups: Any) -> None:
    client, admin = backups.member(), backups.admin()
    bid = _backup(client, _volume(client)["id"])["id"]
    action = f"/volume/v3/backups/{bid}/action"
    assert call(client, "post", action, {"os-reset_status": {"status": "error"}}).status_code == 403
    assert call(admin, "post", action, {"os-reset_status": {"status": "error"}}).status_code == 202
    assert call(client, "get", f"/volume/v3/backups/{bid}").json()["backup"]["status"] == "error"
    refused = call(admin, "post", action, {"os-reset_status": {"status": "creating"}})
    assert refused.status_code == 400
    assert call(admin, "post", action, {"os-reset_status": {"status": "available"}}).status_code == 202
    assert call(client, "get", f"/volume/v3/backups/{bid}").json()["backup"]["status"] == "available"


def test_restore_gives_back_the_volume_metadata(backups: Any) -> None:
    client = backups.member()
    # given a backup of a volume with metadata
    vol = _volume(client, metadata={"vol-meta1": "value1", "vol-meta2": "value2"})
    bid = _backup(client, vol["id"])["id"]
    # when it is restored into a new volume, and over one with metadata of its own
    restored = _restore(client, bid)
    target = _volume(client, metadata={"mine": "kept"})
    call(client, "post", f"/volume/v3/backups/{bid}/restore", {"restore": {"volume_id": target["id"]}})
    # then both carry the backed-up volume's metadata (the target keeps its own keys)
    shown = call(client, "get", f"/volume/v3/volumes/{restored}").json()["volume"]["metadata"]
    assert shown == {"vol-meta1": "value1", "vol-meta2": "value2"}
    shown = call(client, "get", f"/volume/v3/volumes/{target['id']}").json()["volume"]["metadata"]
    assert shown == {"vol-meta1": "value1", "vol-meta2": "value2", "mine": "kept"}
