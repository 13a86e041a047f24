"""Security groups as Neutron keeps them: groups, rules, each project's ``default`` group, quotas,
and the groups and allowed address pairs of ports (API database).

Every project has exactly one ``default`` group, made on the project's first use (listing, showing or
creating groups, creating a port without ``security_groups``, booting a server) with Neutron's four
default rules: egress anywhere over IPv4 and IPv6, ingress from members of the same group over IPv4
and IPv6. Every other new group starts with the two egress rules. A rule is validated as Neutron does
(protocol name or number, port range or ICMP type/code, ethertype against the remote prefix, one
remote at most) and an identical rule is refused with ``SecurityGroupRuleExists``. Adding or removing
a rule bumps its group's ``revision_number``.

The compute hosts enforce the groups on their guests' ports: every change that alters a port's filter
tells them (``firewall.port_filters_changed``).
"""
from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import JSONField, QuerySet, Subquery

from cloudcore.core import scope
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Conflict, Invalid, NotFound
from cloudcore.core.policy import authorize
from cloudcore.core.prepared import prepared_in_objects, prepared_in_rows, prepared_objects
from cloudcore.core.stamps import Remembered

from . import quotas
from .firewall import port_filters_changed
from .models import InstanceSecurityGroups, Port, SecurityGroup, SecurityGroupRule


class SecurityGroupNotFound(NotFound):
    message = "Security group %(id)s does not exist"


class SecurityGroupNotFoundByNameOrId(NotFound):
    """What the neutron client says when its find of a group fails (Nova passes the words on)."""

    message = "Unable to find security_group with name or id '%(name)s'"


class SecurityGroupRuleNotFound(NotFound):
    message = "Security group rule %(id)s does not exist"


class SecurityGroupInUse(Conflict):
    message = "Security Group %(id)s in use."


class SecurityGroupCannotRemoveDefault(Conflict):
    message = "Insufficient rights for removing default security group."


class SecurityGroupCannotUpdateDefault(Conflict):
    message = "Updating default security group not allowed."


class SecurityGroupDefaultAlreadyExists(Conflict):
    message = "Default security group already exists."


class SecurityGroupRuleExists(Conflict):
    message = "Security group rule already exists. Rule id is %(rule_id)s."


class TagNotFound(NotFound):
    message = "Tag %(tag)s could not be found for %(resource)s %(resource_id)s."


class SecurityGroupRuleInvalidProtocol(Invalid):
    message = ("Security group rule protocol %(protocol)s not supported. Only protocol values %(values)s and "
               "integer representations [0 to 255] are supported.")


class SecurityGroupRuleInvalidEtherType(Invalid):
    message = "Security group rule for ethertype '%(ethertype)s' not supported. Allowed values are ['IPv4', 'IPv6']."


class SecurityGroupProtocolRequiredWithPorts(Invalid):
    message = "Must also specify protocol if port range is given."


class SecurityGroupInvalidPortRange(Invalid):
    message = "For TCP/UDP protocols, port_range_min must be <= port_range_max"


class SecurityGroupInvalidPortValue(Invalid):
    message = "Invalid value for port %(port)s"


class SecurityGroupInvalidIcmpValue(Invalid):
    message = "Invalid value for ICMP %(field)s (%(attr)s) %(value)s. It must be 0 to 255."


class SecurityGroupMissingIcmpType(Invalid):
    message = "ICMP code (port-range-max) %(value)s is provided but ICMP type (port-range-min) is missing."


class SecurityGroupInvalidProtocolForPortRange(Invalid):
    message = ("Invalid protocol %(protocol)s for port range, only supported for TCP, UDP, UDPLITE, SCTP and "
               "DCCP.")


class SecurityGroupRemoteGroupAndRemoteIpPrefix(Invalid):
    message = "Only remote_ip_prefix or remote_group_id may be provided."


class SecurityGroupRuleParameterConflict(Invalid):
    message = "Conflicting value ethertype %(ethertype)s for CIDR %(cidr)s"


class SecurityGroupEthertypeConflictWithProtocol(Invalid):
    message = "Invalid ethertype %(ethertype)s for protocol %(protocol)s."


class PortSecurityAndIPRequiredForSecurityGroups(Conflict):
    message = ("Port security must be enabled and port must have an IP address in order to use security "
               "groups.")


