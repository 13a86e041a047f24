"""``POST /servers/{id}/action``: one handler per Nova action key (STYLE rule 12).

The body names exactly one action; its schema is chosen by microversion in ``ACTION_SCHEMAS``.
Handlers load the server in its cell and call one service; the services raise domain errors
(409 wrong state or locked, 403 policy, 400 bad request) that the frame turns into Nova faults.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.conf import settings
from rest_framework.request import Request
from rest_framework.response import Response

from cells.context import target_cell
from cloudcore.core.api.validation import METADATA, UUID, VersionedSchema
from cloudcore.core.api.versioned import Since
from cloudcore.core.api.views import ComputeAPIView
from cloudcore.core.exceptions import InstanceInvalidState, Invalid, NotFound

from ..models import Instance, KeyPair
from ..presenter import present_updated_server
from ..selectors import ServerRecord
from ..services import (
    consoles,
    deferred_delete,
    evacuate,
    floating_ip_proxy,
    live_migrate,
    power,
    rebuild,
    resize,
    security_groups,
    shelve,
)
from ..services import pause_suspend_rescue as pause_rescue
from ..services.create import _image, generate_password
from ..services.delete import server_force_delete
from ..services.disk_config import disk_config_from_api
from ..services.password import server_set_password
from ..services.personality import injected_files_checked
from ..services.reset_state import server_reset_state
from ..services.snapshot import server_create_backup, server_create_image
from .schemas import PERSONALITY
from .servers import get_server, render

NULL = {"type": "null"}
EMPTY_OR_NULL = {"type": ["null", "object"], "additionalProperties": False}


def _action(inner: dict[str, Any], key: str) -> dict[str, Any]:
    return {"type": "object", "properties": {key: inner}, "required": [key], "additionalProperties": False}


#: Nova's ``image_id``: a uuid, with or without its dashes (``format`` alone is not checked by Draft 7)
IMAGE_UUID = {**UUID, "pattern": "^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$"}
DESCRIPTION = {"type": ["string", "null"], "maxLength": 255}
KEY_NAME = {"type": ["string", "null"], "minLength": 1, "maxLength": 255}
USER_DATA = {"type": ["string", "null"], "format": "base64", "maxLength": 65535}
HOSTNAME = {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[a-zA-Z0-9]([a-zA-Z0-9.-]*[a-zA-Z0-9])?$"}
REBUILD_BASE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "imageRef": {"type": "string", "minLength": 1},
        "name": {"type": "string", "minLength": 1, "maxLength": 255},
        "adminPass": {"type": "string"},
        "metadata": METADATA,
        "preserve_ephemeral": {"type": "boolean"},
        "OS-DCF:diskConfig": {"type": "string", "enum": ["AUTO", "MANUAL"]},
        "accessIPv4": {"type": "string"}, "accessIPv6": {"type": "string"},
        "personality": PERSONALITY,
    },
    "required": ["imageRef"],
    "additionalProperties": False,
}


def _console_action(key: str, types: list[str]) -> dict[str, Any]:
    return _action({"type": "object", "properties": {"type": {"type": "string", "enum": types}},
                    "required": ["type"], "additionalProperties": False}, key)


#: Nova's ``boolean`` parameter type: a JSON boolean or one of the strings it reads as one
BOOLEAN = {"type": ["boolean", "string"],
           "enum": [True, False, "True", "TRUE", "true", "1", "ON", "On", "on", "YES", "Yes", "yes",
                    "False", "FALSE", "false", "0", "OFF", "Off", "off", "NO", "No", "no"]}
TRUE_STRINGS = {"true", "1", "on", "yes"}


def _evacuate(extra: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    props = {"host": {"type": "string", "minLength": 1, "maxLength": 255}, "adminPass": {"type": "string"},
             **extra}
    schema: dict[str, Any] = {"type": "object", "properties": props, "additionalProperties": False}
    if required:
        schema["required"] = required
    return schema


IP_ADDRESS = {"type": "string", "anyOf": [{"format": "ipv4"}, {"format": "ipv6"}]}
HOST_OR_NULL = {"type": ["string", "null"], "minLength": 1, "maxLength": 255}


def _migrate_live(extra: dict[str, Any], block_migration: dict[str, Any]) -> dict[str, Any]:
    """Nova's os-migrateLive body: ``host`` (may be null) and ``block_migration`` required."""
    return {"type": "object", "properties": {"host": HOST_OR_NULL, "block_migration": block_migration, **extra},
            "required": ["host", "block_migration", *[k for k in extra if k != "force"]],
            "additionalProperties": False}


