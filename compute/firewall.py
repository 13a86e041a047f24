"""Security groups on a compute host: the guests' port filters follow their groups.

The network service casts ``refresh_port_filters`` (``compute.rpc``) to each host with ports in a
group whose rules changed, or whose rules name a group whose members changed; the host reads the
servers' ports and groups from the network API (``network_info``: each port's ``firewall``) and
the virt driver redefines their filters, which libvirt applies to the running guests. Guests that
are not on this host any more are skipped by the driver.
"""
from __future__ import annotations

from types import SimpleNamespace

from .clients import networks as neutron
from .drivers import driver_for


def refresh_port_filters(*, host: str, instance_uuids: list[str]) -> None:
    """Redefine the port filters of each server's guest on ``host`` from its ports' groups now."""
    driver = driver_for(host)
    for instance_uuid in instance_uuids:
        driver.refresh_port_filters(instance=SimpleNamespace(uuid=instance_uuid),
                                    network_info=neutron.network_info(instance_uuid=instance_uuid))
