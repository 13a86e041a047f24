"""Demo networks: ``demo-net`` (shared, owned by the admin project) with ``demo-subnet`` 10.0.0.0/24;
the external network ``public`` with ``public-subnet`` 172.24.4.0/24 (floating IPs come from it); and
the demo project's router ``demo-router``, its gateway on ``public`` and ``demo-subnet`` attached, so
that a demo server's port can have a floating IP. Idempotent."""
from __future__ import annotations

from collections.abc import Callable

from cloudcore.core.context import RequestContext
from identity.selectors import project_find_by_name

from . import l3, services
from .models import Network, Router, Subnet


def setup(out: Callable[[str], None]) -> None:
    admin = project_find_by_name("admin")
    ctx = RequestContext(user_id=None, project_id=admin.id if admin else "admin", roles=["admin"], is_admin=True)
    if not Network.objects.filter(name="demo-net").exists():
        net = services.network_create(ctx, name="demo-net", shared=True)
        services.subnet_create(ctx, network_id=net.id, cidr="10.0.0.0/24", name="demo-subnet")
        out("networks: created demo-net (10.0.0.0/24)")
    public = Network.objects.filter(name="public", external=True).first()
    if public is None:
        public = services.network_create(ctx, name="public", external=True)
        services.subnet_create(ctx, network_id=public.id, cidr="172.24.4.0/24", name="public-subnet",
                               enable_dhcp=False)
        out("networks: created the external network public (172.24.4.0/24)")
    demo = project_find_by_name("demo")
    if demo is None or Router.objects.filter(name="demo-router", project_id=demo.id).exists():
        return
    router = l3.router_create(ctx, name="demo-router", project_id=demo.id,
                              external_gateway_info={"network_id": public.id})
    subnet = Subnet.objects.filter(name="demo-subnet", network__name="demo-net").first()
    if subnet is not None:
        l3.router_add_interface(ctx, router, subnet_id=subnet.id)
    out("networks: created demo-router (gateway on public, demo-subnet attached)")
