"""The console's read models and table helpers, without a database: capacity segments, the
distribution bars, server-side sorting and the sortable column heading."""
from __future__ import annotations

from django.template import Context, Template
from django.test import RequestFactory

from console import tables
from console.selectors import Capacity, distribution


def test_capacity_splits_the_bar_into_used_reserved_and_free() -> None:
    # given 8 vCPU of capacity with 2 used and 4 reserved on the inventory
    cap = Capacity("VCPU", used=2, total=8, reserved=4)
    # then the bar is 2 used + 4 reserved + 6 free (of 12), and 25 % of the capacity is used
    assert (cap.free, cap.percent) == (6, 25)
    assert (cap.used_width, cap.reserved_width, cap.free_width) == (16.67, 33.33, 50.0)
    assert (cap.label, cap.unit) == ("vCPU", "")


def test_overcommitted_capacity_has_no_negative_free_segment() -> None:
    cap = Capacity("MEMORY_MB", used=9000, total=8192)
    assert cap.free == 0 and cap.percent == 100 and cap.used_width == 100.0
    assert Capacity("DISK_GB", used=0, total=0).used_width == 0.0


def test_distribution_scales_to_the_largest_count() -> None:
    rows = distribution({"ACTIVE": 4, "ERROR": 1, "BUILD": 0})
    assert [(r.label, r.n, r.percent) for r in rows] == [("ACTIVE", 4, 100.0), ("ERROR", 1, 25.0), ("BUILD", 0, 0.0)]
    assert distribution({}) == []


def test_sort_rows_orders_by_the_requested_column_and_direction() -> None:
    rows = [{"h": "b"}, {"h": "a"}, {"h": None}]
    keys = {"host": lambda r: r["h"]}
    asc = tables.sort_rows(RequestFactory().get("/?sort=host"), rows, keys)
    desc = tables.sort_rows(RequestFactory().get("/?sort=host&dir=desc"), rows, keys)
    assert [r["h"] for r in asc] == ["a", "b", None]  # missing values last
    assert [r["h"] for r in desc] == [None, "b", "a"]
    assert tables.sort_rows(RequestFactory().get("/?sort=nope"), rows, keys) == rows


def test_sort_heading_flips_direction_keeps_filters_and_restarts_paging() -> None:
    request = RequestFactory().get("/servers/?sort=name&dir=asc&status=ACTIVE&marker=abc")
    html = Template('{% load console_tags %}{% sort_th "name" "Name" %}').render(Context({"request": request}))
    assert 'aria-sort="ascending"' in html and "▲" in html
    assert "dir=desc" in html and "status=ACTIVE" in html and "marker" not in html
