"""The fault's words of a trace (``SchedulingTrace.user_reason``): made once per kept shortfall."""
from __future__ import annotations

from typing import Any

import pytest

from scheduling import trace as trace_module
from scheduling.trace import SchedulingTrace

SHORTFALL = {"providers": 4, "resources": {"MEMORY_MB": {"requested": 40000, "short_on": 4, "most_free": 32256}},
             "nearest": []}
WORDS = "Not enough RAM: needs 40000 MB, the most free on any host is 32256 MB."


def _failed(kept: dict[str, Any] | None, zone: str | None = None) -> SchedulingTrace:
    shortfall = kept if kept is not None else {**SHORTFALL}
    return SchedulingTrace(request={"availability_zone": zone}, placement={"candidates": 0, "shortfall": shortfall},
                           shortfall_of=kept)


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    made = trace_module._placement_words

    def counting(*args: Any) -> str | None:
        calls.append(1)
        return made(*args)
    monkeypatch.setattr(trace_module, "_placement_words", counting)
    monkeypatch.setattr(trace_module, "_kept_words", [None])
    return calls


def test_the_same_kept_shortfall_is_put_in_words_once(counted: list[int]) -> None:
    kept = {**SHORTFALL}
    assert [_failed(kept).user_reason() for _ in range(3)] == [WORDS] * 3
    assert len(counted) == 1


def test_another_shortfall_or_zone_is_put_in_words_again(counted: list[int]) -> None:
    kept = {**SHORTFALL}
    assert _failed(kept).user_reason() == WORDS
    # a new kept answer (placement changed), equal or not, is read again
    assert _failed({**SHORTFALL}).user_reason() == WORDS and len(counted) == 2
    # a shortfall that is no kept answer is never remembered
    assert _failed(None).user_reason() == WORDS and _failed(None).user_reason() == WORDS and len(counted) == 4
    # another zone asked for: its words may name it
    zoned = {**SHORTFALL, "resources": {}, "outside_aggregates": 4}
    assert _failed(zoned, zone="az1").user_reason() == "No host with room is in availability zone az1."
    assert _failed(zoned, zone="az2").user_reason() == "No host with room is in availability zone az2."
    assert len(counted) == 6
