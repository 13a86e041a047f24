"""Accepting a server: ``server_create`` (the API side of a build).

Nothing is scheduled here: the API stores a BuildRequest, a RequestSpec and an InstanceMapping
without a cell for every server, answers 202, and on commit enqueues
``schedule_and_build_instances_task`` on the conductor queue.
"""
from __future__ import annotations

import base64
import binascii
import copy
import json
import re
import secrets
import string
import uuid as uuidlib
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, QuerySet
from django.utils import timezone

from cells.services import instance_mappings_create
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Conflict, Invalid, NotFound
from cloudcore.core.policy import authorize
from cloudcore.core.prepared import prepared_objects
from cloudcore.core.scope import insert_plain_now, written_together
from cloudcore.core.stamps import Remembered
from conductor import rpc as conductor_rpc
from networks.selectors import available_network_ids, network_find, port_find
from scheduling.services.aggregates import available_zones
from scheduling.services.request_specs import request_specs_create
from volumes import selectors as volume_selectors
from volumes.snapshots import snapshot_get

from ..models import BuildRequest, Flavor, KeyPair
from .disk_config import auto_disk_config_for_image
from .external import (
    SecurityGroupNotFoundByNameOrId,
    image_get_remembered,
    instances_security_groups_request,
    security_group_id_find,
)
from .personality import injected_files_checked
from .quotas import quota_check, quota_check_metadata, quota_limits, quota_usage
from .server_groups import group_for_create, group_members_add
from .volume_attachments import check_encryption_supported, check_multiattach_allowed


class FlavorNotFound(NotFound):
    message = "Flavor %(flavor_id)s could not be found."


class ImageNotFoundForBuild(Invalid):
    message = "Can not find requested image"


class KeypairNotFound(Invalid):
    message = "Invalid key_name provided."


class NetworkNotFoundForBuild(Invalid):
    message = "Network %(network_id)s could not be found."


class NetworkAmbiguousForBuild(Conflict):
    message = "Multiple possible networks found, use a Network ID to be more specific."


class UnableToAutoAllocateNetwork(Invalid):
    message = "Unable to automatically allocate a network for project %(project_id)s"


@dataclass
class RequestedNetwork:
    network_id: str | None = None
    port_id: str | None = None
    fixed_ip: str | None = None
    tag: str | None = None


@dataclass
class ServerCreateRequest:
    """Everything a client may ask for when creating servers (already schema-validated)."""

    name: str
    flavor_ref: str
    image_ref: str | None = None
    block_device_mapping: list[dict[str, Any]] = field(default_factory=list)
    #: a list, "auto", "none", or None when not given (before 2.37): like "auto", but a project
    #: with no network gets a server with none, where "auto" is refused
    networks: str | list[RequestedNetwork] | None = "auto"
    availability_zone: str | None = None
    forced_host: str | None = None
    forced_node: str | None = None
    requested_host: str | None = None
    requested_node: str | None = None
    key_name: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    user_data: str | None = None
    tags: list[str] = field(default_factory=list)
    min_count: int = 1
    max_count: int = 1
    description: str | None = None
    hostname: str | None = None
    scheduler_hints: dict[str, Any] = field(default_factory=dict)
    config_drive: bool = False
    #: ``OS-DCF:diskConfig`` as a boolean (AUTO), None when the request names none (the image decides)
    auto_disk_config: bool | None = None
    #: ``personality`` (below 2.57): ``[{"path", "contents"}]`` as sent
    personality: list[dict[str, Any]] = field(default_factory=list)
    admin_pass: str | None = None
    access_ip_v4: str | None = None
    access_ip_v6: str | None = None
    return_reservation_id: bool = False
    #: Security group names or ids (``default`` when none is asked for); the server's new ports get them.
    security_groups: list[str] = field(default_factory=list)
    #: The request is at microversion 2.60 or later: multiattach volumes may be mapped.
    multiattach_supported: bool = False


@dataclass
class ServerCreateResult:
    instance_uuids: list[str]
    reservation_id: str
    admin_pass: str
    auto_disk_config: bool = False


_PASSWORD_ALPHABET = string.ascii_letters + string.digits
#: the random bytes kept for a password character: below the largest multiple of the alphabet's
#: size, so that each character is as likely as any other
_PASSWORD_BYTE_BOUND = 256 - 256 % len(_PASSWORD_ALPHABET)


