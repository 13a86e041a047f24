"""Terminating a server on its host: destroy the guest and disks, free ports and allocations,
mark the row deleted. The API side has already queued the server's mapping for delete and dropped
its request spec (``servers.services.delete``): the host touches only its own cell."""
from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from cells.context import target_cell
from cloudcore.core.context import RequestContext
from servers.selectors import instance_get
from servers.services import actions
from servers.services.delete import mark_deleted
from servers.services.notify import notify_instance

from .block_devices import detach_all_volumes
from .build import deallocate_networks
from .clients import networks as neutron
from .clients import placement
from .drivers import driver_for

log = logging.getLogger(__name__)


def terminate_instance(ctx: RequestContext, *, instance_uuid: str, cell_uuid: str, action: str = "delete") -> None:
    with target_cell(cell_uuid):
        instance = instance_get(instance_uuid)
        if instance is None:
            return
        ports = _once(lambda: neutron.network_info(instance_uuid=instance_uuid))  # asked once, when notifying
        notify_instance(ctx, "instance.delete.start", instance, network_info=ports)
        with actions.wrap_event(ctx, instance_uuid=instance_uuid, event="compute_terminate_instance",
                                host=instance.host, action_name=action):
            # Nova's _shutdown_instance: the guest, its ports and its volumes, between shutdown.start and .end
            notify_instance(ctx, "instance.shutdown.start", instance, network_info=ports)
            if instance.host:
                driver_for(instance.host).destroy(instance=instance, destroy_disks=True)
            deallocate_networks(ctx, instance)

            detach_all_volumes(ctx, instance)
            notify_instance(ctx, "instance.shutdown.end", instance)
            placement.allocations_delete(consumer_uuid=instance.uuid)
            mark_deleted(instance)
        notify_instance(ctx, "instance.delete.end", instance)


def _once(fetch: Callable[[], Any]) -> Callable[[], Any]:
    """``fetch``, called at most once (its answer kept)."""
    kept: list[Any] = []

    def answer() -> Any:
        if not kept:
            kept.append(fetch())
        return kept[0]
    return answer
