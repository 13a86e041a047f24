"""The Celery application shared by the conductor, volume and compute workers."""
import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cloudcore.settings")

app = Celery("cloudcore")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
