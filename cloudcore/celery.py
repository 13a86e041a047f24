"""The Celery application shared by the conductor, volume and compute workers, and beat's schedule."""
import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cloudcore.settings")

app = Celery("cloudcore")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


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
