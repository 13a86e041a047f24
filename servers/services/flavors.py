"""Flavors (API database): selectors and admin services with Nova's rules and messages.

Visibility: a flavor is visible to a project when it is public or the project was given access
(``FlavorProject``); admins may list private flavors with ``is_public=false|none``.
Services check policy themselves (``authorize``) so that every caller is guarded the same way.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError
from django.db.models import Q, QuerySet
from django.utils import timezone

from cells.transactions import api_atomic
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Conflict, Invalid, NotFound
from cloudcore.core.notifications import notify
from cloudcore.core.policy import authorize
from identity.services.accounts import project_get

from ..models import Flavor, FlavorExtraSpec, FlavorProject

SORT_KEYS = (
    "created_at", "description", "disabled", "ephemeral_gb", "flavorid", "id", "is_public", "memory_mb", "name",
    "root_gb", "rxtx_factor", "swap", "updated_at", "vcpu_weight", "vcpus",
)
MAX_LIMIT = 1000


class FlavorNotFound(NotFound):
    message = "Flavor %(flavor_id)s could not be found."


class FlavorExists(Conflict):
    message = "Flavor with ID %(flavor_id)s already exists."


class FlavorNameExists(Conflict):
    message = "Flavor with name %(name)s already exists."


class FlavorExtraSpecNotFound(NotFound):
    message = "Flavor %(flavor_id)s has no extra specs with key %(key)s."


class FlavorAccessExists(Conflict):
    message = "Flavor access already exists for flavor %(flavor_id)s and project %(project_id)s combination."


class FlavorAccessNotFound(NotFound):
    message = "Flavor access not found for %(flavor_id)s / %(project_id)s combination."


class FlavorMarkerNotFound(Invalid):
    message = "marker [%(marker)s] not found"


# --- selectors -------------------------------------------------------------------------------------


def _visible(qs: QuerySet[Flavor], project_id: str | None) -> QuerySet[Flavor]:
    if project_id:
        return qs.filter(Q(is_public=True) | Q(projects__project_id=project_id)).distinct()
    return qs.filter(is_public=True)


def flavor_get(actor: RequestContext, flavor_id: str) -> Flavor:
    """The flavor ``flavor_id`` (its flavorid); admins see every flavor, others public or granted
    ones. FlavorNotFound (404) otherwise."""
    qs = Flavor.objects.filter(flavorid=flavor_id)
    if not actor.is_admin:
        qs = _visible(qs, actor.project_id)
    flavor = qs.prefetch_related("extra_specs").first()
    if flavor is None:
        raise FlavorNotFound(flavor_id=flavor_id)
    return flavor


def flavor_get_any(flavor_id: str) -> Flavor:
    flavor = Flavor.objects.filter(flavorid=flavor_id).first()
    if flavor is None:
        raise FlavorNotFound(flavor_id=flavor_id)
    return flavor


def flavor_find(ref: str) -> Flavor:
    """The flavor ``ref`` names (its flavor id, else its name), for operators; FlavorNotFound."""
    flavor = Flavor.objects.filter(flavorid=ref).first() or Flavor.objects.filter(name=ref).first()
    if flavor is None:
        raise FlavorNotFound(flavor_id=ref)
    return flavor


@dataclass
class FlavorFilters:
    is_public: bool | None = True
    #: 2.102: flavors of exactly this name
    name: str | None = None
    min_ram: int | None = None
    min_disk: int | None = None
    sort_key: str = "flavorid"
    sort_dir: str = "asc"
    limit: int | None = None
    marker: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def flavor_list(actor: RequestContext, filters: FlavorFilters) -> list[Flavor]:
    """Flavors visible to ``actor`` sorted and paged as Nova does (``marker`` is a flavorid)."""
    qs = Flavor.objects.all()
    if not actor.is_admin:
        # As Nova: only admins list disabled flavors.
        qs = qs.filter(disabled=False)
    if filters.is_public is True:
        qs = _visible(qs, actor.project_id)
    elif filters.is_public is False:
        qs = qs.filter(is_public=False)
    if filters.name is not None:
        qs = qs.filter(name=filters.name)
    if filters.min_ram is not None:
        qs = qs.filter(memory_mb__gte=filters.min_ram)
    if filters.min_disk is not None:
        qs = qs.filter(root_gb__gte=filters.min_disk)
    if filters.sort_key not in SORT_KEYS:
        raise Invalid(f"Sort key supplied is invalid: {filters.sort_key}")
    if filters.sort_dir not in ("asc", "desc"):
        raise Invalid(f"Sort direction supplied is invalid: {filters.sort_dir}")
    prefix = "-" if filters.sort_dir == "desc" else ""
    ordering = [f"{prefix}{filters.sort_key}", f"{prefix}id"]
    flavors = list(qs.order_by(*ordering).prefetch_related("extra_specs"))
    if filters.marker is not None:
        ids = [f.flavorid for f in flavors]
        if filters.marker not in ids:
            raise FlavorMarkerNotFound(marker=filters.marker)
        flavors = flavors[ids.index(filters.marker) + 1:]
    limit = MAX_LIMIT if filters.limit is None else min(filters.limit, MAX_LIMIT)
    return flavors[:limit]


def extra_specs_of(flavor: Flavor) -> dict[str, str]:
    return {spec.key: spec.value for spec in flavor.extra_specs.all()}


def _notify(event: str, flavor: Flavor) -> None:
    """Nova's versioned ``flavor.<event>`` notification (FlavorPayload 1.4)."""
    payload = {
        "flavorid": flavor.flavorid, "name": flavor.name, "memory_mb": flavor.memory_mb, "vcpus": flavor.vcpus,
        "root_gb": flavor.root_gb, "ephemeral_gb": flavor.ephemeral_gb, "swap": flavor.swap,
        "rxtx_factor": flavor.rxtx_factor, "vcpu_weight": flavor.vcpu_weight, "disabled": flavor.disabled,
        "is_public": flavor.is_public, "description": flavor.description,
        "extra_specs": extra_specs_of(flavor) if flavor.pk else None,
        "projects": list(flavor.projects.values_list("project_id", flat=True)) if flavor.pk else None,
    }
    notify(f"flavor.{event}", payload, payload_name="FlavorPayload", version="1.4")


