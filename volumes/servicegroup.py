"""Block storage services (Cinder's ``os-services``): the volume worker registers and heartbeats
its ``cinder-volume`` (host ``<machine>@<backend>``, the backend's one pool) and ``cinder-backup``
(host ``<machine>``: the same worker runs the backups) rows; a service is ``up`` while its last
heartbeat is younger than ``SERVICE_DOWN_TIME`` seconds (Nova's and Cinder's rule). Admins list
them and enable or disable them (with a reason); a disabled ``cinder-volume`` takes no new volumes
(the worker refuses the create, as Cinder's scheduler skips a disabled backend).
"""
from __future__ import annotations

import socket
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db.models import F
from django.utils import timezone

from cells.transactions import api_atomic
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Invalid, NotFound
from cloudcore.core.policy import authorize

from .backends import get_backend
from .models import VolumeService

VOLUME_BINARY = "cinder-volume"
BACKUP_BINARY = "cinder-backup"
#: the zone of the one storage backend (Cinder's ``storage_availability_zone`` default)
ZONE = "nova"


class HostBinaryNotFound(NotFound):
    message = "Service %(binary)s on host %(host)s could not be found."


def worker_hosts() -> list[tuple[str, str]]:
    """``(binary, host)`` of the services a volume worker on this machine runs."""
    machine = socket.gethostname()
    return [(VOLUME_BINARY, f"{machine}@{get_backend().name}"), (BACKUP_BINARY, machine)]


def volume_service_heartbeat(*, binary: str, host: str) -> VolumeService:
    """Record that the service is alive now (created on its first heartbeat)."""
    with api_atomic():
        svc, created = VolumeService.objects.get_or_create(
            host=host, binary=binary, defaults={"availability_zone": ZONE, "last_seen_up": timezone.now(),
                                                "report_count": 1})
        if not created:
            VolumeService.objects.filter(pk=svc.pk).update(last_seen_up=timezone.now(),
                                                           report_count=F("report_count") + 1)
    return svc


def volume_service_is_up(svc: VolumeService, *, now: datetime | None = None) -> bool:
    if svc.last_seen_up is None:
        return False
    return bool(((now or timezone.now()) - svc.last_seen_up).total_seconds() <= settings.SERVICE_DOWN_TIME)


def volume_service_accepts_volumes(host: str) -> bool:
    """Whether the ``cinder-volume`` service of ``host`` may take a new volume: not disabled (a
    host with no service row yet is a worker that has not reported: it may)."""
    return not VolumeService.objects.filter(host=host, binary=VOLUME_BINARY, disabled=True).exists()


def volume_service_list(ctx: RequestContext, *, host: str | None = None,
                        binary: str | None = None) -> list[VolumeService]:
    """The services (admin), filtered by host and binary (Cinder's ``host`` and ``binary``)."""
    authorize(ctx, "volume_extension:services:index", {"project_id": ctx.project_id, "user_id": ctx.user_id})
    qs = VolumeService.objects.order_by("binary", "host")
    if host:
        qs = qs.filter(host=host)
    if binary:
        qs = qs.filter(binary=binary)
    return list(qs)


@dataclass(frozen=True)
class ServiceUpdate:
    host: str
    binary: str
    disabled: bool
    disabled_reason: str | None


def volume_service_update(ctx: RequestContext, *, action: str, host: str | None, binary: str | None,
                          reason: str | None = None) -> ServiceUpdate:
    """Cinder's ``PUT /os-services/{enable|disable|disable-log-reason}`` (admin). Raises NotFound
    for another action or an unknown service, Invalid for a missing host or binary or a bad
    reason. Enabling clears the reason."""
    authorize(ctx, "volume_extension:services:update", {"project_id": ctx.project_id, "user_id": ctx.user_id})
    if action not in ("enable", "disable", "disable-log-reason"):
        raise NotFound("Unknown action")
    if not host:
        raise Invalid("Invalid input received: Missing required element 'host' in request body.")
    if not binary:
        raise Invalid("Invalid input received: Missing required element 'binary' in request body.")
    if action == "disable-log-reason":
        if reason is None or not reason.strip() or len(reason) > 255:
            raise Invalid("Invalid input received: Disabled reason contains invalid characters or is too long")
    else:
        reason = None
    disabled = action != "enable"
    with api_atomic():
        updated = VolumeService.objects.filter(host=host, binary=binary).update(
            disabled=disabled, disabled_reason=reason, updated_at=timezone.now())
    if not updated:
        raise HostBinaryNotFound(host=host, binary=binary)
    return ServiceUpdate(host=host, binary=binary, disabled=disabled, disabled_reason=reason)
