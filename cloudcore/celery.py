"""The Celery application shared by the conductor, volume and compute workers, and beat's schedule."""
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from celery import Celery
from celery.app.amqp import AMQP
from celery.signals import task_postrun, task_prerun, worker_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cloudcore.settings")


class _ArgumentNamesAMQP(AMQP):  # type: ignore[misc]  # celery is untyped
    """Celery's message building, with the arguments' names in place of their repr.

    A task message carries a printable copy of its arguments (``argsrepr``/``kwargsrepr``: task
    events, some log lines). Celery builds it with its ``saferepr`` of every value, a tenth of the
    web process's CPU per ``POST /servers`` (the caster's context is a large dict); the names alone
    are cheap, and leave the context's token and an admin password out of the headers and events."""

    def as_task_v2(self, task_id: str, name: str, args: Any = None, kwargs: Any = None, *more: Any,
                   **options: Any) -> Any:
        # (Celery passes most options by position; the reprs come by name, or not at all; None is
        # Celery's own "build it")
        if options.get("argsrepr") is None:
            options["argsrepr"] = f"<{len(args)} positional>" if args else "()"
        if options.get("kwargsrepr") is None:
            options["kwargsrepr"] = "{" + ", ".join(f"{key!r}: ..." for key in kwargs or {}) + "}"
        return super().as_task_v2(task_id, name, args, kwargs, *more, **options)


app = Celery("cloudcore", amqp=_ArgumentNamesAMQP)
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@contextmanager
def connected_producer(celery: Celery) -> Iterator[Any]:
    """A producer of ``celery``'s pool, held: its broker connection opened (tried once) and the
    conductor's queue (the default queue) declared on it, as a first cast on that connection would
    (kombu remembers a declaration per connection). A broker that cannot be reached raises."""
    with celery.producer_or_acquire() as producer:
        producer.connection.ensure_connection(max_retries=0)
        producer.maybe_declare(celery.amqp.queues[celery.conf.task_default_queue])
        yield producer


@task_prerun.connect
@task_postrun.connect
def _close_old_connections(sender: Any = None, **_kwargs: object) -> None:
    """Before and after each task, the database connections of its thread are closed as Django
    closes them around a request: those past ``CONN_MAX_AGE`` (``CLOUDCORE_DB_CONN_MAX_AGE``, 0
    by default: all of them) or unusable, and health-checked again on their next use. Celery's own
    fixup, which closes them all whatever ``CONN_MAX_AGE`` says, is held back by
    ``CELERY_DB_REUSE_MAX`` (settings): the conductor's threads then keep theirs between tasks
    (sampled under 20 clients booting 100 servers, a twelfth of its busy time was opening SQLite
    connections and setting their pragmas). Tasks applied eagerly (in a request, in the tests) are
    left alone, as Celery leaves them."""
    if getattr(getattr(sender, "request", None), "is_eager", False):
        return
    from django.db import close_old_connections

    close_old_connections()


@worker_init.connect
def _switch_interval(**_kwargs: object) -> None:
    """A worker's threads hand the GIL over every ``CLOUDCORE_GIL_SWITCH_INTERVAL_MS`` (settings)."""
    from django.conf import settings

    sys.setswitchinterval(settings.GIL_SWITCH_INTERVAL_MS / 1000)


@worker_init.connect
def _freeze_startup_heap(**_kwargs: object) -> None:
    """What the worker loaded (Django, every app's tasks) is frozen out of the garbage collector's
    full collections before its pool starts (``cloudcore.core.heap``)."""
    from cloudcore.core.heap import freeze_startup_heap

    freeze_startup_heap()


@worker_init.connect
def _background_priority(**_kwargs: object) -> None:
    """A worker runs at niceness ``CLOUDCORE_WORKER_NICE`` (settings) or its own if higher. Set
    before its pool's threads start (Linux keeps a niceness per thread; new threads inherit it)."""
    from django.conf import settings

    target = min(settings.WORKER_NICE, 19)
    if target and os.getpriority(os.PRIO_PROCESS, 0) < target:
        os.setpriority(os.PRIO_PROCESS, 0, target)


@app.on_after_configure.connect
def _schedule(sender: Celery, **_kwargs: object) -> None:
    from django.conf import settings

    sender.add_periodic_task(float(settings.PERIODIC_INTERVAL), sender.signature("servers.periodic",
                                                                                 queue="conductor"),
                             name="servers periodic")


def _guard_redis_closed_connection() -> None:
    """Make kombu's Redis channel raise a connection error, not AttributeError, once the broker
    connection it belongs to is closed.

    On a lost broker connection (Redis killed or restarted) the consumer closes that connection
    (``transport.client`` becomes None) and opens a new one. Its Redis channels rebuild their
    connection pool from ``transport.client`` whenever they need Redis again, which then raises
    ``AttributeError: 'NoneType' object has no attribute 'hostname'`` (kombu 5.x): when closing
    the channel restores its unacked messages (inside ``Connection.close``, which only ignores
    connection errors: the worker died with "Unrecoverable error") and when a task that was running
    with a late ack acks its message afterwards (Celery only catches connection errors there).
    As a Redis ``ConnectionError`` both are what kombu and Celery expect of a broker that is gone:
    the close goes on, the ack is logged as failed, and the message is the broker's business (lost
    with a Redis that restarted empty, otherwise restored after the visibility timeout).
    """
    try:
        from kombu.transport import redis as kombu_redis
        from redis.exceptions import ConnectionError as RedisConnectionError
    except ImportError:  # pragma: no cover - redis is a requirement
        return
    original = kombu_redis.Channel._connparams
    if getattr(original, "_cloudcore_guarded", False):
        return

    def _connparams(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        if getattr(getattr(self, "connection", None), "client", None) is None:
            raise RedisConnectionError("the broker connection of this channel is closed")
        return original(self, *args, **kwargs)

    _connparams._cloudcore_guarded = True  # type: ignore[attr-defined]
    kombu_redis.Channel._connparams = _connparams


_guard_redis_closed_connection()
