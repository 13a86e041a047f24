"""Request schemas of the servers API, built per microversion (STYLE rule 15).

``create_schema(version)`` and ``update_schema(version)`` return the JSON schema the body of
``POST /servers`` / ``PUT /servers/{id}`` must match at ``version``: fields appear at the
microversion Nova added them (2.19 description, 2.32 network tags, 2.37 required ``networks``,
2.52 tags, 2.74 host/hypervisor_hostname, 2.90 hostname, 2.104 ``pinned_availability_zone`` in
``PUT``).
"""
from __future__ import annotations

from functools import cache
from typing import Any

from cloudcore.core.api.validation import METADATA, NAME, VersionedSchema
from cloudcore.core.api.versioned import Since

Version = tuple[int, int]

_DESCRIPTION = {"type": ["string", "null"], "maxLength": 255}
_IP4 = {"type": "string", "format": "ipv4"}
_IP6 = {"type": "string", "format": "ipv6"}
_TAG = {"type": "string", "minLength": 1, "maxLength": 60, "pattern": r"^[^,/]*$"}
_HOSTNAME = {"type": "string", "minLength": 1, "maxLength": 255,
             "pattern": r"^[a-zA-Z0-9]([a-zA-Z0-9.-]*[a-zA-Z0-9])?$"}
_COUNT = {"type": ["integer", "string"], "pattern": r"^[0-9]+$", "minimum": 1}
#: create and rebuild below 2.57: files for the guest (the contents are checked as base64 by the service)
PERSONALITY = {"type": "array", "items": {"type": "object", "properties": {
    "path": {"type": "string"}, "contents": {"type": "string"}}, "additionalProperties": False}}


def _network_entry(version: Version) -> dict[str, Any]:
    props: dict[str, Any] = {
        "uuid": {"type": "string"},
        "port": {"type": ["string", "null"]},
        "fixed_ip": {"type": "string"},
    }
    if version >= (2, 32):
        props["tag"] = _TAG
    return {"type": "object", "properties": props, "additionalProperties": False}


def _networks(version: Version) -> dict[str, Any]:
    listed = {"type": "array", "items": _network_entry(version)}
    if version >= (2, 37):
        return {"oneOf": [listed, {"type": "string", "enum": ["none", "auto"]}]}
    return listed


def _bdm(version: Version) -> dict[str, Any]:
    props: dict[str, Any] = {
        "source_type": {"type": "string", "enum": ["volume", "image", "snapshot", "blank"]},
        "destination_type": {"type": "string", "enum": ["local", "volume"]},
        "uuid": {"type": "string"},
        "boot_index": {"type": ["integer", "string", "null"]},
        "device_name": {"type": ["string", "null"]},
        "volume_size": {"type": ["integer", "string", "null"]},
        "delete_on_termination": {"type": ["boolean", "string"]},
        "guest_format": {"type": ["string", "null"]},
        "disk_bus": {"type": ["string", "null"]},
        "device_type": {"type": ["string", "null"]},
        "no_device": {},
    }
    if version >= (2, 32):
        props["tag"] = _TAG
    if version >= (2, 67):
        props["volume_type"] = {"type": ["string", "null"], "maxLength": 255}
    return {"type": "object", "properties": props, "additionalProperties": False}


