"""Server groups (``/os-server-groups``): a policy the scheduler applies to the group's members.

- ``affinity``: every member on one host; ``anti-affinity``: at most ``max_server_per_host``
  members (rule, 2.64; default 1) per host; ``soft-affinity`` / ``soft-anti-affinity`` (2.15):
  preferences the scheduler weighs, never a reason for "no valid host".
- A server joins a group at create time with the scheduler hint ``group`` (one group per server);
  the policy then holds on every move (the request spec keeps the group).
- Quotas: ``server_groups`` per project, ``server_group_members`` per group (live members).
"""
from __future__ import annotations

from typing import Any

from cells.selectors import mapped_instance_uuids
from cloudcore.core import notifications
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Invalid, NotFound, QuotaExceeded
from cloudcore.core.policy import authorize

from ..models import InstanceGroup, InstanceGroupMember
from .notify import api_publisher
from .quotas import quota_limits

POLICIES = ("affinity", "anti-affinity")
SOFT_POLICIES = ("soft-affinity", "soft-anti-affinity")


class InstanceGroupNotFound(NotFound):
    message = "Instance group %(group_uuid)s could not be found."


class GroupQuotaExceeded(QuotaExceeded):
    message = "Quota exceeded, too many server groups."


class GroupMembersQuotaExceeded(QuotaExceeded):
    message = "Quota exceeded, too many servers in group"


def group_payload(group: InstanceGroup, members: list[str] | None = None) -> dict[str, Any]:
    """Nova's ``ServerGroupPayload`` (1.1) of ``group`` (``members``: its member uuids, read when
    None); ``rules`` as strings, ``hosts`` not given, as Nova's."""
    if members is None:
        members = list(group.members.order_by("id").values_list("instance_uuid", flat=True))
    return {"uuid": str(group.uuid), "name": group.name, "user_id": group.user_id, "project_id": group.project_id,
            "policies": [group.policy], "members": members, "hosts": None, "policy": group.policy,
            "rules": {key: str(value) for key, value in (group.rules or {}).items()}}


def _notify(action: str, payload: dict[str, Any]) -> None:
    """Nova's versioned ``server_group.<action>`` (create, delete, add_member), from the API."""
    notifications.notify(f"server_group.{action}", payload, publisher_id=api_publisher(),
                         payload_name="ServerGroupPayload", version="1.1")


def _target(group: InstanceGroup) -> dict[str, Any]:
    return {"project_id": group.project_id, "user_id": group.user_id}


def _visible(actor: RequestContext, group_uuid: str) -> InstanceGroup:
    group = InstanceGroup.objects.filter(uuid=group_uuid).first()
    if group is None or not (actor.is_admin or group.project_id == actor.project_id):
        raise InstanceGroupNotFound(group_uuid=group_uuid)
    return group


def check_policy(policy: str, rules: dict[str, Any] | None) -> dict[str, Any]:
    """The rules of a valid ``policy``; Invalid (400) otherwise."""
    allowed = POLICIES + SOFT_POLICIES
    if policy not in allowed:
        raise Invalid(f"Invalid input for field/attribute policy. Value: {policy}. '{policy}' is not one of "
                      f"{list(allowed)}")
    rules = dict(rules or {})
    if rules and policy != "anti-affinity":
        raise Invalid(f"Only anti-affinity policy supports rules, got policy {policy} with rules {rules}.")
    unknown = sorted(set(rules) - {"max_server_per_host"})
    if unknown:
        raise Invalid(f"Invalid input for field/attribute rules. Additional properties are not allowed "
                      f"({', '.join(repr(k) for k in unknown)} was unexpected)")
    if "max_server_per_host" in rules:
        value = rules["max_server_per_host"]
        if isinstance(value, bool) or not str(value).isdigit() or int(value) < 1:
            raise Invalid("Invalid input for field/attribute max_server_per_host. Value: "
                          f"{value}. '{value}' is not a positive integer.")
        rules["max_server_per_host"] = int(value)
    return rules