#: 2.25: ``block_migration`` may be "auto"
BLOCK_MIGRATION_AUTO = {"anyOf": [BOOLEAN, {"type": "string", "enum": ["auto"]}]}


def _rebuild(extra: dict[str, Any], drop: tuple[str, ...] = ()) -> dict[str, Any]:
    props = {k: v for k, v in REBUILD_BASE["properties"].items() if k not in drop}
    return {**REBUILD_BASE, "properties": {**props, **extra}}


ACTION_SCHEMAS: dict[str, VersionedSchema] = {
    "os-start": VersionedSchema(("2.1", None, _action({}, "os-start"))),
    "os-stop": VersionedSchema(("2.1", None, _action({}, "os-stop"))),
    "reboot": VersionedSchema(("2.1", None, _action({
        "type": "object",
        "properties": {"type": {"type": "string", "pattern": "^([Hh][Aa][Rr][Dd]|[Ss][Oo][Ff][Tt])$"}},
        "required": ["type"], "additionalProperties": False}, "reboot"))),
    "lock": VersionedSchema(
        ("2.1", "2.72", _action({}, "lock")),
        ("2.73", None, _action({"type": ["null", "object"], "properties": {
            "locked_reason": {"type": "string", "minLength": 1, "maxLength": 255}}, "additionalProperties": False},
            "lock")),
    ),
    "unlock": VersionedSchema(("2.1", None, _action({}, "unlock"))),
    "os-resetState": VersionedSchema(("2.1", None, _action({
        "type": "object", "properties": {"state": {"type": "string", "enum": ["active", "error"]}},
        "required": ["state"], "additionalProperties": False}, "os-resetState"))),
    "shelve": VersionedSchema(("2.1", None, _action({}, "shelve"))),
    "shelveOffload": VersionedSchema(("2.1", None, _action({}, "shelveOffload"))),
    "unshelve": VersionedSchema(
        ("2.1", "2.76", _action({}, "unshelve")),
        ("2.77", "2.90", _action({"type": ["null", "object"], "properties": {
            "availability_zone": {"type": "string", "minLength": 1, "maxLength": 255}},
            "required": ["availability_zone"], "additionalProperties": False}, "unshelve")),
        # DESIGN.md 7.2: the seed's schema, with {} rejected (Nova accepts it as null).
        ("2.91", None, _action({"type": ["null", "object"], "properties": {
            "availability_zone": {"type": ["string", "null"], "minLength": 1, "maxLength": 255},
            "host": {"type": "string", "minLength": 1, "maxLength": 255}},
            "minProperties": 1, "additionalProperties": False}, "unshelve")),
    ),
    "rebuild": VersionedSchema(
        ("2.1", "2.18", _action(REBUILD_BASE, "rebuild")),
        ("2.19", "2.53", _action(_rebuild({"description": DESCRIPTION}), "rebuild")),
        ("2.54", "2.56", _action(_rebuild({"description": DESCRIPTION, "key_name": KEY_NAME}), "rebuild")),
        ("2.57", "2.89", _action(_rebuild({"description": DESCRIPTION, "key_name": KEY_NAME, "user_data": USER_DATA},
                                          drop=("personality",)), "rebuild")),
        ("2.90", "2.92", _action(_rebuild({"description": DESCRIPTION, "key_name": KEY_NAME, "user_data": USER_DATA,
                                           "hostname": HOSTNAME}, drop=("personality",)), "rebuild")),
        # seed 1 (DESIGN.md 7.1): reimage_boot_volume from 2.93
        ("2.93", None, _action(_rebuild({"description": DESCRIPTION, "key_name": KEY_NAME, "user_data": USER_DATA,
                                         "hostname": HOSTNAME, "reimage_boot_volume": {"type": "boolean"}},
                                        drop=("personality",)), "rebuild")),
    ),
    "resize": VersionedSchema(("2.1", None, _action({
        "type": "object", "properties": {"flavorRef": {"type": ["string", "integer"], "minLength": 1},
                                         "OS-DCF:diskConfig": {"type": "string", "enum": ["AUTO", "MANUAL"]}},
        "required": ["flavorRef"], "additionalProperties": False}, "resize"))),
    "confirmResize": VersionedSchema(("2.1", None, _action({}, "confirmResize"))),
    "revertResize": VersionedSchema(("2.1", None, _action({}, "revertResize"))),
    "migrate": VersionedSchema(
        ("2.1", "2.55", _action({}, "migrate")),
        ("2.56", None, _action({"type": ["null", "object"], "properties": {
            "host": {"type": ["string", "null"], "minLength": 1, "maxLength": 255}},
            "additionalProperties": False}, "migrate")),
    ),
    "createImage": VersionedSchema(("2.1", None, _action({
        "type": "object", "properties": {
            "name": {"type": "string", "minLength": 1, "maxLength": 255},
            "metadata": METADATA},
        "required": ["name"], "additionalProperties": False}, "createImage"))),
    "createBackup": VersionedSchema(("2.1", None, _action({
        "type": "object", "properties": {
            "name": {"type": "string", "minLength": 1, "maxLength": 255},
            "backup_type": {"type": "string"},
            # Nova's non-negative integer: a number or a string of digits
            "rotation": {"type": ["integer", "string"], "pattern": "^[0-9]+$", "minimum": 0},
            "metadata": METADATA},
        "required": ["name", "backup_type", "rotation"], "additionalProperties": False}, "createBackup"))),
    "changePassword": VersionedSchema(("2.1", None, _action({
        "type": "object", "properties": {"adminPass": {"type": "string"}}, "required": ["adminPass"],
        "additionalProperties": False}, "changePassword"))),
    "pause": VersionedSchema(("2.1", None, _action({}, "pause"))),
    # Nova does not validate this action's body: null and {} (what clients send) are both taken
    "injectNetworkInfo": VersionedSchema(("2.1", None, _action({"type": ["null", "object"]}, "injectNetworkInfo"))),
    "unpause": VersionedSchema(("2.1", None, _action({}, "unpause"))),
    "suspend": VersionedSchema(("2.1", None, _action({}, "suspend"))),
    "resume": VersionedSchema(("2.1", None, _action({}, "resume"))),
    "rescue": VersionedSchema(("2.1", None, _action({
        "type": ["object", "null"], "properties": {"adminPass": {"type": "string"}, "rescue_image_ref": IMAGE_UUID},
        "additionalProperties": False}, "rescue"))),
    "unrescue": VersionedSchema(("2.1", None, _action({}, "unrescue"))),
    "restore": VersionedSchema(("2.1", None, _action({}, "restore"))),
    "forceDelete": VersionedSchema(("2.1", None, _action({}, "forceDelete"))),
    "trigger_crash_dump": VersionedSchema(("2.17", None, _action(NULL, "trigger_crash_dump"))),
    # Nova's schema: -1 (or null) is the whole log; a string of digits is taken as its number
    "os-getConsoleOutput": VersionedSchema(("2.1", None, _action({
        "type": "object", "properties": {"length": {"type": ["integer", "string", "null"], "pattern": "^-?[0-9]+$",
                                                    "minimum": -1}},
        "additionalProperties": False}, "os-getConsoleOutput"))),
    # the old console actions, replaced by POST /servers/{id}/remote-consoles at 2.6
    "os-getVNCConsole": VersionedSchema(("2.1", "2.5", _console_action("os-getVNCConsole", ["novnc", "xvpvnc"]))),
    "os-getSPICEConsole": VersionedSchema(("2.1", "2.5", _console_action("os-getSPICEConsole", ["spice-html5"]))),
    "os-getRDPConsole": VersionedSchema(("2.1", "2.5", _console_action("os-getRDPConsole", ["rdp-html5"]))),
    "os-getSerialConsole": VersionedSchema(("2.1", "2.5", _console_action("os-getSerialConsole", ["serial"]))),
    # 2.14 ``onSharedStorage`` gone (and the password no longer answered), 2.29 ``force``, gone at 2.68
    "evacuate": VersionedSchema(
        ("2.1", "2.13", _action(_evacuate({"onSharedStorage": BOOLEAN}, required=["onSharedStorage"]), "evacuate")),
        ("2.14", "2.28", _action(_evacuate({}), "evacuate")),
        ("2.29", "2.67", _action(_evacuate({"force": BOOLEAN}), "evacuate")),
        ("2.68", None, _action(_evacuate({}), "evacuate")),
    ),
    # 2.25 ``disk_over_commit`` gone and ``block_migration`` "auto", 2.30 ``force``, gone at 2.68
    "os-migrateLive": VersionedSchema(
        ("2.1", "2.24", _action(_migrate_live({"disk_over_commit": BOOLEAN}, BOOLEAN), "os-migrateLive")),
        ("2.25", "2.29", _action(_migrate_live({}, BLOCK_MIGRATION_AUTO), "os-migrateLive")),
        ("2.30", "2.67", _action(_migrate_live({"force": BOOLEAN}, BLOCK_MIGRATION_AUTO), "os-migrateLive")),
        ("2.68", None, _action(_migrate_live({}, BLOCK_MIGRATION_AUTO), "os-migrateLive")),
    ),
    # Nova validates these bodies by hand (``_security_group_name``), not with a schema.
    "addSecurityGroup": VersionedSchema(("2.1", None, _action({}, "addSecurityGroup"))),
    "removeSecurityGroup": VersionedSchema(("2.1", None, _action({}, "removeSecurityGroup"))),
    # the floating IP actions went at 2.44 (the network service's API associates them)
    "addFloatingIp": VersionedSchema(("2.1", "2.43", _action({
        "type": "object", "properties": {"address": IP_ADDRESS, "fixed_address": IP_ADDRESS},
        "required": ["address"], "additionalProperties": False}, "addFloatingIp"))),
    "removeFloatingIp": VersionedSchema(("2.1", "2.43", _action({
        "type": "object", "properties": {"address": IP_ADDRESS}, "required": ["address"],
        "additionalProperties": False}, "removeFloatingIp"))),
}

