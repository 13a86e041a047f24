"""Generic volume groups (Cinder's 3.11+ group types, 3.13+ groups, 3.14+ group snapshots).

A group type is a name with group specs (admins manage them). A group has one group type and the
volume types its volumes may have; it is ``available`` once recorded (this cloud's one backend
needs no work for it). Volumes join it at create (``group_id``) or by an update's
``add_volumes`` (``available`` or ``in-use`` volumes of one of its types, in no other group) and
leave it by ``remove_volumes``. A group with volumes is deleted only with ``delete-volumes``
(its volumes go with it); a group with group snapshots not at all.

A group snapshot is one snapshot of each of the group's volumes, taken by the volume worker in
one task: ``creating`` until every snapshot is made, then ``available`` (``error`` if one failed).
A group can be created from a group snapshot (a volume from each of its snapshots) or from a
source group (a clone of each of its volumes), with the source's group type and volume types.
"""
from __future__ import annotations

import logging
from typing import Any

from django.db import IntegrityError
from django.utils import timezone

from cells.transactions import api_atomic, api_on_commit
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Conflict, Invalid, NotFound
from cloudcore.core.policy import authorize

from . import rpc
from .backends import VolumeBackendError, get_backend
from .models import GroupSnapshot, GroupType, Snapshot, SnapshotStatus, Volume, VolumeGroup, VolumeStatus
from .owned import owned_get, sorted_page
from .quotas import quota_check
from .services import volume_create, volume_delete
from .types import volume_type_find

log = logging.getLogger(__name__)

#: Statuses an admin may set (``reset_status``), Cinder's for groups and group snapshots.
GROUP_STATUSES = ("available", "creating", "deleting", "error", "error_deleting", "updating", "in-use")
GROUP_SNAPSHOT_STATUSES = ("available", "creating", "deleting", "error", "error_deleting")
SORT_KEYS = ("created_at", "id", "name", "status", "updated_at")


class GroupTypeNotFound(NotFound):
    message = "Group type %(group_type_id)s could not be found."


class GroupNotFound(NotFound):
    message = "Group %(group_id)s could not be found."


class GroupSnapshotNotFound(NotFound):
    message = "GroupSnapshot %(group_snapshot_id)s could not be found."


class InvalidGroup(Invalid):
    message = "Invalid Group: %(reason)s"


class InvalidGroupSnapshot(Invalid):
    message = "Invalid GroupSnapshot: %(reason)s"


def _bury(row: VolumeGroup | GroupSnapshot) -> None:
    row.status = "deleted"
    row.save(update_fields=["status", "updated_at"])
    row.soft_delete()


def _check_status(what: str, status: str, allowed: tuple[str, ...]) -> None:
    if status not in allowed:
        raise Invalid(f"Invalid input received: {what} status: {status}, Valid statuses are: {', '.join(allowed)}.")


def _own(ctx: RequestContext) -> dict[str, Any]:
    return {"project_id": ctx.project_id, "user_id": ctx.user_id}


def _target(obj: VolumeGroup | GroupSnapshot) -> dict[str, Any]:
    return {"project_id": obj.project_id, "user_id": obj.user_id}


# -- group types ------------------------------------------------------------------------------
def group_type_get(ctx: RequestContext, type_id: str) -> GroupType:
    """A group type by id (a private one only to admins)."""
    gt = GroupType.objects.filter(pk=type_id).first() or GroupType.objects.filter(name=type_id).first()
    if gt is None or not (gt.is_public or ctx.is_admin):
        raise GroupTypeNotFound(group_type_id=type_id)
    return gt


def group_type_list(ctx: RequestContext, *, is_public: bool | None = True, sort: list[tuple[str, str]] | None = None,
                    limit: int | None = None, marker: str | None = None, offset: int = 0) -> list[GroupType]:
    qs = GroupType.objects.all()
    if not ctx.is_admin:
        qs = qs.filter(is_public=True)
    elif is_public is not None:
        qs = qs.filter(is_public=is_public)
    return sorted_page(qs, sort=sort, sort_keys=("created_at", "id", "name", "is_public", "description"),
                       limit=limit, marker=marker, offset=offset)


