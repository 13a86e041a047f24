"""The compute hosts' RPC surface: one keyword-only function per operation a host performs.

Every cast to a compute host goes through here, and this is the only place that names a host's
queue (``compute.<host>``). Messages are sent by Celery task name (``compute.*`` in
``compute.tasks``), so callers never import the compute side: the API services and the conductor
depend on this module only. The ``ctx`` is the acting request context; ids go over the wire, never
rows. All of these are casts (fire and forget): nothing here waits for a host to answer.

Casts are sent at once; a caller that writes rows the host will read sends after its commit
(``transaction.on_commit``).
"""
from __future__ import annotations

from typing import Any

from celery import current_app

from cloudcore.core.context import RequestContext

RUN_OPERATION = "compute.run_operation"
BUILD_AND_RUN_INSTANCE = "compute.build_and_run_instance"
TERMINATE_INSTANCE = "compute.terminate_instance"
DESTROY_GUEST = "compute.destroy_guest"


def queue_for(host: str | None) -> str:
    """The queue a compute host's worker consumes (``manage.py compute --host``)."""
    if not host:
        raise ValueError("a compute cast needs a host")
    return f"compute.{host}"


def _send(task_name: str, host: str | None, /, **kwargs: Any) -> None:
    # By name: the task is applied in-process when this process registered it (eager tests),
    # otherwise sent to the broker without importing the compute side.
    current_app.signature(task_name, kwargs=kwargs, queue=queue_for(host)).apply_async()


def _operation(op: str, *, ctx: RequestContext, host: str | None, instance_uuid: str, cell_uuid: str,
               **kwargs: Any) -> None:
    _send(RUN_OPERATION, host, ctx=ctx.to_dict(), op=op, instance_uuid=instance_uuid, cell_uuid=cell_uuid, **kwargs)


# --- build and delete -------------------------------------------------------------------------

def build_and_run_instance(*, ctx: RequestContext, host: str, instance_uuid: str, cell_uuid: str,
                           admin_pass: str | None, alternates: list[dict[str, Any]], attempt: int = 1,
                           security_groups: list[str] | None = None) -> None:
    """``security_groups``: the ids of the groups the server asked for (the host does not read them
    from the API database); None leaves the project's default group to the network service."""
    _send(BUILD_AND_RUN_INSTANCE, host, ctx=ctx.to_dict(), instance_uuid=instance_uuid, cell_uuid=cell_uuid,
          admin_pass=admin_pass, alternates=alternates, attempt=attempt, security_groups=security_groups)


def terminate_instance(*, ctx: RequestContext, host: str, instance_uuid: str, cell_uuid: str) -> None:
    _send(TERMINATE_INSTANCE, host, ctx=ctx.to_dict(), instance_uuid=instance_uuid, cell_uuid=cell_uuid)


def destroy_guest(*, host: str, instance_uuid: str) -> None:
    """Destroy a guest and its disks on ``host`` whose rows are already gone."""
    _send(DESTROY_GUEST, host, host=host, instance_uuid=instance_uuid)


# --- power, reboot, rebuild, snapshot -----------------------------------------------------------

def power_on(*, ctx: RequestContext, host: str, instance_uuid: str, cell_uuid: str) -> None:
    _operation("power_on", ctx=ctx, host=host, instance_uuid=instance_uuid, cell_uuid=cell_uuid)


def power_off(*, ctx: RequestContext, host: str, instance_uuid: str, cell_uuid: str) -> None:
    _operation("power_off", ctx=ctx, host=host, instance_uuid=instance_uuid, cell_uuid=cell_uuid)


def reboot(*, ctx: RequestContext, host: str, instance_uuid: str, cell_uuid: str, hard: bool) -> None:
    _operation("reboot", ctx=ctx, host=host, instance_uuid=instance_uuid, cell_uuid=cell_uuid, hard=hard)


def rebuild(*, ctx: RequestContext, host: str, instance_uuid: str, cell_uuid: str, image_id: str,
            admin_pass: str | None, preserve_ephemeral: bool, reimage_boot_volume: bool) -> None:
    _operation("rebuild", ctx=ctx, host=host, instance_uuid=instance_uuid, cell_uuid=cell_uuid, image_id=image_id,
               admin_pass=admin_pass, preserve_ephemeral=preserve_ephemeral,
               reimage_boot_volume=reimage_boot_volume)


def snapshot(*, ctx: RequestContext, host: str, instance_uuid: str, cell_uuid: str, image_id: str) -> None:
    _operation("snapshot", ctx=ctx, host=host, instance_uuid=instance_uuid, cell_uuid=cell_uuid, image_id=image_id)


# --- shelve -------------------------------------------------------------------------------------

def shelve(*, ctx: RequestContext, host: str, instance_uuid: str, cell_uuid: str) -> None:
    _operation("shelve", ctx=ctx, host=host, instance_uuid=instance_uuid, cell_uuid=cell_uuid)


def shelve_offload(*, ctx: RequestContext, host: str, instance_uuid: str, cell_uuid: str) -> None:
    _operation("shelve_offload", ctx=ctx, host=host, instance_uuid=instance_uuid, cell_uuid=cell_uuid)


def unshelve_power_on(*, ctx: RequestContext, host: str, instance_uuid: str, cell_uuid: str) -> None:
    _operation("unshelve_power_on", ctx=ctx, host=host, instance_uuid=instance_uuid, cell_uuid=cell_uuid)


