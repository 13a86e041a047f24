"""Instance actions and events: the record of every long operation (STYLE rule 11).

All functions here write to the *currently targeted* cell (the instance's cell).
"""
from __future__ import annotations

import traceback as tb
from collections.abc import Iterator
from contextlib import contextmanager

from django.utils import timezone

from cloudcore.core.context import RequestContext
from cloudcore.core.scope import insert_plain_now
from scheduling.trace import failure_details

from ..models import InstanceAction, InstanceActionEvent, InstanceFault

RESULT_SUCCESS = "Success"
RESULT_ERROR = "Error"


def action_start(ctx: RequestContext, *, instance_uuid: str, action: str) -> InstanceAction:
    """Record that ``action`` started on the instance (``request_id`` is the context's): the row
    ``objects.create`` would store, by one plain INSERT that gives it its id (inside a cell's
    ``written_together`` on PostgreSQL, once the block's query is sent: see ``insert_plain_now``)."""
    row = InstanceAction(
        instance_uuid=instance_uuid,
        action=action,
        request_id=ctx.request_id,
        user_id=ctx.user_id,
        project_id=ctx.project_id,
        start_time=timezone.now(),
    )
    insert_plain_now([row], returning=True)
    return row


def _action_for(ctx: RequestContext, instance_uuid: str, action_name: str | None) -> InstanceAction | None:
    qs = InstanceAction.objects.filter(instance_uuid=instance_uuid, request_id=ctx.request_id)
    if action_name:
        qs = qs.filter(action=action_name)
    return qs.order_by("-id").first()


def action_finish(ctx: RequestContext, *, instance_uuid: str, failed: bool = False) -> None:
    action = _action_for(ctx, instance_uuid, None)
    if action is None:
        return
    action.finish_time = timezone.now()
    if failed:
        action.message = "Error"
    action.save(update_fields=["finish_time", "message"])


def action_finish_named(ctx: RequestContext, *, instance_uuid: str, action: str,
                        latest: InstanceAction | None = None) -> None:
    """Finish the request's latest action if it is ``action`` (a PENDING server's rebuild ends with
    the build that placed it; a plain create's action stays as Nova leaves it). ``latest``: that
    action when the caller holds it already (an event's ``action``), not read again."""
    found = latest if latest is not None else _action_for(ctx, instance_uuid, None)
    if found is not None and found.action == action and found.finish_time is None:
        found.finish_time = timezone.now()
        found.save(update_fields=["finish_time"])


def event_start(
    ctx: RequestContext, *, instance_uuid: str, event: str, host: str | None = None,
    action_name: str | None = None, action_id: int | None = None,
) -> InstanceActionEvent | None:
    """Record the start of ``event`` on the request's latest action (named ``action_name``), or
    on the action ``action_id`` when the caller knows it (nothing is read); None without one."""
    if action_id is not None:
        return InstanceActionEvent.objects.create(action_id=action_id, event=event, host=host,
                                                  start_time=timezone.now())
    action = _action_for(ctx, instance_uuid, action_name)
    if action is None:
        return None
    return InstanceActionEvent.objects.create(action=action, event=event, host=host, start_time=timezone.now())


def event_finish(
    ev: InstanceActionEvent | None, *, exc: BaseException | None = None, details: str | None = None
) -> None:
    if ev is None:
        return
    ev.finish_time = timezone.now()
    ev.result = RESULT_ERROR if exc is not None else RESULT_SUCCESS
    if exc is not None:
        ev.traceback = "".join(tb.format_exception(exc))[-65000:]
        ev.details = details or failure_details(exc) or str(exc)[:1000]
        InstanceAction.all_objects.filter(pk=ev.action_id).update(message="Error")
    # An update, not a save: a cross-cell move may have hard-deleted this cell's copy meanwhile.
    InstanceActionEvent.all_objects.filter(pk=ev.pk).update(
        finish_time=ev.finish_time, result=ev.result, traceback=ev.traceback, details=ev.details)


@contextmanager
def wrap_event(
    ctx: RequestContext, *, instance_uuid: str, event: str, host: str | None = None,
    action_name: str | None = None, action_id: int | None = None,
) -> Iterator[InstanceActionEvent | None]:
    """Record ``event`` around the block: Success, or Error with the traceback (then re-raise)."""
    ev = event_start(ctx, instance_uuid=instance_uuid, event=event, host=host, action_name=action_name,
                     action_id=action_id)
    try:
        yield ev
    except BaseException as exc:
        event_finish(ev, exc=exc)
        raise
    else:
        event_finish(ev)


def fault_add(
    *, instance_uuid: str, exc: BaseException | str, code: int = 500, host: str | None = None
) -> InstanceFault:
    """Record a fault on the instance (shown by the API for ERROR servers)."""
    if isinstance(exc, BaseException):
        message = str(exc) or type(exc).__name__
        code = int(getattr(exc, "code", code) or code)
        details = "".join(tb.format_exception(exc))[-65000:]
    else:
        message, details = exc, ""
    return InstanceFault.objects.create(
        instance_uuid=instance_uuid, code=code, message=message[:255], details=details, host=host
    )
