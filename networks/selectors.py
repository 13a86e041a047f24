"""Reads of networks and ports for the other apps (which never query ``networks.models``
themselves). No visibility check here: callers apply their own (a server build checks that the
network is shared or the project's)."""
from __future__ import annotations

from django.db.models import Q, QuerySet

from .models import Network, Port


def network_find(network_id: str | None) -> Network | None:
    return Network.objects.filter(id=network_id).first() if network_id else None


def networks_available(project_id: str) -> QuerySet[Network]:
    """The networks a server of ``project_id`` may be put on without naming one: its own and the
    shared ones, never an external one (unordered)."""
    return Network.objects.filter(Q(project_id=project_id) | Q(shared=True), external=False)


def available_network_ids(project_id: str, *, limit: int) -> list[str]:
    """Up to ``limit`` ids of ``networks_available`` (one query)."""
    return list(networks_available(project_id).values_list("id", flat=True)[:limit])


def port_find(port_id: str | None) -> Port | None:
    return Port.objects.filter(id=port_id).first() if port_id else None


# --- used by cross-cell ---


def ports_of_instance(instance_uuid: str) -> list[Port]:
    """The ports whose ``device_id`` is the server."""
    return list(Port.objects.filter(device_id=instance_uuid))
