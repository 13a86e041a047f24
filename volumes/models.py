"""Cinder's slice: volume types, volumes and attachments (API database); volume bytes live in
the storage backend (a libvirt storage pool)."""
from __future__ import annotations

import uuid as uuidlib

from django.db import models

from cloudcore.core.models import ApiModel, SoftDeleteModel, TimestampedModel

# re-exported: the states were read as volumes.models' before they moved to choices.py
from .choices import AttachStatus as AttachStatus
from .choices import BackupStatus
from .choices import VolumeStatus as VolumeStatus


def new_uuid() -> str:
    return str(uuidlib.uuid4())


class VolumeType(ApiModel, TimestampedModel):
    """Cinder's volume type: a name, extra specs (backend hints) and who may use it. A private
    type (``is_public`` false) is seen only by admins and the projects given access to it."""

    id = models.CharField(primary_key=True, max_length=36, default=new_uuid)
    name = models.CharField(max_length=255, unique=True)
    description = models.TextField(null=True, blank=True)
    is_public = models.BooleanField(default=True)
    extra_specs = models.JSONField(default=dict)
    #: The type's QoS specs (Cinder's ``qos_specs_id``), at most one; deleting the specs (forced)
    #: disassociates them.
    qos_specs = models.ForeignKey("QosSpecs", null=True, blank=True, on_delete=models.SET_NULL,
                                  related_name="volume_types")

    def __str__(self) -> str:
        return self.name

    @property
    def is_multiattach(self) -> bool:
        """Cinder's capability extra spec ``multiattach="<is> True"``: every volume of the type
        may be attached to several servers at once."""
        spec = str((self.extra_specs or {}).get("multiattach") or "")
        return " ".join(spec.split()).lower() == "<is> true"

    @property
    def is_encrypted(self) -> bool:
        """The type has an encryption spec (``/types/{id}/encryption``)."""
        return VolumeTypeEncryption.objects.filter(volume_type_id=self.pk).exists()


class QosSpecs(ApiModel, TimestampedModel):
    """Cinder's QoS specs: named key/value limits for a ``consumer`` (``front-end``: enforced by the
    hypervisor, ``back-end``: by the storage, or ``both``), associated with volume types."""

    id = models.CharField(primary_key=True, max_length=36, default=new_uuid)
    name = models.CharField(max_length=255, unique=True)
    consumer = models.CharField(max_length=32, default="back-end")
    specs = models.JSONField(default=dict)

    def __str__(self) -> str:
        return self.name


class VolumeTypeProject(ApiModel, TimestampedModel):
    """A project's access to a private volume type (Cinder's ``volume_type_projects``)."""

    volume_type = models.ForeignKey(VolumeType, on_delete=models.CASCADE, related_name="projects")
    project_id = models.CharField(max_length=255, db_index=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["volume_type", "project_id"],
                                               name="volumes_type_project_unique")]


class Volume(ApiModel, SoftDeleteModel):
    id = models.CharField(primary_key=True, max_length=36, default=new_uuid)
    name = models.CharField(max_length=255, null=True, blank=True)
    description = models.TextField(null=True, blank=True)
    size = models.IntegerField()
    status = models.CharField(max_length=32, default=VolumeStatus.CREATING, db_index=True)
    attach_status = models.CharField(max_length=32, default=AttachStatus.DETACHED)
    migration_status = models.CharField(max_length=32, null=True, blank=True)
    availability_zone = models.CharField(max_length=255, default="nova")
    bootable = models.BooleanField(default=False)
    multiattach = models.BooleanField(default=False)
    encrypted = models.BooleanField(default=False)
    project_id = models.CharField(max_length=255, db_index=True)
    user_id = models.CharField(max_length=255)
    volume_type = models.ForeignKey(VolumeType, null=True, blank=True, on_delete=models.PROTECT)
    image_id = models.CharField(max_length=36, null=True, blank=True)
    snapshot_id = models.CharField(max_length=36, null=True, blank=True)
    source_volid = models.CharField(max_length=36, null=True, blank=True)
    volume_image_metadata = models.JSONField(default=dict)
    metadata = models.JSONField(default=dict)
    backend_name = models.CharField(max_length=255, null=True, blank=True)
    provider_location = models.TextField(null=True, blank=True)
    #: The generic volume group (``VolumeGroup``) the volume belongs to, if any (3.13).
    group_id = models.CharField(max_length=36, null=True, blank=True, db_index=True)

    class Meta(SoftDeleteModel.Meta):
        pass

    def __str__(self) -> str:
        return f"{self.name} ({self.id})"


