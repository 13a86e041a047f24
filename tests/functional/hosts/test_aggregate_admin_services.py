"""Service-level policy of the aggregate writes (``scheduling.services.aggregate_admin``): each
checks its ``os-aggregates`` rule first (before the id is parsed or looked up), then writes."""
from __future__ import annotations

import pytest

from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Invalid, PolicyNotAuthorized
from identity.services.tokens import context_for_token
from scheduling.models import Aggregate
from scheduling.services import aggregate_admin as admin
from scheduling.services import aggregates
from tests.cloud import Cloud

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])


def test_aggregate_writes_refused_to_a_member(cloud: Cloud) -> None:
    # given a member and an aggregate (besides the test cloud's zone aggregates)
    member = context_for_token(cloud.member().token)[1]
    before = set(Aggregate.objects.filter(deleted=False).values_list("name", flat=True))
    agg = aggregates.aggregate_create(name="agg1")
    # when the member writes, even with an id that is not one, then each rule refuses first
    with pytest.raises(PolicyNotAuthorized, match="os-aggregates:create"):
        admin.aggregate_create(actor=member, name="agg2")
    for action, call in (
        ("update", lambda i: admin.aggregate_update(actor=member, aggregate_id=i, name="x")),
        ("delete", lambda i: admin.aggregate_delete(actor=member, aggregate_id=i)),
        ("add_host", lambda i: admin.aggregate_add_host(actor=member, aggregate_id=i, host="compute1")),
        ("remove_host", lambda i: admin.aggregate_remove_host(actor=member, aggregate_id=i, host="compute1")),
        ("set_metadata", lambda i: admin.aggregate_set_metadata(actor=member, aggregate_id=i, metadata={"k": "v"})),
    ):
        for aggregate_id in (str(agg.id), "not-an-id"):
            with pytest.raises(PolicyNotAuthorized, match=f"os-aggregates:{action}"):
                call(aggregate_id)
    # then nothing was written
    assert set(Aggregate.objects.filter(deleted=False).values_list("name", flat=True)) == {*before, "agg1"}
    assert aggregates.aggregate_hosts(aggregates.aggregate_get(agg.id)) == []


def test_aggregate_writes_by_an_admin(cloud: Cloud) -> None:
    # given a cloud admin
    actor = RequestContext.system()
    # when it creates an aggregate, adds a host, sets metadata and renames it
    agg = admin.aggregate_create(actor=actor, name="agg1")
    admin.aggregate_add_host(actor=actor, aggregate_id=str(agg.id), host="compute1")
    admin.aggregate_set_metadata(actor=actor, aggregate_id=str(agg.id), metadata={"k": "v"})
    admin.aggregate_update(actor=actor, aggregate_id=str(agg.id), name="agg2")
    # then the rows hold it; an id that is not an integer is a 400
    row = aggregates.aggregate_get(agg.id)
    assert (row.name, aggregates.aggregate_hosts(row), aggregates.aggregate_metadata(row)) == (
        "agg2", ["compute1"], {"k": "v"})
    with pytest.raises(Invalid):
        admin.aggregate_delete(actor=actor, aggregate_id="x")