def generate_password(length: int = 12) -> str:
    """``length`` characters drawn uniformly from letters and digits, from the system's random
    source: the bytes asked for at once (``secrets.choice`` per character read ``os.urandom`` once
    per character, 96,000 instructions for a password), those at or beyond the bound set aside."""
    chars: list[str] = []
    while len(chars) < length:
        chars += [_PASSWORD_ALPHABET[b % len(_PASSWORD_ALPHABET)] for b in secrets.token_bytes(length + 8)
                  if b < _PASSWORD_BYTE_BOUND]
    return "".join(chars[:length])


def _sanitize_hostname(name: str) -> str:
    out = "".join(c if c.isalnum() or c == "-" else "-" for c in name.lower()).strip("-.")
    return out[:63] or "server"


#: the flavors ``POST /servers`` reads, with their extra specs, by flavor id: remembered while no
#: flavor or extra spec is written (``cloudcore.core.stamps``; ``servers.apps`` watches their rows)
FLAVORS_STAMP = "servers.flavors"
_flavors: Remembered[tuple[Flavor, dict[str, str]]] = Remembered(FLAVORS_STAMP)


def _flavor(ctx: RequestContext, flavor_ref: str) -> tuple[Flavor, dict[str, str]]:
    """The flavor and its extra specs (a copy of each: the remembered ones are shared)."""
    ref = flavor_ref.rstrip("/").rsplit("/", 1)[-1]
    found = _flavors.get(ref, partial(_flavor_read, ref))
    if found is None or found[0].disabled:
        raise Invalid("Invalid flavorRef provided.")
    flavor, extra_specs = copy.copy(found[0]), dict(found[1])
    if not flavor.is_public and not ctx.is_admin:
        if not flavor.projects.filter(project_id=ctx.project_id).exists():
            raise Invalid("Invalid flavorRef provided.")
    return flavor, extra_specs


def _flavor_read(flavorid: str) -> tuple[Flavor, dict[str, str]] | None:
    """The flavor and its extra specs, read in one statement (joined: a row per extra spec)."""
    rows = prepared_objects("servers.create_flavor", _flavor_with_specs, (flavorid,))
    if not rows:
        return None
    return rows[0], {row.spec_key: row.spec_value for row in rows if row.spec_key is not None}


def _flavor_with_specs(flavorid: str) -> QuerySet[Flavor]:
    # the statement every POST /servers makes, its SQL built once per process (prepared_objects)
    return Flavor.objects.filter(flavorid=flavorid).annotate(
        spec_key=F("extra_specs__key"), spec_value=F("extra_specs__value")).order_by("extra_specs__id")


def _image(ctx: RequestContext, image_ref: str) -> dict[str, Any]:
    """The image as the build needs it: id, properties, sizes. Visibility-checked."""
    ref = image_ref.rstrip("/").rsplit("/", 1)[-1]
    try:
        image = image_get_remembered(ctx, ref)
    except NotFound as exc:
        raise ImageNotFoundForBuild(image_id=ref) from exc
    if image.status != "active":
        raise Invalid(f"Image {ref} is not active.")
    return {
        "id": image.id,
        "name": image.name,
        "size": image.size or 0,
        "min_disk": image.min_disk,
        "min_ram": image.min_ram,
        "disk_format": image.disk_format,
        "container_format": image.container_format,
        "properties": dict(image.properties or {}),
    }


def _check_image_fits(flavor: Flavor, image: dict[str, Any], volume_backed: bool) -> None:
    if flavor.memory_mb < (image.get("min_ram") or 0):
        raise Invalid("Flavor's memory is too small for requested image.")
    if volume_backed:
        return
    size_gb = (image.get("size") or 0) / (1024**3)
    if flavor.root_gb and size_gb > flavor.root_gb:
        raise Invalid(f"Flavor's disk is too small for requested image. Flavor disk is {flavor.root_gb * 1024**3} "
                      f"bytes, image is {image.get('size') or 0} bytes.")
    if flavor.root_gb and (image.get("min_disk") or 0) > flavor.root_gb:
        raise Invalid("Flavor's disk is too small for requested image.")


