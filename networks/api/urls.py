"""URL routes of the networks API (included by cloudcore/urls.py)."""
from django.urls import path  # noqa: F401

urlpatterns: list = []
