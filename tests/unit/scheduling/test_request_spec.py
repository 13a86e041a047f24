"""Request specs derived for moves, unshelve and rebuild checks (pure functions)."""
from __future__ import annotations

from scheduling.host_state import RequestView
from scheduling.request_spec import spec_for_move, spec_for_rebuild_check, spec_for_unshelve

BASE = {"flavor": {"vcpus": 1, "memory_mb": 512, "root_gb": 1}, "availability_zone": "az1",
        "force_hosts": ["x"], "ignore_hosts": [], "scheduler_hints": {"group": "g"}, "num_instances": 3}


def test_resize_ignores_the_source_and_marks_a_move():
    spec = spec_for_move(BASE, source_cell_uuid="c1", source_host="h1", flavor={"vcpus": 4, "memory_mb": 1024})
    view = RequestView(spec)
    assert view.source_cell == "c1" and not view.allow_cross_cell_move
    assert spec["ignore_hosts"] == ["h1"] and spec["force_hosts"] == [] and spec["num_instances"] == 1
    assert view.resources() == {"VCPU": 4, "MEMORY_MB": 1024}
    assert spec["requested_destination"] is None and BASE["force_hosts"] == ["x"]  # input untouched
    same = spec_for_move(BASE, source_cell_uuid="c1", source_host="h1", allow_same_host=True,
                         allow_cross_cell_move=True, host="h2")
    assert same["ignore_hosts"] == [] and RequestView(same).allow_cross_cell_move
    assert RequestView(same).destination_host == "h2"


def test_a_forced_host_is_forced_not_requested():
    # given an evacuation forced to h2 (2.29-2.67) in the server's cell
    spec = spec_for_move(BASE, source_cell_uuid="c1", source_host="h1", host="h2", cell_uuid="c1", force_host=True)
    # then the filters let h2 through as a forced host; the cell still narrows the request
    view = RequestView(spec)
    assert view.force_hosts == ["h2"] and view.destination_host is None and view.destination_cell == "c1"
    assert spec["ignore_hosts"] == ["h1"]


def test_unshelve_to_host_and_zone():
    spec = spec_for_unshelve({**BASE, "instance_cell_uuid": "c1"}, availability_zone=None, host="h3")
    view = RequestView(spec)
    assert view.availability_zone is None and view.destination_host == "h3" and view.source_cell is None
    assert spec_for_unshelve(BASE)["availability_zone"] == "az1"


def test_rebuild_check():
    spec = spec_for_rebuild_check(BASE, host="h1", node="n1", image={"id": "new"})
    view = RequestView(spec)
    assert view.is_rebuild and view.destination_host == "h1" and view.destination_node == "n1"
    assert spec["scheduler_hints"]["group"] == "g" and spec["image"] == {"id": "new"}
