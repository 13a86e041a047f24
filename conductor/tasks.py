"""Celery tasks of the conductor (queue ``conductor``): ids in, one service call (STYLE rule 10).
Only ``conductor.rpc`` sends them, by name; beat sends ``servers.periodic``."""
from __future__ import annotations

from typing import Any

from celery import shared_task

from cells.isolation import on_service_side
from cloudcore.core import notifications
from cloudcore.core.context import RequestContext
from images.services import image_task_run
from scheduling.services.usage_samples import placement_usage_sample_take

from . import periodic, rpc
from .build import reschedule_build, schedule_and_build_instances
from .cross_cell import confirm_cross_cell_resize, revert_cross_cell_resize
from .evacuate import evacuate_instance
from .hosts import compute_host_started
from .image_cache import cache_images
from .live_migrate import live_migrate_instance
from .rebuild import rebuild_instance
from .resize import resize_instance
from .unshelve import unshelve_instance


@shared_task(name=rpc.SCHEDULE_AND_BUILD_INSTANCES, queue=rpc.QUEUE, acks_late=True, time_limit=3600,
             soft_time_limit=3500)
@on_service_side
def schedule_and_build_instances_task(*, ctx: dict[str, Any], instance_uuids: list[str],
                                      admin_pass: str | None = None) -> None:
    schedule_and_build_instances(RequestContext.from_dict(ctx), instance_uuids=instance_uuids,
                                 admin_pass=admin_pass)


@shared_task(name=rpc.RESCHEDULE_BUILD, queue=rpc.QUEUE, acks_late=True, time_limit=600)
@on_service_side
def reschedule_build_task(*, ctx: dict[str, Any], instance_uuid: str, cell_uuid: str, admin_pass: str | None,
                          alternates: list[dict[str, Any]], attempt: int, reason: str) -> None:
    reschedule_build(RequestContext.from_dict(ctx), instance_uuid=instance_uuid, cell_uuid=cell_uuid,
                     admin_pass=admin_pass, alternates=alternates, attempt=attempt, reason=reason)


@shared_task(name=rpc.REBUILD_INSTANCE, queue=rpc.QUEUE, acks_late=True, time_limit=600)
@on_service_side
def rebuild_instance_task(*, ctx: dict[str, Any], instance_uuid: str, cell_uuid: str, image: dict[str, Any],
                          image_changed: bool, admin_pass: str | None, preserve_ephemeral: bool,
                          reimage_boot_volume: bool, original_image: dict[str, Any] | None = None) -> None:
    rebuild_instance(RequestContext.from_dict(ctx), instance_uuid=instance_uuid, cell_uuid=cell_uuid, image=image,
                     image_changed=image_changed, admin_pass=admin_pass, preserve_ephemeral=preserve_ephemeral,
                     reimage_boot_volume=reimage_boot_volume, original_image=original_image)


@shared_task(name=rpc.EVACUATE_INSTANCE, queue=rpc.QUEUE, acks_late=True, time_limit=3600, soft_time_limit=3500)
@on_service_side
def evacuate_instance_task(*, ctx: dict[str, Any], instance_uuid: str, cell_uuid: str, migration_uuid: str,
                           host: str | None, force: bool, admin_pass: str | None, stop: bool) -> None:
    evacuate_instance(RequestContext.from_dict(ctx), instance_uuid=instance_uuid, cell_uuid=cell_uuid,
                      migration_uuid=migration_uuid, host=host, force=force, admin_pass=admin_pass, stop=stop)


@shared_task(name=rpc.LIVE_MIGRATE_INSTANCE, queue=rpc.QUEUE, acks_late=True, time_limit=3600,
             soft_time_limit=3500)
@on_service_side
def live_migrate_instance_task(*, ctx: dict[str, Any], instance_uuid: str, cell_uuid: str, migration_uuid: str,
                               host: str | None, force: bool, block_migration: bool | str) -> None:
    live_migrate_instance(RequestContext.from_dict(ctx), instance_uuid=instance_uuid, cell_uuid=cell_uuid,
                          migration_uuid=migration_uuid, host=host, force=force, block_migration=block_migration)


@shared_task(name=rpc.UNSHELVE_INSTANCE, queue=rpc.QUEUE, acks_late=True, time_limit=3600, soft_time_limit=3500)
@on_service_side
def unshelve_instance_task(*, ctx: dict[str, Any], instance_uuid: str, cell_uuid: str, host: str | None) -> None:
    unshelve_instance(RequestContext.from_dict(ctx), instance_uuid=instance_uuid, cell_uuid=cell_uuid, host=host)


