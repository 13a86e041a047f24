"""Per-project quotas as Nova's database driver keeps them (API database).

A project's limit for a resource is its own ``QuotaLimit`` row, else the ``default`` quota
class's ``QuotaClass`` row, else the built-in default (``QUOTA_INSTANCES``, ``QUOTA_CORES`` and
``QUOTA_RAM`` from settings, Nova's defaults for the rest); -1 is unlimited.

Usage is counted as Nova counts it, never stored: instances, cores and RAM from the cells (live,
non-hidden instances, so a server in VERIFY_RESIZE of a cross-cell move counts once) plus the
build requests not yet scheduled; key pairs per user; metadata items per request. Server groups
do not exist yet: their limits are kept and shown but nothing is counted against them.

Raises ``QuotaExceeded`` (403) when a request would pass a limit, ``Invalid`` (400) for an update
below the usage without ``force``, ``PolicyNotAuthorized`` (403) from the ``os-quota-sets`` and
``os-quota-class-sets`` rules.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db.models import BooleanField, Count, Q, QuerySet, Sum, Value

from cells.scatter import failed, scatter_gather
from cells.transactions import api_atomic
from cloudcore.core import scope
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Invalid, QuotaExceeded
from cloudcore.core.policy import authorize
from cloudcore.core.prepared import prepared_rows
from cloudcore.core.stamps import Remembered

from ..choices import VmState
from ..models import BuildRequest, Instance, KeyPair, QuotaClass, QuotaLimit

DEFAULT_CLASS = "default"

#: Resources with a stored limit, and Nova's defaults for those not taken from settings.
FIXED_DEFAULTS: dict[str, int] = {
    "metadata_items": 128,
    "injected_files": 5,
    "injected_file_content_bytes": 10240,
    "injected_file_path_bytes": 255,
    "key_pairs": 100,
    "server_groups": 10,
    "server_group_members": 10,
}

#: The nova-network resources Neutron now owns: shown below 2.36 (2.50 for quota classes), stored
#: when a client sets them there, never counted nor enforced (Nova keeps them for the same reason,
#: so that the old microversions' bodies do not change), with Nova's defaults.
NETWORK_PROXY_DEFAULTS: dict[str, int] = {
    "fixed_ips": -1,
    "floating_ips": 10,
    "security_groups": 10,
    "security_group_rules": 20,
}


def built_in_defaults() -> dict[str, int]:
    return {
        "instances": settings.QUOTA_INSTANCES,
        "cores": settings.QUOTA_CORES,
        "ram": settings.QUOTA_RAM,
        **FIXED_DEFAULTS,
        **NETWORK_PROXY_DEFAULTS,
    }


RESOURCES: tuple[str, ...] = ("instances", "cores", "ram", *FIXED_DEFAULTS, *NETWORK_PROXY_DEFAULTS)


class QuotaLimitBelowUsage(Invalid):
    message = ("Quota limit %(limit)s for %(resource)s must be greater than or equal to already used and "
               "reserved %(minimum)s.")


class InjectedFileLimitExceeded(QuotaExceeded):
    message = "Personality file limit exceeded"


class InjectedFilePathLimitExceeded(QuotaExceeded):
    message = "Personality file path exceeds maximum %(allowed)s"


class InjectedFileContentLimitExceeded(QuotaExceeded):
    message = "Personality file content exceeds maximum %(allowed)s"


class MetadataLimitExceeded(QuotaExceeded):
    message = ("Quota exceeded for metadata_items: Requested %(requested)s, but already used 0 of %(limit)s "
               "metadata_items")


@dataclass(frozen=True)
class Usage:
    instances: int = 0
    cores: int = 0
    ram: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.instances + other.instances, self.cores + other.cores, self.ram + other.ram)


def _class_rows(class_name: str) -> dict[str, int]:
    # read once per outermost request (cloudcore.core.scope); the writers below forget it
    return scope.memoized(("quota.class", class_name), lambda: dict(
        QuotaClass.objects.filter(class_name=class_name, resource__in=RESOURCES).values_list("resource", "hard_limit")))


def _project_rows(project_id: str) -> dict[str, int]:
    return scope.memoized(("quota.project", project_id), lambda: dict(
        QuotaLimit.objects.filter(project_id=project_id, resource__in=RESOURCES).values_list("resource", "hard_limit")))


def quota_class_limits(class_name: str = DEFAULT_CLASS) -> dict[str, int]:
    """The limits of a quota class: its rows over the built-in defaults."""
    return {**built_in_defaults(), **_class_rows(class_name)}


def _class_and_project_query(class_name: str, project_id: str) -> QuerySet[Any]:
    classes = QuotaClass.objects.filter(class_name=class_name, resource__in=RESOURCES).values_list(
        "resource", "hard_limit", Value(True, output_field=BooleanField()))
    projects = QuotaLimit.objects.filter(project_id=project_id, resource__in=RESOURCES).values_list(
        "resource", "hard_limit", Value(False, output_field=BooleanField()))
    return classes.union(projects, all=True)


#: the default class's and each project's limit rows as ``POST /servers`` reads them: remembered
#: while no quota limit or class row is written (``cloudcore.core.stamps``; ``servers.apps``
#: watches them)
QUOTAS_STAMP = "servers.quotas"
_limit_rows: Remembered[tuple[dict[str, int], dict[str, int]]] = Remembered(QUOTAS_STAMP, max_entries=4096)


def _class_and_project_rows(project_id: str) -> tuple[dict[str, int], dict[str, int]]:
    """``_class_rows(DEFAULT_CLASS)`` and ``_project_rows(project_id)``: when the request knows
    neither, remembered by the process or read in one statement (a UNION, its SQL built once per
    process: ``prepared_rows``), and memoised as those two would be."""
    class_key, project_key = ("quota.class", DEFAULT_CLASS), ("quota.project", project_id)
    current = scope.current()
    if current is not None and (class_key in current.memo or project_key in current.memo):
        return _class_rows(DEFAULT_CLASS), _project_rows(project_id)
    found = _limit_rows.get(project_id, lambda: _class_and_project_read(project_id))
    assert found is not None  # (the read always gives its two dicts)
    class_rows, project_rows = dict(found[0]), dict(found[1])
    scope.remember(class_key, class_rows)
    scope.remember(project_key, project_rows)
    return class_rows, project_rows


def _class_and_project_read(project_id: str) -> tuple[dict[str, int], dict[str, int]]:
    rows: dict[bool, dict[str, int]] = {True: {}, False: {}}
    for resource, hard_limit, of_class in prepared_rows("quota.class_and_project", _class_and_project_query,
                                                        (DEFAULT_CLASS, project_id)):
        rows[bool(of_class)][resource] = hard_limit
    return rows[True], rows[False]


def quota_limits(project_id: str | None = None) -> dict[str, int]:
    """The limits of ``project_id``: its own rows over the ``default`` class."""
    if not project_id:
        return quota_class_limits()
    class_rows, project_rows = _class_and_project_rows(project_id)
    return {**built_in_defaults(), **class_rows, **project_rows}


def quota_usage(project_id: str) -> Usage:
    """Instances, cores and RAM in use by ``project_id`` across every cell.

    As Nova counts cores and RAM from placement: a shelved-offloaded server holds its instance
    but no cores or RAM (its unshelve checks them again, ``quota_check_unshelve``)."""

    def count(_cell: object) -> Usage:
        live = Instance.objects.filter(project_id=project_id, hidden=False)
        placed = ~Q(vm_state=VmState.SHELVED_OFFLOADED)
        agg = live.aggregate(n=Count("id"), cores=Sum("vcpus", filter=placed), ram=Sum("memory_mb", filter=placed))
        return Usage(agg["n"] or 0, agg["cores"] or 0, agg["ram"] or 0)

    total = Usage()
    for result in scatter_gather(count).values():
        if not failed(result):
            total = total + result  # type: ignore[operator]
    for br in BuildRequest.objects.filter(project_id=project_id).only("instance"):
        flavor = br.instance.get("flavor", {})
        total = total + Usage(1, int(flavor.get("vcpus", 0)), int(flavor.get("memory_mb", 0)))
    return total


def quota_in_use(project_id: str, user_id: str | None = None) -> dict[str, int]:
    """Every resource's usage as Nova's detail view counts it: key pairs only for a user."""
    usage = quota_usage(project_id)
    in_use = dict.fromkeys(RESOURCES, 0)
    in_use.update(instances=usage.instances, cores=usage.cores, ram=usage.ram)
    if user_id:
        in_use["key_pairs"] = KeyPair.objects.filter(user_id=user_id).count()
    return in_use


def quota_check(*, project_id: str, instances: int, cores: int, ram: int) -> None:
    """Raise QuotaExceeded (403) if adding this much would pass a limit (-1 = unlimited)."""
    limits = quota_limits(project_id)
    usage = quota_usage(project_id)
    wanted = {"instances": instances, "cores": cores, "ram": ram}
    used = {"instances": usage.instances, "cores": usage.cores, "ram": usage.ram}
    over = [r for r, n in wanted.items() if n and limits[r] >= 0 and used[r] + n > limits[r]]
    if over:
        # Nova's TooManyInstances text, e.g. "Quota exceeded for instances: Requested 1, but
        # already used 10 of 10 instances".
        overs = ", ".join(over)
        req = ", ".join(str(wanted[r]) for r in over)
        used_s = ", ".join(str(used[r]) for r in over)
        allowed = ", ".join(str(limits[r]) for r in over)
        raise QuotaExceeded(
            f"Quota exceeded for {overs}: Requested {req}, but already used {used_s} of {allowed} {overs}"
        )


def quota_check_unshelve(*, instance: Instance) -> None:
    """Unshelving an offloaded server takes its cores and RAM back: QuotaExceeded if they no
    longer fit (a server shelved but not offloaded still holds them)."""
    if instance.vm_state == VmState.SHELVED_OFFLOADED:
        quota_check(project_id=instance.project_id, instances=0, cores=instance.vcpus, ram=instance.memory_mb)


def quota_check_metadata(*, project_id: str, count: int) -> None:
    """Raise MetadataLimitExceeded (403) if a server would carry more than ``metadata_items``."""
    limit = quota_limits(project_id)["metadata_items"]
    if 0 <= limit < count:
        raise MetadataLimitExceeded(requested=count, limit=limit)


def quota_check_injected_files(*, project_id: str, files: list[tuple[str, bytes]]) -> None:
    """Nova's personality limits (403): the number of files first (``injected_files``), then the
    longest path (``injected_file_path_bytes``), then the largest decoded content
    (``injected_file_content_bytes``)."""
    limits = quota_limits(project_id)
    if 0 <= limits["injected_files"] < len(files):
        raise InjectedFileLimitExceeded()
    path_limit, content_limit = limits["injected_file_path_bytes"], limits["injected_file_content_bytes"]
    if 0 <= path_limit < max((len(path) for path, _ in files), default=0):
        raise InjectedFilePathLimitExceeded(allowed=path_limit)
    if 0 <= content_limit < max((len(content) for _, content in files), default=0):
        raise InjectedFileContentLimitExceeded(allowed=content_limit)


def quota_keypairs_allow(*, project_id: str | None, user_id: str) -> bool:
    """May ``user_id`` own one more key pair under its project's ``key_pairs`` limit?"""
    limit = quota_limits(project_id)["key_pairs"]
    return limit < 0 or KeyPair.objects.filter(user_id=user_id).count() < limit


