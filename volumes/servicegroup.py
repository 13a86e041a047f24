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
from typing import Any

from django.conf import settings
from django.db.models import F, Q, Sum
from django.utils import timezone

from cells.transactions import api_atomic
from cloudcore.core.api.versioned import timestamp as _ts
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Invalid, NotFound
from cloudcore.core.policy import authorize

from .backends import get_backend
from .models import Volume, VolumeService, VolumeType

VOLUME_BINARY = "cinder-volume"
BACKUP_BINARY = "cinder-backup"
#: the zone of the one storage backend (Cinder's ``storage_availability_zone`` default)
ZONE = "nova"
DRIVER_VERSION = "1.0.0"


class HostBinaryNotFound(NotFound):
    message = "Service %(binary)s on host %(host)s could not be found."


def worker_hosts() -> list[tuple[str, str]]:
    """``(binary, host)`` of the services a volume worker on this machine runs."""
    machine = socket.gethostname()
    return [(VOLUME_BINARY, f"{machine}@{get_backend().name}"), (BACKUP_BINARY, machine)]


def backend_capabilities() -> dict[str, Any]:
    """What ``cinder-volume`` reports of its back end's one pool (Cinder's volume stats): the
    file system's size and free space under the pool directory, the GiB its live volumes were
    given, and what the pool can do (sparse files: thin provisioning; multiattach)."""
    backend = get_backend()
    total, free = backend.capacity()
    allocated = int(Volume.objects.filter(backend_name=backend.name).aggregate(total=Sum("size"))["total"] or 0)
    return {"pool_name": backend.name, "volume_backend_name": backend.name, "vendor_name": "cloudcore",
            "driver_version": DRIVER_VERSION, "storage_protocol": "file", "total_capacity_gb": total,
            "free_capacity_gb": free, "allocated_capacity_gb": allocated, "provisioned_capacity_gb": allocated,
            "max_over_subscription_ratio": "1.0", "reserved_percentage": 0, "thin_provisioning_support": True,
            "thick_provisioning_support": False, "QoS_support": False, "multiattach": True,
            "timestamp": _ts(timezone.now())}


def volume_service_heartbeat(*, binary: str, host: str, capabilities: dict[str, Any] | None = None) -> VolumeService:
    """Record that the service is alive now (created on its first heartbeat) and, when given,
    what it reports of its back end."""
    now = timezone.now()
    report: dict[str, Any] = {} if capabilities is None else {"capabilities": capabilities}
    with api_atomic():
        svc, created = VolumeService.objects.get_or_create(
            host=host, binary=binary, defaults={"availability_zone": ZONE, "last_seen_up": now, "report_count": 1,
                                                **report})
        if not created:
            VolumeService.objects.filter(pk=svc.pk).update(last_seen_up=now, report_count=F("report_count") + 1,
                                                           **report)
    return svc


def worker_heartbeat() -> None:
    """One heartbeat of every service of the volume worker on this machine; ``cinder-volume``
    reports its back end's capabilities with it."""
    for binary, host in worker_hosts():
        volume_service_heartbeat(binary=binary, host=host,
                                 capabilities=backend_capabilities() if binary == VOLUME_BINARY else None)


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
        # Cinder's host match: the host itself or any of its back ends and pools
        qs = qs.filter(Q(host=host) | Q(host__startswith=f"{host}@") | Q(host__startswith=f"{host}#"))
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
    if action in ("freeze", "thaw"):
        if not host or not VolumeService.objects.filter(binary=VOLUME_BINARY, host=host).exists():
            raise Invalid(f"Invalid input received: no cinder-volume service on host {host}.")
        raise Invalid(f"Invalid input received: the back end of {host} has no replication to {action}.")
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


def _admin(ctx: RequestContext, rule: str) -> None:
    authorize(ctx, rule, {"project_id": ctx.project_id, "user_id": ctx.user_id})