def unshelve_spawn(*, ctx: RequestContext, host: str, instance_uuid: str, cell_uuid: str) -> None:
    _operation("unshelve_spawn", ctx=ctx, host=host, instance_uuid=instance_uuid, cell_uuid=cell_uuid)


# --- volumes ------------------------------------------------------------------------------------

def attach_volume(*, ctx: RequestContext, host: str, instance_uuid: str, cell_uuid: str, bdm_uuid: str) -> None:
    _operation("attach_volume", ctx=ctx, host=host, instance_uuid=instance_uuid, cell_uuid=cell_uuid,
               bdm_uuid=bdm_uuid)


def detach_volume(*, ctx: RequestContext, host: str, instance_uuid: str, cell_uuid: str, bdm_uuid: str) -> None:
    _operation("detach_volume", ctx=ctx, host=host, instance_uuid=instance_uuid, cell_uuid=cell_uuid,
               bdm_uuid=bdm_uuid)


def swap_volume(*, ctx: RequestContext, host: str, instance_uuid: str, cell_uuid: str, bdm_uuid: str,
                new_volume_id: str, new_attachment_id: str) -> None:
    _operation("swap_volume", ctx=ctx, host=host, instance_uuid=instance_uuid, cell_uuid=cell_uuid,
               bdm_uuid=bdm_uuid, new_volume_id=new_volume_id, new_attachment_id=new_attachment_id)


# --- resize and cold migration within a cell ----------------------------------------------------

def resize_at_source(*, ctx: RequestContext, host: str, instance_uuid: str, cell_uuid: str,
                     migration_uuid: str) -> None:
    _operation("resize_at_source", ctx=ctx, host=host, instance_uuid=instance_uuid, cell_uuid=cell_uuid,
               migration_uuid=migration_uuid)


def finish_resize(*, ctx: RequestContext, host: str, instance_uuid: str, cell_uuid: str,
                  migration_uuid: str) -> None:
    _operation("finish_resize", ctx=ctx, host=host, instance_uuid=instance_uuid, cell_uuid=cell_uuid,
               migration_uuid=migration_uuid)


def confirm_resize(*, ctx: RequestContext, host: str, instance_uuid: str, cell_uuid: str,
                   migration_uuid: str) -> None:
    _operation("confirm_resize", ctx=ctx, host=host, instance_uuid=instance_uuid, cell_uuid=cell_uuid,
               migration_uuid=migration_uuid)


def revert_resize(*, ctx: RequestContext, host: str, instance_uuid: str, cell_uuid: str,
                  migration_uuid: str) -> None:
    _operation("revert_resize", ctx=ctx, host=host, instance_uuid=instance_uuid, cell_uuid=cell_uuid,
               migration_uuid=migration_uuid)


def finish_revert_resize(*, ctx: RequestContext, host: str, instance_uuid: str, cell_uuid: str,
                         migration_uuid: str) -> None:
    _operation("finish_revert_resize", ctx=ctx, host=host, instance_uuid=instance_uuid, cell_uuid=cell_uuid,
               migration_uuid=migration_uuid)


# --- cross-cell resize (``cell_uuid`` is the cell the step runs in) ------------------------------

def cross_cell_prep_at_source(*, ctx: RequestContext, host: str, instance_uuid: str, cell_uuid: str,
                              migration_uuid: str, target_cell_uuid: str, dest_host: str) -> None:
    _operation("cross_cell_prep_at_source", ctx=ctx, host=host, instance_uuid=instance_uuid, cell_uuid=cell_uuid,
               migration_uuid=migration_uuid, target_cell_uuid=target_cell_uuid, dest_host=dest_host)


def cross_cell_finish_at_dest(*, ctx: RequestContext, host: str, instance_uuid: str, cell_uuid: str,
                              migration_uuid: str, source_cell_uuid: str, image_id: str | None) -> None:
    _operation("cross_cell_finish_at_dest", ctx=ctx, host=host, instance_uuid=instance_uuid, cell_uuid=cell_uuid,
               migration_uuid=migration_uuid, source_cell_uuid=source_cell_uuid, image_id=image_id)


def cross_cell_confirm(*, ctx: RequestContext, host: str, instance_uuid: str, cell_uuid: str,
                       migration_uuid: str, source_cell_uuid: str) -> None:
    _operation("cross_cell_confirm", ctx=ctx, host=host, instance_uuid=instance_uuid, cell_uuid=cell_uuid,
               migration_uuid=migration_uuid, source_cell_uuid=source_cell_uuid)


def cross_cell_revert_at_dest(*, ctx: RequestContext, host: str, instance_uuid: str, cell_uuid: str,
                              migration_uuid: str, source_cell_uuid: str) -> None:
    _operation("cross_cell_revert_at_dest", ctx=ctx, host=host, instance_uuid=instance_uuid, cell_uuid=cell_uuid,
               migration_uuid=migration_uuid, source_cell_uuid=source_cell_uuid)


def cross_cell_finish_revert(*, ctx: RequestContext, host: str, instance_uuid: str, cell_uuid: str,
                             migration_uuid: str) -> None:
    _operation("cross_cell_finish_revert", ctx=ctx, host=host, instance_uuid=instance_uuid, cell_uuid=cell_uuid,
               migration_uuid=migration_uuid)
