"""Placement services against the real API database: providers, inventories, traits,
aggregates, allocations with capacity and generation checks, allocation candidates."""
from __future__ import annotations

import uuid

import pytest

from scheduling.placement import services as placement
from scheduling.placement.exceptions import (
    ConsumerGenerationConflict,
    InsufficientCapacity,
    InventoryInUse,
    ResourceProviderExists,
    ResourceProviderGenerationConflict,
    ResourceProviderInUse,
    ResourceProviderNotFound,
    TraitNotFound,
)

from .conftest import make_provider

pytestmark = pytest.mark.django_db


def _uuid() -> str:
    return str(uuid.uuid4())


def test_provider_create_update_delete_and_duplicates():
    # given a provider
    rp = placement.provider_create(name="node-a")
    # then it is its own root and starts at generation 0
    assert rp.root_id == rp.id and rp.generation == 0
    # when another takes the same name, then conflict
    with pytest.raises(ResourceProviderExists):
        placement.provider_create(name="node-a")
    # when updated with a stale generation, then conflict; with the right one it is renamed
    with pytest.raises(ResourceProviderGenerationConflict):
        placement.provider_update(rp=rp.uuid, name="node-b", generation=7)
    rp = placement.provider_update(rp=rp.uuid, name="node-b", generation=0)
    assert placement.provider_get(uuid=rp.uuid).name == "node-b"
    # when a child is created, its root is the parent's root, and the parent cannot be deleted
    child = placement.provider_create(name="child", parent_uuid=rp.uuid)
    assert child.root_id == rp.id and child.parent_id == rp.id
    with pytest.raises(placement.CannotDeleteParentProvider):
        placement.provider_delete(rp=rp.uuid)
    placement.provider_delete(rp=child.uuid)
    placement.provider_delete(rp=rp.uuid)
    with pytest.raises(ResourceProviderNotFound):
        placement.provider_get(uuid=rp.uuid)


def test_inventories_generation_and_in_use():
    # given a provider with inventory
    rp = make_provider("node-1", vcpus=4)
    generation = placement.provider_get(uuid=rp.uuid).generation
    assert placement.inventories_get(rp=rp.uuid)["VCPU"]["total"] == 4
    assert placement.inventories_get(rp=rp.uuid)["VCPU"]["max_unit"] == placement.MAX_INT
    # when set with a stale generation, then conflict and nothing changes
    with pytest.raises(ResourceProviderGenerationConflict):
        placement.inventories_set(rp=rp.uuid, inventories={"VCPU": {"total": 8}}, generation=generation - 1)
    assert placement.inventories_get(rp=rp.uuid)["VCPU"]["total"] == 4
    # when an allocation uses VCPU, then removing the VCPU inventory is refused
    placement.allocations_put(consumer_uuid=_uuid(), allocations={rp.uuid: {"VCPU": 1}}, project_id="p", user_id="u")
    with pytest.raises(InventoryInUse):
        placement.inventories_set(rp=rp.uuid, inventories={"MEMORY_MB": {"total": 10}})
    # and deleting the provider is refused while it has allocations
    with pytest.raises(ResourceProviderInUse):
        placement.provider_delete(rp=rp.uuid)


def test_allocations_capacity_min_max_step_and_usages():
    # given 4 VCPU at ratio 2.0 with 1 reserved -> capacity 6, and max_unit 4
    rp = placement.provider_create(name="n")
    placement.inventories_set(rp=rp, inventories={
        "VCPU": {"total": 4, "reserved": 1, "allocation_ratio": 2.0, "max_unit": 4},
        "MEMORY_MB": {"total": 1024, "step_size": 256},
    })
    first, second = _uuid(), _uuid()
    # when 4 VCPU are allocated, then 2 more fit but 3 do not
    placement.allocations_put(consumer_uuid=first, allocations={rp.uuid: {"VCPU": 4}}, project_id="p", user_id="u")
    with pytest.raises(InsufficientCapacity, match="exceed the capacity"):
        placement.allocations_put(consumer_uuid=second, allocations={rp.uuid: {"VCPU": 3}}, project_id="p",
                                  user_id="u")
    # and an amount above max_unit or off the step violates the constraints
    with pytest.raises(InsufficientCapacity, match="constraints"):
        placement.allocations_put(consumer_uuid=second, allocations={rp.uuid: {"MEMORY_MB": 100}},
                                  project_id="p", user_id="u")
    # and a class without inventory is refused
    with pytest.raises(InsufficientCapacity, match="DISK_GB"):
        placement.allocations_put(consumer_uuid=second, allocations={rp.uuid: {"DISK_GB": 1}},
                                  project_id="p", user_id="u")
    placement.allocations_put(consumer_uuid=second, allocations={rp.uuid: {"VCPU": 2, "MEMORY_MB": 512}},
                              project_id="p", user_id="u2")
    # then usages count both consumers, per provider and per project/user
    assert placement.provider_usages(rp=rp.uuid) == {"VCPU": 6, "MEMORY_MB": 512}
    assert placement.project_usages(project_id="p") == {"VCPU": 6, "MEMORY_MB": 512}
    assert placement.project_usages(project_id="p", user_id="u") == {"VCPU": 4}
    # when the first consumer's allocations are replaced by a smaller claim, its own old usage
    # does not count against it
    placement.allocations_put(consumer_uuid=first, allocations={rp.uuid: {"VCPU": 3}}, project_id="p", user_id="u")
    assert placement.allocations_get(consumer_uuid=first).allocations == {rp.uuid: {"VCPU": 3}}
    # when deleted, then the consumer is gone
    assert placement.allocations_delete(consumer_uuid=first) is True
    assert placement.allocations_get(consumer_uuid=first).allocations == {}
    assert placement.allocations_delete(consumer_uuid=first) is False


