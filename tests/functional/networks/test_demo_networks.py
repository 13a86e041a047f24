"""The demo cloud's networks: demo-net, the external network public and the demo project's router."""
from __future__ import annotations

import pytest

from networks import demo
from networks.models import Network, Port, Router
from tests.apihelpers import make_identity

pytestmark = pytest.mark.django_db


def test_demo_makes_public_and_a_router_for_the_demo_project_idempotently() -> None:
    # given the demo's projects
    make_identity("admin", project="admin", roles=["admin"])
    _, project = make_identity("demo", project="demo", roles=["member"])
    # when the demo setup runs twice
    lines: list[str] = []
    demo.setup(lines.append)
    demo.setup(lines.append)
    # then each object was made once
    assert len(lines) == 3
    public = Network.objects.get(name="public")
    assert public.external and not public.shared and [s.cidr for s in public.subnets.all()] == ["172.24.4.0/24"]
    router = Router.objects.get(name="demo-router")
    assert router.project_id == project.id and router.gw_port.network_id == public.id
    interface = Port.objects.get(device_id=router.id, device_owner="network:router_interface")
    assert interface.network.name == "demo-net" and interface.project_id == project.id
    assert [a.ip_address for a in interface.fixed_ips.all()] == ["10.0.0.1"]
