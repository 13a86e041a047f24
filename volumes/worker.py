"""The volume worker's own life (a Celery worker consuming queue ``volume``): once it is ready, a
thread heartbeats its block storage services every ``REPORT_INTERVAL`` seconds, as the compute
agent heartbeats its Service row. Connected to Celery's ``worker_ready`` in ``VolumesConfig.ready``;
a worker of other queues (conductor, compute) does nothing."""
from __future__ import annotations

import logging
import threading
import time
from typing import Any

from django.conf import settings
from django.db import close_old_connections

from . import rpc
from .servicegroup import worker_heartbeat

log = logging.getLogger(__name__)


def _heartbeat_forever() -> None:
    while True:
        try:
            worker_heartbeat()
        except Exception:
            log.exception("volume service heartbeat failed")
        finally:
            close_old_connections()
        time.sleep(settings.REPORT_INTERVAL)


def on_worker_ready(sender: Any = None, **_kwargs: Any) -> None:
    """Start heartbeating when the worker that became ready consumes the volume queue."""
    try:
        queues = set(sender.app.amqp.queues.consume_from)
    except AttributeError:
        return
    if rpc.QUEUE in queues:
        threading.Thread(target=_heartbeat_forever, daemon=True, name="volume-heartbeat").start()
