"""Console server pages: list, detail, create and actions, through the compute API."""
from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from cells import selectors as cell_selectors
from cloudcore.core import policy
from servers.choices import MigrationStatus

from . import tables
from .auth import console_view
from .compute_client import call
from .views import _page, api_outcome

BASE = "/compute/v2.1"
FILTERS = ("name", "status", "host", "project_id", "availability_zone")
BUSY = {"BUILD", "REBUILD", "RESIZE", "MIGRATING", "REBOOT", "HARD_REBOOT", "REVERT_RESIZE"}



#: the columns a console table sorts by, as the compute API's sort_key
SORT_KEYS = {"name": "display_name", "status": "vm_state", "host": "host", "az": "availability_zone",
             "project": "project_id", "created": "created_at"}
PAGE_SIZE = 50


@console_view()
def server_list(request: HttpRequest) -> HttpResponse:
    """Filtered, sorted and paged by the compute API itself (sort_key/sort_dir, limit/marker), so
    a page costs the same at 10,000 servers as at ten."""
    ctx = request.ctx  # type: ignore[attr-defined]
    params: dict[str, str] = {k: request.GET[k] for k in FILTERS if request.GET.get(k)}
    if ctx.is_admin:
        params["all_tenants"] = "1"
    sort = request.GET.get("sort", "")
    params["sort_key"] = SORT_KEYS.get(sort, "created_at")
    params["sort_dir"] = "asc" if request.GET.get("dir") == "asc" else "desc"
    params["limit"] = str(PAGE_SIZE)
    if request.GET.get("marker"):
        params["marker"] = request.GET["marker"]
    result = call(request, "GET", f"{BASE}/servers/detail?{urlencode(params)}")
    servers = result.data.get("servers", []) if result.ok and result.data else []
    next_marker = servers[-1]["id"] if len(servers) == PAGE_SIZE else None
    cell_filter = request.GET.get("cell", "")
    if cell_filter:
        servers = [s for s in servers if _cell_of(s["id"]) == cell_filter]
    for s in servers:
        # a task in flight (deleting an ACTIVE server, say) polls fast too, so its row goes soon
        s["busy"] = s.get("status") in BUSY or bool(s.get("OS-EXT-STS:task_state"))
    context = {
        "servers": servers, "error": None if result.ok else result.message,
        "filters": {k: request.GET.get(k, "") for k in (*FILTERS, "cell")},
        "any_busy": any(s["busy"] for s in servers),
        "next_marker": next_marker, "paged": bool(request.GET.get("marker")),
    }
    if request.headers.get("HX-Request") != "true":
        context["create"] = create_choices(request)
    return _page(request, "console/servers.html", context, fragments={"server-table": "console/_server_table.html"})


def _cell_of(server_id: str) -> str:
    mapping = cell_selectors.instance_mapping_get(server_id)
    return (mapping.cell.name or "") if mapping and mapping.cell else ""


def create_choices(request: HttpRequest) -> dict[str, Any]:
    flavors = call(request, "GET", f"{BASE}/flavors")
    out: dict[str, Any] = {"flavors": flavors.data.get("flavors", []) if flavors.ok and flavors.data else []}
    try:
        images = call(request, "GET", "/image/v2/images", service="image")
        out["images"] = images.data.get("images", []) if images.ok and images.data else []
    except Exception:  # the image API may not be served; the form then asks for an id
        out["images"] = []
    for key, path in (("networks", "/network/v2.0/networks"), ("security_groups", "/network/v2.0/security-groups")):
        try:
            found = call(request, "GET", path, service="network")
            out[key] = found.data.get(key, []) if found.ok and found.data else []
        except Exception:  # the network API may not be served
            out[key] = []
    keypairs = call(request, "GET", f"{BASE}/os-keypairs")
    out["keypairs"] = [k["keypair"] for k in (keypairs.data or {}).get("keypairs", [])] if keypairs.ok else []
    return out


def _allowed(ctx: Any, rule: str, server: dict[str, Any]) -> bool:
    try:
        return policy.can(ctx, rule, {"project_id": server.get("tenant_id"), "user_id": server.get("user_id")})
    except policy.UnknownRule:
        return True


