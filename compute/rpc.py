"""The compute hosts' RPC surface: one keyword-only function per operation a host performs.

Every cast to a compute host goes through here, and this is the only place that names a host's
queue (``compute.<host>``). Messages are sent by Celery task name (``compute.*`` in
``compute.tasks``), so callers never import the compute side: the API services and the conductor
depend on this module only. The ``ctx`` is the acting request context; ids go over the wire, never
rows. Most are casts (fire and forget). The cross-cell steps are calls (``_call``): the conductor
waits for the host's answer, at most ``settings.LONG_RPC_TIMEOUT`` seconds (Nova's
``long_rpc_timeout``); the API asks a host for a guest's diagnostics the same way, for at most
``RPC_RESPONSE_TIMEOUT``. A host never calls back synchronously (casts only), so no wait can
deadlock.

Casts are sent at once; a caller that writes rows the host will read sends after its commit
(``transaction.on_commit``).
"""
from __future__ import annotations

from typing import Any

from celery import current_app
from celery.exceptions import TimeoutError as CeleryTimeoutError
from django.conf import settings
from kombu.exceptions import OperationalError

from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import CloudcoreError

RUN_OPERATION = "compute.run_operation"
BUILD_AND_RUN_INSTANCE = "compute.build_and_run_instance"
TERMINATE_INSTANCE = "compute.terminate_instance"
DESTROY_GUEST = "compute.destroy_guest"
CALL_OPERATION = "compute.call_operation"
REFRESH_PORT_FILTERS = "compute.refresh_port_filters"
CACHE_IMAGES = "compute.cache_images"


class CallTimedOut(CloudcoreError):
    message = "Compute host %(host)s did not answer %(op)s within %(timeout)s seconds."


class CallNotDelivered(CloudcoreError):
    """The call could not be sent (the broker is down): the host has not started it."""

    message = "The call %(op)s could not be sent to compute host %(host)s: %(reason)s"


class CallFailed(CloudcoreError):
    """The host answered that the operation failed; ``details`` is its answer (e.g.
    ``guest_destroyed``), the message is the host's error message."""

    def __init__(self, message: str, *, details: dict[str, Any]) -> None:
        super().__init__(message)
        self.details = details


def queue_for(host: str | None) -> str:
    """The queue a compute host's worker consumes (``manage.py compute --host``)."""
    if not host:
        raise ValueError("a compute cast needs a host")
    return f"compute.{host}"


def _send(task_name: str, host: str | None, /, **kwargs: Any) -> None:
    # By name: the task is applied in-process when this process registered it (eager tests),
    # otherwise sent to the broker without importing the compute side.
    current_app.signature(task_name, kwargs=kwargs, queue=queue_for(host)).apply_async()


def _call(op: str, *, ctx: RequestContext, host: str | None, instance_uuid: str, cell_uuid: str,
          timeout: int | None = None, **kwargs: Any) -> dict[str, Any]:
    """Run operation ``op`` on ``host`` and wait for its answer (a dict), at most ``timeout``
    seconds (``settings.LONG_RPC_TIMEOUT`` unless given); the message expires then, so a host that
    comes back later does not run a step its caller has given up (and rolled back).

    Raises ``CallNotDelivered`` (never sent), ``CallTimedOut``, or ``CallFailed`` when the host
    answers ``{"failed": True, ...}``."""
    signature = current_app.signature(CALL_OPERATION, queue=queue_for(host), kwargs=dict(
        ctx=ctx.to_dict(), op=op, instance_uuid=instance_uuid, cell_uuid=cell_uuid, **kwargs))
    return _answer(signature, op=op, host=host, timeout=timeout or settings.LONG_RPC_TIMEOUT)


def _answer(signature: Any, *, op: str, host: str | None, timeout: int) -> dict[str, Any]:
    """Send the call ``signature`` (a task the host answers) and wait for its answer (``_call``)."""
    try:
        result = signature.apply_async(expires=timeout)
    except OperationalError as exc:  # kombu's: the broker could not be reached
        raise CallNotDelivered(op=op, host=host, reason=exc) from exc
    try:
        # The caller is a Celery task itself (the conductor) or the API: waiting on another worker's
        # task is what this is for; the hosts never call the conductor back synchronously.
        answer = result.get(timeout=timeout, disable_sync_subtasks=False)
    except CeleryTimeoutError:
        raise CallTimedOut(host=host, op=op, timeout=timeout) from None
    finally:
        result.forget()
    answer = dict(answer or {})
    if answer.get("failed"):
        raise CallFailed(str(answer.get("message") or f"{op} failed on {host}"), details=answer)
    return answer


