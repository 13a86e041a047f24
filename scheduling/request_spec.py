"""Request specs for moves: pure functions that derive, from a server's stored RequestSpec JSON,
the spec ``select_destinations`` needs for a resize/migration, an unshelve, or a rebuild check,
so that every caller spells the scheduler's keys the same way.

Keys the scheduler reads (besides what ``servers/services/create.py`` stores):

- ``instance_cell_uuid``: the server's current cell; makes the request a move (CrossCellWeigher);
- ``allow_cross_cell_move``: False keeps a move in ``instance_cell_uuid``;
- ``requested_destination``: ``{"host", "node", "cell", "aggregates"}``;
- ``ignore_hosts``: hosts never chosen (the source of a resize unless same-host is allowed);
- ``scheduler_hints["_nova_check_type"] == ["rebuild"]``: filters only, no placement claim.
"""
from __future__ import annotations

import copy
from typing import Any

UNSET: Any = object()


def spec_for_move(
    spec: dict[str, Any], *, source_cell_uuid: str, source_host: str | None, flavor: dict[str, Any] | None = None,
    allow_cross_cell_move: bool = False, allow_same_host: bool = False, host: str | None = None,
    node: str | None = None, cell_uuid: str | None = None, force_host: bool = False,
) -> dict[str, Any]:
    """Resize (``flavor`` = the new one), cold migration (``flavor`` None) or evacuation of a
    server now in ``source_cell_uuid`` on ``source_host``: the source is ignored unless
    ``allow_same_host``; a target ``host``/``node``/``cell_uuid`` becomes the requested
    destination; with ``force_host`` the ``host`` is forced instead (the filters let it through)."""
    moved = copy.deepcopy(spec)
    if flavor is not None:
        moved["flavor"] = copy.deepcopy(flavor)
    moved["instance_cell_uuid"] = source_cell_uuid
    moved["allow_cross_cell_move"] = bool(allow_cross_cell_move)
    ignore = [h for h in moved.get("ignore_hosts") or [] if h != source_host]
    if source_host and not allow_same_host:
        ignore.append(source_host)
    moved["ignore_hosts"] = ignore
    moved["force_hosts"], moved["force_nodes"] = ([host] if force_host and host else []), []
    moved["num_instances"] = 1
    if force_host:
        host = None
    destination = {"host": host, "node": node, "cell": cell_uuid}
    moved["requested_destination"] = destination if any(destination.values()) else None
    return moved


def spec_for_unshelve(
    spec: dict[str, Any], *, availability_zone: str | None = UNSET, host: str | None = None,
) -> dict[str, Any]:
    """Unshelve of a shelved-offloaded server: a new zone (None unpins it) and/or a target host
    (2.91). Not a move between cells: the server has no host."""
    unshelved = copy.deepcopy(spec)
    if availability_zone is not UNSET:
        unshelved["availability_zone"] = availability_zone
    unshelved["requested_destination"] = {"host": host, "node": None, "cell": None} if host else None
    unshelved["force_hosts"], unshelved["force_nodes"] = [], []
    unshelved["ignore_hosts"] = []
    unshelved["num_instances"] = 1
    for key in ("instance_cell_uuid", "allow_cross_cell_move"):
        unshelved.pop(key, None)
    return unshelved


def spec_for_rebuild_check(
    spec: dict[str, Any], *, host: str, node: str | None = None, image: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Rebuild with a new image: the filters re-validate the current host; nothing is claimed."""
    checked = copy.deepcopy(spec)
    if image is not None:
        checked["image"] = copy.deepcopy(image)
    checked["requested_destination"] = {"host": host, "node": node, "cell": None}
    hints = dict(checked.get("scheduler_hints") or {})
    hints["_nova_check_type"] = ["rebuild"]
    checked["scheduler_hints"] = hints
    checked["force_hosts"], checked["force_nodes"], checked["ignore_hosts"] = [], [], []
    checked["num_instances"] = 1
    return checked
