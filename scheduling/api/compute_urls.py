"""Compute API routes owned by scheduling: os-aggregates, os-availability-zone, and cloudcore's
scheduling explanation (under /compute/v2.1/)."""
from django.urls import path

from . import compute_views as views
from . import explain_views

urlpatterns: list = [
    path("os-aggregates", views.AggregatesView.as_view(), name="compute-aggregates"),
    path("os-aggregates/<str:aggregate_id>", views.AggregateView.as_view(), name="compute-aggregate"),
    path("os-aggregates/<str:aggregate_id>/action", views.AggregateActionView.as_view(),
         name="compute-aggregate-action"),
    path("os-aggregates/<str:aggregate_id>/images", views.AggregateImagesView.as_view(),
         name="compute-aggregate-images"),
    path("os-availability-zone", views.AvailabilityZonesView.as_view(), name="compute-availability-zones"),
    path("os-availability-zone/detail", views.AvailabilityZonesDetailView.as_view(),
         name="compute-availability-zones-detail"),
    path("servers/<str:server_id>/os-scheduling-explanation",
         explain_views.ServerSchedulingExplanationView.as_view(), name="compute-server-scheduling-explanation"),
    path("os-scheduling-explanation", explain_views.SchedulingDryRunView.as_view(),
         name="compute-scheduling-dry-run"),
]