def _networks(ctx: RequestContext, networks: str | list[RequestedNetwork] | None) -> list[dict[str, Any]] | str | None:
    """The requested networks checked, as the build takes them. No network named ("auto", or none
    given before 2.37) needs the project's one network: 409 when it has several, as Nova answers;
    "auto" with none is refused (no network is allocated for a project here), none given and
    none there builds a server with no network."""
    if networks is None or networks == "auto":
        available = available_network_ids(str(ctx.project_id), limit=2)
        if len(available) > 1:
            raise NetworkAmbiguousForBuild()
        if not available and networks == "auto":
            raise UnableToAutoAllocateNetwork(project_id=ctx.project_id)
        return None if networks is None else "auto"
    if isinstance(networks, str):
        return networks

    out = []
    for req in networks:
        if req.port_id:
            port = port_find(req.port_id)
            if port is None:
                raise Invalid(f"Port id {req.port_id} could not be found.")
            if port.device_id:
                raise Invalid(f"Port {req.port_id} is still in use.")
            out.append({"port_id": port.id, "network_id": port.network_id, "tag": req.tag})
            continue
        net = network_find(req.network_id)
        if net is None or not (net.shared or ctx.is_admin or net.project_id == ctx.project_id):
            raise NetworkNotFoundForBuild(network_id=req.network_id)
        out.append({"network_id": net.id, "fixed_ip": req.fixed_ip, "tag": req.tag})
    return out


def _security_groups(ctx: RequestContext, names: list[str]) -> list[str]:
    """The ids of the requested groups of the actor's project (``default`` made on first use); an unknown
    one is a 400 with the neutron client's words, as Nova answers."""
    ids = []
    for name in dict.fromkeys(names or ["default"]):
        try:
            ids.append(security_group_id_find(ctx, name, project_id=str(ctx.project_id)))
        except SecurityGroupNotFoundByNameOrId as exc:
            raise Invalid(str(exc)) from None
    return ids


def _user_data(user_data: str | None) -> str | None:
    if user_data is None:
        return None
    try:
        base64.b64decode(user_data, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise Invalid("User data needs to be valid base 64.") from exc
    return user_data


class VolumeNotBootable(Invalid):
    message = "Block Device %(id)s is not bootable."


def _check_root_volume(volume_id: str) -> None:
    """A server booted from an existing volume needs a bootable one (Nova checks it before the 202)."""
    volume = volume_selectors.volume_find(volume_id)
    if volume is None:
        raise Invalid(f"Block Device Mapping is Invalid: failed to get volume {volume_id}.")
    if not volume.bootable:
        raise VolumeNotBootable(id=volume_id)


def _check_snapshot(ctx: RequestContext, snapshot_id: str) -> None:
    """A block device from a snapshot needs one the actor can see (Nova checks it before the 202)."""
    try:
        snapshot_get(ctx, snapshot_id)
    except NotFound as exc:
        raise Invalid(f"Block Device Mapping is Invalid: failed to get snapshot {snapshot_id}.") from exc


#: Where an image-defined (BDM v2) entry keeps the id of its source.
_SOURCE_ID = {"snapshot": "snapshot_id", "volume": "volume_id", "image": "image_id"}
#: The entry's fields a request's block device takes over.
_IMAGE_BDM_FIELDS = ("source_type", "destination_type", "boot_index", "device_name", "volume_size",
                     "delete_on_termination", "guest_format", "disk_bus", "device_type", "volume_type", "tag")


def image_defined_bdms(image: dict[str, Any]) -> list[dict[str, Any]]:
    """The block devices an image asks for: its ``block_device_mapping`` property (BDM v2, JSON,
    as a volume-backed server's snapshot writes it) as request entries (the source's id in
    ``uuid``). An image without one, or with the legacy (v1) form, asks for none."""
    props = image.get("properties") or {}
    raw = props.get("block_device_mapping")
    if not raw or str(props.get("bdm_v2", "")).lower() not in ("true", "1", "yes"):
        return []
    try:
        entries = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError as exc:
        raise Invalid(f"Block Device Mapping is Invalid: image {image['id']} has a malformed "
                      "block_device_mapping property.") from exc
    bdms = []
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict) or entry.get("no_device"):
            continue
        bdm = {k: entry[k] for k in _IMAGE_BDM_FIELDS if entry.get(k) is not None}
        source_id = entry.get(_SOURCE_ID.get(str(entry.get("source_type")), ""))
        if source_id:
            bdm["uuid"] = source_id
        bdms.append(bdm)
    return bdms


def _is_root(bdm: dict[str, Any]) -> bool:
    return bdm.get("boot_index") in (0, "0")


