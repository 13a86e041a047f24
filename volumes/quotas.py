"""Cinder's per-project quotas (``os-quota-sets``): limits, defaults, usage and the checks on create.

A project's limit for a resource is its own ``VolumeQuota`` row, else Cinder's default; -1 is
unlimited. Usage is counted from the live volumes, snapshots (and, once they exist, backups) of the
project, never stored; ``reserved`` and ``allocated`` are always 0 (Cinder's reservations last one
request here, nested quotas are gone from Cinder). ``gigabytes`` counts volumes and snapshots, as
Cinder does unless ``no_snapshot_gb_quota``.

Creating a volume or snapshot past a limit raises Cinder's 413s: ``VolumeSizeExceedsLimit``
(``per_volume_gigabytes``), ``VolumeSizeExceedsAvailableQuota`` (``gigabytes``),
``VolumeLimitExceeded`` and ``SnapshotLimitExceeded``. An update refuses unknown keys (400) and,
with ``skip_validation: false`` only, a limit below the usage (400).
"""
from __future__ import annotations

from typing import Any

from django.db.models import Count, Sum

from cells.transactions import api_atomic
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import CloudcoreError, Invalid
from cloudcore.core.policy import authorize

from .models import Snapshot, Volume, VolumeQuota

#: Cinder's largest limit (its database integer).
MAX_LIMIT = 2**31 - 1

#: Cinder's defaults, in the order its quota set bodies carry them.
DEFAULTS: dict[str, int] = {
    "volumes": 10, "snapshots": 10, "gigabytes": 1000, "backups": 10, "backup_gigabytes": 1000,
    "per_volume_gigabytes": -1, "groups": 10,
}
RESOURCES: tuple[str, ...] = tuple(DEFAULTS)
#: Keys a quota set body may carry besides the resources (ignored).
NON_QUOTA_KEYS = ("tenant_id", "id")


class QuotaError(CloudcoreError):
    code = 413
    message = "Quota exceeded: code=%(code)s"


class VolumeSizeExceedsLimit(QuotaError):
    message = "Requested volume size %(size)dG is larger than maximum allowed limit %(limit)dG."


class VolumeSizeExceedsAvailableQuota(QuotaError):
    message = ("Requested volume or snapshot exceeds allowed %(name)s quota. Requested %(requested)sG, quota is "
               "%(quota)sG and %(consumed)sG has been consumed.")


class VolumeLimitExceeded(QuotaError):
    message = "Maximum number of volumes allowed (%(allowed)d) exceeded for quota '%(name)s'."


class SnapshotLimitExceeded(QuotaError):
    message = "Maximum number of snapshots allowed (%(allowed)d) exceeded"


def quota_limits(project_id: str) -> dict[str, int]:
    """``project_id``'s limits: its own rows over Cinder's defaults."""
    limits = dict(DEFAULTS)
    for row in VolumeQuota.objects.filter(project_id=project_id, resource__in=RESOURCES):
        limits[row.resource] = row.hard_limit
    return limits


def quota_usage(project_id: str) -> dict[str, int]:
    """What ``project_id`` holds of every resource (live volumes and snapshots; no backups or groups)."""
    volumes = Volume.objects.filter(project_id=project_id).aggregate(n=Count("id"), gb=Sum("size"))
    snapshots = Snapshot.objects.filter(project_id=project_id).aggregate(n=Count("id"), gb=Sum("size"))
    usage = dict.fromkeys(RESOURCES, 0)
    usage.update(volumes=volumes["n"] or 0, snapshots=snapshots["n"] or 0,
                 gigabytes=(volumes["gb"] or 0) + (snapshots["gb"] or 0))
    return usage


def _check_gigabytes(limits: dict[str, int], used: dict[str, int], size: int) -> None:
    if 0 <= limits["gigabytes"] < used["gigabytes"] + size:
        raise VolumeSizeExceedsAvailableQuota(name="gigabytes", requested=size, quota=limits["gigabytes"],
                                              consumed=used["gigabytes"])


