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
