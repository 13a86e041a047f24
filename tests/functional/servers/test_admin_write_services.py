"""Service-level policy of the server and flavor writes whose check used to sit in the view:
``os-resetState``, ``changePassword`` and the flavor extra-spec / access writes (the rule is
checked at the service entry, before any lookup)."""
from __future__ import annotations

import pytest

from cells.context import target_cell
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import CloudcoreError, PolicyNotAuthorized
from identity.services.tokens import context_for_token
from servers.models import FlavorExtraSpec, Instance
from servers.selectors import server_get
from servers.services import flavors
from servers.services.password import server_set_password
from servers.services.reset_state import server_reset_state
from tests.conftest import ALL_DATABASES

pytestmark = pytest.mark.django_db(databases=ALL_DATABASES)


def test_reset_state_refused_to_a_member_and_done_for_an_admin(cloud):
    # given an ACTIVE server of the member's project
    client = cloud.member()
    server = cloud.create_server(client, "vm1")
    cloud.wait_for_status(client, server["id"], "ACTIVE")
    member = context_for_token(client.token)[1]
    record = server_get(member, server["id"])
    with target_cell(record.cell):
        # when its member resets its state, then the admin-only rule refuses and nothing changes
        with pytest.raises(PolicyNotAuthorized, match="os-admin-actions:reset_state"):
            server_reset_state(actor=member, instance=record.instance, state="error")
        assert Instance.objects.get(uuid=server["id"]).vm_state == "active"
        # when an admin does, then the row is in error
        server_reset_state(actor=RequestContext.system(), instance=record.instance, state="error")
        assert Instance.objects.get(uuid=server["id"]).vm_state == "error"


def test_set_password_checks_policy_then_asks_the_host(cloud):
    # given an ACTIVE server of an image without the guest agent, its member and another project's
    client = cloud.member()
    server = cloud.create_server(client, "vm1")
    cloud.wait_for_status(client, server["id"], "ACTIVE")
    member = context_for_token(client.token)[1]
    other = context_for_token(cloud.member("eve", project="demo2").token)[1]
    record = server_get(member, server["id"])
    with target_cell(record.cell):
        # when another project's member sets the password, then the policy refuses before the host is asked
        with pytest.raises(PolicyNotAuthorized, match="os-admin-password"):
            server_set_password(actor=other, instance=record.instance, cell=record.cell, password="x")
        # when the member does, then the host answers that the image asked for no agent (409)
        with pytest.raises(CloudcoreError, match="QEMU guest agent is not enabled") as refused:
            server_set_password(actor=member, instance=record.instance, cell=record.cell, password="x")
        assert refused.value.code == 409
        assert Instance.objects.get(uuid=server["id"]).task_state is None


def test_flavor_writes_check_policy_before_the_lookup(cloud):
    # given a member and a flavor
    member = context_for_token(cloud.member().token)[1]
    flavor = cloud.flavor("f1")
    # when the member writes extra specs or access, even of a flavor that does not exist,
    # then the admin rule refuses first (no 404 tells what exists)
    for flavor_id in (flavor.flavorid, "no-such-flavor"):
        with pytest.raises(PolicyNotAuthorized, match="os-flavor-extra-specs:create"):
            flavors.extra_specs_set(actor=member, flavor_id=flavor_id, specs={"k": "v"},
                                    rule="os_compute_api:os-flavor-extra-specs:create")
        with pytest.raises(PolicyNotAuthorized, match="os-flavor-access:add_tenant_access"):
            flavors.flavor_access_add(actor=member, flavor_id=flavor_id, project_id="p")
    assert not FlavorExtraSpec.objects.filter(flavor=flavor).exists()
    # when an admin sets one, then the row is written
    flavors.extra_specs_set(actor=RequestContext.system(), flavor_id=flavor.flavorid, specs={"k": "v"},
                            rule="os_compute_api:os-flavor-extra-specs:create")
    assert FlavorExtraSpec.objects.get(flavor=flavor).value == "v"


def test_server_create_checks_the_rules_of_each_privileged_part(cloud):
    # given a member and a flavor
    from cells.models import InstanceMapping
    from servers.models import Flavor
    from servers.services.create import ServerCreateRequest, server_create

    member = context_for_token(cloud.member().token)[1]
    flavor = Flavor.objects.get(name="m1.tiny").flavorid
    base = {"name": "vm", "flavor_ref": flavor, "image_ref": cloud.image_id}
    # when it forces a host or requests a destination, then the admin rules refuse
    with pytest.raises(PolicyNotAuthorized, match="servers:create:forced_host"):
        server_create(actor=member, request=ServerCreateRequest(**base, forced_host="compute1"))
    with pytest.raises(PolicyNotAuthorized, match="servers:create:requested_destination"):
        server_create(actor=member, request=ServerCreateRequest(**base, requested_host="compute1"))
    assert not InstanceMapping.objects.exists()
    # when it asks for nothing privileged, then the server is accepted (mapping written)
    result = server_create(actor=member, request=ServerCreateRequest(**base))
    assert InstanceMapping.objects.filter(instance_uuid=result.instance_uuids[0]).exists()
