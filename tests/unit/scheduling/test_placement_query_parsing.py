"""Placement query-string parsing per microversion (no database)."""
from __future__ import annotations

import pytest

from scheduling.api.placement_views import parse_member_of, parse_required, parse_resources
from scheduling.placement.exceptions import PlacementInvalid


def test_parse_resources():
    assert parse_resources("VCPU:2,MEMORY_MB:1024") == {"VCPU": 2, "MEMORY_MB": 1024}
    for bad in ("VCPU", "VCPU:x", "", "VCPU:-1", ":3"):
        with pytest.raises(PlacementInvalid):
            parse_resources(bad)


def test_parse_member_of_versions():
    assert parse_member_of(["in:a,b"], False, False) == ([["a", "b"]], [])
    assert parse_member_of(["a", "in:b,c"], True, False) == ([["a"], ["b", "c"]], [])
    with pytest.raises(PlacementInvalid):
        parse_member_of(["a", "b"], False, False)  # several before 1.24
    assert parse_member_of(["!in:a,b", "c"], True, True) == ([["c"]], ["a", "b"])
    with pytest.raises(PlacementInvalid):
        parse_member_of(["!a"], True, False)  # forbidden before 1.32


def test_parse_required_versions():
    assert parse_required(["A,!B"], True) == (["A"], ["B"], [])
    with pytest.raises(PlacementInvalid):
        parse_required(["!B"], False)  # forbidden before 1.22
    assert parse_required(["in:A,B", "C"], True, True) == (["C"], [], [["A", "B"]])
    with pytest.raises(PlacementInvalid):
        parse_required(["in:A,B"], True, False)  # any-of before 1.39
    with pytest.raises(PlacementInvalid):
        parse_required([","], True)
