"""select_destinations against real cell databases and placement."""
from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from cells.context import target_cell
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import NoValidHost
from cloudcore.core.models import NotificationRecord
from hosts.models import Service
from scheduling.placement import services as placement
from scheduling.scheduler import select_destinations
from scheduling.services import aggregates
from tests.conftest import ALL_DATABASES

pytestmark = pytest.mark.django_db(databases=ALL_DATABASES)

CTX = RequestContext.system() if hasattr(RequestContext, "system") else None


def spec(**overrides):
    base = {
        "project_id": "p1", "user_id": "u1",
        "flavor": {"vcpus": 2, "memory_mb": 2048, "root_gb": 10, "ephemeral_gb": 0, "swap": 0, "extra_specs": {}},
        "image": {"id": "img", "properties": {}}, "availability_zone": None, "num_instances": 1,
        "force_hosts": [], "force_nodes": [], "ignore_hosts": [], "requested_destination": None,
        "scheduler_hints": {},
    }
    base.update(overrides)
    return base


def test_selects_claims_and_returns_same_cell_alternates(compute_host, cells):
    # given two big hosts in cell1 and two bigger hosts in cell2
    compute_host("c1a", cell="cell1", memory_mb=8192)
    compute_host("c1b", cell="cell1", memory_mb=4096)
    compute_host("c2a", cell="cell2", memory_mb=32768)
    compute_host("c2b", cell="cell2", memory_mb=16384)
    compute_host("c2c", cell="cell2", memory_mb=16384)
    # when one instance is scheduled with alternates
    [selections] = select_destinations(CTX, spec(), ["inst-1"], return_alternates=True)
    # then the host with most free RAM wins, and its allocations are claimed
    first = selections[0].to_dict()
    assert first["service_host"] == "c2a" and first["cell_uuid"] == cells["cell2"].uuid
    claimed = placement.allocations_get(consumer_uuid="inst-1").allocations
    assert claimed == {first["compute_node_uuid"]: {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 10}}
    assert json.loads(first["allocation_request"])["allocations"][first["compute_node_uuid"]]["resources"][
        "MEMORY_MB"] == 2048
    # and alternates (MAX_ATTEMPTS=3 -> 2) come only from cell2
    assert [s.service_host for s in selections[1:]] == ["c2b", "c2c"]
    assert {s.cell_uuid for s in selections} == {cells["cell2"].uuid}
    # and the notifications were emitted
    events = list(NotificationRecord.objects.values_list("event_type", flat=True))
    assert "scheduler.select_destinations.start" in events and "scheduler.select_destinations.end" in events


def test_one_instance_is_weighed_once_and_its_alternates_follow_that_weighing(compute_host, monkeypatch):
    from scheduling import scheduler

    for name, memory in (("w1", 32768), ("w2", 24576), ("w3", 16384), ("w4", 8192)):
        compute_host(name, cell="cell1", memory_mb=memory)
    calls = []

    def counted(hosts, request, **kwargs):
        calls.append(len(list(hosts)))
        return weigh(hosts, request, **kwargs)

    weigh = scheduler.weigh_hosts
    monkeypatch.setattr(scheduler, "weigh_hosts", counted)
    # one instance: one weighing picks the host and orders its alternates
    [selections] = select_destinations(CTX, spec(), ["one"], return_alternates=True)
    assert calls == [4]
    assert [s.service_host for s in selections] == ["w1", "w2", "w3"]
    # two instances: each is weighed after the one before took its share, then one weighing
    # orders the alternates of both (the hosts' use as the request left it)
    calls.clear()
    result = select_destinations(CTX, spec(num_instances=2), ["two-a", "two-b"], return_alternates=True)
    assert calls == [4, 4, 4]
    chosen = {r[0].service_host for r in result}
    assert all(len(r) == 3 and not chosen & {s.service_host for s in r[1:]} for r in result)


def test_multiple_instances_spread_and_claims(compute_host):
    compute_host("a", cell="cell1", vcpus=2, memory_mb=4096)
    compute_host("b", cell="cell2", vcpus=2, memory_mb=4096)
    # when two 2-VCPU instances are scheduled, then one per host (each host fits one)
    result = select_destinations(CTX, spec(num_instances=2), ["i1", "i2"], return_alternates=False)
    assert sorted(r[0].service_host for r in result) == ["a", "b"]
    assert all(len(r) == 1 for r in result)
    # when a third comes, then NoValidHost and nothing of it is claimed
    with pytest.raises(NoValidHost, match="There are not enough hosts available"):
        select_destinations(CTX, spec(), ["i3"], return_alternates=True)
    assert placement.allocations_get(consumer_uuid="i3").allocations == {}


