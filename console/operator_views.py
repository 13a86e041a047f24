"""Operator pages: quotas, flavors, host aggregates and availability zones, server groups.

Like the server pages, these are clients of the compute API (``compute_client.call``): a page
reads what the API lists and a form posts the body the API takes, so every write goes through
the API's policy check, validation and service (``os-quota-sets``, ``flavors``, ``os-aggregates``)
and a refusal is shown in the API's own words. The pages need the cloud admin role; the API
checks its own policy again for each call.
"""
from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from identity import selectors as identity_selectors

from . import tables
from .auth import console_view
from .compute_client import APIResult, call, form_number
from .views import _page, api_outcome

BASE = "/compute/v2.1"

#: the quota resources the console edits (newest microversion), with their column headings
QUOTA_LABELS = {"instances": "Instances", "cores": "vCPUs", "ram": "RAM (MB)", "key_pairs": "Key pairs",
                "metadata_items": "Metadata items", "server_groups": "Server groups",
                "server_group_members": "Group members"}
QUOTA_RESOURCES = tuple(QUOTA_LABELS)


def _listed(result: APIResult, key: str) -> list[dict[str, Any]]:
    return list((result.data or {}).get(key, [])) if result.ok else []


# --- quotas ----------------------------------------------------------------------------------


@console_view(admin=True)
def quotas(request: HttpRequest) -> HttpResponse:
    """Every project with its compute limits and usage (``os-quota-sets/{id}/detail``)."""
    projects = tables.sort_rows(request, identity_selectors.project_list(), {"name": lambda p: p.name})
    page = tables.paginate(request, projects)
    rows, error = [], None
    for project in page.object_list:
        result = call(request, "GET", f"{BASE}/os-quota-sets/{project.id}/detail")
        if not result.ok:
            error = result.message
            continue
        detail = result.data["quota_set"]
        rows.append((project, [(name, detail.get(name, {})) for name in QUOTA_RESOURCES]))
    page.object_list = rows
    return _page(request, "console/quotas.html", {
        "page_obj": page, "labels": QUOTA_LABELS, "error": error,
        "editing": request.GET.get("edit", "")})


@require_POST
@console_view(admin=True)
def quota_update(request: HttpRequest, project_id: str) -> HttpResponse:
    """``PUT /os-quota-sets/{project_id}`` with the limits the form changed (blank = unchanged)."""
    body: dict[str, Any] = {name: request.POST[name].strip() for name in QUOTA_RESOURCES
                            if request.POST.get(name, "").strip()}
    if request.POST.get("force"):
        body["force"] = True
    result = call(request, "PUT", f"{BASE}/os-quota-sets/{project_id}", {"quota_set": body})
    project = identity_selectors.project_find(project_id)
    return api_outcome(request, result, f"Quotas of {project.name if project else project_id}",
                       reverse("console:quotas"))


# --- flavors ---------------------------------------------------------------------------------

FLAVOR_SORT = {"name": lambda f: f.get("name") or "", "vcpus": lambda f: f.get("vcpus") or 0,
               "ram": lambda f: f.get("ram") or 0, "disk": lambda f: f.get("disk") or 0}


@console_view(admin=True)
def flavors(request: HttpRequest) -> HttpResponse:
    """Public and private flavors with their extra specs; a private flavor with its projects."""
    result = call(request, "GET", f"{BASE}/flavors/detail?is_public=None")
    items = _listed(result, "flavors")
    for flavor in items:
        flavor["public"] = flavor.get("os-flavor-access:is_public", True)
        flavor["access"] = [] if flavor["public"] else _listed(
            call(request, "GET", f"{BASE}/flavors/{flavor['id']}/os-flavor-access"), "flavor_access")
    items = tables.sort_rows(request, items, FLAVOR_SORT)
    return _page(request, "console/flavors.html", {
        "page_obj": tables.paginate(request, items), "error": None if result.ok else result.message,
        "all_projects": identity_selectors.project_list()})


@require_POST
@console_view(admin=True)
def flavor_create(request: HttpRequest) -> HttpResponse:
    post = request.POST
    flavor: dict[str, Any] = {"name": post.get("name", "").strip(), "vcpus": form_number(post.get("vcpus", "")),
                              "ram": form_number(post.get("ram", "")),
                              "disk": form_number(post.get("disk", "0") or "0"),
                              "os-flavor-access:is_public": not post.get("private")}
    for field in ("OS-FLV-EXT-DATA:ephemeral", "swap"):
        if post.get(field, "").strip():
            flavor[field] = form_number(post[field].strip())
    if post.get("id", "").strip():
        flavor["id"] = post["id"].strip()
    if post.get("description", "").strip():
        flavor["description"] = post["description"].strip()
    result = call(request, "POST", f"{BASE}/flavors", {"flavor": flavor})
    return api_outcome(request, result, f"Create flavor {flavor['name']}", reverse("console:flavors"))


