"""Writes of the online data migrations (``manage.py db online_data_migrations``) to servers' rows."""
from __future__ import annotations

from ..models import Instance


def instance_compute_link(*, instance_id: int, compute_id: int) -> None:
    """Fill ``Instance.compute_id`` (deleted rows included) in the targeted cell."""
    Instance.all_objects.filter(pk=instance_id).update(compute=compute_id)


# --- used by compute/ ---------------------------------------------------------------------------
def instances_compute_link(*, host: str, node: str | None, compute_id: int) -> int:
    """Give the servers of ``host``/``node`` without a ``compute_id`` (deleted ones included) that
    node's id, in the targeted cell (Nova's _ensure_compute_id_for_instances); returns how many."""
    return Instance.all_objects.filter(host=host, node=node, compute__isnull=True).update(compute=compute_id)
