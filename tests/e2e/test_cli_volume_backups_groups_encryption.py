"""Block storage beyond volumes and full backups with the real ``openstack`` CLI against the live
cloud (a real volume worker): backup chains, generic volume groups, volume type encryption.

Backups (the worker writes the backup store): ``volume backup create --incremental`` builds on the
newest backup and the parent cannot be deleted while it has one; ``--snapshot`` backs up a
snapshot's bytes; ``volume backup set`` renames and adds properties; ``volume backup record
export`` (admin) gives a record that, imported under another id, is a backup of the same data;
restores give the bytes the volume had.

``volume backup record import`` is driven with a plain HTTP request as cinderclient and Tempest send
it: openstacksdk 4.22's ``Backup.import_record`` (which the CLI calls) posts to
``/backups/export_record`` with the path in place of the record's ``backup_url``, so it cannot
import into any cloud."""
from __future__ import annotations

import base64
import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from .cloud import LiveCloud
from .test_cli_security_groups import wait_active
from .test_cli_volumes import wait_volume

pytestmark = [pytest.mark.slow, pytest.mark.e2e]
MiB = 1024 ** 2


def _volume_file(cloud: LiveCloud, volume_id: str) -> Path:
    return cloud.var_dir / "volumes" / f"volume-{volume_id}"


def _write(cloud: LiveCloud, volume_id: str, offset: int, data: bytes) -> None:
    with open(_volume_file(cloud, volume_id), "r+b") as fh:
        fh.seek(offset)
        fh.write(data)


def _read(cloud: LiveCloud, volume_id: str, offset: int, length: int) -> bytes:
    with open(_volume_file(cloud, volume_id), "rb") as fh:
        fh.seek(offset)
        return fh.read(length)


def _backup(cloud: LiveCloud, *args: str) -> dict[str, Any]:
    created = cloud.openstack_json("volume", "backup", "create", *args)
    return wait_volume(cloud, "backup", created["id"], "available")


def _restore(cloud: LiveCloud, backup: str, name: str) -> str:
    cloud.openstack("volume", "backup", "restore", backup, name)
    return str(wait_volume(cloud, "volume", name, "available")["id"])