# --- services (admin) ---------------------------------------------------------------------------------


def flavor_create(
    *, actor: RequestContext, name: str, memory_mb: int, vcpus: int, root_gb: int, flavorid: str | None = None,
    ephemeral_gb: int = 0, swap: int = 0, rxtx_factor: float = 1.0, is_public: bool = True,
    description: str | None = None,
) -> Flavor:
    """Create a flavor (policy ``os-flavor-manage:create``). 409 on a duplicate name or id."""
    authorize(actor, "os_compute_api:os-flavor-manage:create")
    flavorid = flavorid or str(uuid.uuid4())
    if Flavor.objects.filter(flavorid=flavorid).exists():
        raise FlavorExists(flavor_id=flavorid)
    if Flavor.objects.filter(name=name).exists():
        raise FlavorNameExists(name=name)
    try:
        with api_atomic():
            flavor = Flavor.objects.create(
                flavorid=flavorid, name=name, memory_mb=memory_mb, vcpus=vcpus, root_gb=root_gb,
                ephemeral_gb=ephemeral_gb, swap=swap, rxtx_factor=rxtx_factor, is_public=is_public,
                description=description,
            )
    except IntegrityError:
        raise FlavorNameExists(name=name) from None
    _notify("create", flavor)
    return flavor


def flavor_update_description(*, actor: RequestContext, flavor_id: str, description: str | None) -> Flavor:
    """Change a flavor's description (2.55). Raises ``PolicyNotAuthorized``
    (``os_compute_api:os-flavor-manage:update``, checked before the lookup), ``FlavorNotFound``."""
    authorize(actor, "os_compute_api:os-flavor-manage:update")
    flavor = flavor_get_any(flavor_id)
    flavor.description = description
    flavor.updated_at = timezone.now()
    flavor.save(update_fields=["description", "updated_at"])
    _notify("update", flavor)
    return flavor


