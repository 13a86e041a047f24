"""``createImage`` of a volume-backed server: volume snapshots plus an image that only names them.

A volume-backed server has no disk of its own to upload, so (as Nova does) the API takes the
snapshot itself, synchronously, with no task_state and nothing cast to the host:

1. refuse a locked server or one not ACTIVE/SHUTOFF/PAUSED/SUSPENDED with a task (409);
2. quiesce: this cloud has no guest agent to freeze the guest's filesystems, so the snapshot is
   taken unquiesced, as Nova does when quiescing is not possible; an ACTIVE server whose image asks
   for it (``os_require_quiesce``) is refused (400) rather than snapshotted inconsistently;
3. record the action ``createImage`` and, around the volume API calls, its event
   ``api_snapshot_instance``;
4. snapshot every volume of the server through the volume service, forced (the volumes are
   in-use), in the server's project; each becomes a BDM v2 entry (source ``snapshot``, no
   ``volume_id``) of the image's ``block_device_mapping`` property;
5. create the image: active, no data (size 0), owned by the server's project, private, with the
   image properties the server booted with (its ``image_*`` system metadata less the
   non-inheritable ones), the request's metadata, ``root_device_name``, ``bdm_v2`` and
   ``block_device_mapping``.

A volume the volume service refuses to snapshot (quota, status) fails the request with that
error; no image is created (the snapshots already taken stay, as with Nova). No
``instance.snapshot.*`` notification is sent: those belong to the host's image upload. Booting
from the image creates the volumes from the snapshots (``create.py``); deleting the image leaves
the snapshots.
"""
from __future__ import annotations

import json
from typing import Any

from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Invalid
from cloudcore.core.policy import authorize
from volumes import services as volumes
from volumes import snapshots

from ..choices import VmState
from ..models import BlockDeviceMapping, Instance
from . import actions
from .external import image_properties_only_create
from .guards import check_not_locked, check_state
from .power import target

SNAPSHOT_STATES = [VmState.ACTIVE, VmState.STOPPED, VmState.PAUSED, VmState.SUSPENDED]
#: Image properties a snapshot does not inherit (Nova's defaults: signature properties, and the
#: ``non_inheritable_image_properties`` option's default), and namespaces it drops.
NON_INHERITABLE = frozenset({"cache_in_nova", "bittorrent", "img_signature", "img_signature_hash_method",
                             "img_signature_key_type", "img_signature_certificate_uuid"})
NON_INHERITABLE_PREFIXES = ("os_glance",)
#: Image fields kept in system metadata that are not properties of the new image.
_IMAGE_FIELDS = ("min_ram", "min_disk", "disk_format", "container_format", "size")
#: Properties this snapshot writes itself (an older snapshot's are never carried over).
_OWN_PROPERTIES = ("block_device_mapping", "mappings", "bdm_v2", "root_device_name")
#: BDM fields a snapshot's mapping copies from the server's BDM.
_COPIED_FIELDS = ("boot_index", "device_name", "delete_on_termination", "disk_bus", "device_type")


class InstanceQuiesceNotSupported(Invalid):
    message = "Quiescing is not supported in instance %(instance_id)s."


def owner_context(actor: RequestContext, instance: Instance) -> RequestContext:
    """``actor`` acting in the server's project: a snapshot's image (and volume snapshots) belong
    to the server's owner, also when an admin takes it."""
    return RequestContext(user_id=actor.user_id, project_id=instance.project_id, roles=actor.roles,
                          is_admin=actor.is_admin, request_id=actor.request_id)


def _truthy(value: Any) -> bool:
    return str(value).strip().lower() in ("1", "t", "true", "on", "y", "yes")


