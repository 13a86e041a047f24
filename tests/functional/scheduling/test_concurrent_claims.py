"""Two claims racing for the last slot of a provider: exactly one wins (row locks on
PostgreSQL). SQLite serialises writers with IMMEDIATE transactions instead; its in-memory test
database cannot show that across threads, so this runs on PostgreSQL (``make test-postgres``)."""
from __future__ import annotations

import threading

import pytest
from django.db import connection, connections

from scheduling.placement import services as placement

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def test_only_one_of_two_concurrent_claims_wins():
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL row locks across connections")
    # given a provider with room for exactly one 4-VCPU server
    rp = placement.provider_create(name="racy")
    placement.inventories_set(rp=rp, inventories={"VCPU": {"total": 4}})
    request = {"allocations": {rp.uuid: {"resources": {"VCPU": 4}}}}
    barrier = threading.Barrier(4)
    results: dict[str, bool] = {}

    def claim(consumer: str) -> None:
        try:
            barrier.wait()
            results[consumer] = placement.claim_allocation_request(
                consumer_uuid=consumer, allocation_request=request, project_id="p", user_id="u")
        finally:
            connections.close_all()

    # when four consumers claim at the same moment
    threads = [threading.Thread(target=claim, args=(f"c{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    # then exactly one got it and the provider is not over-committed
    assert sorted(results.values()) == [False, False, False, True]
    assert placement.provider_usages(rp=rp.uuid) == {"VCPU": 4}
