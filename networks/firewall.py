"""Keeping the compute hosts' port filters in step with security groups (Neutron's security group
notifications to its agents; here the agents are the compute hosts, which enforce the groups with
libvirt nwfilters, see ``compute.firewall``).

A port's filter holds the rules of its groups, with each rule that names a remote group expanded to
that group's members' fixed IPs. So a filter changes when

- a rule of one of its groups is added or removed (``groups``), or
- the members of a group that one of its rules names change: a port joins or leaves the group,
  gets other fixed IPs or is deleted (``members_of``), or
- its own port changes its groups, fixed IPs or port security (``ports``).

``port_filters_changed`` finds, once the change is committed, the ports of servers bound to a host
that are concerned and casts one ``refresh_port_filters`` per host (``compute.rpc``). A cast that
cannot be sent is logged: the write it follows stands, and the host's next rebuild of the guest's
filters (any spawn) catches up.
"""
from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable

from django.db import transaction
from django.db.models import Q

from compute import rpc as compute_rpc

from .models import Port, SecurityGroupRule

log = logging.getLogger(__name__)


def groups_of_ports(port_ids: Iterable[str]) -> set[str]:
    """The ids of the groups these ports are in (read before they change or go)."""
    through = Port.security_groups.through
    return set(through.objects.filter(port_id__in=list(port_ids)).values_list("securitygroup_id", flat=True))


def port_filters_changed(*, groups: Iterable[str] = (), members_of: Iterable[str] = (),
                         ports: Iterable[str] = (), new_port: str | None = None) -> None:
    """After the current transaction commits, tell the compute hosts whose servers' port filters
    the change touches (see the module docstring) to redefine them. ``new_port``: a port just made,
    whose own filter its host defines when it plugs it (no refresh is cast for it)."""
    changed = (set(groups), set(members_of), set(ports))
    if any(changed):
        transaction.on_commit(lambda: _cast_refreshes(*changed, new_port=new_port))


def _cast_refreshes(groups: set[str], members_of: set[str], ports: set[str], *, new_port: str | None) -> None:
    referring = set(SecurityGroupRule.objects.filter(remote_group_id__in=members_of)
                    .values_list("security_group_id", flat=True)) if members_of else set()
    concerned = (Port.objects.filter(Q(security_groups__id__in=groups | referring) | Q(id__in=ports))
                 .filter(device_owner__startswith="compute:").exclude(binding_host_id="").exclude(device_id=""))
    if new_port:
        concerned = concerned.exclude(id=new_port)
    servers: dict[str, set[str]] = defaultdict(set)
    for host, device_id in concerned.values_list("binding_host_id", "device_id").distinct():
        servers[host].add(device_id)
    for host in sorted(servers):
        try:
            compute_rpc.refresh_port_filters(host=host, instance_uuids=sorted(servers[host]))
        except Exception:  # noqa: BLE001 - the committed change stands; the host catches up at its next spawn
            log.exception("could not cast the port filter refresh to %s", host)
