"""The scheduler's in-memory copies (``placement.cache.provider_cache``, ``host_cache.node_cache``)
never answer with stale data: what changed in the databases is seen by the very next request."""
from __future__ import annotations

import random

import pytest

from cells.context import target_cell
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import NoValidHost
from hosts.models import ComputeNode, Service
from hosts.services import services_admin
from scheduling.host_cache import node_cache
from scheduling.models import ResourceProvider
from scheduling.placement import cache
from scheduling.placement import services as placement
from scheduling.placement.cache import provider_cache
from scheduling.scheduler import select_destinations
from scheduling.services import aggregates
from tests.conftest import ALL_DATABASES
from tests.functional.scheduling.test_scheduler import spec

pytestmark = pytest.mark.django_db(databases=ALL_DATABASES)

CTX = RequestContext.system()


def chosen(**overrides) -> str:
    return select_destinations(CTX, spec(**overrides), [], False)[0][0].service_host


def test_disabled_host_is_seen_by_the_next_request(compute_host, cells):
    # given two hosts, "big" preferred (more free RAM), with both copies loaded by a first request
    compute_host("big", cell="cell1", memory_mb=65536)
    compute_host("small", cell="cell2", memory_mb=8192)
    assert chosen() == "big"
    # when the operator disables "big" (os-services), then the next request goes to "small"
    services_admin.service_update(actor=RequestContext.system(), host="big", binary="nova-compute",
                                  status="disabled", disabled_reason="maintenance")
    assert chosen() == "small"
    # when it is enabled again, then it is chosen again
    services_admin.service_update(actor=RequestContext.system(), host="big", binary="nova-compute",
                                  status="enabled")
    assert chosen() == "big"
    # when its service is disabled behind the API's back (a bare UPDATE, no trait, no timestamp),
    # then the next request still skips it
    with target_cell(cells["cell1"]):
        Service.objects.filter(host="big").update(disabled=True)
    assert chosen() == "small"


def test_changed_inventory_is_seen_by_the_next_request(compute_host):
    # given two hosts, "big" preferred, copies loaded
    big = compute_host("big", cell="cell1", memory_mb=65536)
    compute_host("small", cell="cell2", memory_mb=8192)
    assert chosen() == "big"
    # when the resource tracker reports that "big" has shrunk below "small", then "small" is chosen
    placement.inventories_set(rp=big.uuid, inventories={
        "VCPU": {"total": 8}, "MEMORY_MB": {"total": 4096}, "DISK_GB": {"total": 100}})
    assert chosen() == "small"
    # when "big" no longer has room for the flavor at all, then it is not even a candidate
    placement.inventories_set(rp=big.uuid, inventories={
        "VCPU": {"total": 1}, "MEMORY_MB": {"total": 65536}, "DISK_GB": {"total": 100}})
    [sel] = select_destinations(CTX, spec(), [], return_alternates=True)
    assert [s.service_host for s in sel] == ["small"]


def test_usage_of_other_consumers_is_seen_by_the_next_request(compute_host):
    # given one host with room for exactly one instance, copies loaded
    node = compute_host("only", cell="cell1", vcpus=2)
    assert chosen() == "only"
    # when another consumer takes its CPUs, then nothing fits; when it gives them back, it fits
    placement.allocations_put(consumer_uuid="other", allocations={node.uuid: {"VCPU": 2}},
                              project_id="p", user_id="u")
    with pytest.raises(NoValidHost):
        chosen()
    placement.allocations_delete(consumer_uuid="other")
    assert chosen() == "only"


