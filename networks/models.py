"""Neutron's slice: networks, subnets, ports, fixed IPs and port bindings (API database)."""
from __future__ import annotations

import uuid as uuidlib

from django.db import models

from cloudcore.core.models import ApiModel, TimestampedModel


def new_uuid() -> str:
    return str(uuidlib.uuid4())


class Network(ApiModel, TimestampedModel):
    id = models.CharField(primary_key=True, max_length=36, default=new_uuid)
    name = models.CharField(max_length=255, blank=True, default="")
    description = models.TextField(blank=True, default="")
    project_id = models.CharField(max_length=255, db_index=True)
    admin_state_up = models.BooleanField(default=True)
    shared = models.BooleanField(default=False)
    external = models.BooleanField(default=False)
    mtu = models.IntegerField(default=1500)
    status = models.CharField(max_length=16, default="ACTIVE")

    def __str__(self) -> str:
        return self.name or self.id


class Subnet(ApiModel, TimestampedModel):
    id = models.CharField(primary_key=True, max_length=36, default=new_uuid)
    network = models.ForeignKey(Network, on_delete=models.CASCADE, related_name="subnets")
    name = models.CharField(max_length=255, blank=True, default="")
    project_id = models.CharField(max_length=255)
    ip_version = models.IntegerField(default=4)
    cidr = models.CharField(max_length=64)
    gateway_ip = models.CharField(max_length=64, null=True, blank=True)
    enable_dhcp = models.BooleanField(default=True)
    allocation_pools = models.JSONField(default=list)
    dns_nameservers = models.JSONField(default=list)
    host_routes = models.JSONField(default=list)
    description = models.CharField(max_length=255, blank=True, default="")


class Port(ApiModel, TimestampedModel):
    id = models.CharField(primary_key=True, max_length=36, default=new_uuid)
    network = models.ForeignKey(Network, on_delete=models.CASCADE, related_name="ports")
    name = models.CharField(max_length=255, blank=True, default="")
    project_id = models.CharField(max_length=255, db_index=True)
    mac_address = models.CharField(max_length=32, unique=True)
    admin_state_up = models.BooleanField(default=True)
    status = models.CharField(max_length=16, default="DOWN")
    device_id = models.CharField(max_length=255, blank=True, default="", db_index=True)
    device_owner = models.CharField(max_length=255, blank=True, default="")
    binding_host_id = models.CharField(max_length=255, blank=True, default="")
    binding_vnic_type = models.CharField(max_length=32, default="normal")
    binding_vif_type = models.CharField(max_length=32, default="unbound")
    binding_profile = models.JSONField(default=dict)
    resource_request = models.JSONField(null=True, blank=True)
    description = models.CharField(max_length=255, blank=True, default="")
    port_security_enabled = models.BooleanField(default=True)
    security_groups = models.ManyToManyField("SecurityGroup", blank=True, related_name="ports")
    #: ``[{"ip_address": ip or cidr, "mac_address": mac}]`` (Neutron's allowed-address-pairs).
    allowed_address_pairs = models.JSONField(default=list)


class IPAllocation(ApiModel):
    port = models.ForeignKey(Port, on_delete=models.CASCADE, related_name="fixed_ips")
    subnet = models.ForeignKey(Subnet, on_delete=models.CASCADE, related_name="allocations")
    ip_address = models.CharField(max_length=64)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["subnet", "ip_address"], name="ip_per_subnet")]


class PortBinding(ApiModel, TimestampedModel):
    """Extended port bindings (one active, others inactive) used by cross-cell moves."""

    port = models.ForeignKey(Port, on_delete=models.CASCADE, related_name="bindings")
    host = models.CharField(max_length=255)
    status = models.CharField(max_length=16, default="INACTIVE")
    vif_type = models.CharField(max_length=32, default="ovs")
    vnic_type = models.CharField(max_length=32, default="normal")
    profile = models.JSONField(default=dict)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["port", "host"], name="binding_port_host")]


class SecurityGroup(ApiModel, TimestampedModel):
    """Neutron's security group. ``is_default`` marks the one ``default`` group of a project (made on first
    use); the conditional unique constraint keeps two concurrent first uses from making two."""

    id = models.CharField(primary_key=True, max_length=36, default=new_uuid)
    name = models.CharField(max_length=255, blank=True, default="")
    description = models.CharField(max_length=255, blank=True, default="")
    project_id = models.CharField(max_length=255, db_index=True)
    stateful = models.BooleanField(default=True)
    is_default = models.BooleanField(default=False)
    revision_number = models.IntegerField(default=0)
    tags = models.JSONField(default=list)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project_id"], condition=models.Q(is_default=True),
                                               name="one_default_security_group_per_project")]

    def __str__(self) -> str:
        return self.name or self.id


