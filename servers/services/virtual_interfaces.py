"""The cell's record of a server's ports (VirtualInterface rows): the compute host writes them as
it binds or creates the ports over the network API, and drops them when it frees the ports."""
from __future__ import annotations

from ..models import VirtualInterface


def vif_create(*, instance_uuid: str, port_id: str, network_id: str | None, address: str | None,
               tag: str | None = None, preserve_on_delete: bool = False) -> VirtualInterface:
    """Record port ``port_id`` on the server in the targeted cell (``preserve_on_delete``: the user
    brought the port, so deleting the server only unbinds it)."""
    return VirtualInterface.objects.create(instance_uuid=instance_uuid, port_id=port_id, network_id=network_id,
                                           address=address, tag=tag, preserve_on_delete=preserve_on_delete)


def vifs_delete(instance_uuid: str) -> int:
    """Remove the server's live VIF rows in the targeted cell (its ports are freed); returns how many."""
    deleted, _ = VirtualInterface.objects.filter(instance_uuid=instance_uuid).delete()
    return deleted


def vif_delete(instance_uuid: str, port_id: str) -> int:
    """Remove the server's live VIF row of ``port_id`` in the targeted cell (its port is freed)."""
    deleted, _ = VirtualInterface.objects.filter(instance_uuid=instance_uuid, port_id=port_id).delete()
    return deleted
