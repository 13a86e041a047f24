"""Neutron's per-project quotas (``/v2.0/quotas``): limits, defaults, usage and the checks on create.

A project's limit for a resource is its own ``NetworkQuota`` row, else Neutron's default (the security
group ones from settings: ``QUOTA_SECURITY_GROUP`` and ``QUOTA_SECURITY_GROUP_RULE``); -1 is unlimited.
Usage is counted from the resources' own tables, never stored; nothing is ever ``reserved`` (Neutron
counts its reservations only inside a request). Creating a network, subnet, port, security group or
rule past its project's limit raises ``OverQuota`` (409, Neutron's words).

Raises ``PolicyNotAuthorized`` (403) from ``get_quota`` / ``update_quota`` / ``delete_quota``,
``AdminRequired`` (403) for the admin-only listing, ``Invalid`` (400) for a malformed update.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db import transaction

from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Conflict, Forbidden, Invalid, NotFound
from cloudcore.core.policy import authorize

from .models import Network, NetworkQuota, Port, SecurityGroup, SecurityGroupRule, Subnet

#: Neutron's largest limit (its database integer).
MAX_LIMIT = 2**31 - 1


class OverQuota(Conflict):
    message = "Quota exceeded for resources: ['%(resource)s']."


class TenantQuotaNotFound(NotFound):
    message = "Quota for tenant %(tenant_id)s could not be found."


class AdminRequired(Forbidden):
    message = "User does not have admin privileges: %(reason)s."


def defaults() -> dict[str, int]:
    """Neutron's default limits, in the order its quota bodies carry them."""
    return {
        "network": 100, "subnet": 100, "subnetpool": -1, "port": 500, "router": 10, "floatingip": 50,
        "security_group": settings.QUOTA_SECURITY_GROUP,
        "security_group_rule": settings.QUOTA_SECURITY_GROUP_RULE,
        "rbac_policy": 10,
    }


RESOURCES: tuple[str, ...] = tuple(defaults())

#: How each counted resource's usage is found; the others count 0 (nothing of theirs exists here).
COUNTERS: dict[str, Callable[[str], int]] = {
    "network": lambda project_id: Network.objects.filter(project_id=project_id).count(),
    "subnet": lambda project_id: Subnet.objects.filter(project_id=project_id).count(),
    "port": lambda project_id: Port.objects.filter(project_id=project_id).count(),
    "security_group": lambda project_id: SecurityGroup.objects.filter(project_id=project_id).count(),
    "security_group_rule": lambda project_id: SecurityGroupRule.objects.filter(project_id=project_id).count(),
}


def quota_limits(project_id: str) -> dict[str, int]:
    """``project_id``'s limits: its own rows over the defaults."""
    limits = defaults()
    for row in NetworkQuota.objects.filter(project_id=project_id, resource__in=RESOURCES):
        limits[row.resource] = row.hard_limit
    return limits


def quota_usage(project_id: str) -> dict[str, int]:
    """What ``project_id`` holds of every resource."""
    return {name: COUNTERS[name](project_id) if name in COUNTERS else 0 for name in RESOURCES}


def quota_check(resource: str, project_id: str, *, adding: int = 1) -> None:
    """Raise OverQuota if ``project_id`` may not create ``adding`` more of ``resource``. Call it inside
    the transaction that creates them."""
    limit = quota_limits(project_id)[resource]
    if limit >= 0 and COUNTERS[resource](project_id) + adding > limit:
        raise OverQuota(resource=resource)


def quota_get(ctx: RequestContext, project_id: str) -> dict[str, int]:
    authorize(ctx, "get_quota", {"project_id": project_id})
    return quota_limits(project_id)


def quota_defaults(ctx: RequestContext, project_id: str) -> dict[str, int]:
    authorize(ctx, "get_quota", {"project_id": project_id})
    return defaults()


def quota_details(ctx: RequestContext, project_id: str) -> dict[str, dict[str, int]]:
    """Every resource's ``limit``, ``used`` and ``reserved`` (always 0)."""
    authorize(ctx, "get_quota", {"project_id": project_id})
    limits, used = quota_limits(project_id), quota_usage(project_id)
    return {name: {"limit": limits[name], "used": used[name], "reserved": 0} for name in RESOURCES}


def quota_list(ctx: RequestContext) -> list[tuple[str, dict[str, int]]]:
    """Every project with a limit of its own, and its limits (admins only, as Neutron)."""
    if not ctx.is_admin:
        raise AdminRequired(reason="Only admin can view or configure quota")
    projects = NetworkQuota.objects.order_by("project_id").values_list("project_id", flat=True).distinct()
    return [(project_id, quota_limits(project_id)) for project_id in projects]


def _limit(resource: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise Invalid(f"Invalid input for {resource}. Reason: '{value}' is not an integer.")
    try:
        number = int(value)
    except ValueError:
        raise Invalid(f"Invalid input for {resource}. Reason: '{value}' is not an integer.") from None
    if number < -1:
        raise Invalid(f"Invalid input for {resource}. Reason: '{number}' is too small - must be at least '-1'.")
    if number > MAX_LIMIT:
        raise Invalid(f"Invalid input for {resource}. Reason: '{number}' is too large - must be no larger "
                      f"than '{MAX_LIMIT}'.")
    return number


def quota_update(ctx: RequestContext, project_id: str, *, changes: dict[str, Any]) -> dict[str, int]:
    """Store ``project_id``'s own limits; its resulting limits.

    ``check_limit: true`` (Neutron's ``quota-check-limit``) refuses a limit below the current usage; the
    project's own id in the body (openstacksdk sends it) is ignored. Raises Invalid for an unknown
    resource or a value that is not an integer of at least -1."""
    authorize(ctx, "update_quota", {"project_id": project_id})
    changes = {key: value for key, value in changes.items() if key not in ("project_id", "tenant_id")}
    check_limit = str(changes.pop("check_limit", False)).lower() == "true"
    unknown = sorted(set(changes) - set(RESOURCES))
    if unknown:
        raise Invalid(f"Unrecognized attribute(s) '{', '.join(unknown)}'")
    limits = {resource: _limit(resource, value) for resource, value in changes.items()}
    if check_limit:
        used = quota_usage(project_id)
        for resource, limit in limits.items():
            if 0 <= limit < used[resource]:
                raise Invalid(f"Invalid input for {resource}. Reason: Quota limit {limit} for {resource} must be "
                              f"greater than or equal to already used {used[resource]}.")
    with transaction.atomic():
        for resource, limit in limits.items():
            NetworkQuota.objects.update_or_create(project_id=project_id, resource=resource,
                                                  defaults={"hard_limit": limit})
    return quota_limits(project_id)


def quota_delete(ctx: RequestContext, project_id: str) -> None:
    """Drop ``project_id``'s own limits: it takes the defaults again. TenantQuotaNotFound (404) when it
    had none, as Neutron answers."""
    authorize(ctx, "delete_quota", {"project_id": project_id})
    deleted, _ = NetworkQuota.objects.filter(project_id=project_id).delete()
    if not deleted:
        raise TenantQuotaNotFound(tenant_id=project_id)