def test_new_deleted_and_relinked_hosts_are_seen_by_the_next_request(compute_host, cells):
    # given one host, copies loaded
    compute_host("first", cell="cell1", memory_mb=8192)
    assert chosen() == "first"
    # when a bigger host starts, then it is chosen
    compute_host("second", cell="cell2", memory_mb=65536)
    assert chosen() == "second"
    # when its service is deleted (node soft-deleted, provider gone), then it is not
    services_admin.service_delete(
        actor=RequestContext.system(),
        service_id=services_admin.service_find(host="second", binary="nova-compute").service.uuid)
    assert chosen() == "first"
    # when the first node loses its service link with a bare UPDATE, it is still found by host
    with target_cell(cells["cell1"]):
        ComputeNode.objects.filter(host="first").update(service=None)
    assert chosen() == "first"
    assert node_cache.reloads and provider_cache.reloads["full"]


def test_new_aggregate_membership_is_seen_by_the_next_request(compute_host):
    # given "big" (preferred) and "small", a zone holding only "small", and an aggregate whose
    # metadata a flavor asks for holding only "small"; copies loaded by requests for both
    compute_host("big", cell="cell1", memory_mb=65536)
    compute_host("small", cell="cell2", memory_mb=8192)
    zone = aggregates.aggregate_create(name="zone-9", availability_zone="az9")
    aggregates.aggregate_add_host(aggregate=zone, host="small")
    fast = aggregates.aggregate_create(name="fast")
    aggregates.aggregate_add_host(aggregate=fast, host="small")
    aggregates.aggregate_set_metadata(aggregate=fast, metadata={"speed": "fast"})
    flavor = {"vcpus": 1, "memory_mb": 512, "root_gb": 1,
              "extra_specs": {"aggregate_instance_extra_specs:speed": "fast"}}
    assert chosen() == "big"
    assert chosen(availability_zone="az9") == "small"
    assert chosen(flavor=flavor) == "small"
    # when "big" joins both aggregates, then the very next requests may (and do) pick it
    aggregates.aggregate_add_host(aggregate=zone, host="big")
    assert chosen(availability_zone="az9") == "big"
    aggregates.aggregate_add_host(aggregate=fast, host="big")
    assert chosen(flavor=flavor) == "big"
    # when "big" leaves the zone and the metadata changes to what only "small" has, then it is
    # out again at once
    aggregates.aggregate_remove_host(aggregate=zone, host="big")
    assert chosen(availability_zone="az9") == "small"
    aggregates.aggregate_set_metadata(aggregate=fast, metadata={"speed": "slow"})
    with pytest.raises(NoValidHost):
        chosen(flavor=flavor)


@pytest.mark.django_db(databases=ALL_DATABASES, transaction=True)
def test_own_claims_update_the_copy_without_reading_and_other_writes_are_read(compute_host):
    # given one host with room for three instances (6 VCPUs, 2 each), one claimed and committed
    node = compute_host("only", cell="cell1", vcpus=6)
    select_destinations(CTX, spec(), ["inst-1"], False)
    reloads, applied = dict(provider_cache.reloads), provider_cache.claims_applied
    # when this process claims again, then the copy takes the committed claim from what it
    # wrote (no provider read again), and answers as SQL does
    select_destinations(CTX, spec(), ["inst-2"], False)
    assert provider_cache.reloads == reloads and provider_cache.claims_applied == applied + 1
    wanted = {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 10}
    sql, copy = _sql_and_copy(resources=wanted)
    assert copy.to_dict() == sql.to_dict()
    assert sql.provider_summaries[node.uuid]["resources"]["VCPU"]["used"] == 4
    # when another write changes the usage (not a claim for a new consumer: inst-1 grows to 4
    # VCPUs), then it is read, and the host is full for the next request
    placement.allocations_put(consumer_uuid="inst-1", allocations={node.uuid: {**wanted, "VCPU": 4}},
                              project_id="p1", user_id="u1")
    with pytest.raises(NoValidHost):
        chosen()
    assert provider_cache.reloads["delta"] == reloads["delta"] + 1


def _sql_and_copy(**kwargs):
    sql = placement.allocation_candidates(**kwargs)
    copy = placement.allocation_candidates(copy=provider_cache, **kwargs)
    return sql, copy