def group_type_create(ctx: RequestContext, *, name: str, description: str | None = None, is_public: bool = True,
                      group_specs: dict[str, str] | None = None) -> GroupType:
    authorize(ctx, "group:group_types:create", _own(ctx))
    if not name.strip():
        raise Invalid("Invalid input received: Group type name can not be empty.")
    try:
        with api_atomic():
            return GroupType.objects.create(name=name, description=description, is_public=is_public,
                                            group_specs=group_specs or {})
    except IntegrityError:
        raise Conflict(f"Group Type {name} already exists.") from None


def group_type_update(ctx: RequestContext, gt: GroupType, *, changes: dict[str, Any]) -> GroupType:
    authorize(ctx, "group:group_types:update", _own(ctx))
    if "name" in changes and changes["name"] is not None:
        if not str(changes["name"]).strip():
            raise Invalid("Invalid input received: Group type name can not be empty.")
        if GroupType.objects.filter(name=changes["name"]).exclude(pk=gt.pk).exists():
            raise Conflict(f"Group Type {changes['name']} already exists.")
        gt.name = changes["name"]
    if "description" in changes:
        gt.description = changes["description"]
    if changes.get("is_public") is not None:
        gt.is_public = bool(changes["is_public"])
    gt.save()
    return gt


def group_type_delete(ctx: RequestContext, gt: GroupType) -> None:
    authorize(ctx, "group:group_types:delete", _own(ctx))
    if VolumeGroup.objects.filter(group_type_id=gt.id).exists():
        raise Invalid(f"Invalid input received: Target group type with id {gt.id} is still in use.")
    gt.delete()


def group_specs_set(ctx: RequestContext, gt: GroupType, *, specs: dict[str, str]) -> GroupType:
    authorize(ctx, "group:group_types_specs:create", _own(ctx))
    gt.group_specs = {**(gt.group_specs or {}), **specs}
    gt.save(update_fields=["group_specs", "updated_at"])
    return gt


def group_specs_get(ctx: RequestContext, gt: GroupType) -> dict[str, str]:
    authorize(ctx, "group:group_types_specs:get", _own(ctx))
    return dict(gt.group_specs or {})


def group_spec_delete(ctx: RequestContext, gt: GroupType, *, key: str) -> None:
    authorize(ctx, "group:group_types_specs:delete", _own(ctx))
    specs = dict(gt.group_specs or {})
    if key not in specs:
        raise NotFound(f"Group Type {gt.id} has no specs with key {key}.")
    del specs[key]
    gt.group_specs = specs
    gt.save(update_fields=["group_specs", "updated_at"])


# -- groups -----------------------------------------------------------------------------------
def _visible(ctx: RequestContext, group_id: str) -> VolumeGroup:
    group = owned_get(ctx, VolumeGroup.objects.all(), group_id)
    if group is None:
        raise GroupNotFound(group_id=group_id)
    return group


def group_get(ctx: RequestContext, group_id: str) -> VolumeGroup:
    group = _visible(ctx, group_id)
    authorize(ctx, "group:get", _target(group))
    return group


def group_list(ctx: RequestContext, *, all_tenants: bool = False, sort: list[tuple[str, str]] | None = None,
               limit: int | None = None, marker: str | None = None, offset: int = 0) -> list[VolumeGroup]:
    authorize(ctx, "group:get_all", _own(ctx))
    qs = VolumeGroup.objects.all()
    if not (all_tenants and ctx.is_admin):
        qs = qs.filter(project_id=ctx.project_id)
    return sorted_page(qs, sort=sort, sort_keys=SORT_KEYS, limit=limit, marker=marker, offset=offset)


def group_volumes(group: VolumeGroup) -> list[Volume]:
    return list(Volume.objects.filter(group_id=group.id).order_by("created_at", "id"))


def group_create(ctx: RequestContext, *, group_type: str, volume_types: list[str], name: str | None = None,
                 description: str | None = None, availability_zone: str | None = None) -> VolumeGroup:
    """Record an ``available`` group of ``group_type`` for volumes of ``volume_types`` (names or
    ids, at least one). Raises NotFound for an unknown type. (The ``groups`` quota is shown, not
    enforced.)"""
    authorize(ctx, "group:create", _own(ctx))
    gt = group_type_get(ctx, group_type)
    if not volume_types:
        raise Invalid("Invalid input received: volume_types must be provided to create group.")
    type_ids = [volume_type_find(ctx, t).id for t in volume_types]
    return VolumeGroup.objects.create(name=name, description=description, group_type_id=gt.id,
                                      volume_type_ids=type_ids, availability_zone=availability_zone or "nova",
                                      project_id=ctx.project_id or "", user_id=ctx.user_id or "", status="available")


