"""Deleting a server, wherever it is in its life.

- Still a BuildRequest (not scheduled): the BuildRequest and RequestSpec go, the mapping is
  queued for delete; the conductor notices and drops any allocation it made meanwhile.
- No host (cell0, PENDING, failed build) or host down: deleted locally in its cell.
- On a host: task_state ``deleting`` is claimed with a compare-and-swap, an action ``delete``
  recorded, and ``terminate_instance_task`` cast to ``compute.<host>``.
- A shelved server's snapshot (``shelved_image_id``) is deleted with it, as Nova's API deletes it;
  an image already gone or not the actor's to delete is left with a warning, and the delete goes on.
  Nova deletes it at a soft delete already; here it is kept until the delete is for good, so that a
  restored server still has it.
- With ``RECLAIM_INSTANCE_INTERVAL`` on, a launched server is soft-deleted instead
  (``deferred_delete``); ``forceDelete`` (action ``forceDelete``) and the periodic reclaim of old
  soft-deleted servers delete for good as above.

Either way the API side queues the mapping for delete and drops the request spec (as Nova's API
does once it has cast the terminate): the host's terminate touches only its own cell. The server
stays visible from its cell until the host has marked it deleted.
"""
from __future__ import annotations

import logging
from functools import partial
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from cells.context import target_cell
from cells.services import instance_mappings_queue_for_delete
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Forbidden, InstanceInvalidState, InstanceIsLocked, NotFound
from cloudcore.core.policy import authorize
from compute import rpc as compute_rpc
from networks.services import ports_release
from scheduling.placement.services import allocations_delete
from scheduling.services.request_specs import request_specs_delete

from ..choices import TaskState, VmState
from ..models import BlockDeviceMapping, BuildRequest, Instance, VirtualInterface
from ..selectors import ServerNotFound, ServerRecord, server_get
from . import actions
from .consoles import console_tokens_delete_for_instance
from .deferred_delete import can_soft_delete, host_is_up, server_soft_delete
from .external import image_delete, image_get_internal
from .guards import check_not_locked, check_state, record_target
from .notify import notify_instance
from .power import target
from .resize import resize_confirm_for_delete

if TYPE_CHECKING:
    from cells.models import CellMapping

log = logging.getLogger(__name__)

#: the vm_states whose server may still hold its shelve snapshot (a soft-deleted one was shelved
#: when ``shelved_image_id`` is still in its system metadata: an unshelve removes the key)
SHELVED_STATES = (VmState.SHELVED, VmState.SHELVED_OFFLOADED, VmState.SOFT_DELETED)


def server_delete(*, actor: RequestContext, record: ServerRecord, force: bool = False) -> None:
    """Delete the server of ``record`` (see module doc); with ``RECLAIM_INSTANCE_INTERVAL`` on, a
    launched server is soft-deleted instead (``deferred_delete``) unless ``force``. Raises
    InstanceIsLocked (409) for a server locked by someone who may not override it. A delete of a
    server already being deleted is accepted and does nothing more (Nova accepts it in any task
    state; clients' clean-ups delete again what a test already deleted)."""
    authorize(actor, "os_compute_api:servers:delete", record_target(record))
    if record.build_request is not None:
        if _delete_build_request(record.uuid):
            return
        # the conductor took the build request since it was read: the server is in a cell now
        # (placed, or buried in cell0) and is deleted there; it was left to build, and the delete
        # answered 204 (Nova's API looks it up again the same way)
        try:
            record = server_get(actor, record.uuid)
        except ServerNotFound:
            return  # deleted meanwhile by another delete
    assert record.instance is not None and record.cell is not None
    instance = record.instance
    if instance.locked and not actor.is_admin:
        raise InstanceIsLocked(instance_uuid=instance.uuid)
    with target_cell(record.cell):
        if instance.vm_state == VmState.RESIZED:
            resize_confirm_for_delete(actor=actor, instance=instance, cell=record.cell)
            instance.refresh_from_db()
        if settings.RECLAIM_INSTANCE_INTERVAL > 0 and not force and can_soft_delete(instance):
            server_soft_delete(actor=actor, instance=instance, cell=record.cell)
            return
        _terminate(actor, instance, record.cell, action="delete", again_ok=True)


def server_force_delete(*, actor: RequestContext, instance: Instance, cell: CellMapping) -> None:
    """``forceDelete``: delete now, whatever the vm_state (a SOFT_DELETED server above all), when
    no task is under way. Raises Forbidden (policy), InstanceIsLocked or InstanceInvalidState (409)."""
    authorize(actor, "os_compute_api:os-deferred-delete:force", target(instance))
    check_not_locked(actor, instance)
    check_state(instance, "force_delete")
    if instance.vm_state == VmState.RESIZED:
        resize_confirm_for_delete(actor=actor, instance=instance, cell=cell)
        instance.refresh_from_db()
    _terminate(actor, instance, cell, action="forceDelete")


