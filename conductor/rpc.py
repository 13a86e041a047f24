"""The conductor's RPC surface: one keyword-only function per workflow the API side casts to it.

Every cast to queue ``conductor`` goes through here, by Celery task name (``conductor.tasks``),
so the API services never import the conductor side. All are casts sent at once (a delete's
cross-cell confirm may run here instead); the API side sends them after its commit
(``transaction.on_commit``). A compute host casts here too: a build that failed on it goes
back to the conductor (``reschedule_build``), which picks the next host.
"""
from __future__ import annotations

from typing import Any

from celery import current_app

from cells.isolation import agent_cell
from cloudcore.core.context import RequestContext

QUEUE = "conductor"

SCHEDULE_AND_BUILD_INSTANCES = "conductor.schedule_and_build_instances"
UNSHELVE_INSTANCE = "conductor.unshelve_instance"
RESIZE_INSTANCE = "conductor.resize_instance"
RECORD_NOTIFICATION = "conductor.record_notification"
RECORD_NOTIFICATIONS = "conductor.record_notifications"
RESCHEDULE_BUILD = "conductor.reschedule_build"
REBUILD_INSTANCE = "conductor.rebuild_instance"
CONFIRM_CROSS_CELL_RESIZE = "conductor.confirm_cross_cell_resize"
REVERT_CROSS_CELL_RESIZE = "conductor.revert_cross_cell_resize"
COMPUTE_HOST_STARTED = "conductor.compute_host_started"
EVACUATE_INSTANCE = "conductor.evacuate_instance"
LIVE_MIGRATE_INSTANCE = "conductor.live_migrate_instance"
IMAGE_TASK_RUN = "conductor.image_task_run"
CACHE_IMAGES = "conductor.cache_images"


def _send(task_name: str, **kwargs: Any) -> None:
    # By name: applied in-process when this process registered the task (eager tests), otherwise
    # sent to the broker.
    current_app.signature(task_name, kwargs=kwargs, queue=QUEUE).apply_async()


def schedule_and_build_instances(*, ctx: RequestContext, instance_uuids: list[str],
                                 admin_pass: str | None = None) -> None:
    _send(SCHEDULE_AND_BUILD_INSTANCES, ctx=ctx.to_dict(), instance_uuids=instance_uuids, admin_pass=admin_pass)


def unshelve_instance(*, ctx: RequestContext, instance_uuid: str, cell_uuid: str, host: str | None) -> None:
    _send(UNSHELVE_INSTANCE, ctx=ctx.to_dict(), instance_uuid=instance_uuid, cell_uuid=cell_uuid, host=host)


def resize_instance(*, ctx: RequestContext, instance_uuid: str, cell_uuid: str, migration_uuid: str,
                    host: str | None, allow_cross_cell: bool) -> None:
    _send(RESIZE_INSTANCE, ctx=ctx.to_dict(), instance_uuid=instance_uuid, cell_uuid=cell_uuid,
          migration_uuid=migration_uuid, host=host, allow_cross_cell=allow_cross_cell)


def record_notification(*, message: dict[str, Any]) -> None:
    _send(RECORD_NOTIFICATION, message=message)


def notification_handoff(message: dict[str, Any]) -> bool:
    """``cloudcore.core.notifications``' handoff: a notification emitted inside a compute agent goes
    to the conductor, which records and publishes it (the agent never opens the API database)."""
    if agent_cell() is None:
        return False
    record_notification(message=message)
    return True


def record_notifications(*, messages: list[dict[str, Any]]) -> None:
    _send(RECORD_NOTIFICATIONS, messages=messages)


def notifications_handoff(messages: list[dict[str, Any]]) -> bool:
    """``notification_handoff`` of several notifications a compute agent emitted together
    (``cloudcore.core.notifications.handed_off_together``): one cast, kept in their order."""
    if agent_cell() is None:
        return False
    record_notifications(messages=messages)
    return True