def _operation(op: str, *, ctx: RequestContext, host: str | None, instance_uuid: str, cell_uuid: str,
               **kwargs: Any) -> None:
    _send(RUN_OPERATION, host, ctx=ctx.to_dict(), op=op, instance_uuid=instance_uuid, cell_uuid=cell_uuid, **kwargs)


# --- the host's image cache -------------------------------------------------------------------

def cache_images(*, ctx: RequestContext, host: str, image_ids: list[str]) -> dict[str, str]:
    """A call from the conductor (an aggregate's image pre-caching): ``host`` fetches the images
    into its image cache; its answer is, per image id, ``cached``, ``existing``, ``unsupported`` or
    ``error`` (Nova's). Waits at most ``LONG_RPC_TIMEOUT`` seconds (images are large); raises as
    ``_call`` does."""
    signature = current_app.signature(CACHE_IMAGES, queue=queue_for(host), kwargs=dict(
        ctx=ctx.to_dict(), host=host, image_ids=list(image_ids)))
    answer = _answer(signature, op="cache_images", host=host, timeout=settings.LONG_RPC_TIMEOUT)
    return {str(image_id): str(status) for image_id, status in answer.items()}


# --- build and delete -------------------------------------------------------------------------

def build_and_run_instance(*, ctx: RequestContext, host: str, instance_uuid: str, cell_uuid: str,
                           admin_pass: str | None, alternates: list[dict[str, Any]], attempt: int = 1,
                           requested_networks: Any = "auto", security_groups: list[str] | None = None,
                           create_action_id: int | None = None, has_volumes: bool | None = None,
                           image: dict[str, Any] | None = None) -> None:
    """From the conductor: ``requested_networks`` comes from the server's request spec and
    ``security_groups`` (ids; None: the project's default) from what the server asked for (the host
    does not read the API database); ``alternates`` go back to the conductor if the build fails;
    ``create_action_id``: the ``create`` action the conductor recorded for this build, if it did;
    ``has_volumes``: whether the server has volume block devices, when the conductor knows (False:
    the host does not look for them; None: it looks); ``image``: the image of the server's request
    (the host does not read it again)."""
    _send(BUILD_AND_RUN_INSTANCE, host, ctx=ctx.to_dict(), instance_uuid=instance_uuid, cell_uuid=cell_uuid,
          admin_pass=admin_pass, alternates=alternates, attempt=attempt, requested_networks=requested_networks,
          security_groups=security_groups, create_action_id=create_action_id, has_volumes=has_volumes,
          image=image)


def terminate_instance(*, ctx: RequestContext, host: str, instance_uuid: str, cell_uuid: str,
                       action: str = "delete") -> None:
    """``action``: the instance action the terminate's event is recorded on (``delete``, ``forceDelete``)."""
    _send(TERMINATE_INSTANCE, host, ctx=ctx.to_dict(), instance_uuid=instance_uuid, cell_uuid=cell_uuid,
          action=action)


def soft_delete(*, ctx: RequestContext, host: str, instance_uuid: str, cell_uuid: str) -> None:
    _operation("soft_delete", ctx=ctx, host=host, instance_uuid=instance_uuid, cell_uuid=cell_uuid)


def restore(*, ctx: RequestContext, host: str, instance_uuid: str, cell_uuid: str) -> None:
    _operation("restore", ctx=ctx, host=host, instance_uuid=instance_uuid, cell_uuid=cell_uuid)


def destroy_guest(*, host: str, instance_uuid: str) -> None:
    """Destroy a guest and its disks on ``host`` whose rows are already gone."""
    _send(DESTROY_GUEST, host, host=host, instance_uuid=instance_uuid)