class VolumeAttachment(ApiModel, SoftDeleteModel):
    id = models.CharField(primary_key=True, max_length=36, default=new_uuid)
    volume = models.ForeignKey(Volume, on_delete=models.CASCADE, related_name="attachments")
    instance_uuid = models.CharField(max_length=36, null=True, blank=True, db_index=True)
    attached_host = models.CharField(max_length=255, null=True, blank=True)
    mountpoint = models.CharField(max_length=255, null=True, blank=True)
    attach_mode = models.CharField(max_length=4, default="rw")
    attach_status = models.CharField(max_length=32, default=AttachStatus.RESERVED)
    connector = models.JSONField(null=True, blank=True)
    connection_info = models.JSONField(null=True, blank=True)
    attach_time = models.DateTimeField(null=True, blank=True)
    detach_time = models.DateTimeField(null=True, blank=True)

    class Meta(SoftDeleteModel.Meta):
        pass


class SnapshotStatus:
    CREATING = "creating"
    AVAILABLE = "available"
    DELETING = "deleting"
    ERROR = "error"
    ERROR_DELETING = "error_deleting"
    #: A backup is being made of it (Cinder's state; back to ``available`` after).
    BACKING_UP = "backing-up"


class Snapshot(ApiModel, SoftDeleteModel):
    """A point-in-time copy of a volume's bytes (Cinder's snapshot); new volumes can start from it."""

    id = models.CharField(primary_key=True, max_length=36, default=new_uuid)
    volume = models.ForeignKey(Volume, on_delete=models.PROTECT, related_name="snapshots")
    name = models.CharField(max_length=255, null=True, blank=True)
    description = models.TextField(null=True, blank=True)
    size = models.IntegerField()
    status = models.CharField(max_length=32, default=SnapshotStatus.CREATING, db_index=True)
    progress = models.CharField(max_length=8, default="0%")
    project_id = models.CharField(max_length=255, db_index=True)
    user_id = models.CharField(max_length=255)
    metadata = models.JSONField(default=dict)
    #: The group snapshot (``GroupSnapshot``) it was taken as part of, if any (3.14).
    group_snapshot_id = models.CharField(max_length=36, null=True, blank=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "id"]


class VolumeQuotaClass(ApiModel, TimestampedModel):
    """One limit of a quota class (Cinder's ``quota_classes``): the ``default`` class's limits are
    the defaults every project has where it sets none."""

    class_name = models.CharField(max_length=255, db_index=True)
    resource = models.CharField(max_length=255)
    hard_limit = models.IntegerField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["class_name", "resource"], name="volumes_quota_class_unique")]


class VolumeQuota(ApiModel, TimestampedModel):
    """A project's limit for one block storage resource (Cinder's ``quotas``); a resource with no
    row has the default limit."""

    project_id = models.CharField(max_length=255, db_index=True)
    resource = models.CharField(max_length=255)
    hard_limit = models.IntegerField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project_id", "resource"], name="volumes_quota_unique")]