@cache  # one per microversion, its validator made once (``validate``); not to be changed
def create_schema(version: Version) -> dict[str, Any]:
    server: dict[str, Any] = {
        "name": NAME,
        "imageRef": {"type": "string"},
        "flavorRef": {"type": ["string", "integer"], "minLength": 1},
        "adminPass": {"type": "string"},
        "metadata": METADATA,
        "networks": _networks(version),
        "OS-DCF:diskConfig": {"type": "string", "enum": ["AUTO", "MANUAL"]},
        "accessIPv4": _IP4,
        "accessIPv6": _IP6,
        "availability_zone": {"type": "string", "minLength": 1, "maxLength": 255},
        "block_device_mapping_v2": {"type": "array", "items": _bdm(version)},
        "config_drive": {"type": ["boolean", "string", "null"]},
        "key_name": {"type": "string", "minLength": 1, "maxLength": 255},
        "min_count": _COUNT,
        "max_count": _COUNT,
        "return_reservation_id": {"type": ["boolean", "string"]},
        "security_groups": {"type": "array", "items": {"type": "object", "properties": {
            "name": {"type": "string"}}, "additionalProperties": False}},
        "user_data": {"type": "string", "maxLength": 65535},
    }
    if version < (2, 57):
        server["personality"] = PERSONALITY
    if version >= (2, 19):
        server["description"] = _DESCRIPTION
    if version >= (2, 52):
        server["tags"] = {"type": "array", "items": _TAG, "maxItems": 50}
    if version >= (2, 63):
        server["trusted_image_certificates"] = {"type": ["array", "null"], "items": {"type": "string"}}
    if version >= (2, 74):
        server["host"] = {"type": "string", "minLength": 1, "maxLength": 255}
        server["hypervisor_hostname"] = {"type": "string", "minLength": 1, "maxLength": 255}
    if version >= (2, 90):
        server["hostname"] = _HOSTNAME
    required = ["name", "flavorRef"]
    if version >= (2, 37):
        required.append("networks")
    return {
        "type": "object",
        "properties": {
            "server": {"type": "object", "properties": server, "required": required,
                       "additionalProperties": False},
            "os:scheduler_hints": {"type": "object"},
            "OS-SCH-HNT:scheduler_hints": {"type": "object"},
        },
        "required": ["server"],
        "additionalProperties": False,
    }


@cache  # one per microversion, its validator made once (``validate``); not to be changed
def update_schema(version: Version) -> dict[str, Any]:
    server: dict[str, Any] = {
        "name": NAME,
        "accessIPv4": _IP4,
        "accessIPv6": _IP6,
        "OS-DCF:diskConfig": {"type": "string", "enum": ["AUTO", "MANUAL"]},
    }
    if version >= (2, 19):
        server["description"] = _DESCRIPTION
    if version >= (2, 90):
        server["hostname"] = _HOSTNAME
    if version >= (2, 104):
        server["pinned_availability_zone"] = {"type": ["string", "null"], "minLength": 1, "maxLength": 255}
    return {
        "type": "object",
        "properties": {"server": {"type": "object", "properties": server, "additionalProperties": False}},
        "required": ["server"],
        "additionalProperties": False,
    }


METADATA_BODY = {
    "type": "object", "properties": {"metadata": METADATA}, "required": ["metadata"], "additionalProperties": False,
}
META_ITEM_BODY = {
    "type": "object",
    "properties": {"meta": {**METADATA, "minProperties": 1, "maxProperties": 1}},
    "required": ["meta"],
    "additionalProperties": False,
}
#: ``/servers/{id}/tags`` exists from 2.26.
TAGS_MIN_VERSION: Version = (2, 26)
TAGS_BODY = {
    "type": "object",
    "properties": {"tags": {"type": "array", "items": _TAG, "maxItems": 50}},
    "required": ["tags"],
    "additionalProperties": False,
}
TAG = _TAG


#: ``GET /os-migrations`` query parameters that appeared after 2.1 (ignored below).
MIGRATION_QUERY = Since({"limit": (2, 59), "marker": (2, 59), "user_id": (2, 80), "project_id": (2, 80)})

#: ``GET /servers/{id}/os-instance-actions`` query parameters after 2.1 (ignored below).
INSTANCE_ACTION_QUERY = Since({"limit": (2, 58), "marker": (2, 58), "changes-since": (2, 58),
                               "changes-before": (2, 66)})
#: os-instance-actions behaviours: actions of deleted servers (2.21), events shown to every
#: reader of the action, not only to holders of the events rule (2.51).
INSTANCE_ACTION_FEATURES = Since({"deleted_servers": (2, 21), "events_for_all": (2, 51)})


# --- /servers/{id}/os-volume_attachments ----------------------------------------------------------
def _attachment(props: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "required": ["volumeAttachment"], "additionalProperties": False, "properties": {
        "volumeAttachment": {"type": "object", "required": ["volumeId"], "additionalProperties": False,
                             "properties": props}}}