def assorted_providers() -> list[str]:
    """40 providers (one deleted again) with assorted inventories, constraints, usage, traits
    and aggregates; their uuids."""
    rng = random.Random(7)
    placement.trait_create(name="CUSTOM_GOLD")
    uuids = []
    for i in range(40):
        rp = placement.provider_create(name=f"rp{i}")
        uuids.append(rp.uuid)
        placement.inventories_set(rp=rp, inventories={
            "VCPU": {"total": rng.choice([1, 2, 4, 8]), "allocation_ratio": rng.choice([1.0, 1.5, 4.0])},
            "MEMORY_MB": {"total": rng.choice([1024, 2048, 4096]), "reserved": rng.choice([0, 512]),
                          "step_size": rng.choice([1, 256]), "min_unit": rng.choice([1, 512])},
            **({"DISK_GB": {"total": rng.choice([10, 50]), "max_unit": rng.choice([10, 20])}} if i % 3 else {}),
        })
        placement.traits_set(rp=rp, traits=rng.sample(["CUSTOM_GOLD", "COMPUTE_NODE", "HW_CPU_X86_AVX2"],
                                                      rng.randint(0, 2)))
        if i % 4 == 0:
            placement.aggregates_set(rp=rp, aggregates=["agg-a"] if i % 8 else ["agg-a", "agg-b"])
        if i % 5 == 0:
            placement.allocations_put(consumer_uuid=f"c{i}", allocations={rp.uuid: {"VCPU": 1, "MEMORY_MB": 512}},
                                      project_id="p", user_id="u")
    placement.provider_delete(rp=uuids.pop())
    return uuids


def test_provider_copy_answers_as_the_sql_query():
    # given providers with assorted inventories, constraints, usage, traits and aggregates
    uuids = assorted_providers()
    cases = [
        {"resources": {"VCPU": 1, "MEMORY_MB": 512}},
        {"resources": {"VCPU": 2, "MEMORY_MB": 768, "DISK_GB": 15}},
        {"resources": {"VCPU": 1, "MEMORY_MB": 1024}, "required_traits": ["CUSTOM_GOLD"]},
        {"resources": {"VCPU": 1, "MEMORY_MB": 256}, "forbidden_traits": ["COMPUTE_NODE", "HW_CPU_X86_AVX2"]},
        {"resources": {"VCPU": 1, "MEMORY_MB": 512}, "member_of": [["agg-a"], ["agg-b", "agg-x"]]},
        {"resources": {"VCPU": 1, "MEMORY_MB": 512}, "limit": 5},
        {"resources": {"VCPU": 1, "MEMORY_MB": 512}, "provider_uuids": uuids[10:20]},
        {"resources": {"VCPU": 7, "MEMORY_MB": 4096}},
    ]
    for kwargs in cases:
        # when the same question is asked of SQL and of the copy, then the answers are equal
        sql, copy = _sql_and_copy(**kwargs)
        assert copy.to_dict() == sql.to_dict(), kwargs
        assert sql.allocation_requests or kwargs["resources"]["VCPU"] == 7
    # and a random sample has the limit's size, drawn from the same candidates
    sql, copy = _sql_and_copy(resources={"VCPU": 1, "MEMORY_MB": 512}, limit=4, randomize=True)
    everything = placement.allocation_candidates(resources={"VCPU": 1, "MEMORY_MB": 512})
    assert len(copy.allocation_requests) == 4 and set(copy.provider_summaries) <= set(everything.provider_summaries)
    # and unknown classes or traits are the same errors
    for bad in ({"resources": {"CUSTOM_NOPE": 1}}, {"resources": {"VCPU": 1}, "required_traits": ["CUSTOM_NOPE"]}):
        with pytest.raises(placement.PlacementInvalid) as from_sql:
            placement.allocation_candidates(**bad)
        with pytest.raises(type(from_sql.value)):
            placement.allocation_candidates(copy=provider_cache, **bad)


