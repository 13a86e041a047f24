"""The dry run (issue 22): would a request fit now, where, and if not the smallest changes."""
from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from cells.models import InstanceMapping
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Invalid
from scheduling.explain import explain_request, servers_to_free
from scheduling.models import Allocation, Consumer, SchedulingTraceRecord
from scheduling.placement import services as placement
from scheduling.services import aggregates
from scheduling.services.explanations import request_dry_run
from servers.models import InstanceGroup, InstanceGroupMember
from servers.selectors import names_of
from tests.conftest import ALL_DATABASES
from tests.factories import FlavorFactory, InstanceFactory
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
    # and small, 2048 MB in all, is said too small: no amount to free, no server to free
    second = answer["suggestions"][1]
    assert (second["host"], second["changes"]) == ("small", ["too small: 2048 MB of RAM in all, 4096 MB needed"])
    assert second["short"] == {"MEMORY_MB": 2048} and second["free_servers"] == []
    # and the allocations are untouched
    assert placement.provider_allocations(rp=big.uuid).keys() == {"s-1024", "s-2048", "s-4096"}


def test_a_disabled_host_that_would_fit_is_named(compute_host):
    compute_host("off", cell="cell1", memory_mb=65536, disabled=True)
    compute_host("on", cell="cell2", memory_mb=4096)
    answer = explain_request(spec=spec(flavor=flavor(memory_mb=8192)))
    assert answer["fits"] is False and answer["disabled_hosts_that_fit"] == ["off"]
    first = answer["suggestions"][0]
    assert (first["host"], first["changes"], first["only_disabled"]) == ("off", ["enable its compute service"], True)
    assert answer["suggestions"][1]["changes"] == ["too small: 4096 MB of RAM in all, 8192 MB needed"]


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


# --- server groups: the dry run honours the group hint as a boot does -------------------------------
@pytest.fixture
def group_member(cells):
    """``group_member(group, "name", host="a", cell="cell1")``: a server of the group on the host."""

    def make(group, name, *, host, cell):
        server = InstanceFactory(cell=cells[cell], host=host, display_name=name, project_id="p1")
        InstanceMapping.objects.create(instance_uuid=server.uuid, cell=cells[cell], project_id="p1")
        InstanceGroupMember.objects.create(group=group, instance_uuid=server.uuid)
        return server.uuid

    return make


def server_group(policy, **rules):
    return InstanceGroup.objects.create(name=f"g-{policy}", project_id="p1", user_id="u1", policy=policy, rules=rules)


def group_spec(group, **overrides):
    return spec(instance_group={"uuid": group.uuid, "policy": group.policy, "rules": dict(group.rules)},
                scheduler_hints={"group": group.uuid}, **overrides)


def test_anti_affinity_names_the_member_that_blocks_each_host(compute_host, group_member):
    # given two hosts with room, each running a member of an anti-affinity group
    compute_host("a", cell="cell1", memory_mb=16384)
    compute_host("b", cell="cell2", memory_mb=8192)
    group = server_group("anti-affinity")
    on_a = group_member(group, "web-1", host="a", cell="cell1")
    on_b = group_member(group, "web-2", host="b", cell="cell2")
    # when another member is dry-run
    answer = explain_request(spec=group_spec(group), server_names=names_of)
    # then it does not fit, in words a user reads, and each host's suggestion names its member
    assert answer["fits"] is False
    assert answer["user_message"] == "The server group's anti-affinity policy cannot be met by the hosts with room."
    by_host = {s["host"]: s for s in answer["suggestions"]}
    assert by_host["a"]["changes"] == [f"move server web-1 ({on_a}) off it (server group {group.uuid} is "
                                       "anti-affinity, at most 1 per host)"]
    assert by_host["a"]["group_members"] == [{"id": on_a, "name": "web-1", "host": "a"}]
    assert by_host["b"]["group_members"] == [{"id": on_b, "name": "web-2", "host": "b"}]
    # and the trace has the group's filter with a reason per host
    step = next(f for f in answer["trace"]["filters"] if f["name"] == "ServerGroupAntiAffinityFilter")
    assert (step["in"], step["out"]) == (2, 2)
    assert {r["host"]: r["reason"] for r in step["rejected"]}["a"] == (
        f"server group {group.uuid} is anti-affinity (at most 1 per host): {on_a} here")


