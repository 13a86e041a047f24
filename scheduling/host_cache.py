"""The scheduler's copy of each cell's compute nodes (host, node name, hypervisor, service link),
so that a request reads no node row per host.

Freshness. Per request and per cell, one statement (``freshness``) fingerprints the compute node
table (row count, deleted rows, highest id, newest created/updated time, sum of the service
links) and the nova-compute services (the same without the links); when either differs from the one the
copy was loaded with, the cell is loaded again (``scheduler._read_cell_nodes``), or, when only
the newest ``updated_at`` moved (a compute saving its node row every period), just the rows
updated since. What changes without
touching those (a service disabled, forced down or silent, even through a bare ``UPDATE``) is
read fresh on every request instead: the same statement lists the cell's services that are
disabled, forced down or past ``SERVICE_DOWN_TIME``; every other service is up and enabled.
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

from django.conf import settings
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from hosts.selectors import compute_fingerprint, compute_fingerprint_and_problems

from .host_state import cpu_arch
from .placement.cache import keep_out_of_collections

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class NodeFacts:
    """One live compute node of one cell, as loaded. ``service`` is its nova-compute service
    as loaded (None: it has none); ``service_ok`` the same with the state of a service that is
    enabled and up (what it is unless ``service_problems`` lists it)."""

    node: Any
    service: Any
    service_ok: Any
    cell: Any
    cpu_arch: str | None


@dataclass
class _CellCopy:
    fingerprint: tuple[Any, ...]
    nodes: dict[str, NodeFacts]


#: ``load(cell, updated_after)``: ``{node uuid: (node, service, cell)}`` of the cell's live nodes
#: (only those updated after the given time, when one is given)
Loader = Callable[[Any, datetime | None], dict[str, tuple[Any, Any, Any]]]
#: how far back a delta re-reads node rows before the newest ``updated_at`` it had seen
UPDATE_OVERLAP = timedelta(seconds=60)


class NodeCache:
    """One per process (``node_cache``); thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cells: dict[str, _CellCopy] = {}
        self.reloads = 0
        self.delta_reloads = 0

    def clear(self) -> None:
        with self._lock:
            self._cells = {}

    @staticmethod
    def _fingerprint() -> tuple[Any, ...]:
        """Of the targeted cell: (rows, deleted rows, highest id, newest created_at, newest
        updated_at, sum of service links) of the compute nodes, then the same (links: 0) of the
        nova-compute services; one statement."""
        return compute_fingerprint()

    def nodes(self, cell: Any, load: Loader, fingerprint: tuple[Any, ...] | None = None) -> dict[str, NodeFacts]:
        """``{node uuid: NodeFacts}`` of ``cell`` (targeted by the caller). When only the newest
        ``updated_at`` of the nodes moved (the resource tracker saving its node every period),
        the nodes updated since (less ``UPDATE_OVERLAP``, for writers that commit late) are
        read again with ``load(cell, updated_after)``; any other change reloads the cell with
        ``load(cell, None)``. ``fingerprint``: the cell's, when the caller has just read it
        (``freshness``). Do not mutate the answer."""
        if fingerprint is None:
            fingerprint = self._fingerprint()
        with self._lock:
            copy = self._cells.get(cell.uuid)
        if copy is not None and copy.fingerprint == fingerprint:
            return copy.nodes
        since = _only_updated_moved(copy.fingerprint, fingerprint) if copy is not None else None
        self.reloads += 1
        fresh = {uuid: NodeFacts(node, service, _ok(service), cell, cpu_arch(node.cpu_info))
                 for uuid, (node, service, _cell) in load(cell, since).items()}
        if since is not None and copy is not None:
            self.delta_reloads += 1
            fresh = {**copy.nodes, **fresh}
        with self._lock:
            self._cells[cell.uuid] = _CellCopy(fingerprint, fresh)
        if since is None:
            keep_out_of_collections(len(fresh))
        return fresh


def _only_updated_moved(old: tuple[Any, ...], new: tuple[Any, ...]) -> datetime | None:
    """The time to re-read node rows from, when the two fingerprints differ only in the nodes'
    newest ``updated_at``; None otherwise."""
    (old_nodes, old_services), (new_nodes, new_services) = old, new
    if old_services != new_services or old_nodes[:5] != new_nodes[:5] or old_nodes[6:] != new_nodes[6:] \
            or old_nodes[5] is None:
        return None
    last = old_nodes[5]
    if isinstance(last, str):  # SQLite answers the raw column
        last = parse_datetime(last)
    if last is None:
        return None
    if timezone.is_naive(last):
        last = timezone.make_aware(last, UTC)
    return last - UPDATE_OVERLAP


def _ok(service: Any) -> Any:
    if service is None:
        return None
    return SimpleNamespace(**{**vars(service), "disabled": False, "disabled_reason": None, "forced_down": False})


def freshness(service_fields: list[str]) -> tuple[tuple[Any, ...], dict[int, Any]]:
    """Of the targeted cell, in one statement: its fingerprint (``NodeCache.nodes`` takes it) and
    ``{service id: its current fields}`` of its nova-compute services that are disabled, forced
    down, or whose last heartbeat (``last_seen_up``, else ``updated_at``, else ``created_at``, as
    ``service_is_up`` reads it) is older than ``SERVICE_DOWN_TIME``."""
    fingerprint, rows = compute_fingerprint_and_problems(service_fields,
                                                         down_after_seconds=settings.SERVICE_DOWN_TIME)
    return fingerprint, {row["id"]: SimpleNamespace(**row) for row in rows}


node_cache = NodeCache()