class SecurityGroupRule(ApiModel, TimestampedModel):
    """One rule of a group: ``protocol`` is stored as the client gave it (a name or a number), ports are
    ``None`` for "any", at most one of ``remote_ip_prefix`` / ``remote_group`` is set."""

    id = models.CharField(primary_key=True, max_length=36, default=new_uuid)
    security_group = models.ForeignKey(SecurityGroup, on_delete=models.CASCADE, related_name="rules")
    project_id = models.CharField(max_length=255, db_index=True)
    direction = models.CharField(max_length=8)
    ethertype = models.CharField(max_length=4, default="IPv4")
    protocol = models.CharField(max_length=40, null=True, blank=True)
    port_range_min = models.IntegerField(null=True, blank=True)
    port_range_max = models.IntegerField(null=True, blank=True)
    remote_ip_prefix = models.CharField(max_length=64, null=True, blank=True)
    remote_group = models.ForeignKey(SecurityGroup, on_delete=models.CASCADE, null=True, blank=True,
                                     related_name="referencing_rules")
    description = models.CharField(max_length=255, blank=True, default="")
    revision_number = models.IntegerField(default=0)


class InstanceSecurityGroups(ApiModel):
    """The groups asked for when a server was created (resolved to ids by the compute API); the ports the
    compute service creates for the server get them. Gone with the server's ports."""

    instance_uuid = models.CharField(primary_key=True, max_length=36)
    security_group_ids = models.JSONField(default=list)


class Router(ApiModel, TimestampedModel):
    """Neutron's L3 router. Its interfaces are the ports whose ``device_id`` is the router and whose
    ``device_owner`` is ``network:router_interface``; its gateway is ``gw_port`` (``network:router_gateway``)
    on an external network. ``routes`` are the extra routes, ``[{"destination": CIDR, "nexthop": IP}]``."""

    id = models.CharField(primary_key=True, max_length=36, default=new_uuid)
    name = models.CharField(max_length=255, blank=True, default="")
    description = models.CharField(max_length=255, blank=True, default="")
    project_id = models.CharField(max_length=255, db_index=True)
    admin_state_up = models.BooleanField(default=True)
    status = models.CharField(max_length=16, default="ACTIVE")
    gw_port = models.OneToOneField(Port, on_delete=models.SET_NULL, null=True, blank=True,
                                   related_name="gateway_of")
    enable_snat = models.BooleanField(default=True)
    routes = models.JSONField(default=list)
    revision_number = models.IntegerField(default=1)

    def __str__(self) -> str:
        return self.name or self.id


class FloatingIP(ApiModel, TimestampedModel):
    """A floating IP: an address of an external network held by ``floating_port`` (``network:floatingip``),
    associated (or not) with a ``port``'s ``fixed_ip_address`` through ``router`` (the router with a gateway
    on that network and an interface on the fixed IP's subnet). ACTIVE while associated, else DOWN."""

    id = models.CharField(primary_key=True, max_length=36, default=new_uuid)
    project_id = models.CharField(max_length=255, db_index=True)
    description = models.CharField(max_length=255, blank=True, default="")
    floating_network = models.ForeignKey(Network, on_delete=models.PROTECT, related_name="floating_ips")
    floating_port = models.OneToOneField(Port, on_delete=models.CASCADE, related_name="floating_ip_of")
    floating_ip_address = models.CharField(max_length=64)
    port = models.ForeignKey(Port, on_delete=models.SET_NULL, null=True, blank=True, related_name="floating_ips")
    fixed_ip_address = models.CharField(max_length=64, null=True, blank=True)
    router = models.ForeignKey(Router, on_delete=models.SET_NULL, null=True, blank=True,
                               related_name="floating_ips")
    status = models.CharField(max_length=16, default="DOWN")
    revision_number = models.IntegerField(default=1)


class NetworkQuota(ApiModel):
    """An admin's override of one of a project's Neutron quotas (see ``networks.quotas``)."""

    project_id = models.CharField(max_length=255, db_index=True)
    resource = models.CharField(max_length=64)
    hard_limit = models.IntegerField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project_id", "resource"], name="network_quota_per_resource")]