def _split(ids: str | None) -> list[str]:
    return [i.strip() for i in (ids or "").split(",") if i.strip()]


def group_update(ctx: RequestContext, group_id: str, *, name: str | None = None, description: str | None = None,
                 changes: set[str] | None = None, add_volumes: str | None = None,
                 remove_volumes: str | None = None) -> VolumeGroup:
    """Rename, describe, add volumes (``available``/``in-use``, of one of the group's volume
    types, in no group) and remove volumes (the group's). Raises InvalidGroup for a group that is
    not ``available`` or a volume that cannot join or leave."""
    group = _visible(ctx, group_id)
    authorize(ctx, "group:update", _target(group))
    changes = changes or set()
    if not changes and not add_volumes and not remove_volumes:
        raise Invalid("Invalid input received: Name, description, add_volumes, and remove_volumes can not be all "
                      "empty in the request body.")
    if group.status != "available":
        raise InvalidGroup(reason=f"Group status must be available, but current status is: {group.status}.")
    adding, removing = _split(add_volumes), _split(remove_volumes)
    joining: list[Volume] = []
    for vid in adding:
        vol = Volume.objects.filter(pk=vid, project_id=group.project_id).first()
        if vol is None:
            raise InvalidGroup(reason=f"Cannot add volume {vid} to group {group.id} because volume cannot be found.")
        if vol.group_id and vol.group_id != group.id:
            raise InvalidGroup(reason=f"Cannot add volume {vid} to group {group.id} because it is already in "
                                      f"group {vol.group_id}.")
        if vol.volume_type_id not in (group.volume_type_ids or []):
            raise InvalidGroup(reason=f"Cannot add volume {vid} to group {group.id} because volume type "
                                      f"{vol.volume_type_id} is not supported by the group.")
        if vol.status not in (VolumeStatus.AVAILABLE, VolumeStatus.IN_USE):
            raise InvalidGroup(reason=f"Cannot add volume {vid} to group {group.id} because volume is in an "
                                      f"invalid state: {vol.status}.")
        joining.append(vol)
    for vid in removing:
        if not Volume.objects.filter(pk=vid, group_id=group.id).exists():
            raise InvalidGroup(reason=f"Cannot remove volume {vid} from group {group.id} because it is not in "
                                      f"the group.")
    with api_atomic():
        if "name" in changes:
            group.name = name
        if "description" in changes:
            group.description = description
        group.save()
        Volume.objects.filter(pk__in=[v.id for v in joining]).update(group_id=group.id, updated_at=timezone.now())
        Volume.objects.filter(pk__in=removing, group_id=group.id).update(group_id=None, updated_at=timezone.now())
    return group


def group_delete(ctx: RequestContext, group_id: str, *, delete_volumes: bool = False) -> None:
    """Delete the group; with ``delete_volumes`` its volumes too (each as a volume delete). Refused
    (InvalidGroup) while it has volumes and no ``delete_volumes``, or has group snapshots, or is
    busy."""
    group = _visible(ctx, group_id)
    authorize(ctx, "group:delete", _target(group))
    if group.status not in ("available", "error", "error_deleting"):
        raise InvalidGroup(reason=f"Group status must be available or error, but current status is: "
                                  f"{group.status}")
    volumes = group_volumes(group)
    if volumes and not delete_volumes:
        raise InvalidGroup(reason=f"Group {group.id} still contains volumes. The delete-volumes flag is required "
                                  f"to delete it.")
    if GroupSnapshot.objects.filter(group_id=group.id).exists():
        raise InvalidGroup(reason=f"Group {group.id} has existing snapshots.")
    for vol in volumes:
        if vol.status not in (VolumeStatus.AVAILABLE, VolumeStatus.ERROR, VolumeStatus.ERROR_RESTORING):
            raise InvalidGroup(reason=f"Volume {vol.id} in group {group.id} is {vol.status}: it cannot be deleted.")
    with api_atomic():
        for vol in volumes:
            volume_delete(ctx, vol)
        _bury(group)


