"""Top-level routes: each API lives under its service path (DESIGN.md section 5)."""
from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.urls import include, path  # noqa: F401  (apps add their include()s)
from drf_spectacular.views import SpectacularAPIView


def home(request: HttpRequest) -> HttpResponse:
    return HttpResponse(
        "<!doctype html><title>cloudcore</title><h1>cloudcore</h1>"
        "<p>Compute cloud control plane. APIs: <a href='/compute/'>/compute</a>, "
        "<a href='/identity/v3'>/identity/v3</a>, <a href='/api/schema/'>/api/schema/</a>, "
        "<a href='/admin/'>/admin/</a>.</p>"
    )


urlpatterns = [
    path("", home, name="home"),
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
]
