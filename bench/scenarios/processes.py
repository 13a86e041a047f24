"""Peak RSS of the real processes: ``manage.py run_cloud`` (what ``make run`` starts: gunicorn web
master and workers, the conductor and volume Celery workers, beat, one compute worker per demo
host) in a private var dir on a free port, as ``tests/e2e/cloud.py`` starts it. After a few seconds
idle, the demo user boots a handful of servers through the HTTP API (token from the identity API,
``POST /compute/v2.1/servers``, polling until ACTIVE); then ``VmHWM`` (peak RSS) and ``VmRSS`` of
every process of the tree are read from ``/proc/<pid>/status``."""
from __future__ import annotations

import json
import os
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from bench.live import password_auth_body

DESCRIPTION = "peak RSS (VmHWM) of every manage.py run_cloud process after idle + a handful of boots"
BOOTS, QUICK_BOOTS = 5, 2
IDLE_S, QUICK_IDLE_S = 5.0, 2.0
DEMO_PASSWORD = "bench-demo-secret"


def _children(pid: int) -> list[tuple[int, int]]:
    """Every descendant of ``pid`` as (pid, parent pid), by parent pid (run_cloud starts each child
    in its own session, so the process group does not find them)."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        parents.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        for child in parents.get(parent, []):
            found.append((child, parent))
            todo.append(child)
    return found


def _argv(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


def _name(pid: int, ppid: int) -> str:
    argv = _argv(pid)
    if not argv:
        return f"pid {pid}"
    text = " ".join(argv)
    if "gunicorn" in text:
        return "web (gunicorn worker)" if "gunicorn" in " ".join(_argv(ppid)) else "web (gunicorn master)"
    if "run_cloud" in text:
        return "run_cloud (supervisor)"
    if "compute" in argv and "--host" in argv:
        return f"compute worker {argv[argv.index('--host') + 1]}"
    if "beat" in argv:
        return "beat"
    if "-Q" in argv:
        return f"celery worker {argv[argv.index('-Q') + 1]}"
    return " ".join(a for a in argv[:4] if a).replace(str(Path.cwd()) + "/", "")


class _Api:
    def __init__(self, base: str) -> None:
        self.base, self.token = base, ""

    def call(self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None) -> tuple[Any, Any]:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(f"{self.base}{path}", data=data, method=method, headers={  # noqa: S310
            "Content-Type": "application/json", "Accept": "application/json", "X-Auth-Token": self.token,
            "OpenStack-API-Version": "compute 2.90", **(headers or {})})
        with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310 - our own local cloud
            raw = response.read()
            return response.headers, json.loads(raw) if raw else None

    def login(self, user: str, password: str, project: str) -> None:
        headers, _ = self.call("POST", "/identity/v3/auth/tokens", password_auth_body(user, password, project))
        self.token = headers["X-Subject-Token"]


def _boot(api: _Api, count: int) -> float:
    _, flavors = api.call("GET", "/compute/v2.1/flavors")
    flavor = next(f["id"] for f in flavors["flavors"] if f["name"] == "m1.tiny")
    _, images = api.call("GET", "/image/v2/images")
    image = next(i["id"] for i in images["images"] if i.get("status") == "active")
    started = time.perf_counter()
    ids = []
    for i in range(count):
        _, body = api.call("POST", "/compute/v2.1/servers", {"server": {
            "name": f"bench-rss-{i}", "flavorRef": flavor, "imageRef": image, "networks": "none"}})
        ids.append(body["server"]["id"])
    deadline = time.monotonic() + 120
    pending = set(ids)
    while pending and time.monotonic() < deadline:
        for server_id in list(pending):
            _, body = api.call("GET", f"/compute/v2.1/servers/{server_id}")
            status = body["server"]["status"]
            if status == "ACTIVE":
                pending.discard(server_id)
            elif status == "ERROR":
                raise RuntimeError(f"server {server_id} went to ERROR: {body['server'].get('fault')}")
        time.sleep(0.2)
    if pending:
        raise RuntimeError(f"{len(pending)} server(s) not ACTIVE after 120 s")
    return time.perf_counter() - started


def run(env: Any) -> dict[str, Any]:
    from bench.env import proc_status_kb
    from tests.e2e.cloud import LiveCloud, free_port, make_env

    boots = QUICK_BOOTS if env.quick else BOOTS
    idle = QUICK_IDLE_S if env.quick else IDLE_S
    var_dir = Path(tempfile.mkdtemp(prefix="cloudcore-bench-live-"))
    port = free_port()
    cloud = LiveCloud(var_dir=var_dir, port=port, env=make_env(var_dir, port, external=False,
                                                               CLOUDCORE_DEMO_PASSWORD=DEMO_PASSWORD))
    started = time.perf_counter()
    try:
        cloud.start()
        up_s = time.perf_counter() - started
        assert cloud.process is not None
        time.sleep(idle)
        api = _Api(cloud.url)
        api.login("demo", DEMO_PASSWORD, "demo")
        boot_s = _boot(api, boots)
        time.sleep(1.0)
        processes = []
        for pid, ppid in [(cloud.process.pid, os.getpid()), *_children(cloud.process.pid)]:
            hwm, rss = proc_status_kb(pid, "VmHWM"), proc_status_kb(pid, "VmRSS")
            if hwm:
                processes.append({"pid": pid, "name": _name(pid, ppid), "vmhwm_kb": hwm, "vmrss_kb": rss or 0})
    except Exception:
        print(cloud.tail(30))
        raise
    finally:
        cloud.stop()
        if not os.environ.get("BENCH_KEEP"):
            import shutil

            shutil.rmtree(var_dir, ignore_errors=True)
    processes.sort(key=lambda p: (p["name"], p["pid"]))
    counts = {name: sum(p["name"] == name for p in processes) for name in {p["name"] for p in processes}}
    seen: dict[str, int] = {}
    for p in processes:  # two gunicorn workers: "web (gunicorn worker 1)", "web (gunicorn worker 2)"
        if counts[p["name"]] > 1:
            seen[p["name"]] = seen.get(p["name"], 0) + 1
            p["name"] = f"{p['name'].rstrip(')')} {seen[p['name']]})" if p["name"].endswith(")") else \
                f"{p['name']} {seen[p['name']]}"
    total = sum(p["vmhwm_kb"] for p in processes)
    print(f"   run_cloud up in {up_s:.1f} s; {idle:.0f} s idle; {boots} servers ACTIVE in {boot_s:.1f} s")
    print(f"   {'process':<32} {'pid':>7} {'peak RSS MiB':>13} {'RSS MiB':>8}")
    for p in processes:
        print(f"   {p['name']:<32} {p['pid']:>7} {p['vmhwm_kb'] / 1024:>13.1f} {p['vmrss_kb'] / 1024:>8.1f}")
    print(f"   {'all processes (sum of peaks)':<32} {'':>7} {total / 1024:>13.1f}", flush=True)
    return {
        "processes": processes, "total_vmhwm_kb": total, "boots": boots, "boot_s": boot_s, "idle_s": idle,
        "up_s": up_s,
        "method": f"`manage.py run_cloud` started as tests/e2e/cloud.py does (SQLite, its own Redis broker, libvirt "
                  f"test driver, every process real), up in {up_s:.0f} s, {idle:.0f} s idle, then {boots} servers "
                  f"booted through the HTTP API; VmHWM/VmRSS read from /proc/<pid>/status of every process of the tree",
    }