def refresh_port_filters(*, host: str, instance_uuids: list[str]) -> None:
    """From the network service: the security groups of ports of these servers on ``host`` changed
    (their rules, or the members of a group their rules name): the host redefines the servers'
    port filters. No row is read on the host, so no cell is named."""
    _send(REFRESH_PORT_FILTERS, host, host=host, instance_uuids=sorted(instance_uuids))


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


def evacuate(*, ctx: RequestContext, host: str, instance_uuid: str, cell_uuid: str, migration_uuid: str,
             admin_pass: str | None, stop: bool) -> None:
    """To the evacuation's destination ``host`` (the conductor's cast)."""
    _operation("evacuate", ctx=ctx, host=host, instance_uuid=instance_uuid, cell_uuid=cell_uuid,
               migration_uuid=migration_uuid, admin_pass=admin_pass, stop=stop)


# --- live migration (compute.live_migration): conductor -> source -> destination -> source -> destination


def live_migration_prepare(*, ctx: RequestContext, host: str, instance_uuid: str, cell_uuid: str,
                           migration_uuid: str) -> None:
    """To the source ``host`` (the conductor's cast once the destination is scheduled)."""
    _operation("live_migration_prepare", ctx=ctx, host=host, instance_uuid=instance_uuid, cell_uuid=cell_uuid,
               migration_uuid=migration_uuid)


def pre_live_migration(*, ctx: RequestContext, host: str, instance_uuid: str, cell_uuid: str, migration_uuid: str,
                       disk_source: str | None) -> None:
    """To the destination ``host``: ``disk_source`` is the source's directory of the guest's disks."""
    _operation("pre_live_migration", ctx=ctx, host=host, instance_uuid=instance_uuid, cell_uuid=cell_uuid,
               migration_uuid=migration_uuid, disk_source=disk_source)


def live_migration(*, ctx: RequestContext, host: str, instance_uuid: str, cell_uuid: str,
                   migration_uuid: str) -> None:
    """To the source ``host`` once the destination runs the guest."""
    _operation("live_migration", ctx=ctx, host=host, instance_uuid=instance_uuid, cell_uuid=cell_uuid,
               migration_uuid=migration_uuid)


def post_live_migration_at_destination(*, ctx: RequestContext, host: str, instance_uuid: str, cell_uuid: str,
                                       migration_uuid: str) -> None:
    _operation("post_live_migration_at_destination", ctx=ctx, host=host, instance_uuid=instance_uuid,
               cell_uuid=cell_uuid, migration_uuid=migration_uuid)


def snapshot(*, ctx: RequestContext, host: str, instance_uuid: str, cell_uuid: str, image_id: str) -> None:
    _operation("snapshot", ctx=ctx, host=host, instance_uuid=instance_uuid, cell_uuid=cell_uuid, image_id=image_id)


def backup(*, ctx: RequestContext, host: str, instance_uuid: str, cell_uuid: str, image_id: str, backup_type: str,
           rotation: int) -> None:
    _operation("backup", ctx=ctx, host=host, instance_uuid=instance_uuid, cell_uuid=cell_uuid, image_id=image_id,
               backup_type=backup_type, rotation=rotation)


def get_diagnostics(*, ctx: RequestContext, host: str, instance_uuid: str, cell_uuid: str,
                    standardized: bool) -> dict[str, Any]:
    """A call from the API (it waits at most ``RPC_RESPONSE_TIMEOUT`` seconds): the guest's
    diagnostics, Nova's standardized shape or the driver's own."""
    answer = _call("get_diagnostics", ctx=ctx, host=host, instance_uuid=instance_uuid, cell_uuid=cell_uuid,
                   timeout=settings.RPC_RESPONSE_TIMEOUT, standardized=standardized)
    return dict(answer)


# --- pause, suspend, rescue, crash dump ---------------------------------------------------------

def pause(*, ctx: RequestContext, host: str, instance_uuid: str, cell_uuid: str) -> None:
    _operation("pause", ctx=ctx, host=host, instance_uuid=instance_uuid, cell_uuid=cell_uuid)


def unpause(*, ctx: RequestContext, host: str, instance_uuid: str, cell_uuid: str) -> None:
    _operation("unpause", ctx=ctx, host=host, instance_uuid=instance_uuid, cell_uuid=cell_uuid)


