"""Placement (resource providers, inventories, allocations, traits), aggregates and request
specs. All in the API database."""
from __future__ import annotations

import uuid as uuidlib
from typing import Any

from django.db import models
from django.utils import timezone

from cloudcore.core.models import ApiModel, RowidAutoField, SoftDeleteModel, TimestampedModel


def new_uuid() -> str:
    return str(uuidlib.uuid4())


STANDARD_RESOURCE_CLASSES = ("VCPU", "MEMORY_MB", "DISK_GB")


class ResourceClass(ApiModel):
    name = models.CharField(max_length=255, unique=True)

    def __str__(self) -> str:
        return self.name


class Trait(ApiModel):
    name = models.CharField(max_length=255, unique=True)

    def __str__(self) -> str:
        return self.name


class PlacementAggregate(ApiModel):
    uuid = models.CharField(max_length=36, unique=True)


class ResourceProvider(ApiModel, TimestampedModel):
    uuid = models.CharField(max_length=36, unique=True, default=new_uuid)
    name = models.CharField(max_length=200, unique=True)
    generation = models.IntegerField(default=0)
    #: ``PlacementChangeStamp.seq`` of the last write that changed this provider (inventories,
    #: traits, aggregates, usage): how the scheduler's provider cache finds what to reload.
    changed_seq = models.BigIntegerField(default=0, db_index=True)
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="children"
    )
    root = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="tree"
    )
    traits = models.ManyToManyField(Trait, blank=True, related_name="providers")
    aggregates = models.ManyToManyField(PlacementAggregate, blank=True, related_name="providers")

    def __str__(self) -> str:
        return f"{self.name} ({self.uuid})"


class PlacementChangeStamp(ApiModel):
    """One row (id 1): a counter bumped by every placement write in the writer's transaction.

    ``seq`` orders the writes (the row lock taken by the UPDATE serialises writers until they
    commit, so a reader that sees ``seq`` sees every write numbered up to it); ``full_seq`` is the
    ``seq`` of the last write a delta cannot describe (a provider deleted or re-parented);
    ``epoch`` is drawn when the row is created, so a database restored or rolled back to before
    the row existed is never mistaken for the one a cache was loaded from."""

    seq = models.BigIntegerField(default=0)
    full_seq = models.BigIntegerField(default=0)
    epoch = models.CharField(max_length=36, default=new_uuid)


class Inventory(ApiModel, TimestampedModel):
    resource_provider = models.ForeignKey(
        ResourceProvider, on_delete=models.CASCADE, related_name="inventories"
    )
    resource_class = models.ForeignKey(ResourceClass, on_delete=models.PROTECT)
    total = models.IntegerField()
    reserved = models.IntegerField(default=0)
    min_unit = models.IntegerField(default=1)
    max_unit = models.IntegerField()
    step_size = models.IntegerField(default=1)
    allocation_ratio = models.FloatField(default=1.0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["resource_provider", "resource_class"], name="inventory_rp_rc"
            )
        ]


class Consumer(ApiModel, TimestampedModel):
    """An allocation consumer: an instance or a migration uuid."""

    uuid = models.CharField(max_length=36, unique=True)
    project_id = models.CharField(max_length=255)
    user_id = models.CharField(max_length=255)
    consumer_type = models.CharField(max_length=32, default="INSTANCE")
    generation = models.IntegerField(default=0)


class Allocation(ApiModel, TimestampedModel):
    resource_provider = models.ForeignKey(
        ResourceProvider, on_delete=models.PROTECT, related_name="allocations"
    )
    consumer = models.ForeignKey(Consumer, on_delete=models.CASCADE, related_name="allocations")
    resource_class = models.ForeignKey(ResourceClass, on_delete=models.PROTECT)
    used = models.IntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["resource_provider", "consumer", "resource_class"], name="allocation_unique"
            )
        ]
        indexes = [models.Index(fields=["resource_provider", "resource_class"])]


class Aggregate(ApiModel, SoftDeleteModel):
    """A Nova host aggregate; the ``availability_zone`` metadata key makes it an AZ."""

    uuid = models.CharField(max_length=36, unique=True, default=new_uuid)
    name = models.CharField(max_length=255)

    class Meta(SoftDeleteModel.Meta):
        pass

    def __str__(self) -> str:
        return self.name


class AggregateHost(ApiModel):
    aggregate = models.ForeignKey(Aggregate, on_delete=models.CASCADE, related_name="hosts")
    host = models.CharField(max_length=255, db_index=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["aggregate", "host"], name="aggregate_host")]


