"""The servers app's window on the image and network services (other bounded contexts).

Calls go through this one module so that the servers code names exactly what it needs from
``images.services``, ``networks.services``, ``networks.secgroups`` and ``networks.l3``.
"""
from __future__ import annotations

from images.services import (
    image_data_path,
    image_delete,
    image_get,
    image_get_internal,
    image_get_remembered,
    image_properties_only_create,
    image_snapshot_create,
)
from networks.l3 import (
    FloatingIPNotFound,
    floatingip_create,
    floatingip_delete,
    floatingip_get,
    floatingip_list,
    floatingip_update,
)
from networks.quotas import OverQuota
from networks.secgroups import (
    SecurityGroupNotFoundByNameOrId,
    instance_add_security_group,
    instance_remove_security_group,
    instances_security_groups_request,
    security_group_find,
    security_group_id_find,
    security_groups_of_instances,
)
from networks.services import (
    IpAddressGenerationFailure,
    PortInUse,
    addresses_and_group_names,
    addresses_for_instances,
    instance_ports_brief,
    instance_uuids_with_ip,
    network_get,
    network_info,
    network_list,
    networks_available_to,
    port_brief,
    port_get,
)

__all__ = [
    "addresses_and_group_names", "addresses_for_instances", "image_data_path", "image_get",
    "image_get_internal", "image_get_remembered", "image_delete", "image_snapshot_create",
    "image_properties_only_create", "instance_uuids_with_ip",
    "network_info", "instance_add_security_group", "instance_remove_security_group",
    "instances_security_groups_request", "security_group_find", "security_group_id_find",
    "security_groups_of_instances",
    "SecurityGroupNotFoundByNameOrId", "PortInUse", "instance_ports_brief", "network_get", "networks_available_to",
    "port_brief", "port_get",
    "FloatingIPNotFound", "IpAddressGenerationFailure", "OverQuota", "floatingip_create", "floatingip_delete",
    "floatingip_get", "floatingip_list", "floatingip_update", "network_list",
]