#: Body keys an action honours only from a microversion on (below it they are ignored, whatever
#: the body holds, as Nova does): 2.56 migrate ``host``, 2.73 lock ``locked_reason``, 2.77
#: unshelve ``availability_zone`` (2.91 ``host``, which the schema only accepts from then).
ACTION_ARGS: dict[str, Since] = {
    "migrate": Since({"host": (2, 56)}),
    "lock": Since({"locked_reason": (2, 73)}),
    "unshelve": Since({"availability_zone": (2, 77), "host": (2, 77)}),
}
#: 2.45: createImage and createBackup answer ``{"image_id": ...}`` instead of a ``Location`` header.
ACTION_FEATURES = Since({"create_image_body": (2, 45)})
#: evacuate: 2.14 the shared storage is found out (not told) and the answer has no password;
#: 2.95 the evacuated server ends STOPPED on its new host.
EVACUATE_FEATURES = Since({"no_password_answer": (2, 14), "leaves_stopped": (2, 95)})
#: os-migrateLive: from 2.34 the conductor's checks of the named host run in the background (a
#: failed one is the migration's ``error``, not a 400).
LIVE_MIGRATE_FEATURES = Since({"async_checks": (2, 34)})
#: 2.87: a volume-backed server may be rescued (stable device rescue).
RESCUE_FEATURES = Since({"volume_backed": (2, 87)})