def group_reset_status(ctx: RequestContext, group_id: str, *, status: str) -> None:
    group = _visible(ctx, group_id)
    authorize(ctx, "group:reset_status", _target(group))
    _check_status("Group", status, GROUP_STATUSES)
    VolumeGroup.objects.filter(pk=group.pk).update(status=status, updated_at=timezone.now())


def group_create_from_source(ctx: RequestContext, *, group_snapshot_id: str | None = None,
                             source_group_id: str | None = None, name: str | None = None,
                             description: str | None = None) -> VolumeGroup:
    """A new group with the source's group type and volume types, and a new volume for each of
    the source's (from each snapshot of the group snapshot, or a clone of each volume of the
    source group), each created by the volume worker."""
    authorize(ctx, "group:create", _own(ctx))
    if bool(group_snapshot_id) == bool(source_group_id):
        raise Invalid("Invalid input received: Either 'group_snapshot_id' or 'source_group_id' must be provided to "
                      "create group from source.")
    if group_snapshot_id:
        gsnap = group_snapshot_get(ctx, group_snapshot_id)
        if gsnap.status != "available":
            raise InvalidGroupSnapshot(reason="Group snapshot status must be available.")
        source = _visible(ctx, gsnap.group_id) if VolumeGroup.objects.filter(pk=gsnap.group_id).exists() else None
        type_ids = source.volume_type_ids if source else []
        group_type_id = gsnap.group_type_id
        snaps = list(Snapshot.objects.filter(group_snapshot_id=gsnap.id).select_related("volume"))
        members: list[dict[str, Any]] = [{"snapshot_id": s.id, "size": s.size, "type": s.volume.volume_type_id}
                                         for s in snaps]
    else:
        source = _visible(ctx, str(source_group_id))
        if source.status != "available":
            raise InvalidGroup(reason="Source group status must be available.")
        type_ids, group_type_id = source.volume_type_ids, source.group_type_id
        members = [{"source_volid": v.id, "size": v.size, "type": v.volume_type_id} for v in group_volumes(source)]
    type_ids = list(dict.fromkeys([*type_ids, *(m["type"] for m in members if m["type"])]))
    with api_atomic():
        group = VolumeGroup.objects.create(
            name=name, description=description, group_type_id=group_type_id, volume_type_ids=type_ids,
            availability_zone=source.availability_zone if source else "nova", project_id=ctx.project_id or "",
            user_id=ctx.user_id or "", status="available", group_snapshot_id=group_snapshot_id,
            source_group_id=source_group_id)
        for member in members:
            vol = volume_create(ctx, size=member["size"], volume_type=member["type"],
                                snapshot_id=member.get("snapshot_id"), source_volid=member.get("source_volid"))
            Volume.objects.filter(pk=vol.pk).update(group_id=group.id)
    return group


# -- group snapshots --------------------------------------------------------------------------
def group_snapshot_get(ctx: RequestContext, group_snapshot_id: str) -> GroupSnapshot:
    gsnap = owned_get(ctx, GroupSnapshot.objects.all(), group_snapshot_id)
    if gsnap is None:
        raise GroupSnapshotNotFound(group_snapshot_id=group_snapshot_id)
    authorize(ctx, "group:get_group_snapshot", _target(gsnap))
    return gsnap


def group_snapshot_list(ctx: RequestContext, *, all_tenants: bool = False, sort: list[tuple[str, str]] | None = None,
                        limit: int | None = None, marker: str | None = None, offset: int = 0,
                        group_id: str | None = None) -> list[GroupSnapshot]:
    authorize(ctx, "group:get_all_group_snapshots", _own(ctx))
    qs = GroupSnapshot.objects.all()
    if not (all_tenants and ctx.is_admin):
        qs = qs.filter(project_id=ctx.project_id)
    if group_id:
        qs = qs.filter(group_id=group_id)
    return sorted_page(qs, sort=sort, sort_keys=SORT_KEYS, limit=limit, marker=marker, offset=offset)


