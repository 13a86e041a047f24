"""Neutron's quotas (the ``quotas`` and ``quota_details`` extensions): per-project limits on networks,
subnets, ports, routers, floating IPs, security groups and rules (API database).

A project's limit is its override (``NetworkQuota`` row, set by an admin) or the cloud's default
(``settings.QUOTA_<RESOURCE>``, Neutron's defaults); -1 is unlimited. Creating one more of a resource
past its limit raises ``OverQuota`` (409, Neutron's words). Ports that a router or a floating IP owns
(``network:*``) are not counted against anyone.
"""
from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Model

from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Conflict, Invalid, PolicyNotAuthorized
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


class OverQuota(Conflict):
    message = "Quota exceeded for resources: ['%(resource)s']."


def defaults() -> dict[str, int]:
    return {name: int(getattr(settings, setting)) for name, (setting, _model) in RESOURCES.items()}


def limits_of(project_id: str) -> dict[str, int]:
    """The project's limits: its overrides over the defaults."""
    out = defaults()
    out.update(NetworkQuota.objects.filter(project_id=project_id).values_list("resource", "hard_limit"))
    return out


def usage_of(project_id: str, resource: str) -> int:
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
    """The projects with overrides and their limits (admin only, whatever ``get_quota`` allows)."""
    if not ctx.is_admin:
        raise PolicyNotAuthorized(action="get_quota")
    projects = sorted(set(NetworkQuota.objects.values_list("project_id", flat=True)))
    return [(project_id, limits_of(project_id)) for project_id in projects]


def quota_update(ctx: RequestContext, project_id: str, *, changes: dict[str, Any]) -> dict[str, int]:
    """Set the project's limits (admin); each an integer of at least -1."""
    authorize(ctx, "update_quota", {"project_id": project_id})
    unknown = sorted(set(changes) - set(RESOURCES))
    if unknown:
        raise Invalid(f"Unrecognized attribute(s) '{', '.join(unknown)}'")
    values: dict[str, int] = {}
    for name, value in changes.items():
        try:
            number = int(value)
        except (TypeError, ValueError):
            number = -2
        if isinstance(value, bool) or number < -1:
            raise Invalid(f"Invalid input for {name}. Reason: '{value}' should be an integer of at least -1.")
        values[name] = number
    with transaction.atomic():
        for name, number in values.items():
            NetworkQuota.objects.update_or_create(project_id=project_id, resource=name,
                                                  defaults={"hard_limit": number})
    return limits_of(project_id)


def quota_delete(ctx: RequestContext, project_id: str) -> None:
    """Back to the defaults (admin)."""
    authorize(ctx, "delete_quota", {"project_id": project_id})
    NetworkQuota.objects.filter(project_id=project_id).delete()
