"""Writes of the online data migrations (``manage.py db online_data_migrations``) to servers' rows."""
from __future__ import annotations

from ..models import Instance


def instance_compute_link(*, instance_id: int, compute_id: int) -> None:
    """Fill ``Instance.compute_id`` (deleted rows included) in the targeted cell."""
    Instance.all_objects.filter(pk=instance_id).update(compute=compute_id)
