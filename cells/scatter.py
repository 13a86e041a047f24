"""Run a function in every cell at once, each with its own timeout.

A cell that raises or does not answer in time is reported with a sentinel (``CELL_TIMEOUT`` or
the exception) so that callers can show its servers as down while the others still answer.
"""
from __future__ import annotations

import concurrent.futures
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from django.conf import settings
from django.db import connections

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


def _run_in_cell(cell: CellMapping, fn: Callable[[CellMapping], T]) -> T:
    try:
        with target_cell(cell):
            return fn(cell)
    finally:
        # The worker thread owns its connections; close them so none leak.
        connections.close_all()


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
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=min(len(cell_list), 16))
    try:
        futures = {cell.uuid: pool.submit(_run_in_cell, cell, fn) for cell in cell_list}
        done, _ = concurrent.futures.wait(futures.values(), timeout=timeout)
        for cell_uuid, future in futures.items():
            if future not in done:
                log.warning("cell %s did not answer within %ss", cell_uuid, timeout)
                results[cell_uuid] = CellFailure(cell_uuid, "timeout")
                continue
            error = future.exception()
            if error is not None:
                log.warning("cell %s failed: %s", cell_uuid, error)
                results[cell_uuid] = CellFailure(cell_uuid, "error", error)
            else:
                results[cell_uuid] = future.result()
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    return results


def failed(result: object) -> bool:
    return isinstance(result, CellFailure)