def flavor_delete(*, actor: RequestContext, flavor_id: str) -> None:
    """Delete a flavor; servers keep their embedded copy (``instance.flavor``)."""
    authorize(actor, "os_compute_api:os-flavor-manage:delete")
    flavor = flavor_get_any(flavor_id)
    _notify("delete", flavor)
    flavor.delete()


def extra_specs_set(*, actor: RequestContext, flavor_id: str, specs: dict[str, str], rule: str) -> dict[str, str]:
    """Create or update extra specs (``rule`` is the create or update rule of the calling API,
    checked before the flavor lookup). Raises ``PolicyNotAuthorized``, ``FlavorNotFound``."""
    authorize(actor, rule)
    flavor = flavor_get_any(flavor_id)
    with api_atomic():
        for key, value in specs.items():
            FlavorExtraSpec.objects.update_or_create(flavor=flavor, key=key, defaults={"value": value})
    return specs


def extra_spec_delete(*, actor: RequestContext, flavor_id: str, key: str) -> None:
    """Remove one extra spec. Raises ``PolicyNotAuthorized``
    (``os_compute_api:os-flavor-extra-specs:delete``), ``FlavorNotFound``, ``FlavorExtraSpecNotFound``."""
    authorize(actor, "os_compute_api:os-flavor-extra-specs:delete")
    flavor = flavor_get_any(flavor_id)
    if not FlavorExtraSpec.objects.filter(flavor=flavor, key=key).delete()[0]:
        raise FlavorExtraSpecNotFound(flavor_id=flavor.flavorid, key=key)


def flavor_access_list(flavor: Flavor) -> list[dict[str, str]]:
    return [
        {"flavor_id": flavor.flavorid, "tenant_id": project_id}
        for project_id in flavor.projects.order_by("project_id").values_list("project_id", flat=True)
    ]


def flavor_access_add(*, actor: RequestContext, flavor_id: str, project_id: str) -> list[dict[str, str]]:
    """Give ``project_id`` access to a private flavor; returns the access list.

    Raises ``PolicyNotAuthorized`` (``os_compute_api:os-flavor-access:add_tenant_access``),
    ``FlavorNotFound``, ``Invalid`` (no such project), ``Conflict`` (public flavor),
    ``FlavorAccessExists``.
    """
    authorize(actor, "os_compute_api:os-flavor-access:add_tenant_access")
    flavor = flavor_get_any(flavor_id)
    try:
        project_get(project_id)
    except NotFound:
        raise Invalid(f"Project ID {project_id} is not a valid project.") from None
    if flavor.is_public:
        raise Conflict("Can not add access to a public flavor.")
    _, created = FlavorProject.objects.get_or_create(flavor=flavor, project_id=project_id)
    if not created:
        raise FlavorAccessExists(flavor_id=flavor.flavorid, project_id=project_id)
    return flavor_access_list(flavor)


def flavor_access_remove(*, actor: RequestContext, flavor_id: str, project_id: str) -> list[dict[str, str]]:
    """Take ``project_id``'s access to a flavor away; returns the access list. Raises
    ``PolicyNotAuthorized`` (``os_compute_api:os-flavor-access:remove_tenant_access``),
    ``FlavorNotFound``, ``FlavorAccessNotFound``."""
    authorize(actor, "os_compute_api:os-flavor-access:remove_tenant_access")
    flavor = flavor_get_any(flavor_id)
    if not FlavorProject.objects.filter(flavor=flavor, project_id=project_id).delete()[0]:
        raise FlavorAccessNotFound(flavor_id=flavor.flavorid, project_id=project_id)
    return flavor_access_list(flavor)