def rebuild_instance(*, ctx: RequestContext, instance_uuid: str, cell_uuid: str, image: dict[str, Any],
                     image_changed: bool, admin_pass: str | None, preserve_ephemeral: bool,
                     reimage_boot_volume: bool, original_image: dict[str, Any] | None = None) -> None:
    """``image`` is the image the server is rebuilt from (its ``id`` and properties, for the host check);
    ``original_image``: the server's image before (``image_ref`` and its ``image_*`` system metadata),
    put back if the host refuses the new one."""
    _send(REBUILD_INSTANCE, ctx=ctx.to_dict(), instance_uuid=instance_uuid, cell_uuid=cell_uuid, image=image,
          image_changed=image_changed, admin_pass=admin_pass, preserve_ephemeral=preserve_ephemeral,
          reimage_boot_volume=reimage_boot_volume, original_image=original_image)


def evacuate_instance(*, ctx: RequestContext, instance_uuid: str, cell_uuid: str, migration_uuid: str,
                      host: str | None, force: bool, admin_pass: str | None, stop: bool) -> None:
    _send(EVACUATE_INSTANCE, ctx=ctx.to_dict(), instance_uuid=instance_uuid, cell_uuid=cell_uuid,
          migration_uuid=migration_uuid, host=host, force=force, admin_pass=admin_pass, stop=stop)


def live_migrate_instance(*, ctx: RequestContext, instance_uuid: str, cell_uuid: str, migration_uuid: str,
                          host: str | None, force: bool, block_migration: bool | str) -> None:
    _send(LIVE_MIGRATE_INSTANCE, ctx=ctx.to_dict(), instance_uuid=instance_uuid, cell_uuid=cell_uuid,
          migration_uuid=migration_uuid, host=host, force=force, block_migration=block_migration)


def reschedule_build(*, ctx: RequestContext, instance_uuid: str, cell_uuid: str, admin_pass: str | None,
                     alternates: list[dict[str, Any]], attempt: int, reason: str) -> None:
    """From the compute host where the build failed (its guest and ports already cleaned up):
    ``alternates`` are the hosts left to try, ``attempt`` the attempt that failed."""
    _send(RESCHEDULE_BUILD, ctx=ctx.to_dict(), instance_uuid=instance_uuid, cell_uuid=cell_uuid,
          admin_pass=admin_pass, alternates=alternates, attempt=attempt, reason=reason)


def confirm_cross_cell_resize(*, ctx: RequestContext, instance_uuid: str, cell_uuid: str, migration_uuid: str,
                              source_cell_uuid: str, run_here: bool = False) -> None:
    """Confirm a cross-cell resize; ``run_here`` runs it in this process, now (a delete or beat's
    confirm), casting the source guest's destruction to its host instead of waiting for it."""
    kwargs = dict(ctx=ctx.to_dict(), instance_uuid=instance_uuid, cell_uuid=cell_uuid, migration_uuid=migration_uuid,
                  source_cell_uuid=source_cell_uuid)
    if run_here:
        current_app.signature(CONFIRM_CROSS_CELL_RESIZE, kwargs={**kwargs, "cast_to_source": True}).apply()
        return
    _send(CONFIRM_CROSS_CELL_RESIZE, **kwargs)


def revert_cross_cell_resize(*, ctx: RequestContext, instance_uuid: str, cell_uuid: str, migration_uuid: str,
                             source_cell_uuid: str) -> None:
    _send(REVERT_CROSS_CELL_RESIZE, ctx=ctx.to_dict(), instance_uuid=instance_uuid, cell_uuid=cell_uuid,
          migration_uuid=migration_uuid, source_cell_uuid=source_cell_uuid)


def image_task_run(*, ctx: RequestContext, task_id: str) -> None:
    """Run an image task (Glance's tasks API: an image imported from a URL) as ``ctx``, who created
    it: the reading of the URL happens here, never in the web request."""
    _send(IMAGE_TASK_RUN, ctx=ctx.to_dict(), task_id=task_id)


def compute_host_started(*, host: str, cell_uuid: str) -> None:
    """A compute host registered itself in its cell and in placement: the conductor maps it (the
    compute never writes the API database)."""
    _send(COMPUTE_HOST_STARTED, host=host, cell_uuid=cell_uuid)


def cache_images(*, ctx: RequestContext, aggregate_id: int, image_ids: list[str]) -> None:
    """An aggregate's image pre-caching (``POST /os-aggregates/{id}/images``)."""
    _send(CACHE_IMAGES, ctx=ctx.to_dict(), aggregate_id=aggregate_id, image_ids=list(image_ids))