@console_view()
def server_detail(request: HttpRequest, server_id: str) -> HttpResponse:
    """The server, its fault explained when it is PENDING or ERROR, the actions that apply, and
    its instance actions and events as a timeline; ``#server-live`` is polled by htmx (every 2 s
    while a task runs) and answered with just that fragment."""
    ctx = request.ctx  # type: ignore[attr-defined]
    result = call(request, "GET", f"{BASE}/servers/{server_id}")
    if not result.ok:
        return _page(request, "console/error.html", {"message": result.message}, status=result.status)
    server = result.data["server"]
    status = server.get("status")
    can = {name: _allowed(ctx, rule, server) for name, rule in ACTION_RULES.items()}
    volumes = call(request, "GET", f"{BASE}/servers/{server_id}/os-volume_attachments")
    all_migrations = _migrations(request, ctx, server)
    choices = create_choices(request)
    troubled = status in TROUBLED or bool(server.get("fault"))
    timeline = _timeline(request, server_id, busy=status in BUSY)
    can["unlock"] = can["lock"] and (not _locked_by_another_project(server, timeline)
                                     or _allowed(ctx, UNLOCK_OVERRIDE_RULE, server))
    return _page(request, "console/server_detail.html", {
        "server": server, "status": status, "busy": status in BUSY,
        "troubled": troubled,
        # a rebuild retries a PENDING server's build, or rebuilds one that once ran; one that never
        # reached a host (ERROR in cell0) is refused by the API, so it is not offered
        "rebuildable": status == "PENDING" or bool(server.get("OS-SRV-USG:launched_at")),
        "explanation": _explanation(request, server) if troubled else None,
        "dry_run": _dry_run(request, server) if troubled else None,
        "timeline": timeline,
        "volumes": volumes.data.get("volumeAttachments", []) if volumes.ok and volumes.data else [],
        "migrations": all_migrations,
        "show_migrations": all_migrations is not None,
        "can": can,
        "flavors": choices["flavors"],
        "hosts": _hosts(request) if ctx.is_admin or can.get("unshelve_to_host") else [],
        "images": choices["images"],
    }, fragments={"server-live": "console/_server_live.html"})


#: who may list migrations (a project manager: of its own project's servers, without their hosts)
MIGRATIONS_RULE = "os_compute_api:os-migrations:index"