def suspend(*, ctx: RequestContext, host: str, instance_uuid: str, cell_uuid: str) -> None:
    _operation("suspend", ctx=ctx, host=host, instance_uuid=instance_uuid, cell_uuid=cell_uuid)


def resume(*, ctx: RequestContext, host: str, instance_uuid: str, cell_uuid: str) -> None:
    _operation("resume", ctx=ctx, host=host, instance_uuid=instance_uuid, cell_uuid=cell_uuid)


def rescue(*, ctx: RequestContext, host: str, instance_uuid: str, cell_uuid: str, admin_pass: str | None,
           rescue_image_ref: str | None) -> None:
    _operation("rescue", ctx=ctx, host=host, instance_uuid=instance_uuid, cell_uuid=cell_uuid,
               admin_pass=admin_pass, rescue_image_ref=rescue_image_ref)


def unrescue(*, ctx: RequestContext, host: str, instance_uuid: str, cell_uuid: str) -> None:
    _operation("unrescue", ctx=ctx, host=host, instance_uuid=instance_uuid, cell_uuid=cell_uuid)


def trigger_crash_dump(*, ctx: RequestContext, host: str, instance_uuid: str, cell_uuid: str) -> None:
    _operation("trigger_crash_dump", ctx=ctx, host=host, instance_uuid=instance_uuid, cell_uuid=cell_uuid)


# --- consoles: calls from the API, which waits at most settings.RPC_RESPONSE_TIMEOUT ------------

def get_console_output(*, ctx: RequestContext, host: str, instance_uuid: str, cell_uuid: str,
                       length: int | None) -> dict[str, Any]:
    """The guest's serial console log, its last ``length`` lines (None: all): ``{"output"}``."""
    return _call("get_console_output", ctx=ctx, host=host, instance_uuid=instance_uuid, cell_uuid=cell_uuid,
                 timeout=settings.RPC_RESPONSE_TIMEOUT, length=length)


def get_console_connection(*, ctx: RequestContext, host: str, instance_uuid: str, cell_uuid: str,
                           console_type: str) -> dict[str, Any]:
    """Where the console proxy reaches the guest's console of ``console_type`` (``novnc``,
    ``serial``, ...): ``{"host", "port", "internal_access_path"}``."""
    return _call("get_console_connection", ctx=ctx, host=host, instance_uuid=instance_uuid, cell_uuid=cell_uuid,
                 timeout=settings.RPC_RESPONSE_TIMEOUT, console_type=console_type)


def set_admin_password(*, ctx: RequestContext, host: str, instance_uuid: str, cell_uuid: str,
                       password: str) -> dict[str, Any]:
    """The guest's admin password, set by its guest agent (``changePassword``); the host's failure
    comes back as ``CallFailed`` with the HTTP code of its error."""
    return _call("set_admin_password", ctx=ctx, host=host, instance_uuid=instance_uuid, cell_uuid=cell_uuid,
                 timeout=settings.RPC_RESPONSE_TIMEOUT, password=password)


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


def extend_volume(*, ctx: RequestContext, host: str, instance_uuid: str, cell_uuid: str, volume_id: str) -> None:
    _operation("extend_volume", ctx=ctx, host=host, instance_uuid=instance_uuid, cell_uuid=cell_uuid,
               volume_id=volume_id)


def swap_volume(*, ctx: RequestContext, host: str, instance_uuid: str, cell_uuid: str, bdm_uuid: str,
                new_volume_id: str, new_attachment_id: str) -> None:
    _operation("swap_volume", ctx=ctx, host=host, instance_uuid=instance_uuid, cell_uuid=cell_uuid,
               bdm_uuid=bdm_uuid, new_volume_id=new_volume_id, new_attachment_id=new_attachment_id)


# --- interfaces (os-interface) ------------------------------------------------------------------

def attach_interface(*, ctx: RequestContext, host: str, instance_uuid: str, cell_uuid: str, port_id: str | None,
                     network_id: str | None, fixed_ip: str | None, tag: str | None) -> dict[str, Any]:
    """A call, as Nova's: the API waits (``settings.RPC_RESPONSE_TIMEOUT``) for the host to bind
    ``port_id`` (or create a port on ``network_id``) and plug it; answers ``{"port_id"}``."""
    return _call("attach_interface", ctx=ctx, host=host, instance_uuid=instance_uuid, cell_uuid=cell_uuid,
                 timeout=settings.RPC_RESPONSE_TIMEOUT, port_id=port_id, network_id=network_id, fixed_ip=fixed_ip,
                 tag=tag)


