"""Retype (Cinder's ``os-retype``): change the type of an ``available`` or ``in-use`` volume.

The storage here is one back end (the directory pool), so a retype never moves bytes: the new type
must be satisfiable where the volume already is, i.e. the back end's capabilities must satisfy the
new type's extra specs (``volume_backend_name``, ``storage_protocol``, ... as Cinder's capabilities
filter reads them). When they do not, the volume would have to migrate: with ``migration_policy``
``never`` (the default) that is refused (400, as Cinder's volume manager refuses it); with
``on-demand`` it is refused too, since no other back end exists to take the volume (Cinder's
scheduler answers NoValidBackend).

Other rules, as Cinder's API: the new type must differ from the current one and be visible to the
actor (404); a volume that is migrating cannot be retyped; an ``in-use`` volume cannot change to or
from a multiattach type. The volume's ``multiattach`` follows the new type. Quota: the volume's
``volumes_<type>`` and ``gigabytes_<type>`` usage moves to the new type (usage is counted from the
rows), and the new type's per-type limits are checked first (413). Volume types carry no encryption
here, so a retype never changes a volume's encryption.

Side effects: one compare-and-swap update of the volume row (status and old type unchanged since
read), nothing enqueued.
"""
from __future__ import annotations

from django.utils import timezone

from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Invalid
from cloudcore.core.policy import authorize

from .choices import VolumeStatus
from .models import Volume, VolumeType
from .quotas import OverQuota, limits, usage
from .servicegroup import backend_accepts, backend_capabilities
from .types import volume_type_find

MIGRATION_POLICIES = ("never", "on-demand")


def _check_type_quota(vol: Volume, vt: VolumeType) -> None:
    hard, used = limits(vol.project_id), usage(vol.project_id)
    for resource, amount in (("gigabytes", vol.size), ("volumes", 1)):
        key = f"{resource}_{vt.name}"
        limit = hard.get(key, -1)
        if limit != -1 and used.get(key, 0) + amount > limit:
            raise OverQuota(f"Quota exceeded for resources: ['{key}']. Requested {amount}, quota is {limit} and "
                            f"{used.get(key, 0)} has been consumed.")


def volume_retype(ctx: RequestContext, vol: Volume, *, new_type: str, migration_policy: str | None = None) -> Volume:
    """Change the volume's type to ``new_type`` (a name or id). Raises Invalid (400) for a bad
    policy, a volume neither ``available`` nor ``in-use`` or migrating, the same type, an in-use
    multiattach change or a needed migration; VolumeTypeNotFoundByName (404); OverQuota (413)."""
    authorize(ctx, "volume:retype", {"project_id": vol.project_id, "user_id": ctx.user_id})
    policy = migration_policy or "never"
    if policy not in MIGRATION_POLICIES:
        raise Invalid(f"Invalid input received: migration_policy must be 'on-demand' or 'never', passed: {policy}")
    if vol.status not in (VolumeStatus.AVAILABLE, VolumeStatus.IN_USE):
        raise Invalid(f"Invalid volume: Volume {vol.id} status must be available or in-use, but current status "
                      f"is: {vol.status}.")
    if vol.migration_status not in (None, "", "success", "error"):
        raise Invalid(f"Invalid volume: Volume {vol.id} is already being migrated.")
    vt = volume_type_find(ctx, new_type)
    if vt.pk == vol.volume_type_id:
        raise Invalid(f"Invalid input received: New volume_type same as original: {new_type}.")
    if vol.status == VolumeStatus.IN_USE and vt.is_multiattach != vol.multiattach:
        raise Invalid("Invalid input received: Retyping to or from a multiattach type is not supported for an "
                      "in-use volume.")
    if not backend_accepts(vt.extra_specs or {}, backend_capabilities()):
        if policy == "never":
            raise Invalid("Invalid volume: Retype requires migration but is not allowed.")
        raise Invalid(f"Invalid volume: No valid backend was found: no other back end can take volume {vol.id} "
                      f"of type {vt.name}.")
    _check_type_quota(vol, vt)
    claimed = Volume.objects.filter(pk=vol.pk, status=vol.status, volume_type_id=vol.volume_type_id).update(
        volume_type=vt, multiattach=vt.is_multiattach,
        updated_at=timezone.now())
    if not claimed:
        raise Invalid(f"Invalid volume: Volume {vol.id} changed while it was being retyped; try again.")
    vol.refresh_from_db()
    return vol
