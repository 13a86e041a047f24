"""Multi-step operations: each ``Step`` can ``execute()`` and ``rollback()``.

``run_steps`` executes steps in order; when one raises, that step is rolled back first (it undoes
what it did before it failed), then the steps already completed in reverse order, and the
original exception is re-raised. A rollback that itself fails is logged and the remaining
rollbacks still run (a failed cleanup must not hide the cause).
"""
from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

log = logging.getLogger(__name__)


class Step:
    """One unit of a multi-step operation; it should write to one database."""

    name: str = ""

    def execute(self) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    def rollback(self) -> None:
        """Undo ``execute``; the default is nothing to undo.

        Also called when ``execute`` itself raised: a step records what it has done as it goes
        and undoes that, and only that (a half-done step cleans up after itself)."""

    def __str__(self) -> str:
        return self.name or type(self).__name__


def run_steps(steps: Iterable[Step]) -> list[Step]:
    done: list[Step] = []
    for step in steps:
        try:
            step.execute()
        except BaseException:
            log.exception("step %s failed; rolling back its partial work and %d completed step(s)", step,
                          len(done))
            rollback_steps([*done, step])
            raise
        done.append(step)
    return done


def rollback_steps(done: Sequence[Step]) -> None:
    for step in reversed(done):
        try:
            step.rollback()
        except Exception:
            log.exception("rollback of step %s failed", step)