def test_anti_affinity_fits_on_the_hosts_without_members(compute_host, group_member):
    compute_host("a", cell="cell1", memory_mb=16384)
    compute_host("b", cell="cell2", memory_mb=8192)
    compute_host("c", cell="cell2", memory_mb=4096)
    group = server_group("anti-affinity", max_server_per_host=2)
    group_member(group, "web-1", host="a", cell="cell1")
    group_member(group, "web-2", host="a", cell="cell1")
    group_member(group, "web-3", host="b", cell="cell2")
    answer = explain_request(spec=group_spec(group))
    # a holds two (the rule's most), b one: b and c fit, best first; a is not offered
    assert answer["fits"] is True and answer["hosts"] == ["b", "c"]


def test_affinity_names_where_the_members_are(compute_host, group_member):
    # given the group's only member on a host that is now full, and another host with room
    full = compute_host("a", cell="cell1", memory_mb=4096)
    compute_host("b", cell="cell2", memory_mb=16384)
    group = server_group("affinity")
    member = group_member(group, "db-1", host="a", cell="cell1")
    use(full, member, 4096)
    # when another member is dry-run
    answer = explain_request(spec=group_spec(group), server_names=names_of)
    # then it does not fit: b, the host with room, is not where the members are; a lacks RAM
    assert answer["fits"] is False
    assert answer["user_message"] == "The server group's affinity policy cannot be met by the hosts with room."
    by_host = {s["host"]: s for s in answer["suggestions"]}
    assert by_host["b"]["changes"] == [f"server group {group.uuid} is affinity: its members are elsewhere "
                                       f"(server db-1 ({member}) on a)"]
    assert by_host["b"]["group_members"] == [{"id": member, "name": "db-1", "host": "a"}]
    assert by_host["a"]["changes"] == ["free 2048 MB of RAM"] and by_host["a"]["group_members"] == []


def test_soft_policies_order_the_hosts_as_their_weighers(compute_host, group_member):
    # given a bigger host running one member of the group and a smaller empty host
    compute_host("big", cell="cell1", memory_mb=32768)
    compute_host("small", cell="cell2", memory_mb=8192)
    spread, together = server_group("soft-anti-affinity"), server_group("soft-affinity")
    group_member(spread, "s-1", host="big", cell="cell1")
    group_member(together, "t-1", host="small", cell="cell2")
    # then soft-anti-affinity puts the empty host first, soft-affinity the member's, both fit
    spread_answer = explain_request(spec=group_spec(spread))
    assert spread_answer["hosts"] == ["small", "big"]
    assert explain_request(spec=group_spec(together))["hosts"] == ["small", "big"]
    # and without a group the bigger host comes first
    assert explain_request(spec=spec())["hosts"] == ["big", "small"]
    # and the trace shows the weigher's share
    weights = {w["host"]: w["scores"] for w in spread_answer["trace"]["weights"]}
    assert weights["big"]["ServerGroupSoftAntiAffinityWeigher"] == -1.0
    assert weights["small"]["ServerGroupSoftAntiAffinityWeigher"] == 0.0


def test_the_group_hint_of_the_service_and_the_command(compute_host, group_member):
    compute_host("a", cell="cell1", memory_mb=16384)
    compute_host("b", cell="cell2", memory_mb=16384)
    FlavorFactory(name="m1.dry", flavorid="dry", vcpus=1, memory_mb=1024, root_gb=1)
    group = server_group("anti-affinity")
    member = group_member(group, "web-1", host="a", cell="cell1")
    admin = RequestContext(user_id="u1", project_id="p1", roles=["admin"], is_admin=True)
    # the service looks the hint's group up as a boot does
    answer = request_dry_run(actor=admin, flavor_ref="m1.dry", hints={"group": group.uuid})
    assert answer["fits"] is True and answer["hosts"] == ["b"]
    with pytest.raises(Invalid):
        request_dry_run(actor=admin, flavor_ref="m1.dry", hints={"group": "00000000-0000-0000-0000-000000000000"})
    # the command too, naming the blocking member when nothing fits
    group_member(group, "web-2", host="b", cell="cell2")
    out = io.StringIO()
    call_command("scheduler", "explain", "--flavor", "m1.dry", "--hint", f"group={group.uuid}", stdout=out)
    text = out.getvalue()
    assert text.startswith("does not fit now:") and f"group member {member} (web-1) on a" in text
    assert "ServerGroupAntiAffinityFilter: 2 -> 0" in text
    with pytest.raises(CommandError, match="could not be found"):
        call_command("scheduler", "explain", "--flavor", "m1.dry", "--hint",
                     "group=00000000-0000-0000-0000-000000000000", stdout=io.StringIO())
