"""URL routes of the hosts API (included by cloudcore/urls.py)."""
from django.urls import path  # noqa: F401

urlpatterns: list = []
