"""Neutron's quotas (the ``quotas`` and ``quota_details`` extensions): per-project limits on networks,
subnets, ports, routers, floating IPs, security groups and rules (API database).

A project's limit is its override (``NetworkQuota`` row, set by an admin) or the cloud's default
(``settings.QUOTA_<RESOURCE>``, Neutron's defaults); -1 is unlimited. Creating one more of a resource
past its limit raises ``OverQuota`` (409, Neutron's words). Ports that a router or a floating IP owns
(``network:*``) are not counted against anyone. ``subnetpool`` and ``rbac_policy`` are shown and settable
with Neutron's defaults; none of theirs exist here, so their usage is 0.
"""
from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Model

from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Conflict, Forbidden, Invalid, NotFound
from cloudcore.core.policy import authorize

from .models import FloatingIP, Network, NetworkQuota, Port, Router, SecurityGroup, SecurityGroupRule, Subnet

#: resource name -> (its settings default, the model whose rows of the project count)
RESOURCES: dict[str, tuple[str, type[Model]]] = {
    "network": ("QUOTA_NETWORK", Network),
    "subnet": ("QUOTA_SUBNET", Subnet),
    "port": ("QUOTA_PORT", Port),
    "router": ("QUOTA_ROUTER", Router),
    "floatingip": ("QUOTA_FLOATINGIP", FloatingIP),
    "security_group": ("QUOTA_SECURITY_GROUP", SecurityGroup),
    "security_group_rule": ("QUOTA_SECURITY_GROUP_RULE", SecurityGroupRule),
}


#: Resources Neutron has quotas on that nothing here creates: their defaults (Neutron's).
UNCOUNTED: dict[str, int] = {"subnetpool": -1, "rbac_policy": 10}

#: Neutron's largest limit (its database integer).
MAX_LIMIT = 2**31 - 1


class OverQuota(Conflict):
    message = "Quota exceeded for resources: ['%(resource)s']."


class TenantQuotaNotFound(NotFound):
    message = "Quota for tenant %(tenant_id)s could not be found."


class AdminRequired(Forbidden):
    message = "User does not have admin privileges: %(reason)s."


def defaults() -> dict[str, int]:
    return {**{name: int(getattr(settings, setting)) for name, (setting, _model) in RESOURCES.items()},
            **UNCOUNTED}


def limits_of(project_id: str) -> dict[str, int]:
    """The project's limits: its overrides over the defaults."""
    out = defaults()
    out.update(NetworkQuota.objects.filter(project_id=project_id).values_list("resource", "hard_limit"))
    return out


def usage_of(project_id: str, resource: str) -> int:
    if resource in UNCOUNTED:
        return 0
    model = RESOURCES[resource][1]
    qs = model.objects.filter(project_id=project_id)  # type: ignore[attr-defined]
    if model is Port:
        qs = qs.exclude(device_owner__startswith="network:")
    return int(qs.count())


def check(project_id: str, resource: str) -> None:
    """Raise OverQuota when the project already has as many of ``resource`` as its limit allows."""
    limit = limits_of(project_id)[resource]
    if limit >= 0 and usage_of(project_id, resource) >= limit:
        raise OverQuota(resource=resource)


# --- the API's entries ----------------------------------------------------------------------------


def quota_show(ctx: RequestContext, project_id: str) -> dict[str, int]:
    authorize(ctx, "get_quota", {"project_id": project_id})
    return limits_of(project_id)


def quota_defaults(ctx: RequestContext, project_id: str) -> dict[str, int]:
    authorize(ctx, "get_quota", {"project_id": project_id})
    return defaults()


def quota_details(ctx: RequestContext, project_id: str) -> dict[str, dict[str, int]]:
    authorize(ctx, "get_quota", {"project_id": project_id})
    return {name: {"limit": limit, "used": usage_of(project_id, name), "reserved": 0}
            for name, limit in limits_of(project_id).items()}


def quota_list(ctx: RequestContext) -> list[tuple[str, dict[str, int]]]:
    """The projects with overrides and their limits (admin only, whatever ``get_quota`` allows, as Neutron:
    AdminRequired)."""
    if not ctx.is_admin:
        raise AdminRequired(reason="Only admin can view or configure quota")
    projects = sorted(set(NetworkQuota.objects.values_list("project_id", flat=True)))
    return [(project_id, limits_of(project_id)) for project_id in projects]


def _limit(resource: str, value: Any) -> int:
    try:
        number = int(value) if not isinstance(value, bool) else None
    except (TypeError, ValueError):
        number = None
    if number is None:
        raise Invalid(f"Invalid input for {resource}. Reason: '{value}' is not an integer.")
    if number < -1:
        raise Invalid(f"Invalid input for {resource}. Reason: '{number}' is too small - must be at least '-1'.")
    if number > MAX_LIMIT:
        raise Invalid(f"Invalid input for {resource}. Reason: '{number}' is too large - must be no larger "
                      f"than '{MAX_LIMIT}'.")
    return number


def quota_update(ctx: RequestContext, project_id: str, *, changes: dict[str, Any]) -> dict[str, int]:
    """Set the project's limits (admin); each an integer from -1 to Neutron's largest.

    ``check_limit: true`` (Neutron's ``quota-check-limit``) refuses a limit below the current usage; the
    project's own id in the body (openstacksdk sends it) is ignored. Raises Invalid for an unknown
    resource or a bad value."""
    authorize(ctx, "update_quota", {"project_id": project_id})
    changes = {key: value for key, value in changes.items() if key not in ("project_id", "tenant_id")}
    check_limit = str(changes.pop("check_limit", False)).lower() == "true"
    known = defaults()
    unknown = sorted(set(changes) - set(known))
    if unknown:
        raise Invalid(f"Unrecognized attribute(s) '{', '.join(unknown)}'")
    values = {name: _limit(name, value) for name, value in changes.items()}
    if check_limit:
        for name, number in values.items():
            used = usage_of(project_id, name)
            if 0 <= number < used:
                raise Invalid(f"Invalid input for {name}. Reason: Quota limit {number} for {name} must be "
                              f"greater than or equal to already used {used}.")
    with transaction.atomic():
        for name, number in values.items():
            NetworkQuota.objects.update_or_create(project_id=project_id, resource=name,
                                                  defaults={"hard_limit": number})
    return limits_of(project_id)


def quota_delete(ctx: RequestContext, project_id: str) -> None:
    """Back to the defaults (admin). TenantQuotaNotFound (404) when the project had none, as Neutron."""
    authorize(ctx, "delete_quota", {"project_id": project_id})
    deleted, _ = NetworkQuota.objects.filter(project_id=project_id).delete()
    if not deleted:
        raise TenantQuotaNotFound(tenant_id=project_id)