def test_consumer_generation_conflict():
    rp = make_provider("n")
    consumer = _uuid()
    # given a new consumer, when the caller claims it exists (generation 3), then conflict
    with pytest.raises(ConsumerGenerationConflict):
        placement.allocations_put(consumer_uuid=consumer, allocations={rp.uuid: {"VCPU": 1}}, project_id="p",
                                  user_id="u", consumer_generation=3, enforce_consumer_generation=True)
    placement.allocations_put(consumer_uuid=consumer, allocations={rp.uuid: {"VCPU": 1}}, project_id="p",
                              user_id="u", consumer_generation=None, enforce_consumer_generation=True)
    current = placement.allocations_get(consumer_uuid=consumer).consumer_generation
    # when somebody writes with a null (new consumer) generation, then conflict
    with pytest.raises(ConsumerGenerationConflict):
        placement.allocations_put(consumer_uuid=consumer, allocations={rp.uuid: {"VCPU": 2}}, project_id="p",
                                  user_id="u", consumer_generation=None, enforce_consumer_generation=True)
    placement.allocations_put(consumer_uuid=consumer, allocations={rp.uuid: {"VCPU": 2}}, project_id="p",
                              user_id="u", consumer_generation=current, enforce_consumer_generation=True)
    assert placement.allocations_get(consumer_uuid=consumer).consumer_generation == current + 1


def test_allocation_bumps_provider_generation():
    rp = make_provider("n")
    before = placement.provider_get(uuid=rp.uuid).generation
    placement.allocations_put(consumer_uuid=_uuid(), allocations={rp.uuid: {"VCPU": 1}}, project_id="p", user_id="u")
    assert placement.provider_get(uuid=rp.uuid).generation == before + 1


def test_claim_allocation_request_false_when_it_no_longer_fits():
    # given a provider with room for one 4-VCPU server
    rp = make_provider("n", vcpus=4)
    request = {"allocations": {rp.uuid: {"resources": {"VCPU": 4}}}}
    # when two consumers claim the same candidate, then only the first wins
    assert placement.claim_allocation_request(consumer_uuid="a", allocation_request=request, project_id="p",
                                              user_id="u") is True
    import json

    assert placement.claim_allocation_request(consumer_uuid="b", allocation_request=json.dumps(request),
                                              project_id="p", user_id="u") is False
    assert placement.allocations_get(consumer_uuid="b").allocations == {}


def test_allocations_move_to_migration_consumer():
    # given an instance with allocations on the source and a migration uuid
    source = make_provider("src")
    instance, migration = _uuid(), _uuid()
    placement.allocations_put(consumer_uuid=instance, allocations={source.uuid: {"VCPU": 2, "MEMORY_MB": 512}},
                              project_id="p", user_id="u")
    # when moved, then the migration holds them and the instance holds nothing
    assert placement.allocations_move(from_consumer_uuid=instance, to_consumer_uuid=migration) is True
    moved = placement.allocations_get(consumer_uuid=migration)
    assert moved.allocations == {source.uuid: {"VCPU": 2, "MEMORY_MB": 512}}
    assert moved.project_id == "p" and moved.user_id == "u"
    assert placement.allocations_get(consumer_uuid=instance).allocations == {}
    assert placement.provider_usages(rp=source.uuid)["VCPU"] == 2
    # and moving from an empty consumer changes nothing
    assert placement.allocations_move(from_consumer_uuid=instance, to_consumer_uuid=migration) is False


