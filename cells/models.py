"""Cells v2 mappings, all in the API database."""
from __future__ import annotations

import uuid as uuidlib

from django.db import models

from cloudcore.core.models import ApiModel, TimestampedModel

CELL0_UUID = "00000000-0000-0000-0000-000000000000"
CELL0_NAME = "cell0"


def new_uuid() -> str:
    return str(uuidlib.uuid4())


class CellMapping(ApiModel, TimestampedModel):
    """A cell: its name, database and message queue. cell0 holds servers that never got a host."""

    uuid = models.CharField(max_length=36, unique=True, default=new_uuid)
    name = models.CharField(max_length=255, null=True, blank=True)
    transport_url = models.TextField(default="none:///")
    database_connection = models.TextField()
    disabled = models.BooleanField(default=False)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.name or '(no name)'} ({self.uuid})"

    @property
    def is_cell0(self) -> bool:
        return self.uuid == CELL0_UUID


class HostMapping(ApiModel, TimestampedModel):
    """Which cell a compute host belongs to."""

    host = models.CharField(max_length=255, unique=True)
    cell = models.ForeignKey(CellMapping, on_delete=models.PROTECT, related_name="host_mappings")

    def __str__(self) -> str:
        return f"{self.host} -> {self.cell.name}"


class InstanceMapping(ApiModel, TimestampedModel):
    """Which cell an instance lives in; ``cell`` is NULL while it is not yet scheduled."""

    instance_uuid = models.CharField(max_length=36, unique=True)
    cell = models.ForeignKey(
        CellMapping, null=True, blank=True, on_delete=models.PROTECT, related_name="instance_mappings"
    )
    project_id = models.CharField(max_length=255, db_index=True)
    user_id = models.CharField(max_length=255, null=True, blank=True)
    queued_for_delete = models.BooleanField(default=False)

    def __str__(self) -> str:
        return f"{self.instance_uuid} -> {self.cell.name if self.cell else None}"