class PortSecurityPortHasSecurityGroup(Conflict):
    message = ("Port has security group associated. Cannot disable port security or ip address until security "
               "group is removed")


class AddressPairAndPortSecurityRequired(Conflict):
    message = "Port Security must be enabled in order to have allowed address pairs on a port."


class AllowedAddressPairsMissingIP(Invalid):
    message = "AllowedAddressPair must contain ip_address"


class DuplicateAddressPairInRequest(Invalid):
    message = "Request contains duplicate address pair: mac_address %(mac_address)s ip_address %(ip_address)s."


class AllowedAddressPairExhausted(Invalid):
    message = "The number of allowed address pair exceeds the maximum %(quota)s."


#: Neutron's protocol names and their IP protocol numbers.
PROTOCOLS = {
    "ah": 51, "dccp": 33, "egp": 8, "esp": 50, "gre": 47, "hopopt": 0, "icmp": 1, "icmpv6": 58, "igmp": 2,
    "ipip": 4, "ipv6-encap": 41, "ipv6-frag": 44, "ipv6-icmp": 58, "ipv6-nonxt": 59, "ipv6-opts": 60,
    "ipv6-route": 43, "ospf": 89, "pgm": 113, "rsvp": 46, "sctp": 132, "tcp": 6, "udp": 17, "udplite": 136,
    "vrrp": 112,
}
#: Protocols whose rules take a port range (TCP, UDP, DCCP, SCTP, UDPLITE).
PORT_PROTOCOLS = {6, 17, 33, 132, 136}
ICMP_PROTOCOLS = {1, 58}
#: Protocols that only make sense over IPv6.
IPV6_ONLY_PROTOCOLS = {"icmpv6", "ipv6-icmp", "ipv6-encap", "ipv6-frag", "ipv6-nonxt", "ipv6-opts", "ipv6-route"}
MAX_ALLOWED_ADDRESS_PAIRS = 10
DEFAULT_DESCRIPTION = "Default security group"
_MAC = re.compile(r"^([0-9a-fA-F]{2}[:-]){5}[0-9a-fA-F]{2}$")


# --- groups ---------------------------------------------------------------------------------------


def _target(project_id: str) -> dict[str, Any]:
    return {"project_id": project_id}


def _visible_groups(ctx: RequestContext) -> Any:
    qs = SecurityGroup.objects.all()
    if not ctx.is_admin:
        qs = qs.filter(project_id=ctx.project_id)
    return qs


def _add_rule(group: SecurityGroup, **fields: Any) -> SecurityGroupRule:
    return SecurityGroupRule.objects.create(security_group=group, project_id=group.project_id, **fields)


def _add_egress_rules(group: SecurityGroup) -> None:
    for ethertype in ("IPv4", "IPv6"):
        _add_rule(group, direction="egress", ethertype=ethertype)


def _default_group(project_id: str) -> QuerySet[SecurityGroup]:
    # read by every POST /servers: its SQL built once per process (prepared_objects); at most one
    # row (the unique constraint on is_default)
    return SecurityGroup.objects.filter(project_id=project_id, is_default=True)


def default_group_for(project_id: str) -> SecurityGroup:
    """The project's ``default`` group, made with Neutron's default rules when the project is made
    (``networks.apps``), or at first use for a project made without it. Two first uses at once both
    end up with the one row (the unique constraint on ``is_default`` decides the race)."""
    found = prepared_objects("networks.default_group", _default_group, (project_id,))
    if found:
        return found[0]
    try:
        with transaction.atomic():
            group = SecurityGroup.objects.create(name="default", description=DEFAULT_DESCRIPTION,
                                                 project_id=project_id, is_default=True, revision_number=1)
            _add_egress_rules(group)
            for ethertype in ("IPv4", "IPv6"):
                _add_rule(group, direction="ingress", ethertype=ethertype, remote_group=group)
    except IntegrityError:
        return SecurityGroup.objects.get(project_id=project_id, is_default=True)
    return group


#: the id of each project's default group as ``POST /servers`` asks it: remembered while no
#: default group is written or deleted (``cloudcore.core.stamps``; ``networks.apps`` watches them)
DEFAULT_GROUPS_STAMP = "networks.default_groups"
_default_group_ids: Remembered[str] = Remembered(DEFAULT_GROUPS_STAMP, max_entries=4096)


