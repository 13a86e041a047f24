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
