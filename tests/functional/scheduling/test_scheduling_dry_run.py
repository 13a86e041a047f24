"""The dry run (issue 22): would a request fit now, where, and if not the smallest changes."""
from __future__ import annotations

import pytest

from scheduling.explain import explain_request, servers_to_free
from scheduling.models import Allocation, Consumer, SchedulingTraceRecord
from scheduling.placement import services as placement
from scheduling.services import aggregates
from tests.conftest import ALL_DATABASES
from tests.functional.scheduling.test_scheduler import spec
from tests.functional.scheduling.test_scheduling_trace import flavor

pytestmark = pytest.mark.django_db(databases=ALL_DATABASES)


def use(node, consumer, memory_mb, vcpus=1):
    placement.allocations_put(consumer_uuid=consumer, project_id="p", user_id="u",
                              allocations={node.uuid: {"MEMORY_MB": memory_mb, "VCPU": vcpus}})


def test_fits_now_on_hosts_best_first_and_allocates_nothing(compute_host):
    compute_host("a", cell="cell1", memory_mb=8192)
    compute_host("b", cell="cell2", memory_mb=16384)
    before = (Allocation.objects.count(), Consumer.objects.count())
    answer = explain_request(spec=spec())
    assert answer["fits"] is True and answer["hosts"] == ["b", "a"]
    assert answer["suggestions"] == [] and answer["message"] is None
    # no allocation, no consumer, no trace record
    assert (Allocation.objects.count(), Consumer.objects.count()) == before
    assert SchedulingTraceRecord.objects.count() == 0


def test_ram_short_names_the_servers_to_free(compute_host):
    # given one host of 8192 MB running three servers (1024, 2048, 4096 MB) and a smaller host
    big = compute_host("big", cell="cell1", memory_mb=8192)
    compute_host("small", cell="cell2", memory_mb=2048)
    use(big, "s-1024", 1024)
    use(big, "s-2048", 2048)
    use(big, "s-4096", 4096)
    # when 4096 MB are asked for (big has 1024 free)
    answer = explain_request(spec=spec(flavor=flavor(memory_mb=4096)),
                             server_names=lambda uuids: {u: f"name-{u}" for u in uuids})
    # then it does not fit; big is the first suggestion: free 3072 MB, one server (the 4096 MB one)
    assert answer["fits"] is False and answer["hosts"] == []
    assert answer["user_message"] == "Not enough RAM: needs 4096 MB, the most free on any host is 2048 MB."
    first = answer["suggestions"][0]
    assert (first["host"], first["changes"], first["short"]) == ("big", ["free 3072 MB of RAM"], {"MEMORY_MB": 3072})
    assert first["free_servers"] == [{"id": "s-4096", "name": "name-s-4096",
                                      "resources": {"MEMORY_MB": 4096, "VCPU": 1}}]
    # and small, short of 2048 MB with nothing on it, is too small even empty
    second = answer["suggestions"][1]
    assert second["host"] == "small" and second["changes"][-1] == "even with every server freed the host is too small"
    # and the allocations are untouched
    assert placement.provider_allocations(rp=big.uuid).keys() == {"s-1024", "s-2048", "s-4096"}


def test_a_disabled_host_that_would_fit_is_named(compute_host):
    compute_host("off", cell="cell1", memory_mb=65536, disabled=True)
    compute_host("on", cell="cell2", memory_mb=4096)
    answer = explain_request(spec=spec(flavor=flavor(memory_mb=8192)))
    assert answer["fits"] is False and answer["disabled_hosts_that_fit"] == ["off"]
    first = answer["suggestions"][0]
    assert (first["host"], first["changes"], first["only_disabled"]) == ("off", ["enable its compute service"], True)
    assert answer["suggestions"][1]["changes"] == ["free 4096 MB of RAM",
                                                   "even with every server freed the host is too small"]


def test_zone_mismatch_and_missing_trait_are_suggested(compute_host):
    compute_host("a1", cell="cell1", memory_mb=16384)
    compute_host("n1", cell="cell2", memory_mb=16384)
    az = aggregates.aggregate_create(name="az1-agg", availability_zone="az1")
    aggregates.aggregate_add_host(aggregate=az, host="a1")
    placement.trait_create(name="CUSTOM_GPU")
    answer = explain_request(spec=spec(availability_zone="az1",
                                       flavor=flavor(extra_specs={"trait:CUSTOM_GPU": "required"})))
    assert answer["fits"] is False
    changes = {s["host"]: s["changes"] for s in answer["suggestions"]}
    assert changes == {"a1": ["add trait CUSTOM_GPU"],
                       "n1": ["add trait CUSTOM_GPU", "add it to availability zone az1"]}


def test_servers_to_free_takes_the_fewest():
    chosen, covered = servers_to_free({"x": {"MEMORY_MB": 512}, "y": {"MEMORY_MB": 3000}, "z": {"MEMORY_MB": 1024}},
                                      {"MEMORY_MB": 3500})
    assert [c for c, _ in chosen] == ["y", "x"] and covered
    chosen, covered = servers_to_free({"x": {"MEMORY_MB": 512}}, {"MEMORY_MB": 3500})
    assert [c for c, _ in chosen] == ["x"] and not covered


def test_a_full_cell_suggests_freeing_its_hosts(compute_host):
    # given cell1's only host full with one server, and room in cell2
    full = compute_host("c1", cell="cell1", memory_mb=4096)
    compute_host("c2", cell="cell2", memory_mb=65536)
    use(full, "s-big", 4096)
    # when the request must land in cell1
    answer = explain_request(spec=spec(flavor=flavor(memory_mb=2048), requested_destination={"cell": "cell1"}))
    # then it does not fit, and freeing the server on c1 would make it fit
    assert answer["fits"] is False
    first = answer["suggestions"][0]
    assert (first["host"], first["changes"]) == ("c1", ["free 2048 MB of RAM"])
    assert [s["id"] for s in first["free_servers"]] == ["s-big"]
    # and only the requested cell's hosts were looked at
    assert [s["host"] for s in answer["suggestions"]] == ["c1"]