def _migrations(request: HttpRequest, ctx: Any, server: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The server's migrations, newest first, for a reader the compute API lets list them: a cloud
    admin (every project's), a project manager of the server's project (asked for by project, as
    the API requires of one who may not list every project's); None for any other reader."""
    path = f"{BASE}/os-migrations?instance_uuid={server['id']}"
    if not ctx.is_admin:
        if server.get("tenant_id") != ctx.project_id or not _allowed(ctx, MIGRATIONS_RULE, server):
            return None
        path += f"&project_id={ctx.project_id}"
    result = call(request, "GET", path)
    return (result.data or {}).get("migrations", []) if result.ok else []


#: who may read a server's whole scheduling trace (the compute API's rule for it)
EXPLANATION_RULE = "cloudcore:os-scheduling-explanation:show"


def _explanation(request: HttpRequest, server: dict[str, Any]) -> dict[str, Any] | None:
    """The server's latest scheduling explanation (the whole trace, host names included) for those
    whom policy lets read it; None for everyone else, or when no trace was kept."""
    if not _allowed(request.ctx, EXPLANATION_RULE, server):  # type: ignore[attr-defined]
        return None
    found = call(request, "GET", f"{BASE}/servers/{server['id']}/os-scheduling-explanation")
    return (found.data or {}).get("scheduling_explanation") if found.ok else None


#: who may ask whether a request would fit now (the compute API's rule for the dry run)
DRY_RUN_RULE = "cloudcore:os-scheduling-explanation:dry_run"


def _dry_run(request: HttpRequest, server: dict[str, Any]) -> dict[str, Any] | None:
    """Would the request of a server that never reached a host fit now, and if not what would
    make it fit (the scheduler's dry run, nothing allocated), for those whom policy lets ask;
    None for a server with a host, for everyone else, or when the API refuses."""
    if server.get("OS-EXT-SRV-ATTR:host") or not _allowed(request.ctx, DRY_RUN_RULE, server):  # type: ignore[attr-defined]
        return None
    found = call(request, "POST", f"{BASE}/os-scheduling-explanation", {"explain": {"server_id": server["id"]}})
    return (found.data or {}).get("scheduling_dry_run") if found.ok else None


#: statuses whose page leads with the fault and the ways out (rebuild, reset state, delete)
TROUBLED = {"ERROR", "PENDING"}


def _timeline(request: HttpRequest, server_id: str, *, busy: bool, limit: int = 10) -> list[dict[str, Any]]:
    """The newest ``limit`` instance actions, each with its events in order and a ``state`` for the
    timeline's dot: ``running`` while an event has not finished (or, for the newest action of a
    busy server, before its first event starts), ``error`` when one failed."""
    listed = call(request, "GET", f"{BASE}/servers/{server_id}/os-instance-actions?limit={limit}")
    out: list[dict[str, Any]] = []
    for act in (listed.data or {}).get("instanceActions", [])[:limit] if listed.ok else []:
        detail = call(request, "GET", f"{BASE}/servers/{server_id}/os-instance-actions/{act['request_id']}")
        if detail.ok and detail.data:
            act = detail.data.get("instanceAction", act)
        events = sorted(act.get("events", []), key=lambda e: e.get("start_time") or "")
        failed = bool(act.get("message")) or any((e.get("result") or "").lower() == "error" for e in events)
        running = any(not e.get("finish_time") for e in events) or (busy and not out and not events)
        out.append({**act, "events": events, "state": "error" if failed else "running" if running else "done"})
    return out


#: who may lift a lock taken from another project (an admin's), as the compute API checks it
UNLOCK_OVERRIDE_RULE = "os_compute_api:os-lock-server:unlock:unlock_override"


def _locked_by_another_project(server: dict[str, Any], timeline: list[dict[str, Any]]) -> bool:
    """Was the server's lock taken from outside its project (by an admin, Nova's ``locked_by:
    admin``)? Read from its newest ``lock`` action; False when that is not among the actions shown
    (the API still decides, and the page shows its refusal)."""
    if not server.get("locked"):
        return False
    lock = next((a for a in timeline if a.get("action") == "lock"), None)
    return lock is not None and bool(lock.get("project_id")) and lock["project_id"] != server.get("tenant_id")


def _hosts(request: HttpRequest) -> list[str]:
    return cell_selectors.mapped_hosts()


ACTION_RULES = {
    "start": "os_compute_api:servers:start",
    "stop": "os_compute_api:servers:stop",
    "reboot": "os_compute_api:servers:reboot",
    "shelve": "os_compute_api:os-shelve:shelve",
    "shelve_offload": "os_compute_api:os-shelve:shelve_offload",
    "unshelve": "os_compute_api:os-shelve:unshelve",
    "unshelve_to_host": "os_compute_api:os-shelve:unshelve_to_host",
    "resize": "os_compute_api:servers:resize",
    "confirm": "os_compute_api:servers:confirm_resize",
    "revert": "os_compute_api:servers:revert_resize",
    "rebuild": "os_compute_api:servers:rebuild",
    "reset_state": "os_compute_api:os-admin-actions:reset_state",
    "delete": "os_compute_api:servers:delete",
    "lock": "os_compute_api:os-lock-server:lock",
    "create_image": "os_compute_api:servers:create_image",
    "migrate": "os_compute_api:os-migrate-server:migrate",
    "migrate_host": "os_compute_api:os-migrate-server:migrate:host",
    "live_migrate": "os_compute_api:os-migrate-server:migrate_live",
    "live_migrate_host": "os_compute_api:os-migrate-server:migrate_live:host",
    "console": "os_compute_api:os-remote-consoles",
}


def _action_body(op: str, post: Any) -> dict[str, Any] | None:
    """The compute API body for one console button (None for an unknown op)."""
    if op == "start":
        return {"os-start": None}
    if op == "stop":
        return {"os-stop": None}
    if op == "reboot":
        return {"reboot": {"type": "HARD" if post.get("hard") else "SOFT"}}
    if op == "shelve":
        return {"shelve": None}
    if op == "shelve_offload":
        return {"shelveOffload": None}
    if op == "unshelve":
        host = post.get("host")
        return {"unshelve": {"host": host} if host else None}
    if op == "resize":
        return {"resize": {"flavorRef": post.get("flavor", "")}}
    if op == "confirm":
        return {"confirmResize": None}
    if op == "revert":
        return {"revertResize": None}
    if op == "rebuild":
        return {"rebuild": {"imageRef": post.get("image", "")}}
    if op == "reset_state":
        return {"os-resetState": {"state": post.get("state", "error")}}
    if op == "lock":
        return {"lock": None}
    if op == "migrate":
        host = post.get("host")
        return {"migrate": {"host": host} if host else None}
    if op == "live_migrate":  # the disks copied or shared as the hosts allow (2.25+ "auto")
        return {"os-migrateLive": {"host": post.get("host") or None, "block_migration": "auto"}}
    if op == "create_image":
        return {"createImage": {"name": post.get("image_name", "").strip()}}
    if op == "unlock":
        return {"unlock": None}
    return None


@require_POST
@console_view()
def server_action(request: HttpRequest, server_id: str) -> HttpResponse:
    op = request.POST.get("op", "")
    target = reverse("console:server", args=[server_id])
    if op == "delete":
        result = call(request, "DELETE", f"{BASE}/servers/{server_id}")
        if result.ok:
            messages.success(request, "The server is being deleted.")
            return HttpResponseRedirect(reverse("console:servers"))
    else:
        body = _action_body(op, request.POST)
        if body is None:
            messages.error(request, f"Unknown action {op!r}.")
            return HttpResponseRedirect(target)
        result = call(request, "POST", f"{BASE}/servers/{server_id}/action", body)
    if result.ok:
        messages.success(request, f"{op.replace('_', ' ').capitalize()} accepted.")
    else:
        messages.error(request, f"{op.replace('_', ' ').capitalize()} refused: {result.message}")
    return HttpResponseRedirect(target)


@console_view(admin=True)
def migrations(request: HttpRequest) -> HttpResponse:
    result = call(request, "GET", f"{BASE}/os-migrations")
    items = result.data.get("migrations", []) if result.ok and result.data else []
    running = set(MigrationStatus.IN_FLIGHT)
    cells = cell_selectors.host_cell_names()
    for m in items:
        m["busy"] = m.get("status") in running
        m["source_cell"] = cells.get(m.get("source_compute") or "", "")
        m["dest_cell"] = cells.get(m.get("dest_compute") or "", "")
        m["cross_cell"] = bool(m["source_cell"] and m["dest_cell"] and m["source_cell"] != m["dest_cell"])
    items = tables.sort_rows(request, items, MIGRATION_SORT)
    return _page(request, "console/migrations.html", {
        "page_obj": tables.paginate(request, items), "error": None if result.ok else result.message,
        "any_busy": any(m["busy"] for m in items),
    }, fragments={"migration-table": "console/_migration_table.html"})


MIGRATION_SORT = {
    "type": lambda m: m.get("migration_type") or "", "status": lambda m: m.get("status") or "",
    "source": lambda m: m.get("source_compute") or "", "dest": lambda m: m.get("dest_compute") or "",
    "updated": lambda m: m.get("updated_at") or m.get("created_at") or ""}


@require_POST
@console_view(admin=True)
def host_action(request: HttpRequest) -> HttpResponse:
    """Enable/disable (with reason) and force down a compute service through os-services (2.53+)."""
    service = request.POST.get("service", "")
    op = request.POST.get("op", "")
    bodies = {
        "enable": {"status": "enabled"},
        "disable": {"status": "disabled", **({"disabled_reason": request.POST["reason"]}
                                              if request.POST.get("reason") else {})},
        "force_down": {"forced_down": True},
        "unforce": {"forced_down": False},
    }
    if op not in bodies:
        messages.error(request, f"Unknown host action {op!r}.")
        return HttpResponseRedirect(reverse("console:hosts"))
    return api_outcome(request, call(request, "PUT", f"{BASE}/os-services/{service}", bodies[op]),
                       op.replace("_", " ").capitalize(), reverse("console:hosts"))