def _import_record(cloud: LiveCloud, record: dict[str, str]) -> dict[str, Any]:
    token = cloud.openstack_json("token", "issue", cloud="cloudcore-admin")["id"]
    request = urllib.request.Request(  # noqa: S310 - the live cloud's own URL
        f"{cloud.url}/volume/v3/backups/import_record", method="POST",
        data=json.dumps({"backup-record": record}).encode(),
        headers={"X-Auth-Token": token, "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
        assert response.status == 201
        return dict(json.loads(response.read())["backup"])


def _admin_wait(cloud: LiveCloud, kind: str, name: str, timeout: float = 60) -> dict[str, Any]:
    cloud.volume_status(kind, name, "available", cloud="cloudcore-admin", timeout=timeout)
    shown = cloud.openstack_json("volume", *([] if kind == "volume" else [kind]), "show", name,
                                 cloud="cloudcore-admin")
    assert shown["status"] == "available", f"{kind} {name} is {shown['status']}\n{cloud.tail(40)}"
    return dict(shown)


def test_incremental_snapshot_update_export_import_with_the_cli(live_cloud: LiveCloud) -> None:
    cloud = live_cloud
    admin = "cloudcore-admin"
    try:
        # given a volume holding FULL, backed up in full
        vol_id = cloud.openstack_json("volume", "create", "--size", "1", "chain-src")["id"]
        wait_volume(cloud, "volume", "chain-src", "available")
        _write(cloud, vol_id, 0, b"FULL")
        full = _backup(cloud, "--name", "chain-full", "chain-src")
        assert full["is_incremental"] is False
        # when INCR is written at 5 MiB and an incremental backup made
        _write(cloud, vol_id, 5 * MiB, b"INCR")
        incr = _backup(cloud, "--name", "chain-incr", "--incremental", "chain-src")
        # then it is incremental, its parent has a dependent and cannot be deleted
        assert incr["is_incremental"] is True
        assert cloud.openstack_json("volume", "backup", "show", "chain-full")["has_dependent_backups"] is True
        refused = cloud.openstack("volume", "backup", "delete", "chain-full", check=False)
        assert refused.returncode != 0 and "Incremental backups exist for this backup" in refused.stderr

        # a snapshot's backup holds the snapshot's bytes, not the volume's later ones
        cloud.openstack("volume", "snapshot", "create", "--volume", "chain-src", "chain-snap")
        snap = wait_volume(cloud, "snapshot", "chain-snap", "available")
        _write(cloud, vol_id, 0, b"LATE")
        snap_backup = _backup(cloud, "--name", "chain-snapbk", "--snapshot", "chain-snap", "chain-src")
        assert snap_backup["snapshot_id"] == snap["id"]
        assert wait_volume(cloud, "snapshot", "chain-snap", "available")["status"] == "available"

        # backup set renames, describes and adds properties
        cloud.openstack("volume", "backup", "set", "--name", "chain-incr2", "--description", "delta",
                        "--property", "kind=delta", "chain-incr")
        shown = cloud.openstack_json("volume", "backup", "show", "chain-incr2")
        assert (shown["name"], shown["description"], shown["metadata"]) == ("chain-incr2", "delta", {"kind": "delta"})

        # restores give the bytes each backup saw
        from_incr = _restore(cloud, "chain-incr2", "chain-from-incr")
        assert (_read(cloud, from_incr, 0, 4), _read(cloud, from_incr, 5 * MiB, 4)) == (b"FULL", b"INCR")
        from_snap = _restore(cloud, "chain-snapbk", "chain-from-snap")
        assert _read(cloud, from_snap, 0, 4) == b"FULL"

        # the admin exports the full backup's record; imported under a new id it restores the same data
        refused = cloud.openstack("volume", "backup", "record", "export", full["id"], check=False)
        assert refused.returncode != 0 and "backup:export-import" in refused.stderr
        record = cloud.openstack_json("volume", "backup", "record", "export", full["id"], cloud=admin)
        assert record["backup_service"].startswith("cinder.backup.drivers.")
        fields = json.loads(base64.b64decode(record["backup_url"]))
        fields["id"] = "7c2a3f5e-1d4b-4e8a-9b6c-0a1e2f3d4c5b"
        imported = _import_record(cloud, {"backup_service": record["backup_service"],
                                          "backup_url": base64.b64encode(json.dumps(fields).encode()).decode()})
        assert imported["id"] == fields["id"]
        # (it is the admin's: the import makes it in the importer's project)
        assert _admin_wait(cloud, "backup", fields["id"])["volume_id"] == vol_id
        cloud.openstack("volume", "backup", "restore", fields["id"], "chain-from-import", cloud=admin)
        restored = _admin_wait(cloud, "volume", "chain-from-import")
        assert (_read(cloud, restored["id"], 0, 4), _read(cloud, restored["id"], 5 * MiB, 4)) == (b"FULL", b"\0" * 4)

        # newest first, the chain goes
        cloud.openstack("volume", "backup", "delete", fields["id"], cloud=admin)
        for name in ("chain-snapbk", "chain-incr2", "chain-full"):
            cloud.openstack("volume", "backup", "delete", name)
            cloud.volume_status("backup", name, None)
        assert not {b["Name"] for b in cloud.openstack_json("volume", "backup", "list")} & {
            "chain-snapbk", "chain-incr2", "chain-full"}
    finally:
        for name in ("chain-snapbk", "chain-incr2", "chain-incr", "chain-full"):
            cloud.openstack("volume", "backup", "delete", "--force", name, check=False)
        cloud.openstack("volume", "delete", "chain-from-import", cloud=admin, check=False)
        cloud.openstack("volume", "snapshot", "delete", "chain-snap", check=False)
        cloud.openstack("volume", "delete", "chain-from-incr", "chain-from-snap", check=False)


def test_volume_groups_with_the_cli(live_cloud: LiveCloud) -> None:
    """``volume group type`` (admin), ``volume group create/add volume/set/show/delete --force`` and
    ``volume group snapshot create/list/delete``, a group from the group snapshot (the CLI needs
    ``--os-volume-api-version`` for groups)."""
    cloud = live_cloud
    v = ("--os-volume-api-version", "3.20")
    admin = "cloudcore-admin"
    try:
        # given a group type with a property and a volume type (admin)
        cloud.openstack(*v, "volume", "group", "type", "create", "--description", "e2e", "e2e-gt", cloud=admin)
        cloud.openstack(*v, "volume", "group", "type", "set", "--property", "k=v", "e2e-gt", cloud=admin)
        shown = cloud.openstack_json(*v, "volume", "group", "type", "show", "e2e-gt", cloud=admin)
        assert (shown["Description"], shown["Properties"]) == ("e2e", {"k": "v"}), shown
        cloud.openstack("volume", "type", "create", "e2e-gvt", cloud=admin)
        # when a member makes a group of them and adds a volume of the type
        group = cloud.openstack_json(*v, "volume", "group", "create", "--volume-group-type", "e2e-gt",
                                     "--volume-type", "e2e-gvt", "--name", "e2e-grp")
        assert group["Status"] == "available", group
        vol_id = cloud.openstack_json("volume", "create", "--size", "1", "--type", "e2e-gvt", "e2e-gvol")["id"]
        wait_volume(cloud, "volume", "e2e-gvol", "available")
        _write(cloud, vol_id, 0, b"GRP!")
        cloud.openstack(*v, "volume", "group", "add", "volume", "e2e-grp", "e2e-gvol")
        assert cloud.openstack_json("--os-volume-api-version", "3.13", "volume", "show", "e2e-gvol")[
            "group_id"] == group["ID"]
        cloud.openstack(*v, "volume", "group", "set", "--name", "e2e-grp2", "--description", "g", "e2e-grp")
        assert cloud.openstack_json(*v, "volume", "group", "show", "e2e-grp2")["Description"] == "g"
        # then a group snapshot is made of it, and a group from that snapshot holds a copy of the volume
        gsnap = cloud.openstack_json(*v, "volume", "group", "snapshot", "create", "--name", "e2e-gs", "e2e-grp2")
        cloud.volume_status("group_snapshot", gsnap["ID"], "available")
        assert cloud.openstack_json(*v, "volume", "group", "snapshot", "show", gsnap["ID"])["Status"] == "available"
        copy = cloud.openstack_json(*v, "volume", "group", "create", "--group-snapshot", "e2e-gs",
                                    "--name", "e2e-from-gs")
        assert copy["Group Snapshot ID"] == gsnap["ID"]
        cloud.poll(lambda conn: [vol.id for vol in conn.block_storage.volumes()
                                 if vol.group_id == copy["ID"] and vol.status == "available"], bool,
                   "the volume of the group from the snapshot")
        members = [vol for vol in cloud.openstack_json("--os-volume-api-version", "3.13", "volume", "list", "--long")
                   if vol["ID"] != vol_id and vol["Status"] == "available"
                   and cloud.openstack_json("--os-volume-api-version", "3.13", "volume", "show",
                                            vol["ID"])["group_id"] == copy["ID"]]
        assert len(members) == 1, cloud.tail(40)
        assert _read(cloud, members[0]["ID"], 0, 4) == b"GRP!"
        # a group with volumes needs --force (delete-volumes); its snapshot goes first
        refused = cloud.openstack(*v, "volume", "group", "delete", "e2e-from-gs", check=False)
        assert refused.returncode != 0 and "delete-volumes flag is required" in refused.stderr
        cloud.openstack(*v, "volume", "group", "delete", "--force", "e2e-from-gs")
        cloud.openstack(*v, "volume", "group", "snapshot", "delete", "e2e-gs")
        cloud.poll(lambda conn: list(conn.block_storage.group_snapshots()), lambda left: not left,
                   "the group snapshot to go")
        assert not cloud.openstack_json(*v, "volume", "group", "snapshot", "list")
        cloud.openstack(*v, "volume", "group", "delete", "--force", "e2e-grp2")
        assert cloud.openstack(*v, "volume", "group", "show", "e2e-grp2", check=False).returncode != 0
    finally:
        cloud.openstack(*v, "volume", "group", "snapshot", "delete", "e2e-gs", check=False)
        for name in ("e2e-from-gs", "e2e-grp2", "e2e-grp"):
            cloud.openstack(*v, "volume", "group", "delete", "--force", name, check=False)
        cloud.openstack("volume", "delete", "e2e-gvol", check=False)
        cloud.openstack(*v, "volume", "group", "type", "delete", "e2e-gt", cloud=admin, check=False)


def test_volume_type_encryption_with_the_cli(live_cloud: LiveCloud) -> None:
    """``volume type create --encryption-provider ...`` (admin) makes volumes of the type
    ``encrypted``; ``volume type set/unset --encryption-*`` is refused while the type has volumes;
    ``server add volume`` refuses an encrypted volume (this cloud's compute has no key manager)."""
    cloud = live_cloud
    admin = "cloudcore-admin"
    try:
        cloud.openstack("volume", "type", "create", "--encryption-provider", "luks", "--encryption-cipher",
                        "aes-xts-plain64", "--encryption-key-size", "256", "e2e-enc", cloud=admin)
        shown = cloud.openstack_json("volume", "type", "show", "--encryption-type", "e2e-enc", cloud=admin)
        assert (shown["encryption"]["provider"], shown["encryption"]["key_size"]) == ("luks", 256), shown
        vol = cloud.openstack_json("volume", "create", "--size", "1", "--type", "e2e-enc", "e2e-encvol")
        assert vol["encrypted"] is True
        wait_volume(cloud, "volume", "e2e-encvol", "available")
        refused = cloud.openstack("volume", "type", "set", "--encryption-key-size", "128", "e2e-enc", cloud=admin,
                                  check=False)
        assert refused.returncode != 0 and "Volume type in use" in refused.stderr
        cloud.openstack("server", "create", "--flavor", "m1.tiny", "--image", "tiny", "--network", "demo-net",
                        "e2e-enc-vm")
        wait_active(cloud, "e2e-enc-vm")
        refused = cloud.openstack("server", "add", "volume", "e2e-enc-vm", "e2e-encvol", check=False)
        assert refused.returncode != 0 and "is encrypted" in refused.stderr, refused.stderr
        assert cloud.openstack_json("volume", "show", "e2e-encvol")["status"] == "available"
        cloud.openstack("volume", "delete", "e2e-encvol")
        cloud.volume_status("volume", "e2e-encvol", None)
        assert cloud.openstack("volume", "show", "e2e-encvol", check=False).returncode != 0
        cloud.openstack("volume", "type", "unset", "--encryption-type", "e2e-enc", cloud=admin)
        shown = cloud.openstack_json("volume", "type", "show", "--encryption-type", "e2e-enc", cloud=admin)
        assert not shown.get("encryption"), shown
    finally:
        cloud.openstack("server", "delete", "--wait", "e2e-enc-vm", check=False)
        cloud.openstack("volume", "delete", "e2e-encvol", check=False)
        cloud.openstack("volume", "type", "delete", "e2e-enc", cloud=admin, check=False)
