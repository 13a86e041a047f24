"""Run a function in every cell at once, each with its own timeout.

A cell that raises or does not answer in time is reported with a sentinel (``CELL_TIMEOUT`` or
the exception) so that callers can show its servers as down while the others still answer.

Each cell has its own threads in each process, started at its first call and kept
(``CELL_SCATTER_THREADS`` at most, ``CLOUDCORE_CELL_SCATTER_THREADS``), and each thread keeps its
database connections as a request's thread does: closed after a call only when past
``CONN_MAX_AGE`` (``CLOUDCORE_DB_CONN_MAX_AGE``, which ``run_cloud`` sets) or unusable, and checked
before the next. A thread and a connection made per call cost, on PostgreSQL, a backend forked and
authenticated for each cell at every server list and quota count (three per ``GET /servers/detail``
on the demo cloud). A cell that does not answer holds only its own threads: the calls queued
behind them time out as it does, and the other cells' calls go on.
"""
from __future__ import annotations

import concurrent.futures
import logging
import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from django.conf import settings
from django.db import close_old_connections

from .context import target_cell
from .models import CellMapping
from .selectors import all_cells

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass(frozen=True)
class CellFailure:
    """Why a cell did not answer: ``timeout`` or the exception it raised."""

    cell_uuid: str
    reason: str
    exception: BaseException | None = None

    @property
    def timed_out(self) -> bool:
        return self.reason == "timeout"


_pools: dict[str, concurrent.futures.ThreadPoolExecutor] = {}
_pools_lock = threading.Lock()


def _pool(cell: CellMapping) -> concurrent.futures.ThreadPoolExecutor:
    """The threads of ``cell`` in this process, started with its first call."""
    pool = _pools.get(cell.uuid)
    if pool is None:
        with _pools_lock:
            pool = _pools.get(cell.uuid)
            if pool is None:
                pool = _pools[cell.uuid] = concurrent.futures.ThreadPoolExecutor(
                    max_workers=settings.CELL_SCATTER_THREADS, thread_name_prefix=f"cell-{cell.name or cell.uuid}")
    return pool


def shutdown() -> None:
    """Stop every cell's threads (after their calls end); the next call starts new ones. A thread's
    database connections close when it ends."""
    with _pools_lock:
        pools = list(_pools.values())
        _pools.clear()
    for pool in pools:
        pool.shutdown(wait=True, cancel_futures=True)


def _forget_pools() -> None:
    # a forked child (a gunicorn or Celery worker) has none of its parent's threads
    _pools.clear()


os.register_at_fork(after_in_child=_forget_pools)


def _run_in_cell(cell: CellMapping, fn: Callable[[CellMapping], T]) -> T:
    # As around a request: a connection past its age or left unusable is closed, and a kept one
    # is checked before its first statement.
    close_old_connections()
    try:
        with target_cell(cell):
            return fn(cell)
    finally:
        close_old_connections()


def scatter_gather(
    fn: Callable[[CellMapping], T],
    cells: Iterable[CellMapping] | None = None,
    *,
    timeout: float | None = None,
) -> dict[str, T | CellFailure]:
    """Call ``fn(cell)`` with each cell targeted; return ``{cell_uuid: result or CellFailure}``."""
    cell_list = list(cells) if cells is not None else all_cells()
    if timeout is None:
        timeout = settings.CELL_TIMEOUT
    results: dict[str, Any] = {}
    if not cell_list:
        return results
    if getattr(settings, "CELL_SCATTER_INLINE", False):
        # Test mode: run in the calling thread so test transactions are visible; no timeout.
        for cell in cell_list:
            try:
                with target_cell(cell):
                    results[cell.uuid] = fn(cell)
            except Exception as exc:  # a failing cell must not hide the others
                log.warning("cell %s failed: %s", cell.uuid, exc)
                results[cell.uuid] = CellFailure(cell.uuid, "error", exc)
        return results
    futures = {cell.uuid: _pool(cell).submit(_run_in_cell, cell, fn) for cell in cell_list}
    done, _ = concurrent.futures.wait(futures.values(), timeout=timeout)
    for cell_uuid, future in futures.items():
        if future not in done:
            future.cancel()  # still queued behind the cell's busy threads: never run it
            log.warning("cell %s did not answer within %ss", cell_uuid, timeout)
            results[cell_uuid] = CellFailure(cell_uuid, "timeout")
            continue
        error = future.exception()
        if error is not None:
            log.warning("cell %s failed: %s", cell_uuid, error)
            results[cell_uuid] = CellFailure(cell_uuid, "error", error)
        else:
            results[cell_uuid] = future.result()
    return results


def failed(result: object) -> bool:
    return isinstance(result, CellFailure)
