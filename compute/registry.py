"""The one registry of compute operations, dispatched by ``compute.tasks.run_operation_task``.

An operation is a function ``fn(ctx, instance, **kwargs)`` in a ``compute`` module, tagged by one
of the decorators below. Tagging has no side effect: ``ComputeConfig.ready()`` registers the
tagged functions of the modules it names, once, so which operations exist never depends on which
modules some earlier code happened to import.

- ``server_action``: a whole server action on its host: ``instance.<notification>.start/end``
  (on failure ``.error`` where Nova defines one, and ``compute.exception``), a ``compute_<op>``
  event on the action, the action finished; a failure never leaves the server in a task_state:
  it is set back (or to ERROR where the guest may be gone) with a fault, and the migration of a
  failed same-cell move ends ``error``. Cast, nobody reads its answer; called (an interface
  attach), its answer is the operation's dict, or ``failure_answer`` when it failed.
- ``host_call``: a read the API waits for (``compute.rpc._call``), e.g. a guest's console log:
  no action, event or notification; its answer is returned, a failure answered
  ``{"failed": True, "message": ..., "code": ...}`` (``code``: the domain error's HTTP code).
- ``move_step``: one host's step of a cross-cell move, called by the conductor
  (``compute.rpc._call``): its event is recorded here (in the host's own cell) and its answer
  returned; a failure emits ``compute.exception`` and is answered ``{"failed": True, "message":
  ..., **exc.details}``, and the conductor undoes the move (``conductor.cross_cell``).
- ``host_event``: a host's step recorded only as an event on the request's action, with no
  instance notification (Nova's ``extend_volume``): ``move_step``'s runner, cast (nobody reads
  its answer; a failure is the event's Error and ``compute.exception``).
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import TYPE_CHECKING, Any

from cells.registry import drop_broken_connections
from cloudcore.core.context import RequestContext
from servers.choices import MigrationStatus, TaskState, VmState
from servers.selectors import migration_get
from servers.services import actions
from servers.services.move_recovery import error_out_migration
from servers.services.notify import notify_compute_exception, notify_compute_failure, notify_instance

from .clients import placement

if TYPE_CHECKING:
    from servers.models import Instance

log = logging.getLogger(__name__)

Operation = Callable[..., Any]
Runner = Callable[..., Any]

_TAG = "compute_operation"
_operations: dict[str, Runner] = {}


class UnknownOperation(LookupError):
    pass


def _tag(fn: Operation, name: str, runner: Runner) -> Operation:
    setattr(fn, _TAG, (name, runner))
    return fn


def register_modules(modules: Iterable[ModuleType]) -> None:
    """Register every tagged function of ``modules`` (``ComputeConfig.ready``); a name used twice raises."""
    for module in modules:
        for value in vars(module).values():
            tag = getattr(value, _TAG, None)
            if tag is None:
                continue
            name, runner = tag
            if _operations.get(name, runner) is not runner:
                raise ValueError(f"compute operation {name} registered twice")
            _operations[name] = runner


def runner_for(name: str) -> Runner:
    try:
        return _operations[name]
    except KeyError:
        raise UnknownOperation(name) from None


def names() -> list[str]:
    return sorted(_operations)


def server_action(name: str, *, action: str, notification: str, event: str) -> Callable[[Operation], Operation]:
    def tag(fn: Operation) -> Operation:
        def run(ctx: RequestContext, instance: Instance, **kwargs: Any) -> dict[str, Any]:
            notify_instance(ctx, f"instance.{notification}.start", instance)
            try:
                with actions.wrap_event(ctx, instance_uuid=instance.uuid, event=event, host=instance.host,
                                        action_name=action):
                    answer = fn(ctx, instance, **kwargs)
            except Exception as exc:
                log.warning("%s of %s failed: %s", name, instance.uuid, exc)
                drop_broken_connections()  # e.g. the cell database went away: reconnect to record it
                _failed(ctx, instance, exc, notification)
                if name in _MOVE_OPS:
                    _move_op_failed(instance, kwargs["migration_uuid"], _MOVE_OPS[name])
                return failure_answer(exc)
            actions.action_finish(ctx, instance_uuid=instance.uuid)
            notify_instance(ctx, f"instance.{notification}.end", instance)
            return dict(answer or {})

        return _tag(fn, name, run)

    return tag


def failure_answer(exc: BaseException) -> dict[str, Any]:
    """What a caller waiting on a failed operation gets (``compute.rpc._call`` raises CallFailed
    with it): the message, the error's ``details`` and the HTTP ``code`` of a domain error."""
    return {**dict(getattr(exc, "details", None) or {}), "failed": True, "message": str(exc) or type(exc).__name__,
            "code": int(getattr(exc, "code", 500) or 500)}


