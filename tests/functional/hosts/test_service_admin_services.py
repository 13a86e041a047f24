"""Service-level policy of the os-services writes: ``service_update`` / ``service_delete`` check
their admin rule at entry, before the service is even looked up."""
from __future__ import annotations

import pytest

from cells.context import target_cell
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import PolicyNotAuthorized
from hosts.models import Service
from hosts.services import services_admin as svc
from identity.services.tokens import context_for_token
from tests.cloud import Cloud

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])


def test_service_update_refused_to_a_member_and_done_for_an_admin(cloud: Cloud) -> None:
    # given compute1's service and a project member
    member = context_for_token(cloud.member().token)[1]
    cs = svc.service_find(host="compute1", binary="nova-compute")
    # when the member disables it (by uuid or by host), or deletes it, then the rules refuse
    with pytest.raises(PolicyNotAuthorized, match="os-services:update"):
        svc.service_update(actor=member, service_id=cs.service.uuid, status="disabled")
    with pytest.raises(PolicyNotAuthorized, match="os-services:update"):
        svc.service_update(actor=member, host="compute1", binary="nova-compute", status="disabled")
    with pytest.raises(PolicyNotAuthorized, match="os-services:delete"):
        svc.service_delete(actor=member, service_id="no-such-service")
    with target_cell(cs.cell):
        assert not Service.objects.get(id=cs.service.id).disabled
    # when an admin disables it by host and binary, then the row is disabled with the reason
    svc.service_update(actor=RequestContext.system(), host="compute1", binary="nova-compute", status="disabled",
                       disabled_reason="maintenance")
    with target_cell(cs.cell):
        row = Service.objects.get(id=cs.service.id)
    assert (row.disabled, row.disabled_reason) == (True, "maintenance")
