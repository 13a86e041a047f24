"""Service liveness (Nova's database servicegroup driver): a service is up when it is not
forced down and its last heartbeat is younger than ``SERVICE_DOWN_TIME`` seconds.

Minimal version written for the scheduler; the hosts app owns and may extend it."""
from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db.models import F
from django.utils import timezone

from ..models import Service


def service_is_up(service: Any) -> bool:
    if getattr(service, "forced_down", False):
        return False
    last = getattr(service, "last_seen_up", None) or getattr(service, "updated_at", None) \
        or getattr(service, "created_at", None)
    if last is None:
        return False
    return bool((timezone.now() - last).total_seconds() <= settings.SERVICE_DOWN_TIME)


# --- used by compute/ ---------------------------------------------------------------------------
def service_heartbeat(service_id: int) -> int:
    """Record a heartbeat of the service with row id ``service_id`` in the targeted cell (seen up
    now, one more report); returns 1, or 0 when the row is gone."""
    return Service.objects.filter(id=service_id).update(last_seen_up=timezone.now(),
                                                         report_count=F("report_count") + 1)