Handler = Callable[["ServerActionView", Any, Instance, Any, dict[str, Any]], Response | None]
HANDLERS: dict[str, Handler] = {}


def handles(key: str) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        HANDLERS[key] = fn
        return fn

    return register


class ServerActionView(ComputeAPIView):
    def post(self, request: Request, server_id: str) -> Response:
        body = self.body()
        if not isinstance(body, dict) or len(body) != 1:
            raise Invalid("Malformed request body")
        key = next(iter(body))
        handler = HANDLERS.get(key)
        schema = ACTION_SCHEMAS.get(key)
        if handler is None or schema is None or schema.schema_for(self.version) is None:
            raise NotFound(f"There is no such action: {key}")
        schema.validate(body, self.version)
        record = get_server(self.ctx, server_id, version=self.version)
        instance, cell = self._instance(record)
        args = body[key] or {}
        if key in ACTION_ARGS:
            args = ACTION_ARGS[key].only(args if isinstance(args, dict) else {}, self.version)
        with target_cell(cell):
            response = handler(self, request, instance, cell, args)
        return response or Response(status=202)

    def _instance(self, record: ServerRecord) -> tuple[Instance, Any]:
        if record.instance is None or record.cell is None:
            raise InstanceInvalidState(method="action", instance_uuid=record.uuid, attr="vm_state", state="building")
        return record.instance, record.cell


