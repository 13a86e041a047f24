"""Glance's slice: image records (API database); image bytes live in ``IMAGE_STORE_DIR``."""
from __future__ import annotations

import uuid as uuidlib

from django.db import models

from cloudcore.core.models import ApiModel, SoftDeleteModel, TimestampedModel


def new_uuid() -> str:
    return str(uuidlib.uuid4())


class ImageStatus:
    QUEUED = "queued"
    SAVING = "saving"
    UPLOADING = "uploading"
    IMPORTING = "importing"
    ACTIVE = "active"
    KILLED = "killed"
    DELETED = "deleted"
    DEACTIVATED = "deactivated"


class Image(ApiModel, SoftDeleteModel):
    id = models.CharField(primary_key=True, max_length=36, default=new_uuid)
    name = models.CharField(max_length=255, null=True, blank=True)
    status = models.CharField(max_length=32, default=ImageStatus.QUEUED)
    disk_format = models.CharField(max_length=32, null=True, blank=True)
    container_format = models.CharField(max_length=32, null=True, blank=True)
    size = models.BigIntegerField(null=True, blank=True)
    virtual_size = models.BigIntegerField(null=True, blank=True)
    checksum = models.CharField(max_length=32, null=True, blank=True)
    os_hash_algo = models.CharField(max_length=64, null=True, blank=True)
    os_hash_value = models.CharField(max_length=128, null=True, blank=True)
    owner = models.CharField(max_length=255, null=True, blank=True, db_index=True)
    visibility = models.CharField(max_length=16, default="shared")
    protected = models.BooleanField(default=False)
    os_hidden = models.BooleanField(default=False)
    min_disk = models.IntegerField(default=0)
    min_ram = models.IntegerField(default=0)
    properties = models.JSONField(default=dict)
    tags = models.JSONField(default=list)

    class Meta(SoftDeleteModel.Meta):
        pass

    def __str__(self) -> str:
        return f"{self.name} ({self.id})"


class ImageMember(ApiModel, TimestampedModel):
    """A project an image is shared with: ``pending`` until that project accepts (or rejects) it."""

    image = models.ForeignKey(Image, on_delete=models.CASCADE, related_name="members")
    member = models.CharField(max_length=255)
    status = models.CharField(max_length=20, default="pending")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["image", "member"], name="image_member")]


class TaskStatus:
    PENDING = "pending"
    PROCESSING = "processing"
    SUCCESS = "success"
    FAILURE = "failure"


class ImageTask(ApiModel, SoftDeleteModel):
    """A Glance task (``/v2/tasks``): asynchronous work on images, its input and outcome.

    The one type is ``import``: an image made from the data at a URL (``images.services``'
    ``image_task_run``). ``pending`` until the conductor takes it, ``processing`` while it runs,
    then ``success`` (``result`` names the image, also in ``image_id``) or ``failure`` (``message``
    says why); a finished task expires (``expires_at``) after ``IMAGE_TASK_TIME_TO_LIVE`` hours."""

    id = models.CharField(primary_key=True, max_length=36, default=new_uuid)
    type = models.CharField(max_length=30)
    status = models.CharField(max_length=30, default=TaskStatus.PENDING)
    owner = models.CharField(max_length=255, db_index=True)
    input = models.JSONField(default=dict)
    result = models.JSONField(null=True, blank=True)
    message = models.TextField(default="", blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    image_id = models.CharField(max_length=36, null=True, blank=True, db_index=True)
    request_id = models.CharField(max_length=64, null=True, blank=True)
    user_id = models.CharField(max_length=64, null=True, blank=True)

    class Meta(SoftDeleteModel.Meta):
        pass

    def __str__(self) -> str:
        return f"{self.type} task {self.id} ({self.status})"


# --- metadata definitions (Glance's /v2/metadefs): a catalogue of the properties resources may carry ---


class MetadefNamespace(ApiModel, TimestampedModel):
    """A metadata definitions namespace: a named, owned group of property definitions, objects (named
    groups of properties), tags and the resource types they apply to. ``public`` ones are read by
    every project, ``private`` ones by their owner's only; only cloud admins write them (Glance's
    policy). A ``protected`` namespace, and everything in it, cannot be deleted until it is
    unprotected. Its contents are deleted with it (hard deletes, as Glance)."""

    namespace = models.CharField(max_length=80, unique=True)
    display_name = models.CharField(max_length=80, null=True, blank=True)
    description = models.CharField(max_length=500, null=True, blank=True)
    visibility = models.CharField(max_length=16, default="private")
    protected = models.BooleanField(default=False)
    owner = models.CharField(max_length=255, db_index=True)

    def __str__(self) -> str:
        return self.namespace


class MetadefResourceType(ApiModel, TimestampedModel):
    """A kind of resource metadata applies to (``OS::Glance::Image``, ``OS::Nova::Flavor``, ...).
    The well-known ones are ``protected`` (made by migration); associating a namespace with an
    unknown name makes that type."""

    name = models.CharField(max_length=80, unique=True)
    protected = models.BooleanField(default=False)

    def __str__(self) -> str:
        return self.name


class MetadefResourceTypeAssociation(ApiModel, TimestampedModel):
    """A namespace applies to a resource type; on that type its properties are named with ``prefix``
    (``hw_`` on images, ``hw:`` on flavors) and, for types with several property sets (a volume's
    ``image`` metadata), go to ``properties_target``."""

    namespace = models.ForeignKey(MetadefNamespace, on_delete=models.CASCADE,
                                  related_name="resource_type_associations")
    resource_type = models.ForeignKey(MetadefResourceType, on_delete=models.CASCADE, related_name="associations")
    prefix = models.CharField(max_length=80, null=True, blank=True)
    properties_target = models.CharField(max_length=80, null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["namespace", "resource_type"],
                                               name="metadef_resource_type_association")]


class MetadefObject(ApiModel, TimestampedModel):
    """A named group of property definitions in a namespace (``required`` names those a resource
    must carry)."""

    namespace = models.ForeignKey(MetadefNamespace, on_delete=models.CASCADE, related_name="object_definitions")
    name = models.CharField(max_length=80)
    description = models.TextField(null=True, blank=True)
    required = models.JSONField(default=list)
    properties = models.JSONField(default=dict)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["namespace", "name"], name="metadef_object_name")]


class MetadefProperty(ApiModel, TimestampedModel):
    """A property definition of a namespace: its JSON-schema-like ``definition`` (``title``,
    ``type``, ``enum``, ``minimum``, ...), the name apart."""

    namespace = models.ForeignKey(MetadefNamespace, on_delete=models.CASCADE, related_name="property_definitions")
    name = models.CharField(max_length=255)
    definition = models.JSONField(default=dict)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["namespace", "name"], name="metadef_property_name")]


class MetadefTag(ApiModel, TimestampedModel):
    """A tag definition of a namespace (a name resources may be tagged with)."""

    namespace = models.ForeignKey(MetadefNamespace, on_delete=models.CASCADE, related_name="tag_definitions")
    name = models.CharField(max_length=255)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["namespace", "name"], name="metadef_tag_name")]
