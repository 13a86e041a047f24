"""URL routes of the volumes API (included by cloudcore/urls.py)."""
from django.urls import path  # noqa: F401

urlpatterns: list = []