class AggregateMetadata(ApiModel):
    aggregate = models.ForeignKey(Aggregate, on_delete=models.CASCADE, related_name="metadata")
    key = models.CharField(max_length=255, db_index=True)
    value = models.CharField(max_length=255)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["aggregate", "key"], name="aggregate_key")]


class RequestSpec(ApiModel, TimestampedModel):
    """What was asked when a server was created or moved (flavor, image, AZ, destination, ...),
    serialised as JSON like Nova's ``request_specs.spec``.

    Beside the spec, the three values of it that a server list shows, each in its own column: a
    page of 1,000 servers reads these small columns, never the spec (whose flavor and image make
    a database's JSON parser read kilobytes a row). They are written with the spec by
    ``set_spec``, the one way a spec is set (``scheduling.services.request_specs``; the data
    migration 0007 filled them for the rows stored before)."""

    instance_uuid = models.CharField(max_length=36, unique=True)
    spec = models.JSONField(default=dict)
    #: ``spec["availability_zone"]``: the zone asked or pinned (2.96's ``pinned_availability_zone``),
    #: NULL when the spec has none (absent or null alike)
    availability_zone = models.CharField(max_length=255, null=True, blank=True)
    #: ``spec["instance_group"]["uuid"]``: the server's group (2.71's ``server_groups``)
    instance_group_uuid = models.CharField(max_length=36, null=True, blank=True)
    #: ``spec["scheduler_hints"]`` (2.100), NULL when the spec has none; JSON as the spec is (on
    #: PostgreSQL a ``jsonb``: its keys in the order the spec's read gives them)
    scheduler_hints = models.JSONField(null=True, blank=True)

    def set_spec(self, spec: dict[str, Any]) -> None:
        """Set ``spec`` and the columns of its listed values (not saved)."""
        group = spec.get("instance_group")
        self.spec = spec
        self.availability_zone = spec.get("availability_zone")
        self.instance_group_uuid = group.get("uuid") if isinstance(group, dict) else None
        self.scheduler_hints = spec.get("scheduler_hints")


class SchedulingTraceRecord(ApiModel):
    """The trace of one scheduling decision (``scheduling.trace``) for one instance: kept with the
    request (``request_id`` is the request context's, as on the instance action) so that admins
    can ask why a server went where it went, or nowhere. The trace itself is a
    ``SchedulingTraceBody``, named by its digest: the same failure asked again and again (the
    PENDING seed's retries) stores one body and a small row per request. The selectors of
    ``scheduling.services.traces`` set ``trace`` (the body, read) on the records they return."""

    #: named by no one outside (the readers find records by instance): no ``sqlite_sequence`` write
    #: in the transaction each is written in
    id = RowidAutoField(primary_key=True)
    instance_uuid = models.CharField(max_length=36)
    request_id = models.CharField(max_length=255, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    result = models.CharField(max_length=32)
    message = models.CharField(max_length=255, blank=True, default="")
    #: ``SchedulingTraceBody.digest`` (no foreign key: a trace row is written without reading it)
    body_digest = models.CharField(max_length=64)
    #: the whole trace (set by the selectors, not stored in this row)
    trace: dict[str, Any]

    class Meta:
        # the one index: (instance_uuid, ...) serves the reads by instance too
        indexes = [models.Index(fields=["instance_uuid", "request_id"])]


class SchedulingTraceBody(ApiModel):
    """A scheduling trace's whole body as compact JSON (``SchedulingTrace.to_dict``), stored once
    for every ``SchedulingTraceRecord`` with the same body (same question, same answer), under
    the digest of its text. Deleted by the archive once no record names it, after a grace
    period when a record named it lately (``scheduling.services.traces``: a scheduler that
    stored it lately may still name it without writing it again)."""

    digest = models.CharField(max_length=64, primary_key=True)
    body = models.TextField()
    #: when the archive deleted the last record naming it, kept for the grace period (null while
    #: it is named; only the archive writes it)
    orphaned_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        # the archive's sweep reads the orphans only: a body stored by the scheduler adds no entry
        indexes = [models.Index(fields=["orphaned_at"], name="trace_body_orphaned",
                                condition=models.Q(orphaned_at__isnull=False))]


class PlacementUsageSample(ApiModel):
    """Placement's usage at one moment, taken by the control plane's periodic audit
    (``scheduling.services.usage_samples``) for the console's chart: ``usage`` maps a scope
    (``"cloud"`` or a cell's name) to ``{resource class: [used, capacity]}`` for VCPU, MEMORY_MB
    and DISK_GB. Only the newest ``PLACEMENT_USAGE_SAMPLES_KEPT`` rows are kept."""

    taken_at = models.DateTimeField(default=timezone.now, db_index=True)
    usage = models.JSONField(default=dict)
