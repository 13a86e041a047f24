"""Versioned notifications in Nova's envelope (DESIGN.md section 8).

``notify(event_type, payload, ...)`` builds the envelope (``priority``, ``event_type``,
``publisher_id``, ``timestamp``, ``message_id``, ``payload`` as a ``nova_object``), keeps the
last ``NOTIFICATIONS_KEEP`` (up to a fifth more) in the API database for the web console (inside a
request scope, with the scope's other rows in one transaction when it ends), and publishes it on the
broker's ``notifications`` topic exchange with routing key ``versioned_notifications.<priority>``
once the surrounding API-database transaction commits. A notification never fails the operation
that emits it: publishing errors are logged.

A compute agent never opens the API database: a notification it emits is handed to the handoff
registered with ``hand_off_with`` (``ConductorConfig.ready``: a cast to the conductor, whose
task keeps it with ``keep``). This module knows neither cells nor the conductor (the layers).

The notifications emitted inside ``handed_off_together()`` (a compute host's build: its
``instance.create.start``, four ``instance.update`` and ``instance.create.end``) are held and
handed off together when the block ends (and when ``hand_off_held()`` is called inside it: a
build's first four before its guest is spawned), in the order they were emitted, to the handoff's
``together``: one cast to the conductor for each handoff, whose task keeps them in that order (``keep_together``:
their records in one INSERT, then each published through one producer), instead of one cast
each, which cost a Celery message built and published on the host and a task received and run by
the conductor. The envelopes are the ones built when each was emitted (their ``message_id`` and
``timestamp``); they only travel later, when the block ends. Those the handoff does not take
(outside a compute agent) are kept then, in their order.
"""
from __future__ import annotations

import contextlib
import logging
import socket
import uuid
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from kombu.entity import Exchange

from cloudcore.celery import app

from . import scope
from .jsontext import EncodedJSON, encoded
from .models import NotificationRecord

log = logging.getLogger(__name__)

EXCHANGE = "notifications"
TOPIC = "versioned_notifications"

#: Takes an envelope that must not be kept in this process (it returns True), e.g. one emitted
#: inside a compute agent; returns False to let this process keep it.
Handoff = Callable[[dict[str, Any]], bool]
#: The same for several envelopes, in their order: takes them all (True) or none (False).
HandoffTogether = Callable[[list[dict[str, Any]]], bool]
_handoff: Handoff | None = None
_handoff_together: HandoffTogether | None = None
#: the envelopes emitted so far inside ``handed_off_together()`` (None: outside one)
_held: ContextVar[list[dict[str, Any]] | None] = ContextVar("cloudcore_held_notifications", default=None)


def hand_off_with(handoff: Handoff | None, together: HandoffTogether | None = None) -> None:
    """Install the process's handoff (None: every notification is kept where it is emitted) and
    its handoff of several at once (None: ``handed_off_together`` holds nothing)."""
    global _handoff, _handoff_together
    _handoff = handoff
    _handoff_together = together


@contextlib.contextmanager
def handed_off_together() -> Iterator[None]:
    """Hold the notifications emitted inside and hand them off together when the block ends (also
    when it raises), in their order; the ones the handoff does not take are kept then. Inside an
    enclosing block, its notifications join the enclosing block's. A held envelope is serialized
    only then: what its payload refers to (e.g. an instance's metadata dict) must not be changed in
    place meanwhile (a build sets its instance's fields, never changes such a dict)."""
    if _held.get() is not None or _handoff_together is None:
        yield
        return
    held: list[dict[str, Any]] = []
    token = _held.set(held)
    try:
        yield
    finally:
        _held.reset(token)
        if held:
            _hand_off_held(held, _handoff_together)


def hand_off_held() -> None:
    """Hand off now, together, what the enclosing ``handed_off_together()`` block has held so far,
    and go on holding what follows: before a step that may take long (a guest's spawn), so that
    the notifications saying the work started do not wait for its end. Nothing outside a block."""
    held = _held.get()
    if held and _handoff_together is not None:
        sent = held[:]
        held.clear()
        _hand_off_held(sent, _handoff_together)


def _hand_off_held(held: list[dict[str, Any]], together: HandoffTogether) -> None:
    try:
        if together(held):
            return
    except Exception:
        log.exception("could not hand off notifications %s", ", ".join(m["event_type"] for m in held))
        return
    keep_together(held)


def envelope(
    event_type: str, payload: dict[str, Any], *, priority: str = "INFO", publisher_id: str = "nova-api",
    payload_name: str = "Payload", version: str = "1.0",
) -> dict[str, Any]:
    return {
        "message_id": str(uuid.uuid4()),
        "priority": priority.upper(),
        "event_type": event_type,
        "publisher_id": publisher_id,
        "timestamp": timezone.now().strftime("%Y-%m-%d %H:%M:%S.%f"),
        "payload": {
            "nova_object.name": payload_name,
            "nova_object.namespace": "nova",
            "nova_object.version": version,
            "nova_object.data": payload,
        },
    }


def routing_key(priority: str) -> str:
    return f"{TOPIC}.{priority.lower()}"


