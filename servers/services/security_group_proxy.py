"""Nova's security group proxy (``/os-security-groups``, ``/os-security-group-rules``; gone from 2.36):
the network service's groups and ingress rules in nova-network's words. Nova's policies are checked
first, then the network service's own; its conflicts (default group, group in use, duplicate rule)
are Nova's 400s and its quota refusals Nova's 403."""
from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from oslo_utils import uuidutils

from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Conflict, Forbidden, Invalid, NotFound
from cloudcore.core.policy import authorize
from networks import secgroups
from networks.quotas import OverQuota

if TYPE_CHECKING:  # annotations only: other apps read networks through its services
    from networks.models import SecurityGroup, SecurityGroupRule

class SecurityGroupNotFound(NotFound):
    message = "Security group %(id)s not found."


class SecurityGroupRuleNotFound(NotFound):
    message = "Rule (%(id)s) not found."


@contextmanager
def _nova_words(group_id: str | None = None) -> Iterator[None]:
    try:
        yield
    except OverQuota as exc:
        raise Forbidden(f"Quota exceeded: {exc.msg}") from None
    except (secgroups.SecurityGroupNotFound, secgroups.SecurityGroupNotFoundByNameOrId):
        raise SecurityGroupNotFound(id=group_id) from None
    except Conflict as exc:
        raise Invalid(exc.msg) from None


def _check_property(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise Invalid(f"Security group {what} is not a string or unicode")
    if not value.strip():
        raise Invalid(f"Security group {what} cannot be empty.")
    if len(value) > 255:
        raise Invalid(f"Security group {what} should not be greater than 255 characters.")
    return value


def group_list(*, actor: RequestContext, all_tenants: bool) -> list[SecurityGroup]:
    authorize(actor, "os_compute_api:os-security-groups:get", {"project_id": actor.project_id})
    groups = secgroups.security_group_list(actor, filters={})
    if not (all_tenants and actor.is_admin):
        groups = [g for g in groups if g.project_id == actor.project_id]
    return groups


def group_get(*, actor: RequestContext, group_id: str) -> SecurityGroup:
    authorize(actor, "os_compute_api:os-security-groups:show", {"project_id": actor.project_id})
    with _nova_words(group_id):
        return secgroups.security_group_get(actor, group_id)


def group_create(*, actor: RequestContext, name: Any, description: Any) -> SecurityGroup:
    authorize(actor, "os_compute_api:os-security-groups:create", {"project_id": actor.project_id})
    name, description = _check_property(name, "name"), _check_property(description, "description")
    with _nova_words():
        return secgroups.security_group_create(actor, name=name, description=description)


def group_update(*, actor: RequestContext, group_id: str, name: Any, description: Any) -> SecurityGroup:
    authorize(actor, "os_compute_api:os-security-groups:update", {"project_id": actor.project_id})
    name, description = _check_property(name, "name"), _check_property(description, "description")
    with _nova_words(group_id):
        group = secgroups.security_group_get(actor, group_id)
        return secgroups.security_group_update(actor, group, changes={"name": name, "description": description})


def group_delete(*, actor: RequestContext, group_id: str) -> None:
    authorize(actor, "os_compute_api:os-security-groups:delete", {"project_id": actor.project_id})
    with _nova_words(group_id):
        secgroups.security_group_delete(actor, secgroups.security_group_get(actor, group_id))


def _port(value: Any, name: str) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise Invalid(f"Invalid port range {name}: {value!r}.") from None


def _ports(protocol: str, from_port: Any, to_port: Any) -> tuple[int | None, int | None]:
    if from_port is None or to_port is None:
        raise Invalid("Not enough parameters to build a valid rule.")
    low, high = _port(from_port, "from_port"), _port(to_port, "to_port")
    if protocol == "icmp":
        for value in (low, high):
            if not -1 <= value <= 255:
                raise Invalid(f"Invalid ICMP type or code {value}.")
        return (None if low == -1 else low), (None if high == -1 or low == -1 else high)
    if not (1 <= low <= 65535 and 1 <= high <= 65535) or low > high:
        raise Invalid(f"Invalid port range {low}:{high}. Valid TCP ports should be between 1-65535")
    return low, high


def rule_create(*, actor: RequestContext, body: dict[str, Any]) -> SecurityGroupRule:
    """A new ingress rule from nova-network's fields (``parent_group_id``, ``ip_protocol``,
    ``from_port``, ``to_port``, and ``cidr`` or ``group_id``; no remote at all means 0.0.0.0/0)."""
    authorize(actor, "os_compute_api:os-security-groups:rule:create", {"project_id": actor.project_id})
    parent = str(body.get("parent_group_id") or "")
    if not uuidutils.is_uuid_like(parent):
        raise Invalid("Security group id should be uuid")
    with _nova_words(parent):
        secgroups.security_group_get(actor, parent)
    protocol = body.get("ip_protocol")
    if protocol is not None:
        protocol = str(protocol).lower()
        if protocol not in ("tcp", "udp", "icmp"):
            raise Invalid(f"Invalid IP protocol {body['ip_protocol']}.")
    low, high = _ports(protocol, body.get("from_port"), body.get("to_port")) if protocol else (None, None)
    cidr, group_id = body.get("cidr"), body.get("group_id")
    if cidr and group_id:
        raise Invalid("Not enough parameters to build a valid rule.")
    ethertype = "IPv4"
    if group_id:
        with _nova_words(str(group_id)):
            secgroups.security_group_get(actor, str(group_id))
    else:
        cidr = cidr or "0.0.0.0/0"
        try:
            ethertype = "IPv6" if ipaddress.ip_network(str(cidr), strict=False).version == 6 else "IPv4"
        except ValueError:
            raise Invalid(f"Invalid cidr {cidr}.") from None
    neutron = {"security_group_id": parent, "direction": "ingress", "ethertype": ethertype, "protocol": protocol,
               "port_range_min": low, "port_range_max": high, "remote_ip_prefix": None if group_id else cidr,
               "remote_group_id": str(group_id) if group_id else None}
    with _nova_words(parent):
        return secgroups.security_group_rule_create(actor, body=neutron)


def rule_delete(*, actor: RequestContext, rule_id: str) -> None:
    authorize(actor, "os_compute_api:os-security-groups:rule:delete", {"project_id": actor.project_id})
    try:
        rule = secgroups.security_group_rule_get(actor, rule_id)
    except NotFound:
        raise SecurityGroupRuleNotFound(id=rule_id) from None
    with _nova_words():
        secgroups.security_group_rule_delete(actor, rule)