def group_snapshot_create(ctx: RequestContext, *, group_id: str, name: str | None = None,
                          description: str | None = None) -> GroupSnapshot:
    """A ``creating`` group snapshot and a ``creating`` snapshot of each volume of the group
    (``available`` or ``in-use``); the volume worker copies them all in one task. Raises
    InvalidGroup for a busy group or volume."""
    group = _visible(ctx, group_id)
    authorize(ctx, "group:create_group_snapshot", _target(group))
    if group.status != "available":
        raise InvalidGroup(reason=f"Group {group.id} status must be available, but current status is: "
                                  f"{group.status}.")
    volumes = group_volumes(group)
    for vol in volumes:
        if vol.status not in (VolumeStatus.AVAILABLE, VolumeStatus.IN_USE):
            raise InvalidGroup(reason=f"Volume {vol.id} is {vol.status}: it cannot be snapshotted.")
    quota_check(ctx.project_id or group.project_id, snapshots=len(volumes),
                gigabytes=sum(v.size for v in volumes))
    with api_atomic():
        gsnap = GroupSnapshot.objects.create(group_id=group.id, group_type_id=group.group_type_id, name=name,
                                             description=description, project_id=group.project_id,
                                             user_id=ctx.user_id or group.user_id)
        for vol in volumes:
            Snapshot.objects.create(volume=vol, name=f"group-snapshot-{gsnap.id}", size=vol.size,
                                    project_id=group.project_id, user_id=ctx.user_id or vol.user_id,
                                    group_snapshot_id=gsnap.id)
        api_on_commit(lambda: rpc.group_snapshot_create(group_snapshot_id=gsnap.id))
    return gsnap


def group_snapshot_create_backend(group_snapshot_id: str) -> None:
    """The worker's half: copy every snapshot's bytes; ``available`` when all are, else ``error``."""
    gsnap = GroupSnapshot.objects.get(pk=group_snapshot_id)
    ok = True
    for snap in Snapshot.objects.filter(group_snapshot_id=gsnap.id):
        try:
            get_backend().snapshot_create(snap.volume_id, snap.id)
            snap.status, snap.progress = SnapshotStatus.AVAILABLE, "100%"
        except (VolumeBackendError, OSError) as exc:
            log.warning("snapshot %s of group snapshot %s failed: %s", snap.id, gsnap.id, exc)
            snap.status, ok = SnapshotStatus.ERROR, False
        snap.save(update_fields=["status", "progress", "updated_at"])
    GroupSnapshot.objects.filter(pk=gsnap.pk, status="creating").update(
        status="available" if ok else "error", updated_at=timezone.now())


def group_snapshot_delete(ctx: RequestContext, group_snapshot_id: str) -> None:
    """``deleting``; the worker removes every snapshot's bytes, then the group snapshot."""
    gsnap = group_snapshot_get(ctx, group_snapshot_id)
    authorize(ctx, "group:delete_group_snapshot", _target(gsnap))
    if gsnap.status not in ("available", "error", "error_deleting"):
        raise InvalidGroupSnapshot(reason="Group snapshot status must be available or error, and no Group can be "
                                          "currently using it as source for its creation.")
    if VolumeGroup.objects.filter(group_snapshot_id=gsnap.id, status="creating").exists():
        raise InvalidGroupSnapshot(reason="a group is being created from it")
    with api_atomic():
        GroupSnapshot.objects.filter(pk=gsnap.pk).update(status="deleting", updated_at=timezone.now())
        Snapshot.objects.filter(group_snapshot_id=gsnap.id).update(status=SnapshotStatus.DELETING,
                                                                   updated_at=timezone.now())
        api_on_commit(lambda: rpc.group_snapshot_delete(group_snapshot_id=gsnap.id))


def group_snapshot_delete_backend(group_snapshot_id: str) -> None:
    gsnap = GroupSnapshot.objects.get(pk=group_snapshot_id)
    for snap in Snapshot.objects.filter(group_snapshot_id=gsnap.id):
        try:
            get_backend().snapshot_delete(snap.id)
        except (VolumeBackendError, OSError):
            Snapshot.objects.filter(pk=snap.pk).update(status=SnapshotStatus.ERROR_DELETING)
            GroupSnapshot.objects.filter(pk=gsnap.pk).update(status="error_deleting")
            return
        snap.delete()
    _bury(gsnap)


def group_snapshot_reset_status(ctx: RequestContext, group_snapshot_id: str, *, status: str) -> None:
    gsnap = group_snapshot_get(ctx, group_snapshot_id)
    authorize(ctx, "group:reset_group_snapshot_status", _target(gsnap))
    _check_status("Group snapshot", status, GROUP_SNAPSHOT_STATUSES)
    GroupSnapshot.objects.filter(pk=gsnap.pk).update(status=status, updated_at=timezone.now())