_DEVICE = {"type": ["string", "null"], "pattern": "(^/dev/x{0,1}[a-z]{0,1}d{0,1})([a-z]+)[0-9]*$"}
_ATTACH_BASE = {"volumeId": {"type": "string", "format": "uuid"}, "device": _DEVICE}
_ATTACH_TAG = {"tag": {"type": "string", "minLength": 1, "maxLength": 60, "pattern": "^[^,/]*$"}}
#: 2.49 ``tag``, 2.79 ``delete_on_termination``.
VOLUME_ATTACH = VersionedSchema(
    ("2.1", "2.48", _attachment(_ATTACH_BASE)),
    ("2.49", "2.78", _attachment({**_ATTACH_BASE, **_ATTACH_TAG})),
    ("2.79", None, _attachment({**_ATTACH_BASE, **_ATTACH_TAG, "delete_on_termination": {"type": "boolean"}})),
)
#: 2.101: the attach answers 202 with no body (the host completes it).
#: 2.60: a multiattach volume may be attached (and booted from; ``SERVER_FEATURES``).
VOLUME_ATTACH_FEATURES = Since({"multiattach": (2, 60), "accepted_no_body": (2, 101)})
_SWAP_BASE: dict[str, Any] = {"volumeId": {"type": "string"}, "id": {}, "serverId": {}, "device": {}}
#: ``PUT`` (swap, and from 2.85 the other attachment fields, of which only delete_on_termination may change).
VOLUME_ATTACHMENT_UPDATE = VersionedSchema(
    ("2.1", "2.84", {**_attachment(_SWAP_BASE), "additionalProperties": True}),
    ("2.85", None, {**_attachment({**_SWAP_BASE, "delete_on_termination": {"type": "boolean"}, "tag": {},
                                   "attachment_id": {}, "bdm_uuid": {}}), "additionalProperties": True}),
)


# --- /servers/{id}/os-interface -------------------------------------------------------------------
def _interface_attach(tagged: bool) -> dict[str, Any]:
    props: dict[str, Any] = {
        "net_id": {"type": "string", "format": "uuid"},
        "port_id": {"type": "string", "format": "uuid"},
        "fixed_ips": {"type": "array", "minItems": 1, "maxItems": 1, "items": {
            "type": "object", "required": ["ip_address"], "additionalProperties": False,
            "properties": {"ip_address": {"type": "string", "anyOf": [{"format": "ipv4"}, {"format": "ipv6"}]}}}},
    }
    if tagged:
        props["tag"] = _TAG
    return {"type": "object", "additionalProperties": False, "properties": {
        "interfaceAttachment": {"type": "object", "additionalProperties": False, "properties": props,
                                "dependencies": {"fixed_ips": ["net_id"]}}}}


#: The body is optional (no network named: the project's only one); 2.49 ``tag``.
INTERFACE_ATTACH = VersionedSchema(
    ("2.1", "2.48", _interface_attach(tagged=False)),
    ("2.49", None, _interface_attach(tagged=True)),
)


# --- /os-keypairs ---------------------------------------------------------------------------------
#: Query parameters: 2.10 ``user_id`` (admins act for another user), 2.35 paging.
KEYPAIR_QUERY = Since({"user_id": (2, 10), "limit": (2, 35), "marker": (2, 35)})
#: 2.75 unknown query parameters are a 400; 2.92 keys are imported only (``public_key`` required).
KEYPAIR_FEATURES = Since({"strict_query": (2, 75), "import_only": (2, 92)})


# --- /flavors -------------------------------------------------------------------------------------
#: 2.55 ``PUT /flavors/{id}`` (description); 2.75 unknown list query parameters are a 400; 2.102 the
#: list's ``name`` filter (and no ``rxtx_factor`` on create).
FLAVOR_FEATURES = Since({"update": (2, 55), "strict_query": (2, 75), "name_filter": (2, 102)})


# --- /servers list and show -----------------------------------------------------------------------
#: 2.69 servers of a cell that does not answer are listed (and shown) as stubs instead of left
#: out (503 on show); 2.75 unknown list query parameters are a 400; 2.83 members may filter
#: their project's servers by ``user_id`` and (``member_state_filters``) ``vm_state``, ``task_state``,
#: ``power_state``, ``progress``, ``config_drive``, ``created_at``, ``launched_at`` and
#: ``terminated_at`` (admins always could).
#: 2.60 a server may be created from (or with) a multiattach volume.
SERVER_FEATURES = Since({"multiattach": (2, 60), "down_cell_stubs": (2, 69), "strict_query": (2, 75),
                         "member_user_id_filter": (2, 83), "member_state_filters": (2, 83)})
#: List filters that appeared after 2.1 (ignored below).
SERVER_LIST_QUERY = Since({"locked": (2, 73)})
