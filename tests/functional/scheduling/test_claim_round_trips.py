"""A claim for a new consumer outside a transaction (the scheduler's and the conductor's): on
PostgreSQL two queries (``_claim_for_new_consumer``: ``BEGIN``, the stamp, the consumer, the
providers and one read of what they guard; then the allocations and ``COMMIT``) where its
transaction was seven round trips; on SQLite the ORM's transaction as before. Either way the same
rows, generations, stamp and failures; after a refused claim nothing is written and no
transaction is left open on the connection (it stays in autocommit between the two queries).
Everything else (an existing consumer, an unknown provider or class, a missing inventory) is
``allocations_put``'s transaction, as before."""
from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from scheduling.models import Allocation, Consumer, PlacementChangeStamp, ResourceProvider
from scheduling.placement import services as placement
from scheduling.placement.exceptions import InvalidAllocation

pytestmark = pytest.mark.django_db(transaction=True)

#: the statements of a new consumer's claim, per backend (``CaptureQueriesContext``: BEGIN and COMMIT included)
CLAIM_STATEMENTS = {"sqlite": 7, "postgresql": 2}


def _no_transaction_left() -> None:
    assert connection.get_autocommit() and not connection.in_atomic_block
    if connection.vendor == "postgresql":
        import psycopg2.extensions

        assert connection.connection.info.transaction_status == psycopg2.extensions.TRANSACTION_STATUS_IDLE


def _provider(name: str, vcpus: int, memory_mb: int = 4096) -> Any:
    rp = placement.provider_create(name=name)
    placement.inventories_set(rp=rp, inventories={"VCPU": {"total": vcpus}, "MEMORY_MB": {"total": memory_mb}})
    return ResourceProvider.objects.get(uuid=rp.uuid)


def _claim(consumer: str, rp: Any, vcpus: int, memory_mb: int = 512) -> bool:
    return placement.claim_allocation_request(
        consumer_uuid=consumer, allocation_request={"allocations": {rp.uuid: {"resources": {
            "VCPU": vcpus, "MEMORY_MB": memory_mb}}}}, project_id="p", user_id="u")


def test_a_new_consumers_claim_writes_what_the_transaction_wrote_in_its_pinned_statements() -> None:
    # given a provider with room for 4 VCPUs, half taken
    rp = _provider("claims", vcpus=4)
    assert _claim("first", rp, 2)
    generation, stamp = ResourceProvider.objects.get(id=rp.id).generation, PlacementChangeStamp.objects.get(id=1)
    # when a new consumer claims the other half
    with CaptureQueriesContext(connection) as captured:
        assert _claim("second", rp, 2)
    # then it is claimed in the backend's pinned statements, with no transaction left open
    assert len(captured.captured_queries) == CLAIM_STATEMENTS[connection.vendor], captured.captured_queries
    _no_transaction_left()
    # and the consumer, its allocations, the provider's generation and the stamp are as Placement has them
    consumer = Consumer.objects.get(uuid="second")
    assert (consumer.generation, consumer.project_id, consumer.user_id, consumer.consumer_type) == (1, "p", "u",
                                                                                                   "INSTANCE")
    assert placement.allocations_get(consumer_uuid="second").allocations == {rp.uuid: {"VCPU": 2, "MEMORY_MB": 512}}
    assert placement.provider_usages(rp=rp.uuid) == {"VCPU": 4, "MEMORY_MB": 1024}
    provider = ResourceProvider.objects.get(id=rp.id)
    assert (provider.generation, provider.changed_seq) == (generation + 1, stamp.seq + 1)
    assert PlacementChangeStamp.objects.get(id=1).seq == stamp.seq + 1
    # and the scheduler's provider copy is told what it added, as for the ORM's transaction
    assert placement.committed_claims(str(stamp.epoch), stamp.seq, stamp.seq + 1) == [
        {rp.id: {"VCPU": 2, "MEMORY_MB": 512}}]


