"""Routes of the placement API, mounted under ``^placement/?`` by cloudcore/urls.py."""
from django.urls import re_path

from . import placement_views as views

RP = r"resource_providers/(?P<uuid>[^/]+)"

urlpatterns = [
    re_path(r"^$", views.RootView.as_view(), name="placement-root"),
    re_path(r"^resource_providers$", views.ResourceProvidersView.as_view(), name="placement-resource-providers"),
    re_path(rf"^{RP}$", views.ResourceProviderView.as_view(), name="placement-resource-provider"),
    re_path(rf"^{RP}/inventories$", views.InventoriesView.as_view(), name="placement-inventories"),
    re_path(rf"^{RP}/inventories/(?P<rc>[^/]+)$", views.InventoryView.as_view(), name="placement-inventory"),
    re_path(rf"^{RP}/traits$", views.ProviderTraitsView.as_view(), name="placement-provider-traits"),
    re_path(rf"^{RP}/aggregates$", views.ProviderAggregatesView.as_view(), name="placement-provider-aggregates"),
    re_path(rf"^{RP}/usages$", views.ProviderUsagesView.as_view(), name="placement-provider-usages"),
    re_path(rf"^{RP}/allocations$", views.ProviderAllocationsView.as_view(), name="placement-provider-allocations"),
    re_path(r"^traits$", views.TraitsView.as_view(), name="placement-traits"),
    re_path(r"^traits/(?P<name>[^/]+)$", views.TraitView.as_view(), name="placement-trait"),
    re_path(r"^resource_classes$", views.ResourceClassesView.as_view(), name="placement-resource-classes"),
    re_path(r"^resource_classes/(?P<name>[^/]+)$", views.ResourceClassView.as_view(),
            name="placement-resource-class"),
    re_path(r"^allocations$", views.AllocationsBatchView.as_view(), name="placement-allocations-batch"),
    re_path(r"^allocations/(?P<consumer_uuid>[^/]+)$", views.AllocationsView.as_view(), name="placement-allocations"),
    re_path(r"^allocation_candidates$", views.AllocationCandidatesView.as_view(),
            name="placement-allocation-candidates"),
    re_path(r"^usages$", views.UsagesView.as_view(), name="placement-usages"),
    re_path(r"^.*$", views.NotFoundView.as_view()),
]