def default_group_id(project_id: str) -> str:
    """The id of ``default_group_for(project_id)``, remembered by the process."""
    found = _default_group_ids.get(project_id, lambda: _default_group_id_read(project_id))
    return found if found is not None else default_group_for(project_id).id


def _default_group_id_read(project_id: str) -> str | None:
    found = prepared_objects("networks.default_group", _default_group, (project_id,))
    return str(found[0].id) if found else None


def _ensure_default(ctx: RequestContext) -> None:
    if ctx.project_id:
        default_group_for(ctx.project_id)


def security_group_get(ctx: RequestContext, group_id: str) -> SecurityGroup:
    _ensure_default(ctx)
    group = _visible_groups(ctx).filter(id=group_id).first()
    if group is None:
        raise SecurityGroupNotFound(id=group_id)
    authorize(ctx, "get_security_group", _target(group.project_id))
    return group


def _tag_filters(qs: Any, filters: dict[str, Any]) -> Any:
    """Neutron's ``tags`` (all of), ``tags-any``, ``not-tags``, ``not-tags-any`` (comma-separated)."""
    def wanted(key: str) -> list[str]:
        return [t for t in str(filters.get(key) or "").split(",") if t]

    groups = list(qs)
    if wanted("tags"):
        groups = [g for g in groups if set(wanted("tags")) <= set(g.tags)]
    if wanted("tags-any"):
        groups = [g for g in groups if set(wanted("tags-any")) & set(g.tags)]
    if wanted("not-tags"):
        groups = [g for g in groups if not set(wanted("not-tags")) <= set(g.tags)]
    if wanted("not-tags-any"):
        groups = [g for g in groups if not set(wanted("not-tags-any")) & set(g.tags)]
    return groups


def as_bool(value: Any, name: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).lower()
    if text in ("true", "1", "yes", "on"):
        return True
    if text in ("false", "0", "no", "off"):
        return False
    raise Invalid(f"Invalid input for {name}. Reason: '{value}' cannot be converted to boolean.")