def merge_bdms(image_bdms: list[dict[str, Any]], requested: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The request's block devices, then the image's that the request does not replace (one on a
    device name the request uses). When the image names a root, the request's root from an image
    goes: clients add the boot image as a root of their own (Nova drops it the same way)."""
    if any(_is_root(b) for b in image_bdms):
        requested = [b for b in requested if not (_is_root(b) and b.get("source_type") == "image")]
    names = {b.get("device_name") for b in requested if b.get("device_name")}
    has_root = any(_is_root(b) for b in requested)
    return [*requested, *(b for b in image_bdms if b.get("device_name") not in names
                          and not (has_root and _is_root(b)))]


def _check_multiattach_volumes(bdms: list[dict[str, Any]], *, multiattach_supported: bool) -> None:
    """An existing volume mapped to the new server (``source_type`` volume) that is multiattach
    needs 2.60 (400, Nova's ``MultiattachNotSupportedOldMicroversion``); one that is encrypted is
    refused (400, ``check_encryption_supported``)."""
    for bdm in bdms:
        if bdm.get("source_type") == "volume" and bdm.get("uuid"):
            volume = volume_selectors.volume_find(str(bdm["uuid"]))
            if volume is not None:
                check_multiattach_allowed(volume, multiattach_supported=multiattach_supported)
                check_encryption_supported(volume)


def _volume_backed(bdms: list[dict[str, Any]]) -> bool:
    return any(_is_root(b) and b.get("destination_type") == "volume" for b in bdms)


#: Nova's in-tree hints this cloud does not implement: refused rather than stored and ignored.
UNSUPPORTED_HINTS = ("query", "target_cell", "build_near_host_ip", "cidr", "different_cell")
_SM_SKIP_KEYS = ("mappings", "block_device_mapping")
_UUID_RE = re.compile(r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$")


def image_system_metadata(image: dict[str, Any] | None, *, volume_backed: bool) -> dict[str, str]:
    """The ``image_*`` system metadata items a server keeps of its image (Nova's
    ``get_system_metadata_from_image``): its properties, sizes and formats, and the image's id as
    ``image_base_image_ref`` (empty for a volume-backed server). An image's block device mappings
    are too large for system metadata (Nova skips them too)."""
    if not image:
        return {}
    items = {f"image_{k}": str(v) for k, v in (image.get("properties") or {}).items() if k not in _SM_SKIP_KEYS}
    items.update({
        "image_min_ram": str(image.get("min_ram") or 0),
        "image_min_disk": str(image.get("min_disk") or 0),
        "image_disk_format": str(image.get("disk_format") or ""),
        "image_container_format": str(image.get("container_format") or ""),
        "image_base_image_ref": "" if volume_backed else image["id"],
    })
    return items


def image_items(system_metadata: dict[str, str] | None) -> dict[str, str]:
    """The ``image_*`` items of a server's system metadata (what it keeps of its image)."""
    return {k: v for k, v in (system_metadata or {}).items() if k.startswith("image_")}


def with_image_items(system_metadata: dict[str, str] | None, items: dict[str, str]) -> dict[str, str]:
    """``system_metadata`` with its ``image_*`` items replaced by ``items`` (another image's)."""
    return {**{k: v for k, v in (system_metadata or {}).items() if not k.startswith("image_")}, **items}


def _check_hints(hints: dict[str, Any]) -> None:
    """400 for a hint this cloud cannot honour, or a malformed one it can."""
    for name in UNSUPPORTED_HINTS:
        if name in hints:
            raise Invalid(f"The scheduler hint {name} is not supported by this cloud.")
    group = hints.get("group")
    if group is not None and not (isinstance(group, str) and _UUID_RE.match(group)):
        raise Invalid(f"Invalid input for field/attribute group. Value: {group}. '{group}' is not a 'uuid'")
    for name in ("same_host", "different_host"):
        value = hints.get(name)
        if value is None:
            continue
        values = [value] if isinstance(value, str) else value
        if not isinstance(values, list) or not all(isinstance(v, str) and _UUID_RE.match(v) for v in values):
            raise Invalid(f"Invalid input for field/attribute {name}. Value: {value}. '{value}' is not a 'uuid'")


def _allowed_count(project_id: str, flavor: Flavor, min_count: int, max_count: int) -> int:
    """As many servers as the quota leaves room for, up to ``max_count``; QuotaExceeded (403)
    when not even ``min_count`` fit (Nova's multi-create semantics)."""
    limits = quota_limits(project_id)
    per_server = {"instances": 1, "cores": flavor.vcpus, "ram": flavor.memory_mb}
    limited = [r for r, n in per_server.items() if limits[r] >= 0 and n > 0]
    count = max_count
    if limited:  # nothing to count when no limit applies (the cloud's quotas unlimited)
        usage = quota_usage(project_id)
        used = {"instances": usage.instances, "cores": usage.cores, "ram": usage.ram}
        for resource in limited:
            count = min(count, (limits[resource] - used[resource]) // per_server[resource])
    if count < min_count:
        quota_check(project_id=project_id, instances=min_count, cores=min_count * flavor.vcpus,
                    ram=min_count * flavor.memory_mb)
        count = min_count
    return count


def _authorize_create(actor: RequestContext, request: ServerCreateRequest) -> None:
    """Nova's create rules: the base rule, then one per privileged part of the request."""
    authorize(actor, "os_compute_api:servers:create", {"project_id": actor.project_id, "user_id": actor.user_id})
    project = {"project_id": actor.project_id}
    if request.forced_host or request.forced_node:
        authorize(actor, "os_compute_api:servers:create:forced_host", project)
    if request.requested_host or request.requested_node:
        authorize(actor, "compute:servers:create:requested_destination", project)
    if isinstance(request.networks, list) and request.networks:
        authorize(actor, "os_compute_api:servers:create:attach_network", project)
    if request.block_device_mapping:
        authorize(actor, "os_compute_api:servers:create:attach_volume", project)


def server_create(*, actor: RequestContext, request: ServerCreateRequest) -> ServerCreateResult:
    """Accept ``request.max_count`` servers (at least ``min_count`` must fit the quota).

    Writes (API DB, one transaction): one BuildRequest, RequestSpec, InstanceMapping (cell NULL) and
    requested security groups row per server, one INSERT per table (on PostgreSQL one query,
    ``cloudcore.core.scope.written_together``).
    Enqueues on commit: ``conductor.rpc.schedule_and_build_instances``.
    Raises: PolicyNotAuthorized (403: ``os_compute_api:servers:create`` and, for a forced host or
    node, a requested destination, explicit networks or block devices, its ``:create:*`` rule),
    Invalid (400) for a bad flavor/image/network/keypair/user data, QuotaExceeded (403).
    """
    _authorize_create(actor, request)
    flavor, extra_specs = _flavor(actor, request.flavor_ref)
    bdms = request.block_device_mapping
    image: dict[str, Any] | None = None
    if request.image_ref:
        image = _image(actor, request.image_ref)
        # a volume-backed server's snapshot: its volumes are made from the snapshots it names
        bdms = merge_bdms(image_defined_bdms(image), bdms)
    volume_backed = _volume_backed(bdms)
    if image is None and not volume_backed:
        raise Invalid("Block Device Mapping is Invalid: Boot sequence for the instance and image/block "
                      "device mapping combination is not valid.")
    for bdm in bdms:
        if bdm.get("source_type") == "snapshot" and bdm.get("uuid"):
            _check_snapshot(actor, str(bdm["uuid"]))
    if volume_backed:
        root = next(b for b in bdms if _is_root(b))
        if root.get("source_type") == "image" and root.get("uuid"):
            image = _image(actor, str(root["uuid"]))
        if root.get("source_type") == "volume" and root.get("uuid"):
            _check_root_volume(str(root["uuid"]))
    _check_multiattach_volumes(request.block_device_mapping, multiattach_supported=request.multiattach_supported)
    if image is not None:
        _check_image_fits(flavor, image, volume_backed)
    if request.min_count > request.max_count:
        raise Invalid("min_count must be <= max_count")
    quota_check_metadata(project_id=actor.project_id or "", count=len(request.metadata))
    injected_files = injected_files_checked(project_id=actor.project_id or "", personality=request.personality)
    key_data = None
    if request.key_name:
        keypair = KeyPair.objects.filter(user_id=actor.user_id, name=request.key_name).first()
        if keypair is None:
            raise KeypairNotFound()
        key_data = keypair.public_key
    networks = _networks(actor, request.networks)
    security_group_ids = _security_groups(actor, request.security_groups)
    user_data = _user_data(request.user_data)
    if request.availability_zone:
        if request.availability_zone not in available_zones():
            raise Invalid("The requested availability zone is not available")

    _check_hints(request.scheduler_hints)
    count = _allowed_count(str(actor.project_id), flavor, request.min_count, request.max_count)
    group = None
    if request.scheduler_hints.get("group"):
        group = group_for_create(actor=actor, group_uuid=str(request.scheduler_hints["group"]), count=count)

    reservation_id = f"r-{uuidlib.uuid4().hex[:8]}"
    admin_pass = request.admin_pass or generate_password()
    flavor_dict = flavor.as_dict(extra_specs=extra_specs)
    uuids = [str(uuidlib.uuid4()) for _ in range(count)]
    now = timezone.now().isoformat()
    image_props = (image or {}).get("properties", {})
    auto_disk_config = auto_disk_config_for_image(image, request.auto_disk_config)
    system_metadata = image_system_metadata(image, volume_backed=volume_backed)
    build_requests: list[BuildRequest] = []
    specs: dict[str, dict[str, Any]] = {}
    for index, instance_uuid in enumerate(uuids):
        name = request.name if count == 1 else f"{request.name}-{index + 1}"
        hostname = request.hostname or _sanitize_hostname(name)
        instance = {
            "uuid": instance_uuid,
            "project_id": actor.project_id,
            "user_id": actor.user_id,
            "display_name": name,
            "display_description": request.description,
            "hostname": hostname,
            "flavor": flavor_dict,
            "memory_mb": flavor.memory_mb,
            "vcpus": flavor.vcpus,
            "root_gb": flavor.root_gb,
            "ephemeral_gb": flavor.ephemeral_gb,
            "image_ref": "" if volume_backed or image is None else image["id"],
            # inherited from the boot image, also when it is copied into the root volume (Nova
            # reads them from the volume's image metadata): a direct kernel boot needs them
            "kernel_id": str(image_props.get("kernel_id", "")),
            "ramdisk_id": str(image_props.get("ramdisk_id", "")),
            "key_name": request.key_name,
            "key_data": key_data,
            "user_data": user_data,
            "metadata": request.metadata,
            "system_metadata": system_metadata,
            "availability_zone": request.availability_zone,
            "launch_index": index,
            "reservation_id": reservation_id,
            "config_drive": "True" if request.config_drive else "",
            "access_ip_v4": request.access_ip_v4,
            "access_ip_v6": request.access_ip_v6,
            "auto_disk_config": auto_disk_config,
            "injected_files": injected_files,
            "created_at": now,
            "admin_password_set": True,
        }
        build_requests.append(BuildRequest(
            instance_uuid=instance_uuid,
            project_id=str(actor.project_id),
            instance=instance,
            block_device_mappings=bdms,
            tags=request.tags,
        ))
        specs[instance_uuid] = {
            "instance_uuid": instance_uuid,
            "project_id": actor.project_id,
            "user_id": actor.user_id,
            "flavor": flavor_dict,
            "image": image or {},
            "is_bfv": volume_backed,
            "availability_zone": request.availability_zone or settings.DEFAULT_SCHEDULE_ZONE,
            "num_instances": count,
            "force_hosts": [request.forced_host] if request.forced_host else [],
            "force_nodes": [request.forced_node] if request.forced_node else [],
            "requested_destination": (
                {"host": request.requested_host, "node": request.requested_node}
                if request.requested_host or request.requested_node else None
            ),
            "scheduler_hints": request.scheduler_hints,
            "instance_group": group,
            "requested_networks": networks,
            "ignore_hosts": [],
        }
    # one plain INSERT per table for all the servers (the rows the ORM's create would store, the
    # statements made once per process), the rows made before the write transaction opens: it
    # holds the API database's write lock. On PostgreSQL the four INSERTs are one query, one round
    # trip (``written_together``), where BEGIN, each INSERT and COMMIT were one each.
    with written_together():
        insert_plain_now(build_requests)
        request_specs_create(specs)
        instance_mappings_create(instance_uuids=uuids, project_id=str(actor.project_id), user_id=actor.user_id)
        instances_security_groups_request(uuids, security_group_ids)
        if group is not None:
            group_members_add(group_uuid=group["uuid"], instance_uuids=uuids)
    # cast once the rows are committed (with the caller's transaction, when there is one)
    transaction.on_commit(partial(conductor_rpc.schedule_and_build_instances, ctx=actor, instance_uuids=uuids,
                                  admin_pass=admin_pass))
    return ServerCreateResult(instance_uuids=uuids, reservation_id=reservation_id, admin_pass=admin_pass,
                              auto_disk_config=auto_disk_config)
