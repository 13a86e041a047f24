"""Compute API routes owned by scheduling: os-aggregates, os-availability-zone (under /compute/v2.1/)."""
from django.urls import path  # noqa: F401

urlpatterns: list = []
