"""Console pages: thin views over the console selectors and the domain services.

Every page needs a logged-in identity user; admin pages (hosts, migrations, policy,
notifications) need the cloud admin role. Actions are POSTs (CSRF-protected) that call the same
services as the APIs; domain errors are shown in words on the page, never as tracebacks.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from django.contrib import messages
from django.contrib.auth import authenticate, login, logout
from django.contrib.auth.models import Group
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_POST

from cloudcore.core import policy
from cloudcore.core.exceptions import CloudcoreError
from cloudcore.core.supervise import restarted_processes
from compute.management.commands.compute import refusals
from identity import selectors as identity_selectors
from identity.services import policy_admin

from . import selectors, tables
from .auth import SESSION_PROJECT, console_view, projects_of
from .compute_client import APIResult

if TYPE_CHECKING:
    from identity.models import User


def _safe_next(target: str | None) -> str:
    if target and target.startswith("/") and not target.startswith("//"):
        return target
    return reverse("console:overview")


def login_view(request: HttpRequest) -> HttpResponse:
    error = ""
    if request.method == "POST":
        user = authenticate(request, username=request.POST.get("username", ""),
                            password=request.POST.get("password", ""))
        if user is None:
            error = "Wrong user name or password."
        else:
            login(request, user)
            request.session.pop(SESSION_PROJECT, None)
            return HttpResponseRedirect(_safe_next(request.POST.get("next")))
    return render(request, "console/login.html", {"error": error, "next": request.GET.get("next", "")},
                  status=401 if error else 200)


@require_POST
def logout_view(request: HttpRequest) -> HttpResponse:
    logout(request)
    return HttpResponseRedirect(reverse("console:login"))


@require_POST
@console_view()
def switch_project(request: HttpRequest) -> HttpResponse:
    wanted = request.POST.get("project_id")
    user = cast("User", request.user)  # console views require a logged-in user
    if any(p.id == wanted for p in projects_of(user)):
        request.session[SESSION_PROJECT] = wanted
    else:
        messages.error(request, "You have no role on that project.")
    return HttpResponseRedirect(_safe_next(request.POST.get("next")))


def _page(request: HttpRequest, template: str, context: dict[str, Any], status: int = 200,
          fragments: dict[str, str] | None = None) -> HttpResponse:
    """Render a console page; an htmx poll (``HX-Request``) aimed at one of the page's live
    ``fragments`` (element id -> partial template) gets just that partial, so live regions update
    without reloading the page and without the rest of the page's queries being shown twice."""
    target = request.headers.get("HX-Target", "")
    if fragments and request.headers.get("HX-Request") == "true" and target in fragments:
        return render(request, fragments[target], {"ctx": request.ctx, **context})  # type: ignore[attr-defined]
    user = cast("User", request.user)  # console views require a logged-in user
    base = {"ctx": request.ctx, "projects": projects_of(user)}  # type: ignore[attr-defined]
    return render(request, template, {**base, **context}, status=status)


@console_view()
def overview(request: HttpRequest) -> HttpResponse:
    ctx = request.ctx  # type: ignore[attr-defined]
    if not ctx.is_admin:
        return _page(request, "console/overview.html", {})
    hosts = selectors.host_capacities()
    cells = selectors.cell_statuses()
    by_status = selectors.servers_by_status()
    return _page(request, "console/overview.html", {
        "cells": cells,
        "cells_up": sum(1 for c in cells if c.up),
        "hosts": hosts,
        "cell_capacity": selectors.cell_capacities(hosts),
        "usage": selectors.usage_chart(request.GET.get("usage") or "cloud"),
        "by_status": by_status,
        "distributions": [
            ("Servers by status", "servers-by-status", selectors.distribution(by_status), "status", "No servers yet."),
            ("Servers by cell", "servers-by-cell", selectors.distribution({c.name: c.servers for c in cells if c.up}),
             "cell", "No cell answers."),
        ],
        "server_total": sum(by_status.values()),
        "moving": selectors.migrations_in_flight(),
        "failures": selectors.recent_failures(),
        "supervised": restarted_processes(),
    }, fragments={"overview-live": "console/_overview_live.html"})


HOST_SORT = {"host": lambda r: r.host, "cell": lambda r: r.cell, "binary": lambda r: r.binary,
             "state": lambda r: r.up, "status": lambda r: r.disabled, "seen": lambda r: r.last_seen_up}


@console_view(admin=True)
def hosts(request: HttpRequest) -> HttpResponse:
    capacity = {h.name: h for h in selectors.host_capacities()}
    rows = tables.sort_rows(request, selectors.host_rows(), HOST_SORT)
    return _page(request, "console/hosts.html", {
        "rows": [(r, capacity.get(r.host)) for r in rows], "refusals": refusals(),
        "supervised": restarted_processes()})


@console_view(admin=True)
def policy_page(request: HttpRequest) -> HttpResponse:
    query = request.GET.get("q", "").strip()
    rules = [r for r in policy.rules() if query in r.name] if query else policy.rules()
    return _page(request, "console/policy.html", {
        "page_obj": _with_grants(tables.paginate(request, rules)),
        "q": query,
        "users": identity_selectors.user_list(),
        "groups": Group.objects.exclude(name__startswith="project-members:").order_by("name"),
        "all_projects": identity_selectors.project_list(),
    })


def _with_grants(page: Any) -> Any:
    """Each rule of the page with its grants (looked up for the shown rules only)."""
    page.object_list = [(r, policy.grants_of(r.name)) for r in page.object_list]
    return page


@require_POST
@console_view(admin=True)
def policy_change(request: HttpRequest) -> HttpResponse:
    rule = request.POST.get("rule", "")
    verb = request.POST.get("verb", "grant")
    try:
        holders = policy_admin.policy_rule_grant_change(
            actor=request.ctx, rule=rule, grant=verb == "grant",  # type: ignore[attr-defined]
            user_id=request.POST.get("user") or None, group_id=request.POST.get("group") or None,
            project_id=request.POST.get("project") or None)
    except CloudcoreError as exc:
        messages.error(request, f"Could not {verb} {rule}: {domain_error_message(exc)}")
    else:
        user, group, project = holders["user"], holders["group"], holders["project"]
        who = user.name if user else group.name if group else f"every member of project {project.name}"
        where = f" on project {project.name}" if project and (user or group) else ""
        messages.success(request, f"{'Granted' if verb == 'grant' else 'Revoked'} {rule} for {who}{where}.")
    return HttpResponseRedirect(reverse("console:policy") + f"?q={rule}")


@console_view(admin=True)
def notifications(request: HttpRequest) -> HttpResponse:
    event_type = request.GET.get("event_type") or None
    return _page(request, "console/notifications.html", {
        "page_obj": tables.paginate(request, selectors.notifications(event_type)),
        "types": selectors.notification_types(),
        "event_type": event_type or "",
    })


def api_outcome(request: HttpRequest, result: APIResult, what: str, target: str) -> HttpResponse:
    """Report one write made through an API in words (``<what>: done.``, or ``<what> refused:`` and
    the API's fault message) and go back to ``target``."""
    if result.ok:
        messages.success(request, f"{what}: done.")
    else:
        messages.error(request, f"{what} refused: {result.message}")
    return HttpResponseRedirect(target)


def domain_error_message(exc: CloudcoreError) -> str:
    """A domain error in words for the page (the API's message, without codes)."""
    return str(exc)