def move_step(name: str, *, event: str, action: str) -> Callable[[Operation], Operation]:
    def tag(fn: Operation) -> Operation:
        def run(ctx: RequestContext, instance: Instance, **kwargs: Any) -> dict[str, Any]:
            ev = actions.event_start(ctx, instance_uuid=instance.uuid, event=event, host=instance.host,
                                     action_name=action)
            try:
                answer = fn(ctx, instance, **kwargs)
            except Exception as exc:
                # with its traceback: the caller gets only the message
                log.warning("%s of %s failed: %s", name, instance.uuid, exc, exc_info=True)
                drop_broken_connections()
                actions.event_finish(ev, exc=exc)
                notify_compute_exception(exc, host=instance.host)
                return failure_answer(exc)
            actions.event_finish(ev)
            return dict(answer or {})

        return _tag(fn, name, run)

    return tag


#: see the module docstring: the same runner, for a cast
host_event = move_step


def host_call(name: str) -> Callable[[Operation], Operation]:
    def tag(fn: Operation) -> Operation:
        def run(ctx: RequestContext, instance: Instance, **kwargs: Any) -> dict[str, Any]:
            try:
                return dict(fn(ctx, instance, **kwargs) or {})
            except Exception as exc:
                log.info("%s of %s failed: %s", name, instance.uuid, exc)
                return {"failed": True, "message": str(exc) or type(exc).__name__,
                        "code": int(getattr(exc, "code", 500) or 500)}

        return _tag(fn, name, run)

    return tag


def _failed(ctx: RequestContext, instance: Instance, exc: BaseException, notification: str) -> None:
    instance.refresh_from_db()
    old = instance.vm_state
    if notification in _ERROR_OUT:  # Nova errors the server out whatever its task
        instance.vm_state, instance.task_state = VmState.ERROR, None
    elif getattr(exc, "restore_vm_state", None):  # a rolled-back volume-backed rebuild (rebuild_bfv)
        instance.vm_state, instance.task_state = exc.restore_vm_state, None  # type: ignore[attr-defined]
    elif instance.task_state in (TaskState.SHELVING, TaskState.SHELVING_OFFLOADING, TaskState.POWERING_OFF,
                               TaskState.POWERING_ON, TaskState.REBOOTING, TaskState.IMAGE_SNAPSHOT,
                               TaskState.IMAGE_UPLOADING, TaskState.IMAGE_BACKUP):
        instance.task_state = None  # the guest is as it was: only the task is given up
    elif instance.task_state is not None:
        instance.vm_state, instance.task_state = VmState.ERROR, None  # the guest may be gone
    instance.save(update_fields=["vm_state", "task_state", "updated_at"])
    actions.fault_add(instance_uuid=instance.uuid, exc=exc, host=instance.host)
    actions.action_finish(ctx, instance_uuid=instance.uuid, failed=True)
    notify_instance(ctx, "instance.update", instance, old_vm_state=old)
    notify_compute_failure(ctx, notification, instance, exc)


#: operations whose failure leaves the server ERROR even with no task in flight: a confirm that
#: failed leaves the server on its destination with its source half-cleaned (Nova: hard reboot it)
_ERROR_OUT = frozenset({"resize_confirm"})  # by notification name

#: the hosts' halves of a same-cell move, with the status a failure ends its migration in (Nova:
#: ``error`` for a resize or cold migration, ``failed`` for an evacuation)
_MOVE_OPS = {"resize_at_source": MigrationStatus.ERROR, "finish_resize": MigrationStatus.ERROR,
             "evacuate": MigrationStatus.FAILED}


def _move_op_failed(instance: Instance, migration_uuid: str, status: str) -> None:
    """The migration of a failed move ends ``status`` with the allocations where the server is
    (else it stays open holding the source's allocations, which outlive the server's delete)."""
    migration = migration_get(migration_uuid)
    if migration is not None and migration.status in MigrationStatus.UNFINISHED:
        error_out_migration(instance, migration, back_to_server=allocations_back_to_server,
                            drop=placement.allocations_delete, status=status)


def allocations_back_to_server(instance: Instance, migration_uuid: str) -> None:
    """``compute.clients.placement.allocations_back_to_server`` for ``instance``."""
    placement.allocations_back_to_server(instance_uuid=instance.uuid, migration_uuid=migration_uuid,
                                         project_id=instance.project_id, user_id=instance.user_id)