def test_a_claim_that_no_longer_fits_writes_nothing_and_leaves_no_transaction_open() -> None:
    # given a provider whose 4 VCPUs are taken
    rp = _provider("full", vcpus=4)
    assert _claim("first", rp, 4)
    generation, seq = ResourceProvider.objects.get(id=rp.id).generation, PlacementChangeStamp.objects.get(id=1).seq
    # when a new consumer claims one more, then the same amount of memory alone
    refused = _claim("late", rp, 1)
    _no_transaction_left()
    # then the claim is refused and nothing of it is stored: no consumer, no allocation, no bump
    assert refused is False
    assert not Consumer.objects.filter(uuid="late").exists()
    assert Allocation.objects.count() == 2
    assert ResourceProvider.objects.get(id=rp.id).generation == generation
    assert PlacementChangeStamp.objects.get(id=1).seq == seq
    # and the connection goes on working in autocommit (what the next claim writes is committed)
    rp2 = _provider("room", vcpus=4)
    assert _claim("late", rp2, 1)
    assert placement.provider_usages(rp=rp2.uuid) == {"VCPU": 1, "MEMORY_MB": 512}


def test_what_is_not_a_new_consumers_plain_claim_is_the_transactions_as_before() -> None:
    # given a consumer holding allocations on one provider
    rp, other = _provider("old", vcpus=4), _provider("new", vcpus=4)
    assert _claim("moving", rp, 2)
    old_generation = ResourceProvider.objects.get(id=rp.id).generation
    # when it claims on another provider (its allocations replaced)
    assert _claim("moving", other, 3)
    _no_transaction_left()
    # then it holds only the new ones, its generation and the old provider's bumped
    assert placement.allocations_get(consumer_uuid="moving").allocations == {other.uuid: {"VCPU": 3, "MEMORY_MB": 512}}
    assert Consumer.objects.get(uuid="moving").generation == 2
    assert ResourceProvider.objects.get(id=rp.id).generation == old_generation + 1
    # and its own usage is left out when it claims again where it is (3 of 4 VCPUs held, 4 asked)
    assert _claim("moving", other, 4)
    assert placement.provider_usages(rp=other.uuid) == {"VCPU": 4, "MEMORY_MB": 512}
    assert not _claim("moving", other, 5)
    # and a new consumer asking for an unknown provider, or a class the provider has no inventory
    # of, gets the errors it got
    with pytest.raises(InvalidAllocation):
        placement.allocations_put(consumer_uuid="nowhere", allocations={
            "00000000-0000-0000-0000-000000000000": {"VCPU": 1}}, project_id="p", user_id="u")
    assert not _claim_disk("nodisk", other)
    _no_transaction_left()
    assert not Consumer.objects.filter(uuid__in=["nowhere", "nodisk"]).exists()


def _claim_disk(consumer: str, rp: Any) -> bool:
    return placement.claim_allocation_request(
        consumer_uuid=consumer, allocation_request={"allocations": {rp.uuid: {"resources": {"DISK_GB": 1}}}},
        project_id="p", user_id="u")


def test_the_claims_read_is_prepared_once_per_connection() -> None:
    """The read of a claim (its plan cost more than running it) is the connection's prepared
    statement, sent in the claim's first query: prepared by the first claim, executed by the next."""
    if connection.vendor != "postgresql":
        pytest.skip("SQLite prepares nothing on a server")
    rp = _provider("prepared", vcpus=8)

    def claim_reads() -> list[str]:
        with connection.cursor() as cursor:
            cursor.execute("SELECT statement FROM pg_prepared_statements")
            return [row[0] for row in cursor.fetchall() if "c.updated_at IS NULL" in row[0]]

    before = claim_reads()
    with CaptureQueriesContext(connection) as captured:
        assert _claim("one", rp, 1) and _claim("two", rp, 1) and _claim("three", rp, 1)
    # one prepared statement more (the first claim's), the three claims each in their 2 queries
    assert len(claim_reads()) == len(before) + 1
    assert len(captured.captured_queries) == 3 * CLAIM_STATEMENTS["postgresql"]
    assert [q["sql"].count("EXECUTE cloudcore_") for q in captured.captured_queries[::2]] == [1, 1, 1]
    assert placement.provider_usages(rp=rp.uuid) == {"VCPU": 3, "MEMORY_MB": 1536}
    _no_transaction_left()
