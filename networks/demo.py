"""Demo network ``demo-net`` (shared, owned by the admin project) with ``demo-subnet``
10.0.0.0/24. Idempotent."""
from __future__ import annotations

from collections.abc import Callable

from cloudcore.core.context import RequestContext
from identity.selectors import project_find_by_name

from . import services
from .models import Network


def setup(out: Callable[[str], None]) -> None:
    if Network.objects.filter(name="demo-net").exists():
        return

    admin = project_find_by_name("admin")
    ctx = RequestContext(user_id=None, project_id=admin.id if admin else "admin", roles=["admin"], is_admin=True)
    net = services.network_create(ctx, name="demo-net", shared=True)
    services.subnet_create(ctx, network_id=net.id, cidr="10.0.0.0/24", name="demo-subnet")
    out("networks: created demo-net (10.0.0.0/24)")
