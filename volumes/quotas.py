"""Block storage quotas (Cinder's ``os-quota-sets``): limits per project and resource, usage
counted from the live rows, and the checks volume create, snapshot create and extend make.

Resources: ``volumes``, ``snapshots``, ``gigabytes`` (volumes' and snapshots' sizes, Cinder's
default ``no_snapshot_gb_quota = False``), ``per_volume_gigabytes``, ``backups``,
``backup_gigabytes`` (counted from the live backups) and ``groups`` (none exist here: 0), and per
volume type ``volumes_<type>``, ``snapshots_<type>``, ``gigabytes_<type>`` (shown and settable,
default unlimited; only the project-wide limits are enforced). -1 is unlimited. ``reserved`` and
``allocated`` are always 0 (no reservations; nested quotas are gone from Cinder). An update below
the usage is refused only with ``skip_validation: false`` (Cinder's default skips). Checks count the
rows at the time of the request; two concurrent creates may both pass the last unit (no
reservations, unlike Cinder).
"""
from __future__ import annotations

from typing import Any

from django.db.models import Sum

from cells.transactions import api_atomic
from cloudcore.core.api.validation import word_bool
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import CloudcoreError, Invalid
from cloudcore.core.policy import authorize

from .models import Backup, Snapshot, Volume, VolumeQuota, VolumeQuotaClass, VolumeType

#: Cinder's default limits (``quota_volumes``, ``quota_snapshots``, ...)
DEFAULTS: dict[str, int] = {"volumes": 10, "snapshots": 10, "gigabytes": 1000, "backups": 10,
                            "backup_gigabytes": 1000, "groups": 10, "per_volume_gigabytes": -1}
PER_TYPE = ("volumes", "snapshots", "gigabytes")
#: Keys a quota set body may carry besides the resources (ignored, as Cinder).
NON_QUOTA_KEYS = ("id", "tenant_id")
MAX_LIMIT = 0x7FFFFFFF


class OverQuota(CloudcoreError):
    """Cinder's quota errors answer 413 (``overLimit``)."""

    code = 413
    message = "Quota exceeded for resources."


def _target(project_id: str) -> dict[str, Any]:
    return {"project_id": project_id}


def _class_limits(class_name: str) -> dict[str, int]:
    return dict(VolumeQuotaClass.objects.filter(class_name=class_name).values_list("resource", "hard_limit"))


def _resources() -> dict[str, int]:
    """Every resource with its built-in default, per-type ones included (one set per volume type)."""
    out = dict(DEFAULTS)
    for name in VolumeType.objects.order_by("name").values_list("name", flat=True):
        out.update({f"{resource}_{name}": -1 for resource in PER_TYPE})
    return out


def defaults(class_name: str = "default") -> dict[str, int]:
    """Every resource's default: the built-in one unless the quota class (``default``) sets it."""
    out = _resources()
    stored = _class_limits(class_name)
    if class_name != "default":
        stored = {**_class_limits("default"), **stored}
    return {key: stored.get(key, value) for key, value in out.items()}


def limits(project_id: str) -> dict[str, int]:
    stored = dict(VolumeQuota.objects.filter(project_id=project_id).values_list("resource", "hard_limit"))
    return {key: stored.get(key, value) for key, value in defaults().items()}


def usage(project_id: str) -> dict[str, int]:
    volumes = Volume.objects.filter(project_id=project_id)
    snapshots = Snapshot.objects.filter(project_id=project_id)
    volume_gb = volumes.aggregate(total=Sum("size"))["total"] or 0
    snapshot_gb = snapshots.aggregate(total=Sum("size"))["total"] or 0
    used = dict.fromkeys(defaults(), 0)
    used.update(volumes=volumes.count(), snapshots=snapshots.count(), gigabytes=volume_gb + snapshot_gb)
    backups = Backup.objects.filter(project_id=project_id)
    used.update(backups=backups.count(), backup_gigabytes=backups.aggregate(total=Sum("size"))["total"] or 0)
    for vol in volumes.select_related("volume_type"):
        if vol.volume_type is not None:
            used[f"volumes_{vol.volume_type.name}"] = used.get(f"volumes_{vol.volume_type.name}", 0) + 1
            used[f"gigabytes_{vol.volume_type.name}"] = used.get(f"gigabytes_{vol.volume_type.name}", 0) + vol.size
    for snap in snapshots.select_related("volume__volume_type"):
        vt = snap.volume.volume_type
        if vt is not None:
            used[f"snapshots_{vt.name}"] = used.get(f"snapshots_{vt.name}", 0) + 1
            used[f"gigabytes_{vt.name}"] = used.get(f"gigabytes_{vt.name}", 0) + snap.size
    return used


def quota_set_get(ctx: RequestContext, project_id: str, *, with_usage: bool = False) -> dict[str, Any]:
    """The project's limits (``{resource: limit}``), or with ``with_usage`` ``{resource: {"limit",
    "in_use", "reserved", "allocated"}}``. A reader of the project or an admin (``volume_extension:quotas:show``)."""
    authorize(ctx, "volume_extension:quotas:show", _target(project_id))
    hard = limits(project_id)
    if not with_usage:
        return hard
    used = usage(project_id)
    return {key: {"limit": value, "in_use": used.get(key, 0), "reserved": 0, "allocated": 0}
            for key, value in hard.items()}


def quota_defaults_get(ctx: RequestContext, project_id: str) -> dict[str, int]:
    authorize(ctx, "volume_extension:quotas:show", _target(project_id))
    return defaults()


