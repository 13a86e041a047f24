"""The project member's page: what the session's project owns (servers, volumes, networks,
security groups, key pairs), each read through its own API with the session's project-scoped
token, so visibility is exactly what policy gives the member (an admin sees the same page for the
project it is working in, not every project's resources)."""
from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse

from .auth import console_view
from .compute_client import call
from .views import _page

COMPUTE = "/compute/v2.1"


def _items(request: HttpRequest, path: str, key: str, *, service: str = "compute",
           version: str | None = None) -> tuple[list[dict[str, Any]], str | None]:
    """One API list: its items, or an explanation in words when the API refuses or is absent."""
    try:
        result = call(request, "GET", path, service=service, **({"version": version} if version else {}))
    except Exception:  # an API this cloud does not serve
        return [], f"The {service} API is not available."
    if not result.ok:
        return [], result.message
    return (result.data or {}).get(key, []), None


def _of_project(items: list[dict[str, Any]], project_id: str, *, shared: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """The items of ``project_id`` plus those another project shares (an admin's token lists
    every project's networks and groups; the page is about this project)."""
    return [i for i in items if (i.get("project_id") or i.get("tenant_id")) == project_id
            or any(i.get(flag) for flag in shared)]


@console_view()
def project_resources(request: HttpRequest) -> HttpResponse:
    ctx = request.ctx  # type: ignore[attr-defined]
    servers, servers_error = _items(request, f"{COMPUTE}/servers/detail?limit=50", "servers")
    volumes, volumes_error = _items(request, "/volume/v3/volumes/detail", "volumes", service="volume", version="3.0")
    networks, networks_error = _items(request, "/network/v2.0/networks", "networks", service="network")
    groups, groups_error = _items(request, "/network/v2.0/security-groups", "security_groups", service="network")
    keypairs, keypairs_error = _items(request, f"{COMPUTE}/os-keypairs", "keypairs")
    return _page(request, "console/project.html", {
        "sections": [
            ("servers", "Servers", servers, servers_error),
            ("volumes", "Volumes", volumes, volumes_error),
            ("networks", "Networks", _of_project(networks, ctx.project_id, shared=("shared", "router:external")),
             networks_error),
            ("security-groups", "Security groups", _of_project(groups, ctx.project_id), groups_error),
            ("keypairs", "Key pairs", [k.get("keypair", k) for k in keypairs], keypairs_error),
        ],
    })
