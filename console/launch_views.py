"""The launch form: every option ``POST /servers`` takes, posted as the compute API's body.

``launch_body`` turns the form into the request body (no validation of its own beyond reading
the fields: the API validates, and a refusal is shown on the form in the API's words with the
choices kept); ``server_launch`` shows the form (GET) and posts it (POST). The servers page's
short form posts here too.
"""
from __future__ import annotations

import base64
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse

from cells import selectors as cell_selectors

from .auth import console_view
from .compute_client import APIResult, call, form_number
from .server_views import BASE, create_choices
from .views import _page

#: how the server boots: from an image on the host's disk, from a new volume made of the image,
#: or from an existing (bootable) volume
BOOT_SOURCES = {"image": "Image", "volume_from_image": "New volume from the image", "volume": "Existing volume"}


def _lines(text: str) -> dict[str, str]:
    """``key=value`` lines as a dict (a line without ``=`` is a key with an empty value)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        if line.strip():
            key, _, value = line.partition("=")
            out[key.strip()] = value.strip()
    return out


def _boot(post: Any) -> tuple[str | None, list[dict[str, Any]]]:
    """(imageRef, block_device_mapping_v2) for the chosen boot source."""
    source = post.get("boot_source", "image")
    delete = bool(post.get("delete_on_termination"))
    if source == "volume_from_image":
        return None, [{"boot_index": 0, "uuid": post.get("image", ""), "source_type": "image",
                       "destination_type": "volume", "volume_size": form_number(post.get("volume_size", "")),
                       "delete_on_termination": delete}]
    if source == "volume":
        return None, [{"boot_index": 0, "uuid": post.get("volume", ""), "source_type": "volume",
                       "destination_type": "volume", "delete_on_termination": delete}]
    return post.get("image", ""), []


def _networks(post: Any) -> str | list[dict[str, str]]:
    if post.get("no_network"):
        return "none"
    chosen = [{"uuid": n} for n in post.getlist("network") if n]
    chosen += [{"port": p} for p in post.getlist("port") if p]
    return chosen or "auto"


def launch_body(post: Any, *, admin: bool) -> dict[str, Any]:
    """The ``POST /servers`` body of a launch form (``post`` is the form's QueryDict). Optional
    fields left blank are left out; ``host`` is sent for an admin only (the API's policy decides
    anyway)."""
    image, bdm = _boot(post)
    server: dict[str, Any] = {"name": post.get("name", "").strip(), "flavorRef": post.get("flavor", ""),
                              "networks": _networks(post)}
    if image is not None:
        server["imageRef"] = image
    if bdm:
        server["block_device_mapping_v2"] = bdm
    for field in ("availability_zone", "key_name", "description"):
        if post.get(field, "").strip():
            server[field] = post[field].strip()
    if admin and post.get("host", "").strip():
        server["host"] = post["host"].strip()
    groups = [g for g in post.getlist("security_group") if g]
    if groups:
        server["security_groups"] = [{"name": g} for g in groups]
    if post.get("user_data", ""):
        server["user_data"] = base64.b64encode(post["user_data"].encode()).decode()
    if post.get("config_drive"):
        server["config_drive"] = True
    metadata = _lines(post.get("metadata", ""))
    if metadata:
        server["metadata"] = metadata
    tags = [t.strip() for t in post.get("tags", "").split(",") if t.strip()]
    if tags:
        server["tags"] = tags
    for field in ("min_count", "max_count"):
        if post.get(field, "").strip():
            server[field] = form_number(post[field].strip())
    body: dict[str, Any] = {"server": server}
    if post.get("server_group"):
        body["os:scheduler_hints"] = {"group": post["server_group"]}
    return body


def _listed(request: HttpRequest, path: str, key: str, *, service: str = "compute",
            version: str | None = None) -> list[dict[str, Any]]:
    try:
        result: APIResult = call(request, "GET", path, service=service, **({"version": version} if version else {}))
    except Exception:  # an API this cloud does not serve: the form leaves the choice out
        return []
    return list((result.data or {}).get(key, [])) if result.ok else []


def launch_choices(request: HttpRequest) -> dict[str, Any]:
    """What the form offers: the servers page's choices plus zones, server groups, volumes a
    server can boot from, and free ports (each as the session's project may see them)."""
    ctx = request.ctx  # type: ignore[attr-defined]
    out = create_choices(request)
    out["zones"] = [z["zoneName"] for z in _listed(request, f"{BASE}/os-availability-zone", "availabilityZoneInfo")
                    if z.get("zoneState", {}).get("available")]
    out["server_groups"] = _listed(request, f"{BASE}/os-server-groups", "server_groups")
    out["volumes"] = [v for v in _listed(request, "/volume/v3/volumes/detail", "volumes", service="volume",
                                         version="3.0")
                      if v.get("status") == "available" and str(v.get("bootable")).lower() == "true"]
    out["ports"] = [p for p in _listed(request, "/network/v2.0/ports", "ports", service="network")
                    if not p.get("device_id") and (p.get("project_id") or p.get("tenant_id")) == ctx.project_id]
    out["hosts"] = cell_selectors.mapped_hosts() if ctx.is_admin else []
    out["boot_sources"] = BOOT_SOURCES
    return out


@console_view()
def server_launch(request: HttpRequest) -> HttpResponse:
    ctx = request.ctx  # type: ignore[attr-defined]
    error, status = None, 200
    if request.method == "POST":
        body = launch_body(request.POST, admin=ctx.is_admin)
        result = call(request, "POST", f"{BASE}/servers", body)
        if result.ok:
            server = (result.data or {}).get("server")
            name = body["server"]["name"]
            if server is None:  # several servers (min/max count): each has its own page in the list
                messages.success(request, f"Servers {name} accepted; they are being built.")
                return HttpResponseRedirect(reverse("console:servers") + f"?name={name}")
            messages.success(request, f"Server {name} accepted; it is being built.")
            return HttpResponseRedirect(reverse("console:server", args=[server["id"]]))
        error, status = f"Could not create the server: {result.message}", result.status
    return _page(request, "console/launch.html", {
        "choices": launch_choices(request), "form": request.POST, "error": error,
        "chosen": {"network": request.POST.getlist("network"), "port": request.POST.getlist("port"),
                   "security_group": request.POST.getlist("security_group")},
    }, status=status if status >= 400 else 200)