def server_reclaim(*, actor: RequestContext, instance: Instance, cell: CellMapping) -> None:
    """The periodic reclaim of a server SOFT_DELETED for longer than ``RECLAIM_INSTANCE_INTERVAL``
    (``conductor.periodic``): deleted for good, as a user's delete is."""
    _terminate(actor, instance, cell, action="delete", only_soft_deleted=True)


def _terminate(actor: RequestContext, instance: Instance, cell: CellMapping, *, action: str,
               only_soft_deleted: bool = False, again_ok: bool = False) -> None:
    """Claim ``deleting`` (``only_soft_deleted``: only from SOFT_DELETED with no task), record
    ``action``, unmap, then delete in the cell (no host, or its host down) or cast the terminate to
    the host once the cell write commits. A server another delete already claimed is InstanceInvalidState
    (409), or left to that delete with ``again_ok``."""
    rows = Instance.objects.filter(pk=instance.pk)
    if only_soft_deleted:
        rows = rows.filter(vm_state=VmState.SOFT_DELETED, task_state__isnull=True)
    claimed = (
        rows.exclude(task_state=TaskState.DELETING)
        .update(task_state=TaskState.DELETING, updated_at=timezone.now())
    )
    if not claimed and again_ok and rows.filter(task_state=TaskState.DELETING).exists():
        return
    if not claimed:
        raise InstanceInvalidState(method="delete", instance_uuid=instance.uuid, attr="task_state",
                                   state=TaskState.DELETING)
    old_task_state = instance.task_state
    instance.task_state = TaskState.DELETING
    actions.action_start(actor, instance_uuid=instance.uuid, action=action)
    notify_instance(actor, "instance.update", instance, old_task_state=old_task_state)
    _unmap(instance.uuid)
    _delete_shelved_image(actor, instance)
    if not instance.host or not host_is_up(instance):
        local_delete(actor, instance)
        return
    transaction.on_commit(partial(compute_rpc.terminate_instance, ctx=actor, host=instance.host,
                                  instance_uuid=instance.uuid, cell_uuid=str(cell.uuid), action=action))


def _delete_shelved_image(actor: RequestContext, instance: Instance) -> None:
    image_id = (instance.system_metadata or {}).get("shelved_image_id")
    if not image_id or instance.vm_state not in SHELVED_STATES:
        return
    try:
        image_delete(actor, image_get_internal(image_id))
    except (NotFound, Forbidden) as exc:
        log.warning("the snapshot %s of shelved server %s was not deleted: %s", image_id, instance.uuid, exc)
    except Exception:
        log.exception("the snapshot %s of shelved server %s was not deleted", image_id, instance.uuid)


def _delete_build_request(instance_uuid: str) -> bool:
    """False, with nothing changed, when the build request is gone already."""
    with transaction.atomic():
        if not BuildRequest.objects.filter(instance_uuid=instance_uuid).delete()[0]:
            return False
        request_specs_delete([instance_uuid])
        instance_mappings_queue_for_delete([instance_uuid])
    # what a scheduling claimed for a build that died before it reached a cell (a live conductor
    # that finds the BuildRequest gone drops its claim itself)
    allocations_delete(consumer_uuid=instance_uuid)
    return True


def _release_ports(instance: Instance) -> None:
    """The API side frees the ports itself (no host to ask): the cell's VIFs say which the user
    brought (unbound) and which were made for the server (deleted)."""
    vifs = VirtualInterface.objects.filter(instance_uuid=instance.uuid)
    ports_release(instance.uuid, preserve=vifs.filter(preserve_on_delete=True).values_list("port_id", flat=True))
    vifs.delete()


def local_delete(actor: RequestContext, instance: Instance) -> None:
    """Delete in the database only (no host to ask): ports, allocations and the row."""

    notify_instance(actor, "instance.delete.start", instance)
    try:
        _release_ports(instance)
    finally:
        allocations_delete(consumer_uuid=instance.uuid)
    mark_deleted(instance)
    notify_instance(actor, "instance.delete.end", instance)


def mark_deleted(instance: Instance) -> None:
    now = timezone.now()
    instance.vm_state = VmState.DELETED
    instance.task_state = None
    instance.terminated_at = now
    instance.deleted = True
    instance.deleted_at = now
    instance.save(update_fields=["vm_state", "task_state", "terminated_at", "deleted", "deleted_at",
                                 "updated_at"])


def _unmap(instance_uuid: str) -> None:
    instance_mappings_queue_for_delete([instance_uuid])
    request_specs_delete([instance_uuid])
    console_tokens_delete_for_instance(instance_uuid)  # a console must not outlive its server


# --- used by compute/ ---------------------------------------------------------------------------
def bdms_mark_deleted(instance_uuid: str) -> int:
    """Flag the server's live block device mappings deleted in the targeted cell (its volumes are
    released); returns how many."""
    return BlockDeviceMapping.objects.filter(instance_uuid=instance_uuid).update(deleted=True)