def detach_interface(*, ctx: RequestContext, host: str, instance_uuid: str, cell_uuid: str, port_id: str) -> None:
    _operation("detach_interface", ctx=ctx, host=host, instance_uuid=instance_uuid, cell_uuid=cell_uuid,
               port_id=port_id)


# --- resize and cold migration within a cell ----------------------------------------------------

def resize_at_source(*, ctx: RequestContext, host: str, instance_uuid: str, cell_uuid: str,
                     migration_uuid: str) -> None:
    _operation("resize_at_source", ctx=ctx, host=host, instance_uuid=instance_uuid, cell_uuid=cell_uuid,
               migration_uuid=migration_uuid)


def finish_resize(*, ctx: RequestContext, host: str, instance_uuid: str, cell_uuid: str,
                  migration_uuid: str, disk_source: str | None = None) -> None:
    """``disk_source``: where the source host kept the instance's disks for the destination to
    copy (its ``migrate_disk_and_power_off``), when its driver moves disks."""
    extra = {"disk_source": disk_source} if disk_source else {}
    _operation("finish_resize", ctx=ctx, host=host, instance_uuid=instance_uuid, cell_uuid=cell_uuid,
               migration_uuid=migration_uuid, **extra)


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


# --- cross-cell resize: calls from the conductor (``cell_uuid`` is the host's own cell) -------------

def cross_cell_prep_at_dest(*, ctx: RequestContext, host: str, instance_uuid: str, cell_uuid: str,
                            migration_uuid: str, compute_node_uuid: str) -> dict[str, Any]:
    """Check the volumes can connect here, claim the node: ``{"host", "node", "compute_id"}``."""
    return _call("cross_cell_prep_at_dest", ctx=ctx, host=host, instance_uuid=instance_uuid, cell_uuid=cell_uuid,
                 migration_uuid=migration_uuid, compute_node_uuid=compute_node_uuid)


def cross_cell_prep_at_source(*, ctx: RequestContext, host: str, instance_uuid: str, cell_uuid: str,
                              migration_uuid: str, snapshot: bool) -> dict[str, Any]:
    """Power off, snapshot to a file (``{"snapshot_path"}``), destroy the guest keeping its disks."""
    return _call("cross_cell_prep_at_source", ctx=ctx, host=host, instance_uuid=instance_uuid, cell_uuid=cell_uuid,
                 migration_uuid=migration_uuid, snapshot=snapshot)


def cross_cell_finish_at_dest(*, ctx: RequestContext, host: str, instance_uuid: str, cell_uuid: str,
                              migration_uuid: str, image_id: str | None) -> dict[str, Any]:
    return _call("cross_cell_finish_at_dest", ctx=ctx, host=host, instance_uuid=instance_uuid, cell_uuid=cell_uuid,
                 migration_uuid=migration_uuid, image_id=image_id)


def cross_cell_confirm_at_source(*, ctx: RequestContext, host: str, instance_uuid: str, cell_uuid: str,
                                 migration_uuid: str) -> dict[str, Any]:
    return _call("cross_cell_confirm_at_source", ctx=ctx, host=host, instance_uuid=instance_uuid,
                 cell_uuid=cell_uuid, migration_uuid=migration_uuid)


def cross_cell_revert_at_dest(*, ctx: RequestContext, host: str, instance_uuid: str, cell_uuid: str,
                              migration_uuid: str) -> dict[str, Any]:
    return _call("cross_cell_revert_at_dest", ctx=ctx, host=host, instance_uuid=instance_uuid, cell_uuid=cell_uuid,
                 migration_uuid=migration_uuid)


def cross_cell_finish_revert(*, ctx: RequestContext, host: str, instance_uuid: str, cell_uuid: str,
                             migration_uuid: str) -> dict[str, Any]:
    return _call("cross_cell_finish_revert", ctx=ctx, host=host, instance_uuid=instance_uuid, cell_uuid=cell_uuid,
                 migration_uuid=migration_uuid)