def pool_list(ctx: RequestContext, *, name: str | None = None,
              volume_type: str | None = None) -> list[tuple[str, dict[str, Any]]]:
    """``(pool name, capabilities)`` of the back ends that can take volumes now (Cinder's
    scheduler's view: enabled ``cinder-volume`` services that are up and reported), by pool name
    (``host@backend#pool``) and, given a volume type, only the pools that type may use (admin)."""
    _admin(ctx, "scheduler_extension:scheduler_stats:get_pools")
    wanted = None
    if volume_type:
        vt = VolumeType.objects.filter(pk=volume_type).first() or VolumeType.objects.filter(name=volume_type).first()
        if vt is None:
            raise NotFound(f"Volume type {volume_type} could not be found.")
        wanted = vt.extra_specs.get("volume_backend_name")
    now = timezone.now()
    pools = []
    for svc in VolumeService.objects.filter(binary=VOLUME_BINARY, disabled=False).order_by("host"):
        caps = svc.capabilities or {}
        if not caps or not volume_service_is_up(svc, now=now):
            continue
        pool = f"{svc.host}#{caps.get('pool_name')}"
        if (name and name != pool) or (wanted and wanted != caps.get("volume_backend_name")):
            continue
        pools.append((pool, caps))
    return pools


def capabilities_get(ctx: RequestContext, host: str) -> tuple[VolumeService, dict[str, Any]]:
    """The last capabilities the ``cinder-volume`` service of ``host`` reported (admin); 404 for
    a host with no such service."""
    _admin(ctx, "volume_extension:capabilities")
    svc = VolumeService.objects.filter(binary=VOLUME_BINARY, host=host).first()
    if svc is None:
        raise NotFound(f"Can't find service: {host}")
    return svc, dict(svc.capabilities or {})


def _number(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _compare(op: str, value: Any, wanted: str) -> bool:
    if op == "<is>":
        return str(value).lower() == wanted.lower()
    if op == "<in>":
        return wanted in str(value)
    if op.startswith("s"):
        text = str(value)
        return {"s==": text == wanted, "s!=": text != wanted, "s<": text < wanted, "s<=": text <= wanted,
                "s>": text > wanted, "s>=": text >= wanted}[op]
    have, want = _number(value), _number(wanted)
    if have is None or want is None:
        return False
    return {"=": have >= want, "==": have == want, "!=": have != want, "<=": have <= want,
            ">=": have >= want}[op]


_OPS = ("<is>", "<in>", "=", "==", "!=", "<=", ">=", "s==", "s!=", "s<", "s<=", "s>", "s>=")


def spec_matches(value: Any, requirement: str) -> bool:
    """Whether a reported capability satisfies one extra spec, with the operators of Cinder's
    capabilities filter (``<is> True``, ``<in> x``, ``<or> a <or> b``, ``>= 10``, ``s== x``, ...);
    a requirement without an operator is a plain equality."""
    words = str(requirement).split()
    op = words[0] if words else None
    if op == "<or>":
        return str(value) in words[1::2]
    if op not in _OPS:
        return str(value) == str(requirement)
    return len(words) > 1 and value is not None and _compare(op, value, words[1])


def backend_accepts(extra_specs: dict[str, Any], capabilities: dict[str, Any]) -> bool:
    """Cinder's capabilities filter: an unscoped extra spec naming a capability the back end
    reports (``volume_backend_name``, ``vendor_name``, ``storage_protocol``, ``multiattach``, ...)
    must be satisfied by its value, and a ``capabilities:`` one must name a reported capability
    and be satisfied. Other scopes (``RESKEY:availability_zones``, ...) are left to their own
    filters; unlike Cinder, an unscoped key the back end does not report (an operator's own label
    such as ``tier``) is not a requirement, as it was not before this filter existed here."""
    for key, requirement in (extra_specs or {}).items():
        scope, _, name = str(key).partition(":")
        if name and scope != "capabilities":
            continue
        capability = name or scope
        if capability not in capabilities:
            if name:
                return False
            continue
        if not spec_matches(capabilities[capability], requirement):
            return False
    return True


def volume_backend_for(extra_specs: dict[str, Any]) -> str | None:
    """Cinder's scheduling of a new volume, for this worker's one back end: its ``cinder-volume``
    host when that service is enabled and its capabilities satisfy the type's extra specs, else
    None (Cinder's NoValidBackend)."""
    host = dict(worker_hosts())[VOLUME_BINARY]
    if not volume_service_accepts_volumes(host) or not backend_accepts(extra_specs, backend_capabilities()):
        return None
    return host