@shared_task(name=rpc.IMAGE_TASK_RUN, queue=rpc.QUEUE, acks_late=True, time_limit=3600)
@on_service_side
def image_task_run_task(*, ctx: dict[str, Any], task_id: str) -> None:
    image_task_run(RequestContext.from_dict(ctx), task_id=task_id)


@shared_task(name=rpc.RESIZE_INSTANCE, queue=rpc.QUEUE, acks_late=True, time_limit=3600, soft_time_limit=3500)
@on_service_side
def resize_instance_task(*, ctx: dict[str, Any], instance_uuid: str, cell_uuid: str, migration_uuid: str,
                         host: str | None, allow_cross_cell: bool) -> None:
    resize_instance(RequestContext.from_dict(ctx), instance_uuid=instance_uuid, cell_uuid=cell_uuid,
                    migration_uuid=migration_uuid, host=host, allow_cross_cell=allow_cross_cell)


@shared_task(name=rpc.RECORD_NOTIFICATION, queue=rpc.QUEUE, acks_late=True, time_limit=60)
@on_service_side
def record_notification_task(*, message: dict[str, Any]) -> None:
    """A notification a compute agent emitted: kept in the API database and published."""
    notifications.keep(message)


@shared_task(name=rpc.RECORD_NOTIFICATIONS, queue=rpc.QUEUE, acks_late=True, time_limit=60)
@on_service_side
def record_notifications_task(*, messages: list[dict[str, Any]]) -> None:
    """Notifications a compute agent emitted together: each kept and published, in their order."""
    notifications.keep_together(messages)


@shared_task(name=rpc.CONFIRM_CROSS_CELL_RESIZE, queue=rpc.QUEUE, acks_late=True, time_limit=3600,
             soft_time_limit=3500)
@on_service_side
def confirm_cross_cell_resize_task(*, ctx: dict[str, Any], instance_uuid: str, cell_uuid: str, migration_uuid: str,
                                   source_cell_uuid: str, cast_to_source: bool = False) -> None:
    confirm_cross_cell_resize(RequestContext.from_dict(ctx), instance_uuid=instance_uuid, cell_uuid=cell_uuid,
                              migration_uuid=migration_uuid, source_cell_uuid=source_cell_uuid,
                              cast_to_source=cast_to_source)


@shared_task(name=rpc.REVERT_CROSS_CELL_RESIZE, queue=rpc.QUEUE, acks_late=True, time_limit=3600,
             soft_time_limit=3500)
@on_service_side
def revert_cross_cell_resize_task(*, ctx: dict[str, Any], instance_uuid: str, cell_uuid: str, migration_uuid: str,
                                  source_cell_uuid: str) -> None:
    revert_cross_cell_resize(RequestContext.from_dict(ctx), instance_uuid=instance_uuid, cell_uuid=cell_uuid,
                             migration_uuid=migration_uuid, source_cell_uuid=source_cell_uuid)


@shared_task(name=rpc.COMPUTE_HOST_STARTED, queue=rpc.QUEUE, acks_late=True, time_limit=300)
@on_service_side
def compute_host_started_task(*, host: str, cell_uuid: str) -> None:
    compute_host_started(host=host, cell_uuid=cell_uuid)


@shared_task(name="servers.periodic", queue=rpc.QUEUE, time_limit=600)
@on_service_side
def servers_periodic_task() -> dict[str, int]:
    """Beat: offload shelved servers, confirm old resizes, reclaim old soft-deleted servers, reap
    stale task_states, and sample placement's usage for the console's chart when one is due."""
    return {"offloaded": periodic.offload_shelved(), "confirmed": periodic.confirm_resizes(),
            "reclaimed": periodic.reclaim_soft_deleted(), "reaped": periodic.reap_stale_task_states(),
            "usage_sampled": int(placement_usage_sample_take() is not None)}


# each host of the aggregate may take up to LONG_RPC_TIMEOUT: no time limit of Celery's
@shared_task(name=rpc.CACHE_IMAGES, queue=rpc.QUEUE, acks_late=True)
@on_service_side
def cache_images_task(*, ctx: dict[str, Any], aggregate_id: int, image_ids: list[str]) -> None:
    cache_images(RequestContext.from_dict(ctx), aggregate_id=aggregate_id, image_ids=image_ids)
