"""A BuildRequest becoming a server in a cell (the conductor's writes, ``conductor.build``).

The BuildRequest (API database) holds the serialised instance, its block device mappings and tags
until a cell is chosen: the Instance row and its BDMs and tags are created from it in the targeted
cell (the chosen host's, or cell0 for a server that got none), then the BuildRequest goes.
"""
from __future__ import annotations

from typing import Any

from django.utils import timezone
from django.utils.dateparse import parse_datetime

from cloudcore.core.scope import insert_plain_now

from ..models import BlockDeviceMapping, BuildRequest, Instance, Tag

#: Sources of a block device for which the cloud creates the volume.
VOLUME_CREATING_SOURCES = ("image", "snapshot", "blank")
_INSTANCE_FIELDS = {f.name for f in Instance._meta.get_fields() if getattr(f, "concrete", False)}


def instance_from_build_request(br: BuildRequest, **overrides: Any) -> Instance:
    """An unsaved Instance built from the BuildRequest's serialised instance, with ``overrides``."""
    data = {k: v for k, v in br.instance.items() if k in _INSTANCE_FIELDS and k not in ("id",)}
    if isinstance(data.get("created_at"), str):
        data["created_at"] = parse_datetime(data["created_at"]) or timezone.now()
    data.update(overrides)
    return Instance(**data)


def instance_from_build_request_create(instance: Instance) -> None:
    """Store ``instance`` (new, from ``instance_from_build_request``) in the targeted cell as
    ``instance.save()`` would (its node and compute id checked), by one plain INSERT: inside a
    cell's ``written_together`` on PostgreSQL, sent with the rows after it in one query. The row is
    not given its id: ``instance`` is not to be saved again (its uuid names it)."""
    instance._check_node_linkage()
    insert_plain_now([instance])


def build_request_creates_volumes(br: BuildRequest) -> bool:
    """Does the server ask the cloud to create a volume (a block device from an image, a snapshot
    or blank, to a volume: ``volume_attachments.bdm_volumes_create``'s work)?"""
    return any(bdm.get("destination_type", "local") == "volume"
               and bdm.get("source_type", "image") in VOLUME_CREATING_SOURCES for bdm in br.block_device_mappings or [])


def build_request_has_volumes(br: BuildRequest) -> bool:
    """Does the server ask for any block device that is a volume (existing or to be created)?"""
    return any(bdm.get("destination_type", "local") == "volume" for bdm in br.block_device_mappings or [])


def build_request_bdms_and_tags_create(br: BuildRequest, instance_uuid: str) -> None:
    """Create the requested block device mappings and tags of the server in the targeted cell."""
    for bdm in br.block_device_mappings or []:
        BlockDeviceMapping.objects.create(
            instance_uuid=instance_uuid,
            source_type=bdm.get("source_type", "image"),
            destination_type=bdm.get("destination_type", "local"),
            boot_index=bdm.get("boot_index"),
            device_name=bdm.get("device_name"),
            delete_on_termination=bool(bdm.get("delete_on_termination", False)),
            image_id=bdm.get("uuid") if bdm.get("source_type") == "image" else None,
            volume_id=bdm.get("uuid") if bdm.get("source_type") == "volume" else None,
            snapshot_id=bdm.get("uuid") if bdm.get("source_type") == "snapshot" else None,
            volume_size=bdm.get("volume_size"),
            volume_type=bdm.get("volume_type"),
            disk_bus=bdm.get("disk_bus"),
            device_type=bdm.get("device_type"),
            guest_format=bdm.get("guest_format"),
            tag=bdm.get("tag"),
        )
    for tag in br.tags or []:
        Tag.objects.get_or_create(instance_uuid=instance_uuid, tag=tag)


def build_request_delete(instance_uuid: str) -> bool:
    """Delete the server's BuildRequest (API database); False when it was gone already (the user
    deleted the server meanwhile). Nothing refers to a BuildRequest (no cascade, no signal), so
    this is the one DELETE that ``QuerySet.delete`` would run inside a transaction of its own."""
    rows = BuildRequest.objects.filter(instance_uuid=instance_uuid)
    return bool(rows._raw_delete(rows.db))