#: the exchange published to (declared, once per broker connection, by the first publish on it)
_EXCHANGE = Exchange(EXCHANGE, type="topic", durable=False)


def _publish(message: dict[str, Any]) -> None:
    _publish_all([message])


def _publish_all(messages: list[dict[str, Any]]) -> None:
    """Publish each of ``messages``, in their order, with one producer of the app's pool, by kombu's
    ``json`` serializer; an ``EncodedJSON`` by its text, which is what that serializer makes of it
    (the same body, content type and encoding). The pool's producer, not one kept per thread: with
    the broker down, opening a kept connection again would retry for ever inside the task (the
    fault suite's Redis kill), where the pool's publish fails at once and is logged."""
    try:
        with app.producer_or_acquire() as producer:
            for message in messages:
                body: Any = message
                content_type = content_encoding = None
                if type(message) is EncodedJSON:
                    body, content_type, content_encoding = message.text, "application/json", "utf-8"
                try:
                    producer.publish(
                        body, exchange=_EXCHANGE, routing_key=routing_key(message["priority"]),
                        declare=[_EXCHANGE], serializer="json", content_type=content_type,
                        content_encoding=content_encoding, retry=False,
                    )
                except Exception:
                    log.exception("could not publish notification %s", message["event_type"])
    except Exception:
        log.exception("could not publish notifications %s", ", ".join(m["event_type"] for m in messages))


def _record(message: dict[str, Any]) -> None:
    """Store ``message`` for the console: at once, or with the other rows of the same scope in
    one transaction when it ends (``cloudcore.core.scope.insert``; same rows, same order, each
    with the time it was emitted). A plain INSERT that gives the rows their ids (what ``_prune``
    goes by): alone, one statement in autocommit instead of the ORM's BEGIN, INSERT and COMMIT;
    with the scope's other plain rows on PostgreSQL, one query with them."""
    row = NotificationRecord(event_type=message["event_type"], priority=message["priority"],
                             publisher_id=message["publisher_id"], timestamp=timezone.now(), payload=message)
    scope.insert([row], then=_prune, plain=True)


def _prune(stored: list[NotificationRecord]) -> None:
    """Keep the newest ``NOTIFICATIONS_KEEP`` rows, between that and a fifth more: the rows past
    them are deleted by the store whose ids cross a multiple of a fifth of it (ids grow with
    every row, whichever process stores it), so the other stores cost no statement (a backend
    that gives no ids back counts the rows instead)."""
    keep = settings.NOTIFICATIONS_KEEP
    if not keep or not stored:
        return
    step = max(1, keep // 5)
    first, last = stored[0].pk, stored[-1].pk
    if first is None or last is None:
        if NotificationRecord.objects.count() <= keep + step:
            return
    elif (first - 1) // step == last // step:
        return
    cutoff = list(NotificationRecord.objects.order_by("-id").values_list("id", flat=True)[keep - 1:keep])
    if cutoff:
        NotificationRecord.objects.filter(id__lt=cutoff[0]).delete()


def publisher(binary: str) -> str:
    """The publisher id of the notifications this process sends as ``binary`` (Nova's
    ``<binary>:<host>``, e.g. ``nova-api:<host>``)."""
    return f"{binary}:{socket.gethostname()}"


def notify(
    event_type: str, payload: dict[str, Any], *, priority: str = "INFO", publisher_id: str = "nova-api",
    payload_name: str = "Payload", version: str = "1.0",
) -> dict[str, Any] | None:
    """Emit one versioned notification; returns the envelope (None when disabled)."""
    if not settings.NOTIFICATIONS_ENABLED:
        return None
    message = envelope(event_type, payload, priority=priority, publisher_id=publisher_id,
                       payload_name=payload_name, version=version)
    held = _held.get()
    if held is not None:
        held.append(message)
        return message
    try:
        if _handoff is not None and _handoff(message):
            return message
    except Exception:
        log.exception("could not hand off notification %s", event_type)
        return message
    keep(message)
    return message


def keep_together(messages: list[dict[str, Any]]) -> None:
    """``keep`` each of ``messages``, in their order: their records written together when the last
    is kept (one INSERT in a request scope, or with the enclosing scope's rows), then each published
    in their order, with one producer, once the API-database transaction commits."""
    messages = [encoded(message) for message in messages]
    with scope.request_scope():
        for message in messages:
            _record_or_log(message)
    if _publishing():
        transaction.on_commit(lambda: _publish_all(messages))


def _publishing() -> bool:
    return not settings.CELERY_TASK_ALWAYS_EAGER or getattr(settings, "NOTIFICATIONS_PUBLISH_IN_TESTS", False)


def keep(message: dict[str, Any]) -> None:
    """Record ``message`` for the console and publish it once the API-database transaction commits.
    Its JSON is made once for both (``cloudcore.core.jsontext``)."""
    message = encoded(message)
    _record_or_log(message)
    if _publishing():
        transaction.on_commit(lambda: _publish(message))


def _record_or_log(message: dict[str, Any]) -> None:
    try:
        _record(message)
    except Exception:
        log.exception("could not record notification %s", message["event_type"])
