"""run_steps: a failing step undoes its own partial work, then the completed steps are undone."""
from __future__ import annotations

import pytest

from cloudcore.core.orchestration import Step, run_steps


class Recorded(Step):
    def __init__(self, name: str, log: list[str], *, fails: bool = False, rollback_fails: bool = False) -> None:
        self.name, self.log, self.fails, self.rollback_fails = name, log, fails, rollback_fails

    def execute(self) -> None:
        self.log.append(f"do {self.name}")
        if self.fails:
            raise RuntimeError(self.name)

    def rollback(self) -> None:
        self.log.append(f"undo {self.name}")
        if self.rollback_fails:
            raise RuntimeError(f"undo {self.name}")


def test_a_failing_step_is_rolled_back_first_then_the_completed_ones_in_reverse() -> None:
    log: list[str] = []
    # given three steps, the third of which fails
    steps = [Recorded("a", log), Recorded("b", log), Recorded("c", log, fails=True), Recorded("d", log)]
    # when they run
    with pytest.raises(RuntimeError, match="c"):
        run_steps(steps)
    # then the failing step cleans up after itself before b and a are undone; d never ran
    assert log == ["do a", "do b", "do c", "undo c", "undo b", "undo a"]


def test_a_failing_rollback_does_not_stop_the_others_nor_hide_the_cause() -> None:
    log: list[str] = []
    steps = [Recorded("a", log), Recorded("b", log, rollback_fails=True), Recorded("c", log, fails=True)]
    with pytest.raises(RuntimeError, match="^c$"):
        run_steps(steps)
    assert log == ["do a", "do b", "do c", "undo c", "undo b", "undo a"]


def test_steps_that_all_succeed_are_returned_and_nothing_is_undone() -> None:
    log: list[str] = []
    steps = [Recorded("a", log), Recorded("b", log)]
    assert run_steps(steps) == steps
    assert log == ["do a", "do b"]