def test_a_node_saved_by_its_compute_is_read_again_alone(compute_host, cells):
    # given a preferred x86_64 host whose compute has already saved its node row once, copies loaded
    compute_host("a", cell="cell1", memory_mb=65536)
    compute_host("b", cell="cell2", memory_mb=8192)
    with target_cell(cells["cell1"]):
        ComputeNode.objects.get(host="a").save()
    x86 = {"id": "img", "properties": {"hw_architecture": "x86_64"}}
    assert chosen(image=x86) == "a"
    delta = node_cache.delta_reloads
    # when the compute saves the node again, now reporting another architecture
    with target_cell(cells["cell1"]):
        node = ComputeNode.objects.get(host="a")
        node.cpu_info = '{"arch": "aarch64"}'
        node.save()
    # then the next request sees it, having read only the rows updated since
    assert chosen(image=x86) == "b"
    assert node_cache.delta_reloads == delta + 1


def walked_shortfall(*, resources, required_traits=(), forbidden_traits=(), member_of=None, provider_uuids=None,
                     nearest=20):
    """The shortfall as ``ProviderCache.shortfall`` defines it, provider by provider through
    placement's services (the reference its one-pass walk is held to)."""
    wanted = sorted(resources.items())
    required, forbidden = set(required_traits), set(forbidden_traits)
    groups = [set(group) for group in member_of or []]
    rows, eligible_any = [], False
    for rp in ResourceProvider.objects.order_by("id"):
        if provider_uuids is not None and rp.uuid not in provider_uuids:
            continue
        inventories, usages = placement.inventories_get(rp=rp), placement.provider_usages(rp=rp)
        traits, aggregates = set(placement.traits_get(rp=rp)), set(placement.aggregates_get(rp=rp))
        free, short = {}, {}
        for rc, n in wanted:
            inv, used = inventories.get(rc), usages.get(rc, 0)
            free[rc] = max(placement.capacity(inv["total"], inv["reserved"], inv["allocation_ratio"]) - used, 0) \
                if inv else 0
            fits = inv is not None and inv["min_unit"] <= n <= inv["max_unit"] and n % inv["step_size"] == 0 \
                and (inv["total"] - inv["reserved"]) * inv["allocation_ratio"] >= used + n
            if not fits:
                short[rc] = n - free[rc] if free[rc] < n else n
        outside = bool(groups) and any(not group & aggregates for group in groups)
        missing, present = sorted(required - traits), sorted(forbidden & traits)
        eligible = not (missing or present or outside)
        eligible_any = eligible_any or eligible
        rows.append((rp, free, short, missing, present, outside, eligible))
    resources_out = {}
    for rc, n in wanted:
        short_on = sum(1 for row in rows if rc in row[2])
        if short_on:
            frees = [row[1][rc] for row in rows if row[6] or not eligible_any]
            resources_out[rc] = {"requested": n, "short_on": short_on, "most_free": max(frees, default=0)}
    ranked = sorted(
        ((len(short) + len(missing) + len(present) + outside, sum(s / resources[rc] for rc, s in short.items()), rp.id),
         {"uuid": rp.uuid, "short": short, "missing_traits": missing, "forbidden_traits": present,
          "outside_aggregates": outside})
        for rp, _free, short, missing, present, outside, _eligible in rows if short or missing or present or outside)
    return {
        "providers": len(rows), "resources": resources_out,
        "traits_missing": {t: n for t in required if (n := sum(t in row[3] for row in rows))},
        "traits_forbidden": {t: n for t in forbidden if (n := sum(t in row[4] for row in rows))},
        "outside_aggregates": sum(row[5] for row in rows),
        "nearest": [near for _rank, near in ranked[:nearest]],
    }


