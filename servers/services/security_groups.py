"""A server's security groups (Nova's ``addSecurityGroup`` / ``removeSecurityGroup`` and
``GET /servers/{id}/os-security-groups``): the groups live on the server's ports in the network service;
these services check Nova's policies and name the server's ports by its uuid."""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import NotFound
from cloudcore.core.policy import authorize

from ..models import Instance
from .external import (
    SecurityGroupNotFoundByNameOrId,
    instance_add_security_group,
    instance_remove_security_group,
    security_groups_of_instances,
)
from .power import target

if TYPE_CHECKING:  # annotations only: other apps read networks through its services
    from networks.models import SecurityGroup


class SecurityGroupNotFoundForProject(NotFound):
    message = "Security group %(name)s is not found for project %(project_id)s"


def _on_ports(change: Callable[..., SecurityGroup], actor: RequestContext, instance: Instance, name: str) -> None:
    """Apply ``change`` (add or remove on the network side) with Nova's "not found for project" words for a
    group that does not exist."""
    try:
        change(actor, instance_uuid=instance.uuid, project_id=instance.project_id, name_or_id=name)
    except SecurityGroupNotFoundByNameOrId:
        raise SecurityGroupNotFoundForProject(name=name, project_id=instance.project_id) from None


def server_add_security_group(*, actor: RequestContext, instance: Instance, name: str) -> None:
    """Put group ``name`` (a name or an id of the server's project) on every port of the server.
    Raises NotFound (404) for an unknown group or a server without ports, Conflict (409) for an ambiguous
    name, Invalid (400) when a port cannot take security groups."""
    authorize(actor, "os_compute_api:os-security-groups:add", target(instance))
    _on_ports(instance_add_security_group, actor, instance, name)


def server_remove_security_group(*, actor: RequestContext, instance: Instance, name: str) -> None:
    """Take group ``name`` off the server's ports. NotFound (404) as for add; Invalid (400) when no port of
    the server has the group."""
    authorize(actor, "os_compute_api:os-security-groups:remove", target(instance))
    _on_ports(instance_remove_security_group, actor, instance, name)


def server_security_groups(*, actor: RequestContext, instance_uuid: str, project_id: str) -> list[SecurityGroup]:
    """The server's groups (those of its ports), for ``GET /servers/{id}/os-security-groups``."""
    authorize(actor, "os_compute_api:os-security-groups:list", {"project_id": project_id})
    return security_groups_of_instances([instance_uuid]).get(instance_uuid, [])
