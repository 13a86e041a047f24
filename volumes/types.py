"""Volume types (Cinder's ``/types``): create, update and delete by admins, extra specs, and
project access to private types.

A public type is seen by everyone; a private one (``is_public`` false) only by admins and the
projects given access with ``addProjectAccess``; to anybody else it does not exist (404), when
listed, shown, or named on volume create. A type some volume uses cannot be deleted, and (Cinder's
default ``allow_inuse_volume_type_modification = False``) its extra specs cannot change. The
default type ``__DEFAULT__`` is created on first use and cannot be deleted.
"""
from __future__ import annotations

from typing import Any

from django.db import IntegrityError
from django.db.models import Q, QuerySet

from cells.transactions import api_atomic
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Conflict, Invalid, NotFound
from cloudcore.core.policy import authorize, can

from .models import Volume, VolumeType, VolumeTypeProject

DEFAULT_TYPE = "__DEFAULT__"


class VolumeTypeNotFound(NotFound):
    message = "Volume type %(volume_type_id)s could not be found."


class VolumeTypeNotFoundByName(NotFound):
    message = "Volume type with name %(volume_type_name)s could not be found."


def _rule(ctx: RequestContext, rule: str) -> None:
    """Type rules have no owner: the actor's own project is the target (admin-only or any reader)."""
    authorize(ctx, rule, {"project_id": ctx.project_id, "user_id": ctx.user_id})


def default_volume_type() -> VolumeType:
    vt, _ = VolumeType.objects.get_or_create(name=DEFAULT_TYPE, defaults={"description": "Default Volume Type"})
    return vt


def _visible(ctx: RequestContext | None) -> QuerySet[VolumeType]:
    """Public types and, for a non-admin, the private types its project was given access to."""
    qs = VolumeType.objects.all()
    if ctx is None or ctx.is_admin or ctx.is_service:
        return qs
    return qs.filter(Q(is_public=True) | Q(projects__project_id=ctx.project_id)).distinct()


def volume_type_get(ctx: RequestContext, type_id: str) -> VolumeType:
    """A type by id (``default``: the default type). Raises VolumeTypeNotFound (404) for a type
    the actor cannot see."""
    _rule(ctx, "volume_extension:type_get")
    if type_id == "default":
        return default_volume_type()
    vt = _visible(ctx).filter(pk=type_id).first()
    if vt is None:
        raise VolumeTypeNotFound(volume_type_id=type_id)
    return vt


def volume_type_find(ctx: RequestContext | None, name_or_id: str) -> VolumeType:
    """The type a volume create names (by name, else id), as the actor may see it; 404 else."""
    vt = _visible(ctx).filter(name=name_or_id).first() or _visible(ctx).filter(pk=name_or_id).first()
    if vt is None:
        raise VolumeTypeNotFoundByName(volume_type_name=name_or_id)
    return vt


def volume_type_list(ctx: RequestContext, *, is_public: bool | None = True) -> list[VolumeType]:
    """Cinder's listing: by default public types plus those the actor's project may use (for
    admins too); an admin may ask for ``is_public`` false (only private types) or None (all)."""
    _rule(ctx, "volume_extension:type_get_all")
    default_volume_type()
    if not ctx.is_admin:
        is_public = True
    qs = VolumeType.objects.all()
    if is_public is True:
        qs = qs.filter(Q(is_public=True) | Q(projects__project_id=ctx.project_id)).distinct()
    elif is_public is False:
        qs = qs.filter(is_public=False)
    return list(qs.order_by("name"))


def _check_specs(specs: dict[str, Any]) -> dict[str, str]:
    for key, value in specs.items():
        if not isinstance(key, str) or not 0 < len(key) <= 255 or not isinstance(value, str) or len(value) > 255:
            raise Invalid("Invalid input received: extra specs keys must be 1 to 255 characters and values "
                          "strings of at most 255 characters.")
    return dict(specs)


def volume_type_create(ctx: RequestContext, *, name: str, description: str | None = None, is_public: bool = True,
                       extra_specs: dict[str, Any] | None = None) -> VolumeType:
    """Create a type (admin). Raises Conflict (409) when the name is taken."""
    _rule(ctx, "volume_extension:type_create")
    name = name.strip()
    if not name:
        raise Invalid("Invalid input received: Volume type name can not be empty.")
    try:
        with api_atomic():
            return VolumeType.objects.create(name=name, description=description, is_public=is_public,
                                             extra_specs=_check_specs(extra_specs or {}))
    except IntegrityError:
        raise Conflict(f"Volume Type {name} already exists.") from None