def quota_check_volume(*, project_id: str, size: int) -> None:
    """May ``project_id`` create one more volume of ``size`` GiB? Call it inside the creating transaction.
    Cinder checks the size against ``per_volume_gigabytes``, then ``gigabytes`` before ``volumes``."""
    limits, used = quota_limits(project_id), quota_usage(project_id)
    if 0 <= limits["per_volume_gigabytes"] < size:
        raise VolumeSizeExceedsLimit(size=size, limit=limits["per_volume_gigabytes"])
    _check_gigabytes(limits, used, size)
    if 0 <= limits["volumes"] < used["volumes"] + 1:
        raise VolumeLimitExceeded(allowed=limits["volumes"], name="volumes")


def quota_check_snapshot(*, project_id: str, size: int) -> None:
    """May ``project_id`` snapshot a volume of ``size`` GiB (it counts against ``gigabytes`` too)?"""
    limits, used = quota_limits(project_id), quota_usage(project_id)
    _check_gigabytes(limits, used, size)
    if 0 <= limits["snapshots"] < used["snapshots"] + 1:
        raise SnapshotLimitExceeded(allowed=limits["snapshots"])


def quota_show(ctx: RequestContext, project_id: str) -> dict[str, int]:
    authorize(ctx, "volume_extension:quotas:show", {"project_id": project_id})
    return quota_limits(project_id)


def quota_show_usage(ctx: RequestContext, project_id: str) -> dict[str, dict[str, int]]:
    """Every resource's ``limit``, ``in_use``, ``reserved`` and ``allocated``."""
    authorize(ctx, "volume_extension:quotas:show", {"project_id": project_id})
    limits, used = quota_limits(project_id), quota_usage(project_id)
    return {name: {"limit": limits[name], "in_use": used[name], "reserved": 0, "allocated": 0}
            for name in RESOURCES}


def quota_defaults(ctx: RequestContext, project_id: str) -> dict[str, int]:
    authorize(ctx, "volume_extension:quotas:show", {"project_id": project_id})
    return dict(DEFAULTS)


def _bool(value: Any, name: str) -> bool:
    text = str(value).lower()
    if text not in ("true", "false", "1", "0", "yes", "no", "on", "off", "t", "f", "y", "n"):
        raise Invalid(f"Invalid input received: Invalid value '{value}' for {name}.")
    return text in ("true", "1", "yes", "on", "t", "y")


def _limit(resource: str, value: Any) -> int:
    try:
        number = int(value) if not isinstance(value, bool) else None
    except (TypeError, ValueError):
        number = None
    if number is None:
        raise Invalid(f"Invalid input received: {resource} must be an integer.")
    if number < -1:
        raise Invalid(f"Invalid input received: {resource} must be >= -1.")
    if number > MAX_LIMIT:
        raise Invalid(f"Invalid input received: {resource} must be <= {MAX_LIMIT}.")
    return number


def quota_update(ctx: RequestContext, project_id: str, *, changes: dict[str, Any],
                 skip_validation: Any = True) -> dict[str, int]:
    """Store ``project_id``'s own limits; its resulting limits.

    Raises Invalid for unknown keys ("Bad key(s) in quota set"), a value that is not an integer from
    -1, and (``skip_validation`` false) a limit below the volumes, snapshots or gigabytes in use."""
    authorize(ctx, "volume_extension:quotas:update", {"project_id": project_id})
    skip = _bool(skip_validation, "skip_validation")
    bad = [key for key in changes if key not in RESOURCES and key not in NON_QUOTA_KEYS]
    if bad:
        raise Invalid(f"Bad key(s) in quota set: {','.join(bad)}")
    limits = {key: _limit(key, value) for key, value in changes.items() if key in RESOURCES}
    if not skip:
        used = quota_usage(project_id)
        for key, limit in limits.items():
            if key != "per_volume_gigabytes" and limit != -1 and limit < used[key]:
                raise Invalid(f"Quota {key} limit must be equal or greater than existing resources. Current usage "
                              f"is {used[key]} and the requested limit is {limit}.")
    with api_atomic():
        for key, limit in limits.items():
            VolumeQuota.objects.update_or_create(project_id=project_id, resource=key,
                                                 defaults={"hard_limit": limit})
    return quota_limits(project_id)


def quota_delete(ctx: RequestContext, project_id: str) -> None:
    """Drop ``project_id``'s own limits: it takes Cinder's defaults again."""
    authorize(ctx, "volume_extension:quotas:delete", {"project_id": project_id})
    VolumeQuota.objects.filter(project_id=project_id).delete()