def quota_set_update(ctx: RequestContext, project_id: str, *, values: dict[str, Any],
                     skip_validation: Any = True) -> dict[str, int]:
    """Set limits (admin); the body's ``id`` and ``tenant_id`` are ignored. Raises Invalid for an
    unknown resource, a limit that is not an integer from -1 up, a ``skip_validation`` that is not a
    boolean, or (``skip_validation`` false) a limit below what the project uses now."""
    authorize(ctx, "volume_extension:quotas:update", _target(project_id))
    validate_usage = not word_bool(
        skip_validation, invalid=f"Invalid input received: Invalid value '{skip_validation}' for skip_validation.")
    parsed = _parse_limits(values)
    used = usage(project_id)
    with api_atomic():
        for key, value in parsed.items():
            if validate_usage and value != -1 and key != "per_volume_gigabytes" and value < used.get(key, 0):
                raise Invalid(f"Invalid input received: Quota {key} limit must be equal or greater than existing "
                              f"resources. Current usage is {used[key]} and the requested limit is {value}.")
            VolumeQuota.objects.update_or_create(project_id=project_id, resource=key,
                                                 defaults={"hard_limit": value})
    return limits(project_id)


def _parse_limits(values: dict[str, Any]) -> dict[str, int]:
    """The body's limits as integers (``id`` and ``tenant_id`` ignored). Raises Invalid for an
    unknown resource or a limit that is not an integer from -1 up."""
    values = {key: value for key, value in values.items() if key not in NON_QUOTA_KEYS}
    known = _resources()
    bad = sorted(k for k in values if k not in known)
    if bad:
        raise Invalid(f"Bad key(s) in quota set: {','.join(bad)}")
    parsed: dict[str, int] = {}
    for key, raw in values.items():
        try:
            value = int(raw)
        except (TypeError, ValueError):
            raise Invalid(f"Invalid input received: {key} must be an integer.") from None
        if isinstance(raw, bool) or not -1 <= value <= MAX_LIMIT:
            raise Invalid(f"Invalid input received: {key} must be an integer between -1 and {MAX_LIMIT}.")
        parsed[key] = value
    return parsed


def quota_class_get(ctx: RequestContext, class_name: str) -> dict[str, int]:
    """Cinder's ``os-quota-class-sets/{class}`` (admins): the class's limits over the defaults."""
    authorize(ctx, "volume_extension:quota_classes", {"project_id": ctx.project_id})
    return defaults(class_name)


def quota_class_update(ctx: RequestContext, class_name: str, *, values: dict[str, Any]) -> dict[str, int]:
    """Set limits of the quota class (admins); the ``default`` class's are every project's defaults."""
    authorize(ctx, "volume_extension:quota_classes", {"project_id": ctx.project_id})
    parsed = _parse_limits(values)
    with api_atomic():
        for key, value in parsed.items():
            VolumeQuotaClass.objects.update_or_create(class_name=class_name, resource=key,
                                                      defaults={"hard_limit": value})
    return defaults(class_name)


def quota_set_delete(ctx: RequestContext, project_id: str) -> None:
    """Back to the defaults (admin)."""
    authorize(ctx, "volume_extension:quotas:delete", _target(project_id))
    VolumeQuota.objects.filter(project_id=project_id).delete()


def quota_check(project_id: str, *, volumes: int = 0, snapshots: int = 0, gigabytes: int = 0,
                volume_size: int | None = None, backups: int = 0, backup_gigabytes: int = 0) -> None:
    """Raise OverQuota (413, Cinder's messages) if adding the given amounts to what ``project_id``
    uses would pass one of its limits; ``volume_size`` is checked against ``per_volume_gigabytes``
    first, then ``gigabytes`` before the counts (Cinder reports its sorted overs, first one wins)."""
    hard = limits(project_id)
    per_volume = hard["per_volume_gigabytes"]
    if volume_size is not None and per_volume != -1 and volume_size > per_volume:
        raise OverQuota(f"Requested volume size {volume_size}G is larger than maximum allowed limit {per_volume}G.")
    used = usage(project_id)
    if gigabytes and hard["gigabytes"] != -1 and used["gigabytes"] + gigabytes > hard["gigabytes"]:
        raise OverQuota(f"Requested volume or snapshot exceeds allowed gigabytes quota. Requested {gigabytes}G, "
                        f"quota is {hard['gigabytes']}G and {used['gigabytes']}G has been consumed.")
    if volumes and hard["volumes"] != -1 and used["volumes"] + volumes > hard["volumes"]:
        raise OverQuota(f"Maximum number of volumes allowed ({hard['volumes']}) exceeded for quota 'volumes'.")
    if snapshots and hard["snapshots"] != -1 and used["snapshots"] + snapshots > hard["snapshots"]:
        raise OverQuota(f"Maximum number of snapshots allowed ({hard['snapshots']}) exceeded")
    limit, consumed = hard["backup_gigabytes"], used["backup_gigabytes"]
    if backup_gigabytes and limit != -1 and consumed + backup_gigabytes > limit:
        raise OverQuota(f"Requested backup exceeds allowed Backup gigabytes quota. Requested {backup_gigabytes}G, "
                        f"quota is {limit}G and {consumed}G has been consumed.")
    if backups and hard["backups"] != -1 and used["backups"] + backups > hard["backups"]:
        raise OverQuota(f"Maximum number of backups allowed ({hard['backups']}) exceeded")
