"""The WSGI application gunicorn serves (``manage.py run_cloud``).

Loading it also imports what the first request would import (the URLconf with every API view,
every app's policies, the Celery result backend's module): a gunicorn worker loads the
application before it accepts connections, so the first requests of its threads do not all wait
on the import lock behind one of them (about a second per worker on this machine, with 20 clients
starting at once). It also does what the process's first cast would do: Celery's app finalized
(every task bound to it, some 30 ms on a quiet machine, while the process's other threads wait on
its lock), its message sender made (with the task events' dispatcher, imported then) and a
broker connection of the producer pool opened with the conductor's queue declared on it. With
``CLOUDCORE_PROFILE_DIR`` set every request is profiled (``cloudcore.core.profiling``). The
process's threads hand the GIL over every ``CLOUDCORE_GIL_SWITCH_INTERVAL_MS`` (settings). Once
all that is loaded, the objects it made are frozen out of the garbage collector's full
collections (``cloudcore.core.heap``)."""
import logging
import os
import sys

from django.conf import settings
from django.core.wsgi import get_wsgi_application
from django.urls import get_resolver

from cloudcore.celery import app as celery_app
from cloudcore.celery import connected_producer
from cloudcore.core import policy
from cloudcore.core.heap import freeze_startup_heap
from cloudcore.core.profiling import profiled


def warm_up() -> None:
    """Import the URLconf (every view module), every app's policies and the result backend now
    (Celery makes a backend per thread; the first ``apply_async`` of each thread imported its
    module while the worker's other threads waited on the import lock)."""
    get_resolver().url_patterns  # noqa: B018 - the property imports the URLconf module tree
    policy.autodiscover()
    celery_app.backend  # noqa: B018 - the property imports and makes this thread's backend
    celery_app.finalize(auto=True)
    celery_app.amqp.send_task_message  # noqa: B018 - the property makes the sender and its event dispatcher
    _open_broker_connection()


def _open_broker_connection() -> None:
    """One connection of Celery's producer pool opened and the conductor's queue declared on it
    (Celery's default queue; kombu remembers a declaration per connection), as the first cast
    would. A broker that cannot be reached now is left for that first cast to find (and report),
    not an error here."""
    try:
        with connected_producer(celery_app):
            pass
    except Exception as exc:  # noqa: BLE001 - any broker failure: the first cast meets it again
        logging.getLogger(__name__).warning("broker not reached while the web process started: %s", exc)


os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cloudcore.settings")
application = get_wsgi_application()
warm_up()
sys.setswitchinterval(settings.GIL_SWITCH_INTERVAL_MS / 1000)
freeze_startup_heap()
if settings.PROFILE_DIR:
    application = profiled(application, settings.PROFILE_DIR)
