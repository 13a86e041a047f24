"""State guards for server actions (STYLE rule 5).

``check_state(instance, method, vm_states=..., task_states=...)`` raises Nova's 409
``InstanceInvalidState``; ``check_not_locked`` raises ``InstanceIsLocked``; ``claim_task_state``
moves task_state with a compare-and-swap UPDATE so that of two concurrent requests exactly one
wins (the other gets the same 409 a wrong state gives).
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from django.db import DatabaseError
from django.db.models import QuerySet
from django.utils import timezone

from cells.context import current_alias, target_cell
from cells.selectors import host_mapping_get
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import CloudcoreError, InstanceInvalidState, InstanceIsLocked, Invalid
from cloudcore.core.prepared import prepared_update
from hosts.selectors import compute_node_exists

from ..choices import TaskState
from ..models import Instance
from ..selectors import ServerRecord

if TYPE_CHECKING:
    from cells.models import CellMapping


class ComputeHostNotFound(Invalid):
    message = "Compute host %(host)s could not be found."


def check_compute_host(host: str, *, cell: CellMapping | None,
                       error: type[CloudcoreError] = ComputeHostNotFound) -> None:
    """``error`` (ComputeHostNotFound, 400) unless ``host`` is a mapped host with a compute node;
    with ``cell``, a host of that cell (a move that may not cross cells: unshelve to a host, a cold
    migration without the cross-cell rule). Evacuate names its own 404."""
    mapping = host_mapping_get(host)
    if mapping is None or (cell is not None and mapping.cell.uuid != cell.uuid):
        raise error(host=host)
    with target_cell(mapping.cell):
        if not compute_node_exists(host):
            raise error(host=host)

ANY = object()


def check_not_locked(actor: RequestContext, instance: Instance) -> None:
    """A locked server refuses actions unless the actor is an admin (Nova's lock semantics)."""
    if instance.locked and not actor.is_admin:
        raise InstanceIsLocked(instance_uuid=instance.uuid)


def check_state(
    instance: Instance,
    method: str,
    *,
    vm_states: Iterable[str] | None = None,
    task_states: Sequence[str | None] | object = (None,),
    must_be_launched: bool = False,
) -> None:
    if vm_states is not None and instance.vm_state not in set(vm_states):
        raise InstanceInvalidState(method=method, instance_uuid=instance.uuid, attr="vm_state",
                                   state=instance.vm_state)
    if task_states is not ANY and instance.task_state not in task_states:  # type: ignore[operator]
        raise InstanceInvalidState(method=method, instance_uuid=instance.uuid, attr="task_state",
                                   state=instance.task_state)
    if must_be_launched and instance.launched_at is None:
        raise InstanceInvalidState(method=method, instance_uuid=instance.uuid, attr="launched_at",
                                   state=None)


def claim_task_state(
    instance: Instance,
    method: str,
    *,
    new_task_state: str | None,
    expected_task_states: Sequence[str | None] = (None,),
    vm_states: Iterable[str] | None = None,
    **extra: object,
) -> None:
    """Set task_state (and ``extra`` columns) only if nobody changed it since it was read."""
    from django.db.models import Q

    cond = Q(pk=instance.pk)
    task_q = Q()
    for state in expected_task_states:
        task_q |= Q(task_state__isnull=True) if state is None else Q(task_state=state)
    cond &= task_q
    if vm_states is not None:
        cond &= Q(vm_state__in=list(vm_states))
    updated = Instance.objects.filter(cond).update(task_state=new_task_state, updated_at=timezone.now(), **extra)
    if updated != 1:
        instance.refresh_from_db(fields=["vm_state", "task_state"])
        attr, state = ("task_state", instance.task_state)
        if vm_states is not None and instance.vm_state not in set(vm_states):
            attr, state = ("vm_state", instance.vm_state)
        raise InstanceInvalidState(method=method, instance_uuid=instance.uuid, attr=attr, state=state)
    instance.task_state = new_task_state
    for key, value in extra.items():
        setattr(instance, key, value)


def record_target(record: ServerRecord) -> dict[str, Any]:
    """The policy target (owner) of a server, whether it is an Instance row or a BuildRequest."""
    user_id = None
    if record.instance is not None:
        user_id = record.instance.user_id
    elif record.build_request is not None:
        user_id = record.build_request.instance.get("user_id")
    return {"project_id": record.project_id, "user_id": user_id}


def writable_instance(actor: RequestContext, record: ServerRecord, method: str, *,
                      vm_states: Iterable[str], task_states: Sequence[str | None] | object = (None,)) -> Instance:
    """The Instance row of ``record`` if ``actor`` may change it now: 409 while the server is still a
    BuildRequest (Nova's "building"), locked (non-admin) or in a state outside ``vm_states``."""
    if record.instance is None or record.cell is None:
        raise InstanceInvalidState(method=method, instance_uuid=record.uuid, attr="vm_state", state="building")
    check_not_locked(actor, record.instance)
    check_state(record.instance, method, vm_states=vm_states, task_states=task_states)
    return record.instance


# --- used by compute/ and conductor/ -------------------------------------------------------------
def instance_task_state_set(instance: Instance, task_state: str, **fields: object) -> bool:
    """Set the server's task_state (and ``fields``) with a compare-and-swap in the targeted cell
    unless it is being deleted; returns whether it was set. ``instance`` itself is left as it was
    read."""
    # three per build on its host: the statement built once per process for each cell's database
    updated = prepared_update(f"servers.task_state_set.{current_alias()}", _not_being_deleted, (instance.uuid,),
                              task_state=task_state, updated_at=timezone.now(), **fields)
    return bool(updated)


def _not_being_deleted(instance_uuid: str) -> QuerySet[Instance]:
    return Instance.objects.filter(uuid=instance_uuid).exclude(task_state=TaskState.DELETING)


def instance_fields_save(instance: Instance, *fields: str) -> None:
    """``instance.save(update_fields=[*fields, "updated_at"])`` (the node linkage checked,
    ``updated_at`` set, DatabaseError when the row is gone), its statement built once per process
    for each cell's database and set of fields: a compute host's build ends with one."""
    instance._check_node_linkage()
    instance.updated_at = timezone.now()
    values = {name: getattr(instance, name) for name in (*fields, "updated_at")}
    if not prepared_update(f"servers.instance_save.{current_alias()}", _instance_row, (instance.uuid,), **values):
        raise DatabaseError("Save with update_fields did not affect any rows.")
    instance._node_linkage_saved()


def _instance_row(instance_uuid: str) -> QuerySet[Instance]:
    return Instance.all_objects.filter(uuid=instance_uuid)  # the rows ``save`` updates (the base manager's)