class Backup(ApiModel, SoftDeleteModel):
    """A copy of a volume's bytes kept outside the storage pool (Cinder's backup, its posix driver:
    a file under ``BACKUP_DIR``); it outlives its volume and can be restored into a new volume or
    over an existing one. ``volume_id`` is a plain reference: the volume may be deleted since."""

    id = models.CharField(primary_key=True, max_length=36, default=new_uuid)
    volume_id = models.CharField(max_length=36, db_index=True)
    snapshot_id = models.CharField(max_length=36, null=True, blank=True)
    name = models.CharField(max_length=255, null=True, blank=True)
    description = models.TextField(null=True, blank=True)
    size = models.IntegerField()
    status = models.CharField(max_length=32, default=BackupStatus.CREATING, db_index=True)
    fail_reason = models.TextField(null=True, blank=True)
    container = models.CharField(max_length=255, null=True, blank=True)
    availability_zone = models.CharField(max_length=255, default="nova")
    project_id = models.CharField(max_length=255, db_index=True)
    user_id = models.CharField(max_length=255)
    metadata = models.JSONField(default=dict)
    #: The volume's status when the backup started (a volume is ``backing-up`` meanwhile).
    volume_prior_status = models.CharField(max_length=32, null=True, blank=True)
    data_timestamp = models.DateTimeField(null=True, blank=True)
    #: The backup an incremental backup holds the changes since (Cinder's ``parent_id``); null for a full one.
    parent_id = models.CharField(max_length=36, null=True, blank=True, db_index=True)
    #: Where its bytes are in the backup store (Cinder's ``service_metadata``): the data file's name,
    #: ``backup-<id>`` of the backup that wrote them (an imported record names the file it came from).
    service_metadata = models.CharField(max_length=255, null=True, blank=True)

    class Meta(SoftDeleteModel.Meta):
        ordering = ["-created_at", "id"]

    @property
    def is_incremental(self) -> bool:
        return bool(self.parent_id)

    @property
    def data_name(self) -> str:
        return self.service_metadata or f"backup-{self.id}"


class VolumeTransfer(ApiModel, SoftDeleteModel):
    """A volume offered to another project (Cinder's ``transfers``): whoever presents the id and
    the auth key (kept only as a salted hash) takes the volume into their project."""

    id = models.CharField(primary_key=True, max_length=36, default=new_uuid)
    volume = models.ForeignKey(Volume, on_delete=models.CASCADE, related_name="transfers")
    name = models.CharField(max_length=255, null=True, blank=True)
    salt = models.CharField(max_length=255)
    crypt_hash = models.CharField(max_length=255)
    source_project_id = models.CharField(max_length=255, db_index=True)
    destination_project_id = models.CharField(max_length=255, null=True, blank=True)
    accepted = models.BooleanField(default=False)
    no_snapshots = models.BooleanField(default=False)

    class Meta(SoftDeleteModel.Meta):
        pass


class VolumeTypeEncryption(ApiModel, TimestampedModel):
    """A volume type's encryption spec (Cinder's ``encryption`` table): volumes of the type are
    created ``encrypted``. Set, changed and removed only while no volume has the type."""

    #: Cinder's ``encryption_id``.
    id = models.CharField(primary_key=True, max_length=36, default=new_uuid)
    volume_type = models.OneToOneField(VolumeType, on_delete=models.CASCADE, related_name="encryption")
    provider = models.CharField(max_length=255)
    cipher = models.CharField(max_length=255, null=True, blank=True)
    key_size = models.IntegerField(null=True, blank=True)
    control_location = models.CharField(max_length=255, default="front-end")


class GroupType(ApiModel, TimestampedModel):
    """Cinder's group type (3.11): a name, group specs (backend hints for the group as a whole,
    admins') and who may use it."""

    id = models.CharField(primary_key=True, max_length=36, default=new_uuid)
    name = models.CharField(max_length=255, unique=True)
    description = models.TextField(null=True, blank=True)
    is_public = models.BooleanField(default=True)
    group_specs = models.JSONField(default=dict)

    def __str__(self) -> str:
        return self.name


