"""User messages (Cinder's ``/messages``, 3.3+): the volume worker records one when an operation a
user asked for fails after the API answered (no back end could take a new volume, the back end
failed to create or extend it), with Cinder's action and detail ids; the project's readers list and
show them, its members delete them. Admins see every project's. They expire after
``MESSAGE_TTL`` seconds (Cinder's ``message_ttl``, 30 days): expired ones are no longer shown.
"""
from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db.models import Q, QuerySet
from django.utils import timezone

from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import NotFound
from cloudcore.core.policy import authorize

from .models import UserMessage

#: Cinder's ``message_ttl`` default
MESSAGE_TTL = 2592000
RESOURCE_VOLUME = "VOLUME"

#: Cinder's actions (``message_field.Action``): id and what the user reads
SCHEDULE_ALLOCATE_VOLUME = ("001", "schedule allocate volume")
COPY_IMAGE_TO_VOLUME = ("005", "copy image to volume")
EXTEND_VOLUME = ("007", "extend volume")
CREATE_VOLUME_FROM_BACKEND = ("008", "create volume from backend storage")
ACTIONS = dict((SCHEDULE_ALLOCATE_VOLUME, COPY_IMAGE_TO_VOLUME, EXTEND_VOLUME, CREATE_VOLUME_FROM_BACKEND))

#: Cinder's details (``message_field.Detail``)
UNKNOWN_ERROR = ("001", "An unknown error occurred.")
NO_BACKEND_AVAILABLE = ("003", "Could not find any available weighted backend.")
DRIVER_FAILED_EXTEND = ("010", "Volume Driver failed to extend volume.")
DRIVER_FAILED_CREATE = ("012", "Driver failed to create the volume.")
DETAILS = dict((UNKNOWN_ERROR, NO_BACKEND_AVAILABLE, DRIVER_FAILED_EXTEND, DRIVER_FAILED_CREATE))


class MessageNotFound(NotFound):
    message = "Message %(message_id)s could not be found."


def user_message_record(*, project_id: str, action: tuple[str, str], detail: tuple[str, str],
                        resource_uuid: str | None, resource_type: str = RESOURCE_VOLUME,
                        request_id: str | None = None) -> UserMessage:
    """Record a message for ``project_id`` (the cloud's own code: no policy)."""
    now = timezone.now()
    return UserMessage.objects.create(
        project_id=project_id, request_id=request_id, resource_type=resource_type, resource_uuid=resource_uuid,
        event_id=f"VOLUME_{resource_type}_{action[0]}_{detail[0]}", action_id=action[0], detail_id=detail[0],
        message_level="ERROR", created_at=now, expires_at=now + timedelta(seconds=MESSAGE_TTL))


def user_message_text(msg: UserMessage) -> str:
    """What the user reads: the action and the detail, as Cinder joins them."""
    return f"{ACTIONS.get(msg.action_id, 'unknown action')}:{DETAILS.get(msg.detail_id, UNKNOWN_ERROR[1])}"


def _target(ctx: RequestContext, project_id: str | None = None) -> dict[str, Any]:
    return {"project_id": project_id or ctx.project_id, "user_id": ctx.user_id}


def _visible(ctx: RequestContext) -> QuerySet[UserMessage]:
    qs = UserMessage.objects.filter(Q(expires_at__isnull=True) | Q(expires_at__gt=timezone.now()))
    return qs if ctx.is_admin else qs.filter(project_id=ctx.project_id)


#: the filters Cinder's list takes (3.5+), and the keys it sorts by
FILTERS = ("event_id", "resource_type", "resource_uuid", "message_level", "request_id")
SORT_KEYS = ("id", "event_id", "resource_type", "resource_uuid", "message_level", "created_at", "request_id")


def user_message_list(ctx: RequestContext, *, filters: dict[str, str] | None = None) -> QuerySet[UserMessage]:
    authorize(ctx, "message:get_all", _target(ctx))
    return _visible(ctx).filter(**{k: v for k, v in (filters or {}).items() if k in FILTERS})


def user_message_get(ctx: RequestContext, message_id: str) -> UserMessage:
    authorize(ctx, "message:get", _target(ctx))
    msg = _visible(ctx).filter(pk=message_id).first()
    if msg is None:
        raise MessageNotFound(message_id=message_id)
    return msg


def user_message_delete(ctx: RequestContext, msg: UserMessage) -> None:
    authorize(ctx, "message:delete", _target(ctx, msg.project_id))
    UserMessage.objects.filter(pk=msg.pk).delete()
