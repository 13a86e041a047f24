"""A server's history (instance actions with their events, and faults) carried through a
BuildRequest: a PENDING server rebuilt from cell0 leaves cell0 for good, and its history goes with
it to wherever it is built (or back to cell0 when it is buried again)."""
from __future__ import annotations

from typing import Any

from django.utils.dateparse import parse_datetime

from ..models import (
    BlockDeviceMapping,
    Instance,
    InstanceAction,
    InstanceActionEvent,
    InstanceFault,
    Migration,
    Tag,
    VirtualInterface,
)

_TIMES = ("start_time", "finish_time", "created_at", "updated_at", "deleted_at")


def _fields(model: Any, skip: tuple[str, ...] = ()) -> list[str]:
    return [f.attname for f in model._meta.concrete_fields if f.attname not in ("id", *skip)]


def _json(row: dict[str, Any]) -> dict[str, Any]:
    return {k: (v.isoformat() if k in _TIMES and v is not None else v) for k, v in row.items()}


def _unjson(row: dict[str, Any]) -> dict[str, Any]:
    return {k: (parse_datetime(v) if k in _TIMES and isinstance(v, str) else v) for k, v in row.items()}


def history_take(instance_uuid: str) -> dict[str, Any]:
    """The server's actions (with events) and faults in the targeted cell, as JSON."""
    acts = []
    for action in InstanceAction.all_objects.filter(instance_uuid=instance_uuid).order_by("id"):
        events = [_json({f: getattr(e, f) for f in _fields(InstanceActionEvent, ("action_id",))})
                  for e in InstanceActionEvent.all_objects.filter(action=action).order_by("id")]
        acts.append({"action": _json({f: getattr(action, f) for f in _fields(InstanceAction)}), "events": events})
    faults = [_json(row) for row in InstanceFault.all_objects.filter(instance_uuid=instance_uuid).order_by("id")
              .values(*_fields(InstanceFault))]
    return {"actions": acts, "faults": faults}


def history_restore(history: dict[str, Any] | None) -> None:
    """Recreate a taken history in the targeted cell."""
    for item in (history or {}).get("actions", []):
        action = InstanceAction.all_objects.create(**_unjson(item["action"]))
        for event in item["events"]:
            InstanceActionEvent.all_objects.create(action=action, **_unjson(event))
    for fault in (history or {}).get("faults", []):
        InstanceFault.all_objects.create(**_unjson(fault))


def open_action(history: dict[str, Any] | None, request_id: str) -> str | None:
    """The name of the unfinished action of ``request_id`` in the history (the rebuild that sent a
    PENDING server back to scheduling), if any."""
    for item in (history or {}).get("actions", []):
        action = item["action"]
        if action.get("request_id") == request_id and not action.get("finish_time"):
            return str(action["action"])
    return None


def rows_hard_delete(instance_uuid: str) -> None:
    """Remove the server and every row hanging off it from the targeted cell (it leaves the cell)."""
    InstanceActionEvent.all_objects.filter(action__instance_uuid=instance_uuid).delete()
    for model in (InstanceAction, InstanceFault, BlockDeviceMapping, VirtualInterface):
        model._base_manager.filter(instance_uuid=instance_uuid).delete()
    Tag.objects.filter(instance_uuid=instance_uuid).delete()
    Instance.all_objects.filter(uuid=instance_uuid).delete()


# --- used by cross-cell ---
# The rows of a server that moves between cells (``conductor.cross_cell``), in the targeted cell:
# taken from the source as column dicts (ids left out) in the order of their ids, recreated in the
# target in that order (so the target's ids keep it: PostgreSQL returns an unordered scan in any
# order, e.g. an updated row after the rows inserted later), and the
# server's own columns and its migrations' written by the conductor while it drives the move.


def _rows(model: Any, **filters: Any) -> list[dict[str, Any]]:
    return list(model._base_manager.filter(**filters).order_by("pk").values(*_fields(model)))


def bdm_rows(instance_uuid: str) -> list[dict[str, Any]]:
    """The server's live block devices as column dicts (ids left out)."""
    return _rows(BlockDeviceMapping, instance_uuid=instance_uuid, deleted=False)


def rows_take(instance_uuid: str) -> dict[str, Any]:
    """The server and its live block devices, VIFs, tags, migrations and actions (with their
    events), as column dicts: ``rows_restore`` recreates them in another cell."""
    acts = []
    for action in InstanceAction.objects.filter(instance_uuid=instance_uuid).order_by("pk"):
        events = [{f: getattr(e, f) for f in _fields(InstanceActionEvent, ("action_id",))}
                  for e in action.events.order_by("pk")]
        acts.append(({f: getattr(action, f) for f in _fields(InstanceAction)}, events))
    return {
        "instance": _rows(Instance, uuid=instance_uuid)[0],
        "bdms": bdm_rows(instance_uuid),
        "vifs": _rows(VirtualInterface, instance_uuid=instance_uuid, deleted=False),
        "tags": _rows(Tag, instance_uuid=instance_uuid),
        "migrations": _rows(Migration, instance_uuid=instance_uuid),
        "actions": acts,
    }


def rows_restore(rows: dict[str, Any]) -> None:
    """Create the rows ``rows_take`` took (the caller opens the targeted cell's transaction)."""
    Instance(**rows["instance"]).save()
    copies = (("bdms", BlockDeviceMapping), ("vifs", VirtualInterface), ("tags", Tag), ("migrations", Migration))
    for key, model in copies:
        for item in rows[key]:
            model._base_manager.create(**item)
    for action, events in rows["actions"]:
        new = InstanceAction.objects.create(**action)
        for event in events:
            InstanceActionEvent.objects.create(action=new, **event)


def bdm_restore(row: dict[str, Any]) -> BlockDeviceMapping:
    """Create a block device from its column dict (``bdm_rows`` of another cell)."""
    return BlockDeviceMapping.objects.create(**row)


def bdm_hard_delete(bdm_uuid: str) -> None:
    """Remove the block device ``bdm_uuid`` from the targeted cell."""
    BlockDeviceMapping.all_objects.filter(uuid=bdm_uuid).delete()


def migrations_hard_delete(instance_uuid: str) -> None:
    """Remove the server's migrations from the targeted cell (it leaves the cell)."""
    Migration._base_manager.filter(instance_uuid=instance_uuid).delete()


def instance_update(instance_uuid: str, **fields: Any) -> int:
    """Write ``fields`` on the server's row in the targeted cell (a hidden or deleted one too), in
    one statement; the number of rows written."""
    return Instance.all_objects.filter(uuid=instance_uuid).update(**fields)


def migration_update(migration_uuid: str, **fields: Any) -> int:
    """Write ``fields`` on the live migration ``migration_uuid`` in the targeted cell, in one
    statement (the destination node with no compute id yet included); the number of rows written."""
    return Migration.objects.filter(uuid=migration_uuid).update(**fields)
