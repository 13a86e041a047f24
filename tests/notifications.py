"""Reading the versioned notifications the cloud publishes, as a consumer of the broker would."""
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from kombu import Connection, Exchange, Queue


@contextlib.contextmanager
def published_notifications(settings: Any, queue_name: str = "test-versioned-notifications",
                            ) -> Iterator[list[dict[str, Any]]]:
    """The notifications published while the block runs, for real, on an in-memory broker: what a
    consumer bound to ``versioned_notifications.info`` on the ``notifications`` exchange reads, in
    their order (the list is filled when the block ends)."""
    from cloudcore.celery import app

    settings.NOTIFICATIONS_PUBLISH_IN_TESTS = True
    old_url, old_pool, old_producers = app.conf.broker_url, app._pool, app.amqp._producer_pool
    app.conf.broker_url = "memory://"
    app._pool = None
    app.amqp._producer_pool = None
    exchange = Exchange("notifications", type="topic", durable=False)
    queue = Queue(queue_name, exchange, routing_key="versioned_notifications.info", durable=False)
    received: list[dict[str, Any]] = []
    try:
        with Connection("memory://") as conn:
            bound = queue(conn.default_channel)
            bound.declare()
            yield received
            while (message := bound.get(no_ack=True)) is not None:
                received.append(message.payload)
    finally:
        app.conf.broker_url = old_url
        app._pool = old_pool
        app.amqp._producer_pool = old_producers