def test_no_valid_host_releases_earlier_claims(compute_host):
    compute_host("a", cell="cell1", vcpus=2)
    with pytest.raises(NoValidHost):
        select_destinations(CTX, spec(num_instances=2), ["i1", "i2"], return_alternates=False)
    assert placement.allocations_get(consumer_uuid="i1").allocations == {}


def test_compute_filter_skips_down_and_disabled_services(compute_host, cells):
    compute_host("down", cell="cell1", memory_mb=65536)
    compute_host("disabled", cell="cell1", memory_mb=65536, disabled=True)
    compute_host("forced", cell="cell1", memory_mb=65536, forced_down=True)
    compute_host("ok", cell="cell2", memory_mb=4096)
    with target_cell(cells["cell1"]):
        Service.objects.filter(host="down").update(last_seen_up=timezone.now() - timedelta(hours=1))
    [sel] = select_destinations(CTX, spec(), ["i1"], return_alternates=True)
    assert [s.service_host for s in sel] == ["ok"]


def test_availability_zone_requested_destination_ignore_and_force(compute_host, cells):
    compute_host("a1", cell="cell1", memory_mb=4096)
    compute_host("a2", cell="cell1", memory_mb=8192)
    compute_host("b1", cell="cell2", memory_mb=65536)
    az = aggregates.aggregate_create(name="az1-agg", availability_zone="az1")
    aggregates.aggregate_add_host(aggregate=az, host="a1")
    aggregates.aggregate_add_host(aggregate=az, host="a2")
    # AZ through placement member_of
    assert select_destinations(CTX, spec(availability_zone="az1"), [], False)[0][0].service_host == "a2"
    # the default zone excludes the az1 hosts through the AvailabilityZoneFilter
    assert select_destinations(CTX, spec(availability_zone="nova"), [], False)[0][0].service_host == "b1"
    # an unknown zone: nothing
    with pytest.raises(NoValidHost):
        select_destinations(CTX, spec(availability_zone="nowhere"), [], False)
    # requested destination host / cell
    dest = {"host": "a1", "node": None, "cell": None}
    assert select_destinations(CTX, spec(requested_destination=dest), [], False)[0][0].service_host == "a1"
    dest = {"cell": cells["cell1"].uuid}
    assert select_destinations(CTX, spec(requested_destination=dest), [], False)[0][0].service_host == "a2"
    dest = {"cell": "cell1"}
    assert select_destinations(CTX, spec(requested_destination=dest), [], False)[0][0].service_host == "a2"
    # ignore hosts
    assert select_destinations(CTX, spec(ignore_hosts=["b1"]), [], False)[0][0].service_host == "a2"
    # forced host skips the filters (even the AZ filter) but not placement
    chosen = select_destinations(CTX, spec(force_hosts=["a1"], availability_zone="nova"), [], False)
    assert chosen[0][0].service_host == "a1"
    with pytest.raises(NoValidHost):
        select_destinations(CTX, spec(force_hosts=["unknown"]), [], False)


def test_traits_image_properties_and_aggregate_extra_specs(compute_host):
    ssd = compute_host("ssd", cell="cell1", memory_mb=4096)
    compute_host("arm", cell="cell2", memory_mb=8192, cpu_info='{"arch": "aarch64"}')
    placement.traits_set(rp=ssd.uuid, traits=["STORAGE_DISK_SSD"])
    flavor = {"vcpus": 1, "memory_mb": 512, "root_gb": 1, "extra_specs": {"trait:STORAGE_DISK_SSD": "required"}}
    assert select_destinations(CTX, spec(flavor=flavor), [], False)[0][0].service_host == "ssd"
    flavor["extra_specs"] = {"trait:STORAGE_DISK_SSD": "forbidden"}
    assert select_destinations(CTX, spec(flavor=flavor), [], False)[0][0].service_host == "arm"
    image = {"id": "i", "properties": {"hw_architecture": "x86_64"}}
    assert select_destinations(CTX, spec(image=image), [], False)[0][0].service_host == "ssd"
    # a flavor asking for aggregate metadata only fits hosts whose aggregates carry it
    agg = aggregates.aggregate_create(name="fast")
    aggregates.aggregate_add_host(aggregate=agg, host="ssd")
    aggregates.aggregate_set_metadata(aggregate=agg, metadata={"speed": "fast"})
    flavor["extra_specs"] = {"aggregate_instance_extra_specs:speed": "fast"}
    assert select_destinations(CTX, spec(flavor=flavor), [], False)[0][0].service_host == "ssd"


def test_volume_backed_root_disk_not_requested(compute_host):
    node = compute_host("small-disk", cell="cell1", disk_gb=5)
    with pytest.raises(NoValidHost):
        select_destinations(CTX, spec(), ["i1"], False)
    select_destinations(CTX, spec(is_bfv=True), ["i1"], False)
    assert "DISK_GB" not in placement.allocations_get(consumer_uuid="i1").allocations[node.uuid]