@handles("os-start")
def _start(view: ServerActionView, request: Any, instance: Instance, cell: Any, body: dict[str, Any]) -> None:
    power.server_start(actor=view.ctx, instance=instance, cell=cell)


@handles("os-stop")
def _stop(view: ServerActionView, request: Any, instance: Instance, cell: Any, body: dict[str, Any]) -> None:
    power.server_stop(actor=view.ctx, instance=instance, cell=cell)


@handles("reboot")
def _reboot(view: ServerActionView, request: Any, instance: Instance, cell: Any, body: dict[str, Any]) -> None:
    power.server_reboot(actor=view.ctx, instance=instance, cell=cell, hard=body["type"].upper() == "HARD")


@handles("injectNetworkInfo")
def _inject_network_info(view: ServerActionView, request: Any, instance: Instance, cell: Any,
                         body: dict[str, Any]) -> None:
    power.server_inject_network_info(actor=view.ctx, instance=instance)


@handles("lock")
def _lock(view: ServerActionView, request: Any, instance: Instance, cell: Any, body: dict[str, Any]) -> None:
    power.server_lock(actor=view.ctx, instance=instance, reason=body.get("locked_reason"))


@handles("unlock")
def _unlock(view: ServerActionView, request: Any, instance: Instance, cell: Any, body: dict[str, Any]) -> None:
    power.server_unlock(actor=view.ctx, instance=instance)


@handles("os-resetState")
def _reset_state(view: ServerActionView, request: Any, instance: Instance, cell: Any, body: dict[str, Any]) -> None:
    server_reset_state(actor=view.ctx, instance=instance, state=body["state"])


@handles("shelve")
def _shelve(view: ServerActionView, request: Any, instance: Instance, cell: Any, body: dict[str, Any]) -> None:
    shelve.server_shelve(actor=view.ctx, instance=instance, cell=cell)


@handles("shelveOffload")
def _offload(view: ServerActionView, request: Any, instance: Instance, cell: Any, body: dict[str, Any]) -> None:
    shelve.server_shelve_offload(actor=view.ctx, instance=instance, cell=cell)


@handles("unshelve")
def _unshelve(view: ServerActionView, request: Any, instance: Instance, cell: Any, body: dict[str, Any]) -> None:
    new_az = body["availability_zone"] if "availability_zone" in body else shelve.UNSET
    shelve.server_unshelve(actor=view.ctx, instance=instance, cell=cell, new_az=new_az, host=body.get("host") or None)


@handles("changePassword")
def _change_password(view: ServerActionView, request: Any, instance: Instance, cell: Any,
                     body: dict[str, Any]) -> None:
    server_set_password(actor=view.ctx, instance=instance, cell=cell, password=body["adminPass"])