def test_the_shortfall_is_the_definitions_and_is_kept_while_placement_does_not_change():
    # given providers with assorted inventories, constraints, usage, traits and aggregates
    uuids = assorted_providers()
    cases = [
        {"resources": {"VCPU": 3, "MEMORY_MB": 2048}},
        {"resources": {"VCPU": 2, "MEMORY_MB": 768, "DISK_GB": 15}, "nearest": 5},
        {"resources": {"VCPU": 1, "MEMORY_MB": 1024}, "required_traits": ["CUSTOM_GOLD", "HW_CPU_X86_AVX2"]},
        {"resources": {"VCPU": 1, "MEMORY_MB": 256}, "forbidden_traits": ["COMPUTE_NODE", "COMPUTE_STATUS_DISABLED"]},
        {"resources": {"VCPU": 8, "MEMORY_MB": 512}, "member_of": [["agg-a"], ["agg-b", "agg-x"]]},
        {"resources": {"VCPU": 1, "MEMORY_MB": 4096}, "provider_uuids": uuids[10:20], "nearest": 3},
        {"resources": {"DISK_GB": 30}, "required_traits": ["CUSTOM_GOLD"], "member_of": [["agg-nowhere"]]},
        {"resources": {"VCPU": 1}, "nearest": 0},
    ]
    for kwargs in cases:
        # when the copy's one-pass walk is asked, then it answers as the definition
        answer = provider_cache.shortfall(**kwargs)
        assert answer == walked_shortfall(**kwargs), kwargs
    answer = provider_cache.shortfall(**cases[0])
    assert answer["nearest"] and answer["resources"]
    # when the reader changes its answer, then the next one is unchanged
    answer["nearest"][0]["host"] = "mine"
    answer["resources"]["VCPU"]["short_on"] = -1
    assert provider_cache.shortfall(**cases[0]) == walked_shortfall(**cases[0])
    # when placement changes, then the next answer is computed again from the new state
    freed = next(near["uuid"] for near in answer["nearest"] if set(near["short"]) == {"VCPU"})
    placement.inventories_set(rp=freed, inventories={"VCPU": {"total": 16}, "MEMORY_MB": {"total": 4096}})
    again = provider_cache.shortfall(**cases[0])
    assert again == walked_shortfall(**cases[0]) and freed not in {near["uuid"] for near in again["nearest"]}


@pytest.mark.parametrize("slack", [cache.NEAREST_SLACK, 0])
def test_a_kept_shortfall_is_updated_provider_by_provider_as_placement_changes(monkeypatch, slack):
    # given providers with assorted inventories, constraints, usage, traits and aggregates, and
    # the shortfall of assorted questions kept (with ``slack``: no spare ranks, so that a change
    # among the nearest falls back to a walk of every provider)
    monkeypatch.setattr(cache, "NEAREST_SLACK", slack)
    uuids = assorted_providers()
    cases = [
        {"resources": {"VCPU": 3, "MEMORY_MB": 2048}},
        {"resources": {"VCPU": 2, "MEMORY_MB": 768, "DISK_GB": 15}, "nearest": 5},
        {"resources": {"VCPU": 1, "MEMORY_MB": 1024}, "required_traits": ["CUSTOM_GOLD", "HW_CPU_X86_AVX2"]},
        {"resources": {"VCPU": 1, "MEMORY_MB": 4096}, "forbidden_traits": ["COMPUTE_NODE"], "nearest": 3},
        {"resources": {"VCPU": 8, "MEMORY_MB": 512}, "member_of": [["agg-a"], ["agg-b", "agg-x"]]},
        {"resources": {"VCPU": 1, "MEMORY_MB": 4096}, "provider_uuids": uuids[10:20], "nearest": 3},
        {"resources": {"VCPU": 1}, "nearest": 0},
    ]
    walks, counted = [], []
    walk = cache._Shortfall.walk.__func__
    monkeypatch.setattr(cache._Shortfall, "walk", classmethod(
        lambda cls, q, providers, generation: walks.append(len(providers)) or walk(cls, q, providers, generation)))
    count = cache._Shortfall._count
    monkeypatch.setattr(cache._Shortfall, "_count",
                        lambda self, rp, by: counted.append((rp.uuid, by)) or count(self, rp, by))
    for kwargs in cases:
        assert provider_cache.shortfall(**kwargs) == walked_shortfall(**kwargs)
    walks.clear()
    full = provider_cache.reloads["full"]
    writes = [
        lambda: placement.allocations_put(consumer_uuid="new", allocations={uuids[12]: {"VCPU": 1}},
                                          project_id="p", user_id="u"),
        lambda: placement.traits_set(rp=uuids[13], traits=["CUSTOM_GOLD", "HW_CPU_X86_AVX2"]),
        lambda: placement.aggregates_set(rp=uuids[14], aggregates=["agg-a", "agg-x"]),
        lambda: placement.inventories_set(rp=uuids[15], inventories={"VCPU": {"total": 64}, "MEMORY_MB": {
            "total": 65536}}),
        lambda: placement.inventories_set(rp=uuids[15], inventories={"VCPU": {"total": 1}, "MEMORY_MB": {
            "total": 512}}),
        lambda: placement.allocations_delete(consumer_uuid="c10"),
        lambda: placement.inventories_set(rp=placement.provider_create(name="late").uuid, inventories={
            "VCPU": {"total": 2}, "MEMORY_MB": {"total": 3072}}),
    ]
    for write in writes:
        # when placement changes (one write, or two before the next question), then each answer
        # is still the definition's
        write()
        if write is writes[1]:
            continue
        for kwargs in cases:
            assert provider_cache.shortfall(**kwargs) == walked_shortfall(**kwargs), kwargs
    # and the copy was only reloaded in part, the answers updated (each changed provider taken
    # out and put back in) rather than walked again over every provider (but without slack)
    assert provider_cache.reloads["full"] == full
    assert {(uuids[12], -1), (uuids[12], 1), (uuids[15], -1), (uuids[15], 1)} <= set(counted)
    assert (not walks) if slack else max(walks) > 1