def test_claim_race_falls_back_to_next_host(compute_host, monkeypatch):
    # given two hosts where the best one is taken by a concurrent claim between candidates and claim
    best = compute_host("best", cell="cell1", memory_mb=65536, vcpus=2)
    compute_host("second", cell="cell1", memory_mb=4096)
    real = placement.allocation_candidates

    def racing(**kwargs):
        found = real(**kwargs)
        placement.allocations_put(consumer_uuid="other", allocations={best.uuid: {"VCPU": 2}},
                                  project_id="p", user_id="u")
        return found

    monkeypatch.setattr(placement, "allocation_candidates", racing)
    [sel] = select_destinations(CTX, spec(), ["i1"], return_alternates=True)
    assert sel[0].service_host == "second"


def test_multi_instance_claims_lost_together_start_over_one_by_one(compute_host, monkeypatch):
    # given three hosts; the best one is taken by a concurrent claim after the candidates were
    # read, so the claims of a two-instance request, made together, cannot all succeed
    best = compute_host("best", cell="cell1", memory_mb=65536, vcpus=2)
    compute_host("second", cell="cell1", memory_mb=16384)
    compute_host("third", cell="cell1", memory_mb=8192)
    real = placement.allocation_candidates
    raced = []

    def racing(**kwargs):
        found = real(**kwargs)
        if not raced:
            raced.append(True)
            placement.allocations_put(consumer_uuid="other", allocations={best.uuid: {"VCPU": 2}},
                                      project_id="p", user_id="u")
        return found

    monkeypatch.setattr(placement, "allocation_candidates", racing)
    # when both are scheduled, then they land on the two hosts that still have room, each claimed
    result = select_destinations(CTX, spec(num_instances=2), ["i1", "i2"], return_alternates=False)
    assert [sel[0].service_host for sel in result] == ["second", "third"]
    for uuid, [selection] in zip(["i1", "i2"], result, strict=True):
        assert list(placement.allocations_get(consumer_uuid=uuid).allocations) == [selection.compute_node_uuid]


def test_claims_of_several_consumers_are_all_or_nothing(compute_host):
    # given one host with room for exactly two instances of 1 VCPU and a consumer already on it
    node = compute_host("only", cell="cell1", vcpus=2)
    request = {"allocations": {node.uuid: {"resources": {"VCPU": 1}}}}
    # when three consumers are claimed together, then none is (the third does not fit)
    assert not placement.claim_allocation_requests(
        claims=[("a", request), ("b", request), ("c", request)], project_id="p", user_id="u")
    assert all(not placement.allocations_get(consumer_uuid=c).allocations for c in "abc")
    # when two are, then both are, each with its own allocation
    assert placement.claim_allocation_requests(claims=[("a", request), ("b", request)], project_id="p",
                                               user_id="u")
    assert all(placement.allocations_get(consumer_uuid=c).allocations == {node.uuid: {"VCPU": 1}} for c in "ab")
    # when a consumer that already holds allocations is claimed again with a new one, it is
    # replaced (as a single claim would), and nothing more fits next to it
    assert placement.claim_allocation_requests(claims=[("a", request)], project_id="p", user_id="u")
    assert not placement.claim_allocation_requests(claims=[("c", request)], project_id="p", user_id="u")
    # when a new consumer is named twice, then its second claim replaces its first
    assert placement.allocations_delete(consumer_uuid="b")
    assert placement.claim_allocation_requests(claims=[("d", request), ("d", request)], project_id="p",
                                               user_id="u")
    assert placement.allocations_get(consumer_uuid="d").allocations == {node.uuid: {"VCPU": 1}}


@pytest.mark.parametrize(("multiplier", "expected_cell"), [(1000000.0, "cell1"), (-1000000.0, "cell2")])
def test_cross_cell_weigher_stays_or_drains(compute_host, cells, settings, multiplier, expected_cell):
    # given a small host in the source cell1 and a big one in cell2
    compute_host("src", cell="cell1", memory_mb=4096)
    compute_host("dst", cell="cell2", memory_mb=65536)
    settings.CROSS_CELL_MOVE_WEIGHT_MULTIPLIER = multiplier
    move = spec(instance_cell_uuid=cells["cell1"].uuid, allow_cross_cell_move=True)
    [sel] = select_destinations(CTX, move, ["i1"], return_alternates=True)
    assert sel[0].cell_uuid == cells[expected_cell].uuid
    assert all(s.cell_uuid == sel[0].cell_uuid for s in sel)


def test_move_without_cross_cell_stays_in_source_cell(compute_host, cells, settings):
    # given a draining weigher, when the move may not cross cells, then it still stays in cell1
    settings.CROSS_CELL_MOVE_WEIGHT_MULTIPLIER = -1000000.0
    compute_host("src", cell="cell1", memory_mb=4096)
    compute_host("dst", cell="cell2", memory_mb=65536)
    move = spec(instance_cell_uuid=cells["cell1"].uuid, allow_cross_cell_move=False)
    [sel] = select_destinations(CTX, move, ["i1"], return_alternates=True)
    assert [s.service_host for s in sel] == ["src"]


