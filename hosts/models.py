"""Compute services and compute nodes (cell databases)."""
from __future__ import annotations

import uuid as uuidlib

from django.db import models
from django.db.models import Q

from cloudcore.core.models import CellModel, SoftDeleteModel


def new_uuid() -> str:
    return str(uuidlib.uuid4())


class Service(CellModel, SoftDeleteModel):
    """A running service (``nova-compute`` on a host, ``nova-conductor``, ...)."""

    uuid = models.CharField(max_length=36, unique=True, default=new_uuid)
    host = models.CharField(max_length=255)
    binary = models.CharField(max_length=255)
    topic = models.CharField(max_length=255, null=True, blank=True)
    report_count = models.IntegerField(default=0)
    disabled = models.BooleanField(default=False)
    disabled_reason = models.CharField(max_length=255, null=True, blank=True)
    last_seen_up = models.DateTimeField(null=True, blank=True)
    forced_down = models.BooleanField(default=False)
    version = models.IntegerField(default=0)

    class Meta(SoftDeleteModel.Meta):
        constraints = [
            models.UniqueConstraint(
                fields=["host", "binary"], condition=Q(deleted=False), name="service_host_binary_live"
            )
        ]
        # the scheduler's per-request freshness check (``selectors.compute_fingerprint``) and its
        # list of services with a problem (``selectors.compute_fingerprint_and_problems``) read these
        # instead of scanning every service of the cell
        indexes = [
            models.Index(fields=["binary", "created_at"], name="service_binary_created"),
            models.Index(fields=["binary", "updated_at"], name="service_binary_updated"),
            models.Index(fields=["binary", "disabled"], name="service_binary_disabled"),
            models.Index(fields=["binary", "forced_down"], name="service_binary_forced_down"),
            models.Index(fields=["binary", "last_seen_up"], name="service_binary_last_seen_up"),
        ]

    def __str__(self) -> str:
        return f"{self.binary}@{self.host}"


class ComputeNode(CellModel, SoftDeleteModel):
    """A hypervisor node. Its uuid is the node identity of seed 2 and the placement provider."""

    uuid = models.CharField(max_length=36, unique=True)
    service = models.ForeignKey(
        Service, null=True, blank=True, on_delete=models.DO_NOTHING, db_constraint=False,
        related_name="compute_nodes",
    )
    host = models.CharField(max_length=255, null=True, blank=True)
    hypervisor_hostname = models.CharField(max_length=255)
    hypervisor_type = models.CharField(max_length=255, default="QEMU")
    hypervisor_version = models.IntegerField(default=0)
    host_ip = models.CharField(max_length=64, null=True, blank=True)
    vcpus = models.IntegerField(default=0)
    memory_mb = models.IntegerField(default=0)
    local_gb = models.IntegerField(default=0)
    vcpus_used = models.IntegerField(default=0)
    memory_mb_used = models.IntegerField(default=0)
    local_gb_used = models.IntegerField(default=0)
    free_ram_mb = models.IntegerField(default=0)
    free_disk_gb = models.IntegerField(default=0)
    disk_available_least = models.IntegerField(null=True, blank=True)
    running_vms = models.IntegerField(default=0)
    current_workload = models.IntegerField(default=0)
    cpu_info = models.TextField(default="{}")
    #: the host's ``uptime`` line as its compute worker last reported it (os-hypervisors uptime)
    host_uptime = models.CharField(max_length=255, null=True, blank=True)
    cpu_allocation_ratio = models.FloatField(null=True, blank=True)
    ram_allocation_ratio = models.FloatField(null=True, blank=True)
    disk_allocation_ratio = models.FloatField(null=True, blank=True)
    mapped = models.IntegerField(default=0)

    class Meta(SoftDeleteModel.Meta):
        constraints = [
            models.UniqueConstraint(
                fields=["host", "hypervisor_hostname"],
                condition=Q(deleted=False),
                name="compute_node_host_hypervisor_live",
            )
        ]
        # the scheduler's per-request freshness check (``selectors.compute_fingerprint``)
        indexes = [
            models.Index(fields=["created_at"], name="compute_node_created"),
            models.Index(fields=["updated_at"], name="compute_node_updated"),
        ]

    def __str__(self) -> str:
        return f"{self.hypervisor_hostname} ({self.uuid})"