def volume_type_update(ctx: RequestContext, vt: VolumeType, *, changes: dict[str, Any]) -> VolumeType:
    """Change ``name``, ``description`` or ``is_public`` (admin). Raises Conflict for a taken name."""
    _rule(ctx, "volume_extension:type_update")
    if "name" in changes and changes["name"] is not None:
        name = str(changes["name"]).strip()
        if not name:
            raise Invalid("Invalid input received: Volume type name can not be empty.")
        if vt.name == DEFAULT_TYPE and name != DEFAULT_TYPE:
            raise Invalid("Invalid input received: The default volume type cannot be renamed.")
        if VolumeType.objects.filter(name=name).exclude(pk=vt.pk).exists():
            raise Conflict(f"Volume Type {name} already exists.")
        vt.name = name
    if "description" in changes:
        vt.description = changes["description"]
    if changes.get("is_public") is not None:
        vt.is_public = bool(changes["is_public"])
    vt.save()
    return vt


def volume_type_delete(ctx: RequestContext, vt: VolumeType) -> None:
    """Delete a type (admin). Raises Invalid (400) for the default type or a type in use."""
    _rule(ctx, "volume_extension:type_delete")
    if vt.name == DEFAULT_TYPE:
        raise Invalid(f"The volume type {vt.id} is a default volume type and cannot be deleted.")
    with api_atomic():
        if Volume.objects.filter(volume_type=vt).exists():
            raise Invalid("Target volume type is still in use.")
        vt.delete()


def _in_use_guard(vt: VolumeType) -> None:
    if Volume.objects.filter(volume_type=vt).exists():
        raise Invalid("Volume Type is currently in use.")


def volume_type_extra_specs_get(ctx: RequestContext, vt: VolumeType) -> dict[str, str]:
    """The type's extra specs; a non-admin sees only the user-visible ones (Cinder's
    ``volume_extension:types_extra_specs:read_sensitive``)."""
    _rule(ctx, "volume_extension:types_extra_specs:index")
    return visible_extra_specs(ctx, vt)


#: extra specs every reader sees (Cinder's user-visible keys); the rest are admin-only
USER_VISIBLE_EXTRA_SPECS = ("RESKEY:availability_zones", "multiattach", "replication_enabled")


def visible_extra_specs(ctx: RequestContext, vt: VolumeType) -> dict[str, str]:
    specs = dict(vt.extra_specs or {})
    if can_read_sensitive(ctx):
        return specs
    return {k: v for k, v in specs.items() if k in USER_VISIBLE_EXTRA_SPECS}


def can_read_sensitive(ctx: RequestContext) -> bool:
    return can(ctx, "volume_extension:types_extra_specs:read_sensitive",
               {"project_id": ctx.project_id, "user_id": ctx.user_id})


def volume_type_extra_specs_set(ctx: RequestContext, vt: VolumeType, *, specs: dict[str, Any],
                                one_item: bool = False) -> dict[str, str]:
    """Merge ``specs`` into the type's (admin); refused (400) while a volume uses the type."""
    _rule(ctx, "volume_extension:types_extra_specs:update" if one_item
          else "volume_extension:types_extra_specs:create")
    specs = _check_specs(specs)
    with api_atomic():
        _in_use_guard(vt)
        vt.extra_specs = {**(vt.extra_specs or {}), **specs}
        vt.save(update_fields=["extra_specs"])
    return specs


def volume_type_extra_specs_delete(ctx: RequestContext, vt: VolumeType, *, key: str) -> None:
    _rule(ctx, "volume_extension:types_extra_specs:delete")
    with api_atomic():
        _in_use_guard(vt)
        if key not in (vt.extra_specs or {}):
            raise NotFound(f"Volume Type {vt.id} has no extra specs with key {key}.")
        vt.extra_specs = {k: v for k, v in vt.extra_specs.items() if k != key}
        vt.save(update_fields=["extra_specs"])


def _private(vt: VolumeType) -> None:
    if vt.is_public:
        raise Invalid("Invalid volume type: Type access modification is not applicable to public volume type.")


def volume_type_access_add(ctx: RequestContext, vt: VolumeType, *, project_id: str) -> None:
    """Give ``project_id`` access to a private type (admin). 400 for a public type, 409 when the
    project already has access."""
    _rule(ctx, "volume_extension:volume_type_access:addProjectAccess")
    _private(vt)
    try:
        with api_atomic():
            VolumeTypeProject.objects.create(volume_type=vt, project_id=project_id)
    except IntegrityError:
        raise Conflict(f"Volume type access for {vt.id} / {project_id} combination already exists.") from None


def volume_type_access_remove(ctx: RequestContext, vt: VolumeType, *, project_id: str) -> None:
    _rule(ctx, "volume_extension:volume_type_access:removeProjectAccess")
    _private(vt)
    deleted, _ = VolumeTypeProject.objects.filter(volume_type=vt, project_id=project_id).delete()
    if not deleted:
        raise NotFound(f"Volume type access not found for {vt.id} / {project_id} combination.")


def volume_type_access_list(ctx: RequestContext, vt: VolumeType) -> list[str]:
    """The projects with access to a private type (admin); a public type has no list (404)."""
    _rule(ctx, "volume_extension:volume_type_access:get_all_for_type")
    if vt.is_public:
        raise NotFound("Access list not available for public volume types.")
    return list(vt.projects.order_by("project_id").values_list("project_id", flat=True))