def test_allocation_candidates_resources_traits_aggregates_and_limit():
    # given three providers: big (SSD, in agg1), small, and big-but-disabled
    agg1, agg2 = _uuid(), _uuid()
    big = make_provider("big", vcpus=16)
    small = make_provider("small", vcpus=1)
    disabled = make_provider("big-disabled", vcpus=16)
    placement.traits_set(rp=big.uuid, traits=["STORAGE_DISK_SSD"])
    placement.traits_set(rp=disabled.uuid, traits=["STORAGE_DISK_SSD", "COMPUTE_STATUS_DISABLED"])
    placement.aggregates_set(rp=big.uuid, aggregates=[agg1])
    placement.aggregates_set(rp=disabled.uuid, aggregates=[agg2])
    # when asking for 2 VCPU, then the two big ones
    found = placement.allocation_candidates(resources={"VCPU": 2, "MEMORY_MB": 512})
    assert set(found.provider_summaries) == {big.uuid, disabled.uuid}
    assert {"allocations": {big.uuid: {"resources": {"VCPU": 2, "MEMORY_MB": 512}}}} in found.allocation_requests
    summary = found.provider_summaries[big.uuid]
    assert summary["resources"]["VCPU"] == {"capacity": 16, "used": 0}
    assert summary["resources"]["DISK_GB"] == {"capacity": 100, "used": 0}
    assert summary["traits"] == ["STORAGE_DISK_SSD"] and summary["root_provider_uuid"] == big.uuid
    # when forbidding the disabled trait, then only big
    found = placement.allocation_candidates(resources={"VCPU": 2}, required_traits=["STORAGE_DISK_SSD"],
                                            forbidden_traits=["COMPUTE_STATUS_DISABLED"])
    assert list(found.provider_summaries) == [big.uuid]
    # when asking for membership of agg2 or (agg1 or agg2), then filtered by aggregates
    assert list(placement.allocation_candidates(resources={"VCPU": 1}, member_of=[[agg2]]).provider_summaries) \
        == [disabled.uuid]
    assert set(placement.allocation_candidates(resources={"VCPU": 1}, member_of=[[agg1, agg2]])
               .provider_summaries) == {big.uuid, disabled.uuid}
    # when limited, then at most that many
    assert len(placement.allocation_candidates(resources={"VCPU": 1}, limit=2).allocation_requests) == 2
    # when usage fills a provider, then it stops being a candidate
    placement.allocations_put(consumer_uuid=_uuid(), allocations={small.uuid: {"VCPU": 1}}, project_id="p",
                              user_id="u")
    assert small.uuid not in placement.allocation_candidates(resources={"VCPU": 1}).provider_summaries
    # when an unknown trait is required, then an error (not silently nothing)
    with pytest.raises(TraitNotFound):
        placement.allocation_candidates(resources={"VCPU": 1}, required_traits=["CUSTOM_NOPE"])


def test_allocation_candidates_in_tree_and_provider_list_filters():
    root = make_provider("root")
    child = placement.provider_create(name="child", parent_uuid=root.uuid)
    placement.inventories_set(rp=child, inventories={"VCPU": {"total": 2}})
    other = make_provider("other")
    found = placement.allocation_candidates(resources={"VCPU": 1}, in_tree=child.uuid)
    assert set(found.provider_summaries) == {root.uuid, child.uuid}
    assert found.provider_summaries[child.uuid]["parent_provider_uuid"] == root.uuid
    assert [rp.uuid for rp in placement.provider_list(name="other")] == [other.uuid]
    assert [rp.uuid for rp in placement.provider_list(resources={"VCPU": 4})] == [root.uuid, other.uuid]


def test_custom_traits():
    assert placement.trait_create(name="CUSTOM_GOLD") is True
    assert placement.trait_create(name="CUSTOM_GOLD") is False
    with pytest.raises(placement.PlacementInvalid):
        placement.trait_create(name="GOLD")
    assert "CUSTOM_GOLD" in placement.trait_list(startswith="CUSTOM_")
    assert "COMPUTE_STATUS_DISABLED" in placement.trait_list()
    rp = make_provider("n")
    placement.traits_set(rp=rp.uuid, traits=["CUSTOM_GOLD"])
    assert placement.trait_list(associated=True) == ["CUSTOM_GOLD"]
    with pytest.raises(placement.PlacementConflict):
        placement.trait_delete(name="CUSTOM_GOLD")


def test_an_allocation_write_stores_the_rows_bulk_create_stored(monkeypatch):
    # given a provider with room for two consumers' claims
    from django.db import connections

    from scheduling.models import Allocation, Consumer

    rp = make_provider("node-rows", vcpus=8)

    def stored(consumer: str) -> list[dict]:
        consumer_id = Consumer.objects.get(uuid=consumer).id
        with connections["default"].cursor() as cursor:
            cursor.execute('SELECT * FROM "scheduling_allocation" WHERE consumer_id = %s ORDER BY "id"', [consumer_id])
            names = [column[0] for column in cursor.description]
            rows = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
        for row in rows:
            row.pop("id")
            assert row.pop("consumer_id") == consumer_id and row.pop("created_at") is not None
        return rows

    claim = {rp.uuid: {"VCPU": 2, "MEMORY_MB": 64, "DISK_GB": 1}}
    before, now = _uuid(), _uuid()
    # when one's is written by the ORM's bulk_create, as before, and the other's as it is now
    with monkeypatch.context() as patched:
        patched.setattr(placement, "insert_plain_now", lambda rows: Allocation.objects.bulk_create(rows))
        placement.allocations_put(consumer_uuid=before, allocations=claim, project_id="p", user_id="u")
    placement.allocations_put(consumer_uuid=now, allocations=claim, project_id="p", user_id="u")
    # then the same rows are stored, and read back
    assert stored(now) == stored(before) and len(stored(now)) == 3
    assert placement.allocations_get(consumer_uuid=now).allocations == {rp.uuid: claim[rp.uuid]}
