"""The WSGI application gunicorn serves (``manage.py run_cloud``).

Loading it also imports what the first request would import (the URLconf with every API view,
every app's policies, the Celery result backend's module): a gunicorn worker loads the
application before it accepts connections, so the first requests of its threads do not all wait
on the import lock behind one of them (about a second per worker on this machine, with 20 clients
starting at once). With ``CLOUDCORE_PROFILE_DIR`` set every request is profiled
(``cloudcore.core.profiling``). The process's threads hand the GIL over every
``CLOUDCORE_GIL_SWITCH_INTERVAL_MS`` (settings). Once all that is loaded, the objects it made are
frozen out of the garbage collector's full collections (``cloudcore.core.heap``)."""
import os
import sys

from django.conf import settings
from django.core.wsgi import get_wsgi_application
from django.urls import get_resolver

from cloudcore.celery import app as celery_app
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


os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cloudcore.settings")
application = get_wsgi_application()
warm_up()
sys.setswitchinterval(settings.GIL_SWITCH_INTERVAL_MS / 1000)
freeze_startup_heap()
if settings.PROFILE_DIR:
    application = profiled(application, settings.PROFILE_DIR)
