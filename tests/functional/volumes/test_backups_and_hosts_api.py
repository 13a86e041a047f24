"""Volume backups through Cinder's API (the volume worker copies the bytes to a file under
BACKUP_DIR; a restore writes them into a new or an existing volume), and the admin-only
``os-hosts``; a volume with snapshots still cannot be deleted."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from tests.functional.volumes.test_volume_api import call

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])
V318 = "volume 3.18"


@pytest.fixture
def backups(bfv: Any, settings: Any, tmp_path: Path) -> Any:
    settings.BACKUP_DIR = tmp_path / "backups"
    return bfv


def _volume(client: Any, **extra: Any) -> dict[str, Any]:
    created = call(client, "post", "/volume/v3/volumes", {"volume": {"size": 1, **extra}})
    assert created.status_code == 202, created.content
    return created.json()["volume"]


def _pool(volume_id: str) -> Path:
    return Path(settings.VOLUME_POOL_DIR) / f"volume-{volume_id}"


def test_backup_create_restore_delete(backups: Any) -> None:
    client = backups.member()
    # given a volume whose bytes start with a marker
    vol = _volume(client, name="precious")
    with open(_pool(vol["id"]), "r+b") as fh:
        fh.write(b"PRECIOUS-DATA")
    # when it is backed up
    created = call(client, "post", "/volume/v3/backups", {"backup": {"volume_id": vol["id"], "name": "b1"}})
    assert created.status_code == 202, created.content
    assert set(created.json()["backup"]) == {"id", "links", "name"}
    bid = created.json()["backup"]["id"]
    # then the backup is available with the volume's bytes (sparse: the zeroes are holes), the volume available
    shown = call(client, "get", f"/volume/v3/backups/{bid}").json()["backup"]
    assert (shown["status"], shown["volume_id"], shown["size"], shown["name"]) == ("available", vol["id"], 1, "b1")
    assert "os-backup-project-attr:project_id" not in shown
    data = Path(settings.BACKUP_DIR) / f"backup-{bid}"
    assert data.read_bytes()[:13] == b"PRECIOUS-DATA" and data.stat().st_size == 1024 ** 3
    assert data.stat().st_blocks * 512 <= 1024 ** 2  # one written block, the rest holes
    assert call(client, "get", f"/volume/v3/volumes/{vol['id']}").json()["volume"]["status"] == "available"
    assert [b["id"] for b in call(client, "get", "/volume/v3/backups").json()["backups"]] == [bid]
    assert call(client, "get", "/volume/v3/backups/detail").json()["backups"][0]["status"] == "available"
    limits = call(client, "get", "/volume/v3/limits").json()["limits"]["absolute"]
    assert (limits["totalBackupsUsed"], limits["totalBackupGigabytesUsed"]) == (1, 1)
    # an admin sees the owner from 3.18
    from volumes.models import Volume

    admin_view = call(backups.admin(), "get", f"/volume/v3/backups/{bid}", version=V318).json()["backup"]
    assert admin_view["os-backup-project-attr:project_id"] == Volume.objects.get(pk=vol["id"]).project_id

    # when it is restored without a volume, a new volume of its size holds the bytes
    restored = call(client, "post", f"/volume/v3/backups/{bid}/restore", {"restore": {"name": "from-backup"}})
    assert restored.status_code == 202, restored.content
    new_id = restored.json()["restore"]["volume_id"]
    assert restored.json()["restore"] == {"backup_id": bid, "volume_id": new_id, "volume_name": "from-backup"}
    new = call(client, "get", f"/volume/v3/volumes/{new_id}").json()["volume"]
    assert (new["status"], new["size"], new["name"]) == ("available", 1, "from-backup")
    assert _pool(new_id).read_bytes()[:13] == b"PRECIOUS-DATA"

    # when it is restored over an existing volume, that volume gets the bytes back
    with open(_pool(vol["id"]), "r+b") as fh:
        fh.write(b"OVERWRITTEN!!")
    again = call(client, "post", f"/volume/v3/backups/{bid}/restore", {"restore": {"volume_id": vol["id"]}})
    assert again.status_code == 202 and again.json()["restore"]["volume_id"] == vol["id"]
    assert _pool(vol["id"]).read_bytes()[:13] == b"PRECIOUS-DATA"
    assert call(client, "get", f"/volume/v3/backups/{bid}").json()["backup"]["status"] == "available"

    # when it is deleted, its file goes and it is no longer listed
    assert call(client, "delete", f"/volume/v3/backups/{bid}").status_code == 202
    assert not data.exists()
    assert call(client, "get", f"/volume/v3/backups/{bid}").status_code == 404
    assert call(client, "get", "/volume/v3/backups").json()["backups"] == []


def test_backup_refusals(backups: Any) -> None:
    client = backups.member()
    vol = _volume(client, name="v")
    # an unknown volume is a 404, incremental needs a backup to build on, other projects see nothing
    assert call(client, "post", "/volume/v3/backups", {"backup": {"volume_id": "nope"}}).status_code == 404
    incremental = call(client, "post", "/volume/v3/backups", {"backup": {"volume_id": vol["id"], "incremental": True}})
    assert incremental.status_code == 400
    assert incremental.json()["badRequest"]["message"] == (
        "Invalid backup: No backups available to do an incremental backup.")
    bid = call(client, "post", "/volume/v3/backups", {"backup": {"volume_id": vol["id"]}}).json()["backup"]["id"]
    other = backups.member("eve", "demo2")
    assert call(other, "get", f"/volume/v3/backups/{bid}").status_code == 404
    assert call(other, "delete", f"/volume/v3/backups/{bid}").status_code == 404
    # a restore into a volume that is too small, or not available, is a 400
    from volumes.models import Volume

    Volume.objects.filter(pk=vol["id"]).update(size=0)
    small = call(client, "post", f"/volume/v3/backups/{bid}/restore", {"restore": {"volume_id": vol["id"]}})
    assert small.status_code == 400 and "too small" in small.content.decode()
    Volume.objects.filter(pk=vol["id"]).update(size=1, status="in-use")
    busy = call(client, "post", f"/volume/v3/backups/{bid}/restore", {"restore": {"volume_id": vol["id"]}})
    assert busy.status_code == 400
    # an in-use volume needs force
    refused = call(client, "post", "/volume/v3/backups", {"backup": {"volume_id": vol["id"]}})
    assert refused.status_code == 400 and "force" in refused.content.decode()
    forced = call(client, "post", "/volume/v3/backups", {"backup": {"volume_id": vol["id"], "force": True}})
    assert forced.status_code == 202
    assert Volume.objects.get(pk=vol["id"]).status == "in-use"
    # the backups quota holds
    project = Volume.objects.get(pk=vol["id"]).project_id
    assert call(backups.admin(), "put", f"/volume/v3/os-quota-sets/{project}",
                {"quota_set": {"backups": 2}}).status_code == 200
    over = call(client, "post", "/volume/v3/backups", {"backup": {"volume_id": vol["id"], "force": True}})
    assert over.status_code == 413


def test_os_hosts_for_admins_and_the_hosts_extension(backups: Any) -> None:
    client = backups.member()
    _volume(client, name="counted")
    assert call(client, "get", "/volume/v3/os-hosts").status_code == 403
    hosts = call(backups.admin(), "get", "/volume/v3/someproject/os-hosts").json()["hosts"]
    volume_host = next(h for h in hosts if h["service"] == "cinder-volume")
    assert volume_host["zone"] == "nova" and volume_host["service-status"] == "available"
    shown = call(backups.admin(), "get", f"/volume/v3/os-hosts/{volume_host['host_name']}").json()["host"]
    assert shown[0]["resource"]["project"] == "(total)" and shown[0]["resource"]["volume_count"] == "1"
    assert call(backups.admin(), "get", "/volume/v3/os-hosts/elsewhere").status_code == 404
    extensions = {e["name"] for e in call(client, "get", "/volume/v3/extensions").json()["extensions"]}
    assert {"Hosts", "Backups"} <= extensions


def test_a_volume_with_snapshots_cannot_be_deleted(backups: Any) -> None:
    client = backups.member()
    vol = _volume(client, name="has-snap")
    call(client, "post", "/volume/v3/snapshots", {"snapshot": {"volume_id": vol["id"]}})
    refused = call(client, "delete", f"/volume/v3/volumes/{vol['id']}")
    assert refused.status_code == 400 and "snapshots" in refused.content.decode()