def _check_not_below_usage(project_id: str, limits: dict[str, int]) -> None:
    in_use = quota_in_use(project_id)
    for resource, limit in limits.items():
        if limit >= 0 and in_use.get(resource, 0) > limit:
            raise QuotaLimitBelowUsage(limit=limit, resource=resource, minimum=in_use[resource])


def quota_set_update(*, actor: RequestContext, project_id: str, limits: dict[str, int],
                     force: bool = False, user_id: str | None = None) -> dict[str, int]:
    """Store ``project_id``'s own limits (unknown resources ignored); the resulting limits.

    Without ``force`` a limit below the project's usage is refused (QuotaLimitBelowUsage, 400).
    """
    authorize(actor, "os_compute_api:os-quota-sets:update", {"project_id": project_id, "user_id": user_id})
    limits = {r: v for r, v in limits.items() if r in RESOURCES}
    if not force:
        _check_not_below_usage(project_id, limits)
    with api_atomic():
        for resource, limit in limits.items():
            QuotaLimit.objects.update_or_create(project_id=project_id, resource=resource,
                                                defaults={"hard_limit": limit})
    scope.forget(("quota.project", project_id))
    return quota_limits(project_id)


def quota_set_delete(*, actor: RequestContext, project_id: str, user_id: str | None = None) -> None:
    """Drop ``project_id``'s own limits: it takes the ``default`` class's again."""
    authorize(actor, "os_compute_api:os-quota-sets:delete", {"project_id": project_id, "user_id": user_id})
    QuotaLimit.objects.filter(project_id=project_id).delete()
    scope.forget(("quota.project", project_id))


def quota_class_update(*, actor: RequestContext, class_name: str, limits: dict[str, int]) -> dict[str, int]:
    """Store a quota class's limits (only ``default`` is applied to projects)."""
    authorize(actor, "os_compute_api:os-quota-class-sets:update", {"quota_class": class_name})
    with api_atomic():
        for resource, limit in limits.items():
            if resource in RESOURCES:
                QuotaClass.objects.update_or_create(class_name=class_name, resource=resource,
                                                    defaults={"hard_limit": limit})
    scope.forget(("quota.class", class_name))
    return quota_class_limits(class_name)