def _flavor_request(op: str, post: Any, path: str) -> tuple[str, str, Any] | None:
    """The compute API call (method, path, body) for one flavor button (None for an unknown op)."""
    if op == "delete":
        return "DELETE", path, None
    if op == "set_spec":
        spec = {post.get("key", "").strip(): post.get("value", "").strip()}
        return "POST", f"{path}/os-extra_specs", {"extra_specs": spec}
    if op == "unset_spec":
        return "DELETE", f"{path}/os-extra_specs/{post.get('key', '')}", None
    if op in ("add_access", "remove_access"):
        action = "addTenantAccess" if op == "add_access" else "removeTenantAccess"
        return "POST", f"{path}/action", {action: {"tenant": post.get("project", "")}}
    return None


def _perform(request: HttpRequest, planned: tuple[str, str, Any] | None, *, what: str, target: str) -> HttpResponse:
    """Make one planned API call from a form and report it (an unknown form op is reported too)."""
    if planned is None:
        messages.error(request, f"Unknown action {request.POST.get('op', '')!r}.")
        return HttpResponseRedirect(target)
    method, path, body = planned
    return api_outcome(request, call(request, method, path, body), what, target)


@require_POST
@console_view(admin=True)
def flavor_action(request: HttpRequest, flavor_id: str) -> HttpResponse:
    """Delete, set or unset an extra spec, grant or remove a project's access."""
    op = request.POST.get("op", "")
    return _perform(request, _flavor_request(op, request.POST, f"{BASE}/flavors/{flavor_id}"),
                    what=f"{op.replace('_', ' ').capitalize()} on flavor {flavor_id}",
                    target=reverse("console:flavors"))


# --- host aggregates and availability zones ---------------------------------------------------

AGGREGATE_SORT = {"name": lambda a: a.get("name") or "", "az": lambda a: a.get("availability_zone") or "",
                  "hosts": lambda a: len(a.get("hosts") or [])}


@console_view(admin=True)
def aggregates(request: HttpRequest) -> HttpResponse:
    result = call(request, "GET", f"{BASE}/os-aggregates")
    zones = call(request, "GET", f"{BASE}/os-availability-zone/detail")
    items = tables.sort_rows(request, _listed(result, "aggregates"), AGGREGATE_SORT)
    hosts = call(request, "GET", f"{BASE}/os-services?binary=nova-compute")
    images = call(request, "GET", "/image/v2/images", service="image")
    return _page(request, "console/aggregates.html", {
        "page_obj": tables.paginate(request, items), "error": None if result.ok else result.message,
        "zones": _listed(zones, "availabilityZoneInfo"),
        "compute_hosts": sorted({s["host"] for s in _listed(hosts, "services")}),
        "images": [i for i in _listed(images, "images") if i.get("status") == "active"]})


@require_POST
@console_view(admin=True)
def aggregate_create(request: HttpRequest) -> HttpResponse:
    aggregate: dict[str, Any] = {"name": request.POST.get("name", "").strip()}
    if request.POST.get("availability_zone", "").strip():
        aggregate["availability_zone"] = request.POST["availability_zone"].strip()
    result = call(request, "POST", f"{BASE}/os-aggregates", {"aggregate": aggregate})
    return api_outcome(request, result, f"Create aggregate {aggregate['name']}", reverse("console:aggregates"))


def _aggregate_request(op: str, post: Any, path: str) -> tuple[str, str, Any] | None:
    """The compute API call for one aggregate button: add or remove a host, set or unset a metadata
    key (``None`` unsets), pre-cache an image on its hosts, delete (None for an unknown op)."""
    if op == "delete":
        return "DELETE", path, None
    if op == "cache_images":  # the hosts fetch it in the background (2.81)
        return "POST", f"{path}/images", {"cache": [{"id": post.get("image", "")}]}
    if op in ("add_host", "remove_host"):
        return "POST", f"{path}/action", {op: {"host": post.get("host", "")}}
    if op in ("set_metadata", "unset_metadata"):
        value = post.get("value", "").strip() if op == "set_metadata" else None
        return "POST", f"{path}/action", {"set_metadata": {"metadata": {post.get("key", "").strip(): value}}}
    return None


@require_POST
@console_view(admin=True)
def aggregate_action(request: HttpRequest, aggregate_id: str) -> HttpResponse:
    op = request.POST.get("op", "")
    return _perform(request, _aggregate_request(op, request.POST, f"{BASE}/os-aggregates/{aggregate_id}"),
                    what=f"{op.replace('_', ' ').capitalize()} on aggregate {aggregate_id}",
                    target=reverse("console:aggregates"))


# --- server groups ---------------------------------------------------------------------------

GROUP_SORT = {"name": lambda g: g.get("name") or "", "policy": lambda g: g.get("policy") or "",
              "project": lambda g: g.get("project_name") or "", "members": lambda g: len(g.get("members") or [])}


@console_view(admin=True)
def server_groups(request: HttpRequest) -> HttpResponse:
    """Every project's server groups with their policy, rules and members."""
    result = call(request, "GET", f"{BASE}/os-server-groups?all_projects=True")
    names = {p.id: p.name for p in identity_selectors.project_list()}
    items = _listed(result, "server_groups")
    for group in items:
        group["project_name"] = names.get(group.get("project_id") or "", group.get("project_id") or "")
    items = tables.sort_rows(request, items, GROUP_SORT)
    return _page(request, "console/server_groups.html", {
        "page_obj": tables.paginate(request, items), "error": None if result.ok else result.message})
