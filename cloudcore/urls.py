"""Top-level routes: each API lives under its service path (DESIGN.md section 5).

Every app owns its URL module(s); this file only mounts them. Services are mounted as
``^<service>/?`` so that ``/identity``, ``/identity/`` and ``/identity/v3`` all reach the app,
whose patterns are relative (``v3/auth/tokens``; ``""`` for the version document).
"""
from django.contrib import admin
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView

from cloudcore.core.api.compute_root import (
    ComputeNotFoundView,
    ComputeV20VersionView,
    ComputeVersionsView,
    ComputeVersionView,
)

compute_v21 = [
    path("", ComputeVersionView.as_view(), name="compute-v21"),
    path("", include("servers.api.urls")),
    path("", include("hosts.api.urls")),
    path("", include("scheduling.api.compute_urls")),
    re_path(r"^.*$", ComputeNotFoundView.as_view()),
]

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    re_path(r"^identity/?", include("identity.api.urls")),
    path("compute/", ComputeVersionsView.as_view(), name="compute-versions"),
    path("compute", ComputeVersionsView.as_view()),
    path("compute/v2/", ComputeV20VersionView.as_view(), name="compute-v20"),
    path("compute/v2", ComputeV20VersionView.as_view()),
    path("compute/v2.1", ComputeVersionView.as_view()),
    path("compute/v2.1/", include(compute_v21)),
    re_path(r"^placement/?", include("scheduling.api.urls")),
    re_path(r"^image/?", include("images.api.urls")),
    re_path(r"^volume/?", include("volumes.api.urls")),
    re_path(r"^network/?", include("networks.api.urls")),
    path("", include("console.urls")),
]


def _json_error(code: int, name: str, message: str) -> JsonResponse:
    return JsonResponse({name: {"code": code, "message": message}}, status=code)


_API_PREFIXES = ("/compute", "/identity", "/placement", "/image", "/volume", "/network", "/api/")


def handler404(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if request.path.startswith(_API_PREFIXES):
        return _json_error(404, "itemNotFound", "The resource could not be found.")
    return HttpResponse("<!doctype html><title>Not found</title><h1>Not found</h1>"
                        "<p>There is no such page. <a href='/'>Back to the console</a>.</p>", status=404)


def handler500(request: HttpRequest) -> HttpResponse:
    return _json_error(
        500, "computeFault", "The server has either erred or is incapable of performing the requested operation."
    )