class VolumeGroup(ApiModel, SoftDeleteModel):
    """Cinder's generic volume group (3.13): volumes of the group's volume types managed together
    (snapshotted at once, deleted at once). A volume names its group in ``Volume.group_id``."""

    id = models.CharField(primary_key=True, max_length=36, default=new_uuid)
    name = models.CharField(max_length=255, null=True, blank=True)
    description = models.TextField(null=True, blank=True)
    status = models.CharField(max_length=32, default="creating", db_index=True)
    availability_zone = models.CharField(max_length=255, default="nova")
    group_type_id = models.CharField(max_length=36)
    #: The ids of the volume types the group's volumes may have.
    volume_type_ids = models.JSONField(default=list)
    project_id = models.CharField(max_length=255, db_index=True)
    user_id = models.CharField(max_length=255)
    group_snapshot_id = models.CharField(max_length=36, null=True, blank=True)
    source_group_id = models.CharField(max_length=36, null=True, blank=True)

    class Meta(SoftDeleteModel.Meta):
        ordering = ["-created_at", "id"]


class GroupSnapshot(ApiModel, SoftDeleteModel):
    """Cinder's group snapshot (3.14): one snapshot of each volume of a group, taken together; its
    snapshots name it in ``Snapshot.group_snapshot_id``."""

    id = models.CharField(primary_key=True, max_length=36, default=new_uuid)
    group_id = models.CharField(max_length=36, db_index=True)
    group_type_id = models.CharField(max_length=36)
    name = models.CharField(max_length=255, null=True, blank=True)
    description = models.TextField(null=True, blank=True)
    status = models.CharField(max_length=32, default="creating", db_index=True)
    project_id = models.CharField(max_length=255, db_index=True)
    user_id = models.CharField(max_length=255)

    class Meta(SoftDeleteModel.Meta):
        ordering = ["-created_at", "id"]


class VolumeService(ApiModel, TimestampedModel):
    """A block storage service (Cinder's ``services`` row): the volume worker's ``cinder-volume``
    (host ``<machine>@<backend>``) and ``cinder-backup`` (the same worker runs backups). The worker
    heartbeats ``last_seen_up``; an admin may disable it (then volumes are not scheduled to it)."""

    host = models.CharField(max_length=255)
    binary = models.CharField(max_length=255)
    availability_zone = models.CharField(max_length=255, default="nova")
    disabled = models.BooleanField(default=False)
    disabled_reason = models.CharField(max_length=255, null=True, blank=True)
    last_seen_up = models.DateTimeField(null=True, blank=True)
    report_count = models.IntegerField(default=0)
    #: What the service last reported of its back end (``cinder-volume`` only): its pool's
    #: capabilities and capacity, as Cinder's volume service reports them to the scheduler.
    capabilities = models.JSONField(default=dict)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["host", "binary"], name="volumes_service_host_binary")]

    def __str__(self) -> str:
        return f"{self.binary}@{self.host}"


class UserMessage(ApiModel, TimestampedModel):
    """Cinder's user message: what went wrong with an asynchronous operation on a project's
    resource, for its users to read (``/messages``, 3.3+). ``event_id`` is Cinder's
    ``VOLUME_<resource>_<action>_<detail>``; kept until ``expires_at`` (Cinder's ``message_ttl``)."""

    id = models.CharField(primary_key=True, max_length=36, default=new_uuid)
    project_id = models.CharField(max_length=255, db_index=True)
    request_id = models.CharField(max_length=255, null=True, blank=True)
    resource_type = models.CharField(max_length=255, null=True, blank=True)
    resource_uuid = models.CharField(max_length=36, null=True, blank=True, db_index=True)
    event_id = models.CharField(max_length=255)
    action_id = models.CharField(max_length=10)
    detail_id = models.CharField(max_length=10)
    message_level = models.CharField(max_length=255, default="ERROR")
    expires_at = models.DateTimeField(null=True, blank=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "id"]