@handles("rebuild")
def _rebuild_action(view: ServerActionView, request: Any, instance: Instance, cell: Any,
                    body: dict[str, Any]) -> Response:
    import base64


    image = _image(view.ctx, body["imageRef"])
    changes: dict[str, Any] = {}
    for key, column in (("name", "display_name"), ("metadata", "metadata"), ("description", "display_description"),
                        ("accessIPv4", "access_ip_v4"), ("accessIPv6", "access_ip_v6"), ("hostname", "hostname")):
        if key in body:
            changes[column] = body[key]
    if "personality" in body:
        changes["injected_files"] = injected_files_checked(project_id=instance.project_id or "",
                                                           personality=list(body["personality"] or []))
    if "user_data" in body:
        changes["user_data"] = body["user_data"]
        try:
            base64.b64decode(body["user_data"] or "", validate=True)
        except ValueError:
            raise Invalid("User data needs to be valid base 64.") from None
    if "key_name" in body:
        if body["key_name"] is None:
            changes.update(key_name=None, key_data=None)
        else:
            keypair = KeyPair.objects.filter(user_id=instance.user_id, name=body["key_name"]).first()
            if keypair is None:
                raise Invalid("Invalid key_name provided.")
            changes.update(key_name=keypair.name, key_data=keypair.public_key)
    admin_pass = body.get("adminPass") or generate_password()
    rebuild.server_rebuild(actor=view.ctx, instance=instance, cell=cell, image=image, changes=changes,
                           admin_pass=admin_pass, preserve_ephemeral=bool(body.get("preserve_ephemeral")),
                           version=tuple(view.version), reimage_boot_volume=body.get("reimage_boot_volume"),
                           auto_disk_config=disk_config_from_api(body.get("OS-DCF:diskConfig")))
    record = get_server(view.ctx, instance.uuid, version=view.version)
    server = present_updated_server(render([record], version=view.version, actor=view.ctx)[0], version=view.version,
                                    rebuild=True)
    server["adminPass"] = admin_pass
    if view.version >= (2, 57):  # the rebuild answer carries the server's user data from 2.57 (Nova), as
        # ``user_data``, not as the admin's extended attribute of show
        server.pop("OS-EXT-SRV-ATTR:user_data", None)
        server["user_data"] = (changes["user_data"] if "user_data" in changes else instance.user_data) or None
    return Response({"server": server}, status=202)


@handles("resize")
def _resize(view: ServerActionView, request: Any, instance: Instance, cell: Any, body: dict[str, Any]) -> None:

    resize.server_resize(actor=view.ctx, instance=instance, cell=cell, flavor_ref=str(body["flavorRef"]),
                         auto_disk_config=disk_config_from_api(body.get("OS-DCF:diskConfig")))


@handles("migrate")
def _migrate(view: ServerActionView, request: Any, instance: Instance, cell: Any, body: dict[str, Any]) -> None:

    resize.server_resize(actor=view.ctx, instance=instance, cell=cell, flavor_ref=None, host=body.get("host"))


@handles("confirmResize")
def _confirm(view: ServerActionView, request: Any, instance: Instance, cell: Any, body: dict[str, Any]) -> Response:

    resize.server_confirm_resize(actor=view.ctx, instance=instance, cell=cell)
    return Response(status=204)


@handles("revertResize")
def _revert(view: ServerActionView, request: Any, instance: Instance, cell: Any, body: dict[str, Any]) -> None:

    resize.server_revert_resize(actor=view.ctx, instance=instance, cell=cell)


@handles("createImage")
def _create_image(view: ServerActionView, request: Any, instance: Instance, cell: Any,
                  body: dict[str, Any]) -> Response:
    image_id = server_create_image(actor=view.ctx, instance=instance, cell=cell, name=body["name"],
                                   metadata=body.get("metadata") or {})
    return _image_created(view, image_id)


