"""Block devices of a build. Image-backed servers need none; volume support arrives with the
volumes service (issue 7), until then a volume-backed build is refused clearly."""
from __future__ import annotations

from typing import Any

from cloudcore.core.context import RequestContext

from ..models import BlockDeviceMapping, Instance


def prep_block_devices(ctx: RequestContext, instance: Instance) -> dict[str, Any]:
    volumes = list(BlockDeviceMapping.objects.filter(instance_uuid=instance.uuid, destination_type="volume"))
    if volumes:
        from .build import BuildAbortException

        raise BuildAbortException(instance_uuid=instance.uuid, reason="volumes are not supported yet")
    return {"block_device_mapping": [], "root_device_name": "/dev/vda"}


def detach_all_volumes(ctx: RequestContext, instance: Instance) -> None:
    """Volume attachments are released with the volumes service (issue 7); nothing to do yet."""
    BlockDeviceMapping.objects.filter(instance_uuid=instance.uuid).update(deleted=True)
