"""URL routes of the servers API (included by cloudcore/urls.py)."""
from django.urls import path  # noqa: F401

urlpatterns: list = []

# --- flavors, keypairs, limits (servers/api/{flavors,keypairs,limits}.py) ---------------------
from . import flavors as _flavors  # noqa: E402
from . import keypairs as _keypairs  # noqa: E402
from . import limits as _limits  # noqa: E402

urlpatterns += [
    path("flavors", _flavors.FlavorsView.as_view(), name="compute-flavors"),
    path("flavors/detail", _flavors.FlavorsDetailView.as_view(), name="compute-flavors-detail"),
    path("flavors/<str:flavor_id>", _flavors.FlavorView.as_view(), name="compute-flavor"),
    path("flavors/<str:flavor_id>/action", _flavors.FlavorActionView.as_view(), name="compute-flavor-action"),
    path("flavors/<str:flavor_id>/os-extra_specs", _flavors.FlavorExtraSpecsView.as_view(),
         name="compute-flavor-extra-specs"),
    path("flavors/<str:flavor_id>/os-extra_specs/<str:key>", _flavors.FlavorExtraSpecView.as_view(),
         name="compute-flavor-extra-spec"),
    path("flavors/<str:flavor_id>/os-flavor-access", _flavors.FlavorAccessView.as_view(),
         name="compute-flavor-access"),
    path("os-keypairs", _keypairs.KeypairsView.as_view(), name="compute-keypairs"),
    path("os-keypairs/<str:keypair_name>", _keypairs.KeypairView.as_view(), name="compute-keypair"),
    path("limits", _limits.LimitsView.as_view(), name="compute-limits"),
]