@handles("createBackup")
def _create_backup(view: ServerActionView, request: Any, instance: Instance, cell: Any,
                   body: dict[str, Any]) -> Response:
    """Below 2.45 the ``Location`` header names the backup only when the rotation keeps one (Nova)."""
    rotation = int(body["rotation"])
    image_id = server_create_backup(actor=view.ctx, instance=instance, cell=cell, name=body["name"],
                                    backup_type=body["backup_type"], rotation=rotation,
                                    metadata=body.get("metadata") or {})
    return _image_created(view, image_id, location=rotation > 0)


def _image_created(view: ServerActionView, image_id: str, *, location: bool = True) -> Response:
    if ACTION_FEATURES.has("create_image_body", view.version):
        return Response({"image_id": image_id}, status=202)
    response = Response(status=202)
    if location:
        response["Location"] = f"{settings.PUBLIC_URL.rstrip('/')}/image/v2/images/{image_id}"
    return response


def _security_group_name(body: Any) -> str:
    """Nova's checks of an ``addSecurityGroup`` / ``removeSecurityGroup`` body, with its messages."""
    if not isinstance(body, dict):
        raise Invalid("Missing parameter dict")
    if "name" not in body:
        raise Invalid("Security group not specified")
    name = body["name"]
    if not isinstance(name, str) or not name.strip():
        raise Invalid("Security group name cannot be empty")
    return name


@handles("addSecurityGroup")
def _add_security_group(view: ServerActionView, request: Any, instance: Instance, cell: Any,
                        body: dict[str, Any]) -> None:
    security_groups.server_add_security_group(actor=view.ctx, instance=instance, name=_security_group_name(body))


@handles("removeSecurityGroup")
def _remove_security_group(view: ServerActionView, request: Any, instance: Instance, cell: Any,
                           body: dict[str, Any]) -> None:
    security_groups.server_remove_security_group(actor=view.ctx, instance=instance,
                                                 name=_security_group_name(body))


@handles("addFloatingIp")
def _add_floating_ip(view: ServerActionView, request: Any, instance: Instance, cell: Any, body: dict[str, Any]) -> None:
    floating_ip_proxy.server_add_floating_ip(actor=view.ctx, instance=instance, address=body["address"],
                                             fixed_address=body.get("fixed_address"))


@handles("removeFloatingIp")
def _remove_floating_ip(view: ServerActionView, request: Any, instance: Instance, cell: Any,
                        body: dict[str, Any]) -> None:
    floating_ip_proxy.server_remove_floating_ip(actor=view.ctx, instance=instance, address=body["address"])


@handles("pause")
def _pause(view: ServerActionView, request: Any, instance: Instance, cell: Any, body: dict[str, Any]) -> None:
    pause_rescue.server_pause(actor=view.ctx, instance=instance, cell=cell)


@handles("unpause")
def _unpause(view: ServerActionView, request: Any, instance: Instance, cell: Any, body: dict[str, Any]) -> None:
    pause_rescue.server_unpause(actor=view.ctx, instance=instance, cell=cell)


@handles("suspend")
def _suspend(view: ServerActionView, request: Any, instance: Instance, cell: Any, body: dict[str, Any]) -> None:
    pause_rescue.server_suspend(actor=view.ctx, instance=instance, cell=cell)


@handles("resume")
def _resume(view: ServerActionView, request: Any, instance: Instance, cell: Any, body: dict[str, Any]) -> None:
    pause_rescue.server_resume(actor=view.ctx, instance=instance, cell=cell)


@handles("rescue")
def _rescue(view: ServerActionView, request: Any, instance: Instance, cell: Any, body: dict[str, Any]) -> Response:
    """200 with the rescue password (``adminPass``: the body's, else a generated one) unless the
    cloud hides passwords (``ENABLE_INSTANCE_PASSWORD``)."""
    admin_pass = body.get("adminPass") or generate_password()
    pause_rescue.server_rescue(actor=view.ctx, instance=instance, cell=cell, admin_pass=admin_pass,
                               rescue_image_ref=body.get("rescue_image_ref"),
                               allow_volume_backed=RESCUE_FEATURES.has("volume_backed", view.version))
    if getattr(settings, "ENABLE_INSTANCE_PASSWORD", True):
        return Response({"adminPass": admin_pass}, status=200)
    return Response({}, status=200)