def server_group_create(*, actor: RequestContext, name: str, policy: str,
                        rules: dict[str, Any] | None = None) -> InstanceGroup:
    """Create a group in the actor's project (quota ``server_groups``)."""
    authorize(actor, "os_compute_api:os-server-groups:create",
              {"project_id": actor.project_id, "user_id": actor.user_id})
    rules = check_policy(policy, rules)
    limit = quota_limits(actor.project_id)["server_groups"]
    if 0 <= limit <= InstanceGroup.objects.filter(project_id=actor.project_id).count():
        raise GroupQuotaExceeded()
    group = InstanceGroup.objects.create(name=name, project_id=str(actor.project_id), user_id=str(actor.user_id),
                                         policy=policy, rules=rules)
    _notify("create", group_payload(group, members=[]))
    return group


def server_group_get(*, actor: RequestContext, group_uuid: str) -> InstanceGroup:
    group = _visible(actor, group_uuid)
    authorize(actor, "os_compute_api:os-server-groups:show", _target(group))
    return group


def server_group_list(*, actor: RequestContext, all_projects: bool = False, limit: int | None = None,
                      offset: int = 0) -> list[InstanceGroup]:
    """The actor's project's groups; every project's for an admin asking ``all_projects``."""
    authorize(actor, "os_compute_api:os-server-groups:index",
              {"project_id": actor.project_id, "user_id": actor.user_id})
    qs = InstanceGroup.objects.all()
    if all_projects:
        authorize(actor, "os_compute_api:os-server-groups:index:all_projects",
                  {"project_id": actor.project_id, "user_id": actor.user_id})
    else:
        qs = qs.filter(project_id=actor.project_id)
    groups = list(qs[offset:offset + limit] if limit is not None else qs[offset:])
    return groups


def server_group_delete(*, actor: RequestContext, group_uuid: str) -> None:
    group = _visible(actor, group_uuid)
    authorize(actor, "os_compute_api:os-server-groups:delete", _target(group))
    payload = group_payload(group)
    group.delete()
    _notify("delete", payload)


def live_members(group: InstanceGroup) -> list[str]:
    """Uuids of the group's servers that still exist (not deleted, not queued for delete)."""
    uuids = list(group.members.order_by("id").values_list("instance_uuid", flat=True))
    live = mapped_instance_uuids(uuids, live_only=True)
    return [uuid for uuid in uuids if uuid in live]


def group_for_create(*, actor: RequestContext, group_uuid: str, count: int) -> dict[str, Any]:
    """Check the ``group`` hint of a create of ``count`` servers; the group as the request spec
    keeps it. InstanceGroupNotFound is a 400 here (a bad hint, as Nova answers)."""
    try:
        group = _visible(actor, group_uuid)
    except InstanceGroupNotFound as exc:
        raise Invalid(str(exc)) from None
    limit = quota_limits(group.project_id)["server_group_members"]
    if 0 <= limit < len(live_members(group)) + count:
        raise GroupMembersQuotaExceeded()
    return {"uuid": group.uuid, "policy": group.policy, "rules": dict(group.rules or {})}


def group_members_add(*, group_uuid: str, instance_uuids: list[str]) -> None:
    """Join the new servers to their group (inside the create's transaction)."""
    group = InstanceGroup.objects.get(uuid=group_uuid)
    members = list(group.members.order_by("id").values_list("instance_uuid", flat=True))
    InstanceGroupMember.objects.bulk_create(
        [InstanceGroupMember(group=group, instance_uuid=uuid) for uuid in instance_uuids])
    for uuid in instance_uuids:  # one server_group.add_member per server, as Nova adds them one by one
        members.append(uuid)
        _notify("add_member", group_payload(group, members=list(members)))


def groups_of(instance_uuids: list[str]) -> dict[str, str]:
    """``{instance_uuid: group uuid}`` of the servers that are in a group (2.71 ``server_groups``)."""
    rows = InstanceGroupMember.objects.filter(instance_uuid__in=instance_uuids).values_list(
        "instance_uuid", "group__uuid")
    return dict(rows)
