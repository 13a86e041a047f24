"""The WSGI application gunicorn serves (``manage.py run_cloud``).

Loading it also imports what the first request would import (the URLconf with every API view,
every app's policies): a gunicorn worker loads the application before it accepts connections, so
the first requests of its threads do not all wait on the import lock behind one of them (about a
second per worker on this machine, with 20 clients starting at once). With
``CLOUDCORE_PROFILE_DIR`` set every request is profiled (``cloudcore.core.profiling``)."""
import os

from django.conf import settings
from django.core.wsgi import get_wsgi_application
from django.urls import get_resolver

from cloudcore.core import policy
from cloudcore.core.profiling import profiled


def warm_up() -> None:
    """Import the URLconf (every view module) and every app's policies now."""
    get_resolver().url_patterns  # noqa: B018 - the property imports the URLconf module tree
    policy.autodiscover()


os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cloudcore.settings")
application = get_wsgi_application()
warm_up()
if settings.PROFILE_DIR:
    application = profiled(application, settings.PROFILE_DIR)