@handles("os-migrateLive")
def _migrate_live_action(view: ServerActionView, request: Any, instance: Instance, cell: Any,
                         body: dict[str, Any]) -> None:
    """202, no body; ``disk_over_commit`` (below 2.25) is accepted and has no effect, as with
    Nova's libvirt driver since it stopped checking disk space itself."""
    block = body["block_migration"]
    live_migrate.server_live_migrate(
        actor=view.ctx, instance=instance, cell=cell, host=body.get("host"),
        block_migration=block if block == "auto" else _truthy(block), force=_truthy(body.get("force")),
        sync_checks=not LIVE_MIGRATE_FEATURES.has("async_checks", view.version))


@handles("evacuate")
def _evacuate_action(view: ServerActionView, request: Any, instance: Instance, cell: Any,
                     body: dict[str, Any]) -> Response:
    """200: before 2.14 ``{"adminPass": ...}`` (none on shared storage; none either when the cloud
    hides passwords), from 2.14 no body."""
    shared = _truthy(body.get("onSharedStorage"))
    if shared and "adminPass" in body:
        raise Invalid("admin password can't be changed on existing disk")
    admin_pass = body.get("adminPass")
    if admin_pass is None and not shared:
        admin_pass = generate_password()
    evacuate.server_evacuate(actor=view.ctx, instance=instance, cell=cell, host=body.get("host"),
                             admin_pass=admin_pass, force=_truthy(body.get("force")),
                             stop=EVACUATE_FEATURES.has("leaves_stopped", view.version))
    if EVACUATE_FEATURES.has("no_password_answer", view.version):
        return Response(status=200)
    if getattr(settings, "ENABLE_INSTANCE_PASSWORD", True):
        return Response({"adminPass": admin_pass}, status=200)
    return Response({}, status=200)


def _truthy(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.lower() in TRUE_STRINGS)


@handles("unrescue")
def _unrescue(view: ServerActionView, request: Any, instance: Instance, cell: Any, body: dict[str, Any]) -> None:
    pause_rescue.server_unrescue(actor=view.ctx, instance=instance, cell=cell)


@handles("trigger_crash_dump")
def _trigger_crash_dump(view: ServerActionView, request: Any, instance: Instance, cell: Any,
                        body: dict[str, Any]) -> None:
    pause_rescue.server_trigger_crash_dump(actor=view.ctx, instance=instance, cell=cell)


@handles("restore")
def _restore(view: ServerActionView, request: Any, instance: Instance, cell: Any, body: dict[str, Any]) -> None:
    deferred_delete.server_restore(actor=view.ctx, instance=instance, cell=cell)


@handles("forceDelete")
def _force_delete(view: ServerActionView, request: Any, instance: Instance, cell: Any,
                  body: dict[str, Any]) -> None:
    server_force_delete(actor=view.ctx, instance=instance, cell=cell)


@handles("os-getConsoleOutput")
def _console_output(view: ServerActionView, request: Any, instance: Instance, cell: Any,
                    body: dict[str, Any]) -> Response:
    length = body.get("length")
    output = consoles.server_console_output(actor=view.ctx, instance=instance, cell=cell,
                                            length=None if length is None else int(length))
    return Response({"output": output}, status=200)


def _old_console(protocol: str, key: str) -> Handler:
    def handler(view: ServerActionView, request: Any, instance: Instance, cell: Any,
                body: dict[str, Any]) -> Response:
        url = consoles.server_remote_console(actor=view.ctx, instance=instance, cell=cell, protocol=protocol,
                                             console_type=body["type"])
        return Response({"console": {"type": body["type"], "url": url}}, status=200)

    handler.__name__ = f"_{protocol}_console"
    return handles(key)(handler)


_vnc_console = _old_console("vnc", "os-getVNCConsole")
_spice_console = _old_console("spice", "os-getSPICEConsole")
_rdp_console = _old_console("rdp", "os-getRDPConsole")
_serial_console = _old_console("serial", "os-getSerialConsole")