def inherited_image_properties(instance: Instance) -> tuple[dict[str, Any], int, int]:
    """The properties a snapshot of ``instance`` inherits from the image it booted with (its
    ``image_*`` system metadata less Nova's non-inheritable ones), and that image's min_disk and
    min_ram."""
    meta = {key[len("image_"):]: value for key, value in (instance.system_metadata or {}).items()
            if key.startswith("image_")}
    min_disk, min_ram = int(meta.get("min_disk") or 0), int(meta.get("min_ram") or 0)
    props = {key: value for key, value in meta.items()
             if key not in _IMAGE_FIELDS and key not in NON_INHERITABLE
             and not key.startswith(NON_INHERITABLE_PREFIXES)}
    if not props.get("base_image_ref"):
        props.pop("base_image_ref", None)
    return props, min_disk, min_ram


def _image_mapping(bdm: BlockDeviceMapping, snapshot_id: str | None, volume_size: int | None) -> dict[str, Any]:
    """The BDM v2 entry of ``bdm`` in the image: a volume becomes its snapshot's, anything else
    (a local disk) is kept as it is; no ids of this server's volumes or attachments."""
    entry: dict[str, Any] = {field: getattr(bdm, field) for field in _COPIED_FIELDS}
    if snapshot_id is not None:
        entry.update(source_type="snapshot", destination_type="volume", snapshot_id=snapshot_id,
                     volume_size=volume_size)
    else:
        entry.update(source_type=bdm.source_type, destination_type=bdm.destination_type, image_id=bdm.image_id,
                     volume_size=bdm.volume_size, guest_format=bdm.guest_format)
    return entry


def server_snapshot_volume_backed(*, actor: RequestContext, instance: Instance, name: str,
                                  metadata: dict[str, Any]) -> str:
    """Snapshot a volume-backed server (see the module doc). Preconditions: the server is
    volume-backed and ``os_compute_api:servers:create_image`` was authorized. Returns the new
    image's id. Raises PolicyNotAuthorized (``...:create_image:allow_volume_backed``),
    InstanceIsLocked, InstanceInvalidState (409), InstanceQuiesceNotSupported (400), and the
    volume service's errors (QuotaExceeded 403, Invalid 400)."""
    authorize(actor, "os_compute_api:servers:create_image:allow_volume_backed", target(instance))
    check_not_locked(actor, instance)
    check_state(instance, "createImage", vm_states=SNAPSHOT_STATES)
    properties, min_disk, min_ram = inherited_image_properties(instance)
    if instance.vm_state == VmState.ACTIVE and _truthy(properties.get("os_require_quiesce", "")):
        raise InstanceQuiesceNotSupported(instance_id=instance.uuid)
    properties.update(metadata)
    for key in _OWN_PROPERTIES:
        properties.pop(key, None)
    owner = owner_context(actor, instance)
    actions.action_start(actor, instance_uuid=instance.uuid, action="createImage")
    mapping = []
    with actions.wrap_event(actor, instance_uuid=instance.uuid, event="api_snapshot_instance",
                            action_name="createImage"):
        for bdm in BlockDeviceMapping.objects.filter(instance_uuid=instance.uuid, no_device=False).order_by("id"):
            if bdm.destination_type != "volume" or not bdm.volume_id:
                mapping.append(_image_mapping(bdm, None, None))
                continue
            volume = volumes.volume_get(None, bdm.volume_id)
            snap = snapshots.snapshot_create(owner, volume=volume, name=f"snapshot for {name}",
                                             description=volume.description, force=True)
            mapping.append(_image_mapping(bdm, str(snap.id), bdm.volume_size or volume.size))
    # the server's root device (a host of this cloud does not record it on the server: its root BDM's)
    root_device = instance.root_device_name or next(
        (entry["device_name"] for entry in mapping if entry["boot_index"] == 0 and entry["device_name"]), None)
    if root_device:
        properties["root_device_name"] = root_device
    if mapping:
        properties["block_device_mapping"] = json.dumps(mapping)
        properties["bdm_v2"] = True
    image = image_properties_only_create(owner, name=name, properties=properties, min_disk=min_disk,
                                         min_ram=min_ram)
    return str(image.id)