def test_rebuild_check_runs_filters_without_claim(compute_host):
    compute_host("here", cell="cell1", vcpus=1)
    rebuild = spec(requested_destination={"host": "here"}, scheduler_hints={"_nova_check_type": ["rebuild"]})
    [sel] = select_destinations(CTX, rebuild, ["i1"], return_alternates=False)
    assert sel[0].service_host == "here" and sel[0].allocation_request is None
    assert placement.allocations_get(consumer_uuid="i1").allocations == {}


def test_node_without_service_link_and_disabled_cell(compute_host, cells):
    # given a node whose service_id is not filled yet (pre-seed-2 data) in cell1
    node = compute_host("legacy", cell="cell1", memory_mb=65536)
    with target_cell(cells["cell1"]):
        from hosts.models import ComputeNode

        ComputeNode.objects.filter(uuid=node.uuid).update(service=None)
    compute_host("other", cell="cell2", memory_mb=4096)
    # then its service is found by host and it is chosen
    assert select_destinations(CTX, spec(), [], False)[0][0].service_host == "legacy"
    # when cell1 is disabled, then its hosts are not scheduled to
    cells["cell1"].disabled = True
    cells["cell1"].save()
    assert select_destinations(CTX, spec(), [], False)[0][0].service_host == "other"


@pytest.mark.parametrize("extra_specs", [{"trait:CUSTOM_UNKNOWN": "required"}, {"resources:CUSTOM_FOO": "1"}])
def test_unknown_trait_or_resource_class_is_no_valid_host(compute_host, extra_specs):
    compute_host("a", cell="cell1")
    flavor = {"vcpus": 1, "memory_mb": 512, "root_gb": 1, "extra_specs": extra_specs}
    with pytest.raises(NoValidHost):
        select_destinations(CTX, spec(flavor=flavor), ["i1"], return_alternates=True)
    assert placement.allocations_get(consumer_uuid="i1").allocations == {}


def test_resize_flow_allocations_at_every_step(compute_host, cells):
    from scheduling.request_spec import spec_for_move

    # given a server built on "src" in cell1
    src = compute_host("src", cell="cell1", memory_mb=65536)
    dst = compute_host("dst", cell="cell1", memory_mb=8192)
    compute_host("far", cell="cell2", memory_mb=65536)
    base = spec()
    [[built]] = select_destinations(CTX, {**base, "force_hosts": ["src"]}, ["inst"], False)
    assert built.service_host == "src"
    # when it is resized: the source allocations move to the migration consumer first
    assert placement.allocations_move(from_consumer_uuid="inst", to_consumer_uuid="mig")
    new_flavor = {"vcpus": 4, "memory_mb": 4096, "root_gb": 10, "extra_specs": {}}
    move = spec_for_move(base, source_cell_uuid=cells["cell1"].uuid, source_host="src", flavor=new_flavor)
    [[chosen, *alternates]] = select_destinations(CTX, move, ["inst"], return_alternates=True)
    # then the destination is in the same cell and not the source, and both claims exist
    assert chosen.service_host == "dst" and alternates == []
    assert placement.allocations_get(consumer_uuid="inst").allocations == {
        dst.uuid: {"VCPU": 4, "MEMORY_MB": 4096, "DISK_GB": 10}}
    assert placement.allocations_get(consumer_uuid="mig").allocations == {
        src.uuid: {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 10}}
    # when reverted: the destination claim is dropped and the migration's go back to the instance
    placement.allocations_delete(consumer_uuid="inst")
    assert placement.allocations_move(from_consumer_uuid="mig", to_consumer_uuid="inst", consumer_type="INSTANCE")
    assert placement.allocations_get(consumer_uuid="inst").allocations == {
        src.uuid: {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 10}}
    assert placement.provider_usages(rp=dst.uuid)["VCPU"] == 0


def test_limit_and_randomized_candidates(compute_host, settings):
    # given more candidates than MAX_PLACEMENT_RESULTS, then only that many are weighed
    for i in range(6):
        compute_host(f"h{i}", cell="cell1", memory_mb=4096 + 1024 * i)
    settings.MAX_PLACEMENT_RESULTS = 2
    assert select_destinations(CTX, spec(), [], False)[0][0].service_host in {"h0", "h1"}
    # with randomized candidates, other hosts get their turn
    settings.RANDOMIZE_ALLOCATION_CANDIDATES = True
    seen = {select_destinations(CTX, spec(), [], False)[0][0].service_host for _ in range(25)}
    assert seen - {"h0", "h1"}
