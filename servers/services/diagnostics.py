"""``GET /servers/{id}/diagnostics``: the guest's diagnostics, asked of its compute host.

Admin only by default (``os_compute_api:os-server-diagnostics``). A server with no host (never
scheduled, shelved-offloaded) is Nova's 409; otherwise the API waits for the host's answer
(``compute.rpc.get_diagnostics``, at most ``RPC_RESPONSE_TIMEOUT`` seconds): Nova's standardized
shape from 2.48, the driver's own before.
"""
from __future__ import annotations

from typing import Any

from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import InstanceInvalidState
from cloudcore.core.policy import authorize
from compute import rpc as compute_rpc

from ..selectors import ServerRecord
from .guards import record_target


def server_diagnostics(*, actor: RequestContext, record: ServerRecord, standardized: bool) -> dict[str, Any]:
    """Raises Forbidden (policy) or InstanceInvalidState (409: still building, or no host)."""
    authorize(actor, "os_compute_api:os-server-diagnostics", record_target(record))
    instance = record.instance
    if instance is None or record.cell is None:
        raise InstanceInvalidState(method="get_diagnostics", instance_uuid=record.uuid, attr="vm_state",
                                   state="building")
    if not instance.host:
        raise InstanceInvalidState(method="get_diagnostics", instance_uuid=instance.uuid, attr="host", state=None)
    return compute_rpc.get_diagnostics(ctx=actor, host=str(instance.host), instance_uuid=instance.uuid,
                                       cell_uuid=str(record.cell.uuid), standardized=standardized)