@pytest.mark.django_db(databases=ALL_DATABASES, transaction=True)
def test_the_shortfall_of_the_next_request_counts_a_claim_this_process_made(compute_host):
    # given a host of 6 VCPUs too small for the request, whose shortfall a first request has kept
    compute_host("only", cell="cell1", vcpus=6)
    too_many = {**spec()["flavor"], "vcpus": 8}
    wanted = {"VCPU": 8, "MEMORY_MB": 2048, "DISK_GB": 10}

    def shortfall():
        with pytest.raises(NoValidHost) as failed:
            select_destinations(CTX, spec(flavor=too_many), [], False)
        return failed.value.trace["placement"]["shortfall"]

    assert shortfall()["resources"]["VCPU"]["most_free"] == 6
    # when this process claims 2 VCPUs there for a new server, then the next shortfall (the copy
    # refreshed from what that claim wrote, nothing read again) counts them, as a walk over
    # placement does
    applied = provider_cache.claims_applied
    select_destinations(CTX, spec(), ["inst-1"], False)
    again = shortfall()
    assert provider_cache.claims_applied == applied + 1
    assert again["resources"]["VCPU"]["most_free"] == 4 and again["nearest"][0]["short"]["VCPU"] == 4
    assert provider_cache.shortfall(resources=wanted) == walked_shortfall(resources=wanted)


def test_the_shortfall_of_the_next_request_counts_a_host_added_to_a_cell(compute_host):
    # given two hosts too small for the request, whose shortfall a first request has kept
    compute_host("a", cell="cell1", memory_mb=8192)
    compute_host("b", cell="cell2", memory_mb=8192)
    big = {**spec()["flavor"], "memory_mb": 16384}

    def shortfall():
        with pytest.raises(NoValidHost) as failed:
            select_destinations(CTX, spec(flavor=big), [], False)
        return failed.value.trace["placement"]["shortfall"]

    assert shortfall()["providers"] == 2
    # when a third, as small, joins a cell, then the next shortfall looks at three
    compute_host("c", cell="cell1", memory_mb=4096)
    again = shortfall()
    assert again["providers"] == 3 and again["resources"]["MEMORY_MB"]["short_on"] == 3
    assert [near["host"] for near in again["nearest"]] == ["a", "b", "c"]