def binding_profile(value: Any) -> dict[str, Any]:
    """``binding:profile`` must be a JSON object (Neutron's ``type:dict_or_none``)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise Invalid(f"Invalid input for binding:profile. Reason: '{value}' is not a dictionary.")
    return value


def security_group_list(ctx: RequestContext, *, filters: dict[str, Any]) -> list[SecurityGroup]:
    authorize(ctx, "get_security_group", _target(str(ctx.project_id)))
    _ensure_default(ctx)
    qs = _visible_groups(ctx).prefetch_related("rules").order_by("created_at", "id")
    for key in ("id", "name", "description"):
        if filters.get(key) is not None:
            qs = qs.filter(**{key: filters[key]})
    for key in ("project_id", "tenant_id"):
        if filters.get(key):
            qs = qs.filter(project_id=filters[key])
    if filters.get("stateful") is not None:
        qs = qs.filter(stateful=as_bool(filters["stateful"], "stateful"))
    if filters.get("revision_number") is not None:
        qs = qs.filter(revision_number=_integer(filters["revision_number"], "revision_number"))
    return _tag_filters(qs, filters)


def _check_length(value: str, name: str) -> str:
    if len(value) > 255:
        raise Invalid(f"Invalid input for {name}. Reason: '{value}' exceeds maximum length of 255.")
    return value


def _check_name(name: str) -> None:
    if name.lower() == "default":
        raise SecurityGroupDefaultAlreadyExists()
    _check_length(name, "name")


def security_group_create(ctx: RequestContext, *, name: str = "", description: str = "",
                          stateful: bool = True, project_id: str | None = None) -> SecurityGroup:
    """A new group of ``project_id`` (an admin may name another project) with the two egress rules.
    Raises SecurityGroupDefaultAlreadyExists for the name ``default``, OverQuota past the groups quota."""
    owner = str(project_id or ctx.project_id or "")
    authorize(ctx, "create_security_group", _target(owner))
    _check_name(name)
    _check_length(description, "description")
    default_group_for(owner)
    with transaction.atomic():
        quotas.check(owner, "security_group")
        group = SecurityGroup.objects.create(name=name, description=description, project_id=owner,
                                             stateful=stateful, revision_number=1)
        _add_egress_rules(group)
    return group


def security_group_update(ctx: RequestContext, group: SecurityGroup, *, changes: dict[str, Any]) -> SecurityGroup:
    """Rename, describe, make (un)stateful. The default group keeps its name (409)."""
    authorize(ctx, "update_security_group", _target(group.project_id))
    if "name" in changes and changes["name"] != group.name:
        if group.is_default:
            raise SecurityGroupCannotUpdateDefault()
        _check_name(str(changes["name"]))
        group.name = str(changes["name"])
    if "description" in changes:
        group.description = _check_length(str(changes["description"] or ""), "description")
    if "stateful" in changes:
        stateful = as_bool(changes["stateful"], "stateful")
        if stateful != group.stateful and group.ports.exists():
            raise SecurityGroupInUse(id=group.id)
        group.stateful = stateful
    group.revision_number += 1
    group.save()
    return group


def security_group_delete(ctx: RequestContext, group: SecurityGroup) -> None:
    """Delete a group and its rules (and the rules of other groups that name it as their remote).
    409 for the default group (except for an admin) and for a group a port still uses."""
    authorize(ctx, "delete_security_group", _target(group.project_id))
    if group.is_default and not ctx.is_admin:
        raise SecurityGroupCannotRemoveDefault()
    with transaction.atomic():
        if group.ports.exists():
            raise SecurityGroupInUse(id=group.id)
        # the rules of other groups that name this one go with it
        referring = set(group.referencing_rules.exclude(security_group=group)
                        .values_list("security_group_id", flat=True))
        group.delete()
        port_filters_changed(groups=referring)


def security_group_set_tags(ctx: RequestContext, group: SecurityGroup, tags: list[str]) -> SecurityGroup:
    """Replace the group's tags (Neutron's tag extension); each at most 255 characters."""
    authorize(ctx, "update_security_group:tags", _target(group.project_id))
    for tag in tags:
        if not isinstance(tag, str) or not tag or len(tag) > 255 or "," in tag:
            raise Invalid(f"Invalid input for tags. Reason: '{tag}' is not a valid tag.")
    group.tags = sorted(set(tags))
    group.revision_number += 1
    group.save()
    return group


# --- rules ----------------------------------------------------------------------------------------


def _protocol(value: Any) -> tuple[str | None, int | None]:
    """``(protocol as stored, its number)``; ``None`` and ``any`` mean every protocol."""
    if value is None or str(value).lower() in ("", "any"):
        return None, None
    text = str(value).lower()
    if text in PROTOCOLS:
        return text, PROTOCOLS[text]
    if text.isdigit() and 0 <= int(text) <= 255:
        return str(int(text)), int(text)
    raise SecurityGroupRuleInvalidProtocol(protocol=value, values=sorted(PROTOCOLS))


def _integer(value: Any, name: str) -> int:
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):
        raise Invalid(f"Invalid input for {name}. Reason: '{value}' is not an integer.") from None


def _port(value: Any, name: str) -> int | None:
    if value is None:
        return None
    number = _integer(value, name)
    if not 0 <= number <= 65535:
        raise SecurityGroupInvalidPortValue(port=value)
    return number


def _check_ports(protocol: str | None, number: int | None, low: int | None, high: int | None) -> None:
    if low is None and high is None:
        return
    if protocol is None:
        raise SecurityGroupProtocolRequiredWithPorts()
    if number in PORT_PROTOCOLS:
        if low == 0 or high == 0:
            raise SecurityGroupInvalidPortValue(port=0)
        if low is None or high is None or low > high:
            raise SecurityGroupInvalidPortRange()
        return
    if number in ICMP_PROTOCOLS:
        for value, attr, field in ((low, "port_range_min", "type"), (high, "port_range_max", "code")):
            if value is not None and not 0 <= value <= 255:
                raise SecurityGroupInvalidIcmpValue(field=field, attr=attr, value=value)
        if low is None:
            raise SecurityGroupMissingIcmpType(value=high)
        return
    raise SecurityGroupInvalidProtocolForPortRange(protocol=protocol)


def _prefix(value: Any, ethertype: str) -> str | None:
    if value is None or value == "":
        return None
    try:
        network = ipaddress.ip_network(str(value), strict=False)
    except ValueError:
        raise Invalid(f"Invalid input for remote_ip_prefix. Reason: '{value}' is not a valid IP prefix.") from None
    if f"IPv{network.version}" != ethertype:
        raise SecurityGroupRuleParameterConflict(ethertype=ethertype, cidr=value)
    return str(value) if "/" in str(value) else str(network)


def normalized_cidr(prefix: str | None) -> str | None:
    return str(ipaddress.ip_network(prefix, strict=False)) if prefix else None


def _rule_key(rule: SecurityGroupRule) -> tuple[Any, ...]:
    """What makes two rules the same for Neutron: the protocol by number, "anywhere" as no prefix."""
    number = _protocol(rule.protocol)[1]
    prefix = normalized_cidr(rule.remote_ip_prefix)
    if prefix in ("0.0.0.0/0", "::/0"):
        prefix = None
    return (rule.direction, rule.ethertype, number, rule.port_range_min, rule.port_range_max, prefix,
            rule.remote_group_id)


def security_group_rule_create(ctx: RequestContext, *, body: dict[str, Any]) -> SecurityGroupRule:
    """Validate ``body`` (Neutron's rule attributes) and add the rule to its group.

    Raises SecurityGroupNotFound (404) for an unknown group or remote group, the Invalid family (400)
    for a malformed rule, SecurityGroupRuleExists (409) for a duplicate, OverQuota (409)."""
    if not body.get("security_group_id"):
        raise Invalid("Invalid input for security_group_id. Reason: 'None' is not a valid UUID.")
    group = security_group_get(ctx, str(body["security_group_id"]))
    authorize(ctx, "create_security_group_rule", _target(group.project_id))
    direction = body.get("direction")
    if direction not in ("ingress", "egress"):
        raise Invalid(f"Invalid input for direction. Reason: '{direction}' is not in ['ingress', 'egress'].")
    ethertype = {"ipv4": "IPv4", "ipv6": "IPv6"}.get(str(body.get("ethertype") or "IPv4").lower())
    if ethertype is None:
        raise SecurityGroupRuleInvalidEtherType(ethertype=body.get("ethertype"))
    protocol, number = _protocol(body.get("protocol"))
    if ethertype == "IPv4" and protocol in IPV6_ONLY_PROTOCOLS:
        raise SecurityGroupEthertypeConflictWithProtocol(ethertype=ethertype, protocol=protocol)
    low, high = _port(body.get("port_range_min"), "port_range_min"), _port(body.get("port_range_max"),
                                                                          "port_range_max")
    _check_ports(protocol, number, low, high)
    if body.get("remote_ip_prefix") and body.get("remote_group_id"):
        raise SecurityGroupRemoteGroupAndRemoteIpPrefix()
    if body.get("remote_address_group_id"):
        raise Invalid("Invalid input: remote address groups are not supported by this cloud.")
    prefix = _prefix(body.get("remote_ip_prefix"), ethertype)
    remote = None
    if body.get("remote_group_id"):
        remote = _visible_groups(ctx).filter(id=str(body["remote_group_id"])).first()
        if remote is None:
            raise SecurityGroupNotFound(id=body["remote_group_id"])
    description = _check_length(str(body.get("description") or ""), "description")
    rule = SecurityGroupRule(security_group=group, project_id=group.project_id, direction=direction,
                             ethertype=ethertype, protocol=protocol, port_range_min=low, port_range_max=high,
                             remote_ip_prefix=prefix, remote_group=remote, description=description)
    with transaction.atomic():
        # The group row is the lock that keeps two identical rules from both passing the duplicate check.
        SecurityGroup.objects.select_for_update().filter(id=group.id).first()
        key = _rule_key(rule)
        for existing in group.rules.all():
            if _rule_key(existing) == key:
                raise SecurityGroupRuleExists(rule_id=existing.id)
        quotas.check(group.project_id, "security_group_rule")
        rule.save()
        SecurityGroup.objects.filter(id=group.id).update(revision_number=group.revision_number + 1)
        port_filters_changed(groups=[group.id])
    return rule


def _visible_rules(ctx: RequestContext) -> Any:
    qs = SecurityGroupRule.objects.select_related("security_group")
    if not ctx.is_admin:
        qs = qs.filter(security_group__project_id=ctx.project_id)
    return qs


def security_group_rule_get(ctx: RequestContext, rule_id: str) -> SecurityGroupRule:
    rule = _visible_rules(ctx).filter(id=rule_id).first()
    if rule is None:
        raise SecurityGroupRuleNotFound(id=rule_id)
    authorize(ctx, "get_security_group_rule", _target(rule.project_id))
    return rule


def security_group_rule_list(ctx: RequestContext, *, filters: dict[str, Any]) -> list[SecurityGroupRule]:
    authorize(ctx, "get_security_group_rule", _target(str(ctx.project_id)))
    _ensure_default(ctx)
    qs = _visible_rules(ctx).order_by("created_at", "id")
    for key in ("id", "security_group_id", "direction", "ethertype", "remote_ip_prefix", "remote_group_id",
                "description"):
        if filters.get(key) is not None:
            qs = qs.filter(**{key: filters[key]})
    for key in ("port_range_min", "port_range_max"):
        if filters.get(key) is not None:
            qs = qs.filter(**{key: _integer(filters[key], key)})
    for key in ("project_id", "tenant_id"):
        if filters.get(key):
            qs = qs.filter(project_id=filters[key])
    if filters.get("protocol") is not None:
        number = _protocol(filters["protocol"])[1]
        return [r for r in qs if _protocol(r.protocol)[1] == number]
    return list(qs)


def security_group_rule_delete(ctx: RequestContext, rule: SecurityGroupRule) -> None:
    authorize(ctx, "delete_security_group_rule", _target(rule.project_id))
    with transaction.atomic():
        rule.delete()
        group = rule.security_group
        SecurityGroup.objects.filter(id=group.id).update(revision_number=group.revision_number + 1)
        port_filters_changed(groups=[group.id])


# --- ports ----------------------------------------------------------------------------------------


def groups_for_port(*, project_id: str, requested: Any, port_security: bool, device_owner: str
                    ) -> list[SecurityGroup]:
    """The groups a new or updated port of ``project_id`` gets. ``requested`` None: the project's default
    group (none for network-owned ports or without port security); else the listed group ids, each of
    the port's project (404 SecurityGroupNotFound otherwise)."""
    if requested is None:
        if not port_security or device_owner.startswith("network:"):
            return []
        return [default_group_for(project_id)]
    if not isinstance(requested, list) or not all(isinstance(g, str) for g in requested):
        raise Invalid("Invalid input for security_groups. Reason: must be a list of security group ids.")
    groups = []
    for group_id in dict.fromkeys(requested):
        group = SecurityGroup.objects.filter(id=group_id, project_id=project_id).first()
        if group is None:
            raise SecurityGroupNotFound(id=group_id)
        groups.append(group)
    if groups and not port_security:
        raise PortSecurityAndIPRequiredForSecurityGroups()
    return groups


def address_pairs(value: Any, *, mac_address: str, port_security: bool) -> list[dict[str, str]]:
    """Neutron's allowed address pairs, validated; a pair without ``mac_address`` gets the port's."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise Invalid(f"Invalid input for allowed_address_pairs. Reason: '{value}' is not a list.")
    if len(value) > MAX_ALLOWED_ADDRESS_PAIRS:
        raise AllowedAddressPairExhausted(quota=MAX_ALLOWED_ADDRESS_PAIRS)
    pairs: list[dict[str, str]] = []
    for item in value:
        if not isinstance(item, dict):
            raise Invalid(f"Invalid input for allowed_address_pairs. Reason: '{item}' is not a dictionary.")
        unknown = set(item) - {"ip_address", "mac_address"}
        if unknown:
            raise Invalid(f"Unrecognized attribute(s) '{', '.join(sorted(unknown))}'")
        if not item.get("ip_address"):
            raise AllowedAddressPairsMissingIP()
        ip = str(item["ip_address"])
        try:
            ipaddress.ip_network(ip, strict=False)
        except ValueError:
            raise Invalid(f"Invalid input for allowed_address_pairs. Reason: '{ip}' is not a valid IP address."
                          ) from None
        mac = str(item.get("mac_address") or mac_address).lower()
        if not _MAC.match(mac):
            raise Invalid(f"Invalid input for allowed_address_pairs. Reason: '{mac}' is not a valid MAC address.")
        pair = {"ip_address": ip, "mac_address": mac}
        if pair in pairs:
            raise DuplicateAddressPairInRequest(mac_address=mac, ip_address=ip)
        pairs.append(pair)
    if pairs and not port_security:
        raise AddressPairAndPortSecurityRequired()
    return pairs


# --- servers (the compute API's calls) --------------------------------------------------------------


def security_group_find(ctx: RequestContext, name_or_id: str, *, project_id: str) -> SecurityGroup:
    """A group of ``project_id`` by id or by unique name (``default`` made on first use), as the
    neutron client's find does. NotFound "Unable to find security_group with name or id 'x'"; Conflict
    when several groups bear the name."""
    if name_or_id == "default":
        return default_group_for(project_id)
    group = SecurityGroup.objects.filter(id=name_or_id, project_id=project_id).first()
    if group is not None:
        return group
    named = list(SecurityGroup.objects.filter(name=name_or_id, project_id=project_id)[:2])
    if len(named) > 1:
        raise Conflict(f"Multiple security_group matches found for name '{name_or_id}', use an ID to be more "
                       "specific.")
    if not named:
        raise SecurityGroupNotFoundByNameOrId(name=name_or_id)
    return named[0]


def security_group_id_find(ctx: RequestContext, name_or_id: str, *, project_id: str) -> str:
    """The id of ``security_group_find``'s group (``default``: its id remembered by the process,
    ``default_group_id``)."""
    if name_or_id == "default":
        return default_group_id(project_id)
    return str(security_group_find(ctx, name_or_id, project_id=project_id).id)


def instance_security_groups_request(instance_uuid: str, group_ids: list[str]) -> None:
    """Record the groups a server asked for; the ports made for it (``port_create_for_instance``) get them.
    See ``instances_security_groups_request``."""
    instances_security_groups_request([instance_uuid], group_ids)


def instances_security_groups_request(instance_uuids: list[str], group_ids: list[str]) -> None:
    """Record the groups servers asked for (the same for each); the ports made for them
    (``port_create_for_instance``) get them. One plain upsert for all (no savepoint inside the servers'
    create transaction: the rows ``bulk_create(update_conflicts=True)`` would store); the request that
    records them reads them back from memory (``cloudcore.core.scope``)."""
    scope.insert_plain_now([InstanceSecurityGroups(instance_uuid=uuid, security_group_ids=list(group_ids))
                            for uuid in instance_uuids],
                           unique_fields=["instance_uuid"], update_fields=["security_group_ids"])
    for uuid in instance_uuids:
        scope.remember(("networks.requested-groups", uuid), list(group_ids))


def _requested_groups(instance_uuid: str) -> QuerySet[InstanceSecurityGroups]:
    # read by the conductor for every build: its SQL built once per process (prepared_objects); at
    # most one row (the key)
    return InstanceSecurityGroups.objects.filter(instance_uuid=instance_uuid)


def requested_groups_for_instance(instance_uuid: str) -> list[str] | None:
    def read() -> list[str] | None:
        rows = prepared_objects("networks.requested_groups", _requested_groups, (instance_uuid,))
        return None if not rows else list(rows[0].security_group_ids)

    groups = scope.memoized(("networks.requested-groups", instance_uuid), read)
    return None if groups is None else list(groups)


def requested_groups_of(instance_uuid: Any) -> Subquery:
    """The group ids the server ``instance_uuid`` (a value or ``OuterRef``) asked for, as a subquery
    (NULL when it asked for none: the project's default): for a read of another app's rows that
    wants them in the same statement (the conductor's build request); ``requested_groups_from``
    makes of its value what ``requested_groups_for_instance`` returns."""
    return Subquery(InstanceSecurityGroups.objects.filter(instance_uuid=instance_uuid).values("security_group_ids")[:1],
                    output_field=JSONField())


def requested_groups_from(value: list[str] | None) -> list[str] | None:
    """What ``requested_groups_of`` read, as ``requested_groups_for_instance`` gives it."""
    return None if value is None else list(value)


def instance_security_groups_forget(instance_uuid: str) -> None:
    InstanceSecurityGroups.objects.filter(instance_uuid=instance_uuid).delete()
    scope.forget(("networks.requested-groups", instance_uuid))


def security_groups_of_instances(instance_uuids: Iterable[str], *, building: Iterable[str] = ()
                                 ) -> dict[str, list[SecurityGroup]]:
    """``{uuid: [groups]}``: the groups on the server's ports (each once, in port order); for a server still
    ``building`` that has no port yet, the groups it asked for. The statements for one server (a
    show: a client's status poll) are built once per process (``prepared_in_objects``)."""
    uuids = list(instance_uuids)
    out: dict[str, list[SecurityGroup]] = {}
    for row in prepared_in_objects("networks.port_groups", _port_groups, uuids):
        groups = out.setdefault(row.port.device_id, [])
        if row.securitygroup not in groups:
            groups.append(row.securitygroup)
    # which servers have ports is asked of the building ones only (a list page's thousand servers
    # mostly are not: the question of each cost as much as reading their groups); one with a port's
    # group has a port
    asked = set(uuids)
    out.update(requested_groups_of_portless([u for u in building if u in asked and u not in out]))
    return out


def requested_groups_of_portless(candidates: list[str]) -> dict[str, list[SecurityGroup]]:
    """``{uuid: [groups]}`` of those ``candidates`` (servers still building) that have no port yet:
    the groups each asked for."""
    pending: list[str] = []
    if candidates:
        with_ports = {device for device, in prepared_in_rows("networks.ports_of", _ports_of, candidates)}
        pending = [u for u in candidates if u not in with_ports]
    out: dict[str, list[SecurityGroup]] = {}
    if pending:
        requested = {row.instance_uuid: row.security_group_ids
                     for row in prepared_in_objects("networks.requested_of", _requested_of, pending)}
        ids = {g for group_ids in requested.values() for g in group_ids}
        by_id = {group.id: group for group in prepared_in_objects("networks.groups_in", _groups_in, sorted(ids))}
        for uuid, group_ids in requested.items():
            out[uuid] = [by_id[g] for g in group_ids if g in by_id]
    return out


def _port_groups(uuids: Any) -> QuerySet[Any]:
    return Port.security_groups.through.objects.filter(port__device_id__in=uuids)\
        .select_related("securitygroup", "port").order_by("port__created_at", "port_id", "id")


def _ports_of(uuids: Any) -> QuerySet[Port, tuple[str]]:
    return Port.objects.filter(device_id__in=uuids).values_list("device_id")


def _requested_of(uuids: Any) -> QuerySet[InstanceSecurityGroups]:
    return InstanceSecurityGroups.objects.filter(instance_uuid__in=uuids)


def _groups_in(ids: Any) -> QuerySet[SecurityGroup]:
    return SecurityGroup.objects.filter(id__in=ids)


class NoPortsForInstance(NotFound):
    message = "instance_id %(instance_uuid)s could not be found as device id on any ports"


class SecurityGroupNotAssociated(Invalid):
    message = "Security group %(name)s is not associated with the instance %(instance_uuid)s"


class SecurityGroupCannotBeApplied(Invalid):
    message = "Network requires port_security_enabled and subnet associated in order to apply security groups."


def instance_add_security_group(ctx: RequestContext, *, instance_uuid: str, project_id: str,
                                name_or_id: str) -> SecurityGroup:
    """Put the group on every port of the server (Nova's ``addSecurityGroup``). NotFound for an unknown group
    or a server without ports; SecurityGroupCannotBeApplied for a port without port security."""
    group = security_group_find(ctx, name_or_id, project_id=project_id)
    ports = list(Port.objects.filter(device_id=instance_uuid).order_by("created_at", "id"))
    if not ports:
        raise NoPortsForInstance(instance_uuid=instance_uuid)
    with transaction.atomic():
        for port in ports:
            if not port.port_security_enabled:
                raise SecurityGroupCannotBeApplied()
            port.security_groups.add(group)
            port.save(update_fields=["updated_at"])
        port_filters_changed(members_of=[group.id], ports=[p.id for p in ports])
    return group


def instance_remove_security_group(ctx: RequestContext, *, instance_uuid: str, project_id: str,
                                   name_or_id: str) -> SecurityGroup:
    """Take the group off every port of the server that has it (Nova's ``removeSecurityGroup``). NotFound
    for an unknown group or a server without ports; SecurityGroupNotAssociated when no port has it."""
    group = security_group_find(ctx, name_or_id, project_id=project_id)
    ports = list(Port.objects.filter(device_id=instance_uuid))
    if not ports:
        raise NoPortsForInstance(instance_uuid=instance_uuid)
    having = [p for p in ports if p.security_groups.filter(id=group.id).exists()]
    if not having:
        raise SecurityGroupNotAssociated(name=name_or_id, instance_uuid=instance_uuid)
    with transaction.atomic():
        for port in having:
            port.security_groups.remove(group)
            port.save(update_fields=["updated_at"])
        port_filters_changed(members_of=[group.id], ports=[p.id for p in having])
    return group
