"""Concurrent clients against the real processes: ``manage.py run_cloud`` (what ``make run`` starts:
gunicorn, the Redis broker, conductor and compute workers; SQLite, or PostgreSQL + Redis when
``CLOUDCORE_E2E_DATABASE_URL`` / ``CLOUDCORE_E2E_BROKER_URL`` are set, as for the e2e tier) in a
private var dir on a free port, started by ``tests/e2e/livecloud.py``'s ``cloud_in``.

``CLIENTS`` threads each log in once as the demo user and keep their token and one keep-alive HTTP
connection. Together they boot ``BOOTS`` servers (each client ``POST /servers`` its share one after
another, then polls its own servers with ``GET /servers/{id}`` every ``POLL_S`` until ACTIVE), which
gives servers/s (first POST to last ACTIVE) and ``POST /servers`` p50/p95. Then one client reads
``GET /servers/detail`` (every server) ``DETAIL_ROUNDS`` times for its p50.

The web process runs with ``CLOUDCORE_PROFILE_DIR`` (``cloudcore.core.profiling``: one cProfile per
serving thread); the profiles are summed into a "where the time goes" table: time in the
application per endpoint against what the client saw (the difference is waiting for a gunicorn
thread, the GIL and the socket), and the time inside token validation, SQLite statements and
commits (lock waits included: ``BEGIN IMMEDIATE`` waits inside the statement), the broker, JSON
rendering, ...
"""
from __future__ import annotations

import http.client
import json
import os
import pstats
import re
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.live import password_auth_body

DESCRIPTION = "20 concurrent HTTP clients booting servers through manage.py run_cloud (servers/s, latencies, profile)"
CLIENTS = 20
BOOTS, QUICK_BOOTS = 100, 20
DETAIL_ROUNDS, QUICK_DETAIL_ROUNDS = 30, 10
POLL_S = 0.5
ACTIVE_TIMEOUT_S = 300.0
#: room for 100 m1.tiny on the four demo hosts (48 GiB, 24 vCPUs), and no quota in the way
CLOUD_ENV = {"CLOUDCORE_CPU_ALLOCATION_RATIO": "16", "CLOUDCORE_RAM_ALLOCATION_RATIO": "4",
             "CLOUDCORE_QUOTA_INSTANCES": "-1", "CLOUDCORE_QUOTA_CORES": "-1", "CLOUDCORE_QUOTA_RAM": "-1",
             "CLOUDCORE_LOG_LEVEL": "WARNING"}
#: what the profiles of this scenario showed, what was fixed, what is left (the table gives the numbers)
FINDINGS = (
    "Fixed: a fresh gunicorn thread could check a policy rule while another thread of its worker was still "
    "importing the policies modules and got a 500 'unknown rule' (`cloudcore.core.policy.autodiscover` is now "
    "locked and marks discovery done only at its end).",
    "Fixed: the first request of every gunicorn thread imported the URLconf, the policies and Celery's result "
    "backend while the worker's other threads waited on the import lock (the 'waiting on a lock' row was "
    "about 15 s of 98 s in a quick run before): `cloudcore.wsgi` now imports them when the worker loads the app.",
    "Fixed: the web process opened, set up (WAL pragmas) and closed a SQLite connection per database per "
    "request (about 12 s of 98 s in a quick run before, the 'opening SQLite connections' row now): run_cloud "
    "sets `CLOUDCORE_DB_CONN_MAX_AGE=300` for gunicorn, whose threads keep their connections.",
    "Left: the machine is CPU-bound (2 cores, load average in the header). Time inside the application is "
    "mostly Python and SQLite statements under GIL contention; client latency of `POST /servers` is several "
    "times its time in the application: the requests wait for one of the 2x4 gunicorn threads and for the CPU "
    "(more threads would not add CPU).",
    "Left: status polling (`GET /servers/{id}`, as the SDK's wait_for_server does) is most of the web "
    "process's time; each renders the guardian grants of the user (`policy._load_grants`, 5 statements) to "
    "decide the extended attributes. Caching grants across requests needs `User.user_permissions` and "
    "`Group.permissions` changes to bump the identity change stamps first (they do not today), so it was "
    "not done here.",
    "Left: password logins cost about a second of CPU each (Django's PBKDF2 iterations); clients reuse their "
    "tokens, so this is paid once per client and once per compute worker.",
)
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


class Client:
    """One API client: its own keep-alive connection and token, every call timed."""

    def __init__(self, port: int) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        self.token = ""
        self.timings: list[tuple[str, float]] = []

    def call(self, method: str, path: str, body: Any = None) -> tuple[Any, Any]:
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json", "Accept": "application/json",
                   "OpenStack-API-Version": "compute 2.90"}
        if self.token:
            headers["X-Auth-Token"] = self.token
        started = time.perf_counter()
        self.conn.request(method, path, body=data, headers=headers)
        response = self.conn.getresponse()
        raw = response.read()
        self.timings.append((f"{method} {_UUID.sub('{id}', path)}", time.perf_counter() - started))
        if response.status >= 400:
            raise RuntimeError(f"{method} {path}: {response.status} {raw[:300]!r}")
        return response.headers, json.loads(raw) if raw else None

    def login(self, user: str, password: str, project: str) -> None:
        headers, _ = self.call("POST", "/identity/v3/auth/tokens", password_auth_body(user, password, project))
        self.token = headers["X-Subject-Token"]


def _boot_share(client: Client, count: int, prefix: str, flavor: str, image: str, errors: list[str]) -> None:
    try:
        ids = []
        for i in range(count):
            _, body = client.call("POST", "/compute/v2.1/servers", {"server": {
                "name": f"{prefix}-{i}", "flavorRef": flavor, "imageRef": image, "networks": "none"}})
            ids.append(body["server"]["id"])
        pending, deadline = set(ids), time.monotonic() + ACTIVE_TIMEOUT_S
        while pending and time.monotonic() < deadline:
            for server_id in sorted(pending):
                _, body = client.call("GET", f"/compute/v2.1/servers/{server_id}")
                if body["server"]["status"] == "ACTIVE":
                    pending.discard(server_id)
                elif body["server"]["status"] == "ERROR":
                    raise RuntimeError(f"server {server_id} went to ERROR: {body['server'].get('fault')}")
            if pending:
                time.sleep(POLL_S)
        if pending:
            raise RuntimeError(f"{len(pending)} server(s) of {prefix} not ACTIVE after {ACTIVE_TIMEOUT_S:.0f} s")
    except Exception as exc:  # reported by the caller after every client is done
        errors.append(f"{prefix}: {exc!r}")


def _ms(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return 1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


#: "where the time goes": (row, how it is measured, predicate on a pstats key (file, line, function))
_PROFILE_ROWS: tuple[tuple[str, str, str, Any], ...] = (
    ("token validation (X-Auth-Token)", "cum", "identity/auth.py TokenAuthentication.authenticate",
     lambda f, fn: f.endswith("identity/auth.py") and fn == "authenticate"),
    ("password check (login)", "cum", "django.contrib.auth.hashers check_password",
     lambda f, fn: f.endswith("auth/hashers.py") and fn == "check_password"),
    ("SQLite statements (lock waits included)", "own", "sqlite3 Cursor.execute/executemany",
     # (Django's SQLiteCursorWrapper.execute calls the C method through super(): cProfile names
     # that call after the wrapper)
     lambda f, fn: f == "~" and ("sqlite3.Cursor" in fn or "SQLiteCursorWrapper" in fn) and "execute" in fn),
    ("opening SQLite connections", "own", "sqlite3.connect + PRAGMAs + close",
     lambda f, fn: f == "~" and (fn == "<built-in method _sqlite3.connect>" or (
         "sqlite3.Connection" in fn and ("'execute'" in fn or "'close'" in fn)))),
    ("waiting on a lock (imports, pools, threads)", "own", "_thread.lock.acquire",
     lambda f, fn: f == "~" and "_thread.lock" in fn and "acquire" in fn),
    ("SQLite commits", "own", "sqlite3 Connection.commit",
     lambda f, fn: f == "~" and "sqlite3.Connection" in fn and "commit" in fn),
    ("PostgreSQL statements", "own", "psycopg2 cursor.execute",
     lambda f, fn: f == "~" and "psycopg2" in fn and "execute" in fn),
    ("broker: publishing tasks", "cum", "kombu Producer.publish",
     lambda f, fn: f.endswith("kombu/messaging.py") and fn == "publish"),
    ("broker: result handle (backend set up per thread)", "cum", "celery Task.AsyncResult",
     lambda f, fn: f.endswith("celery/app/task.py") and fn == "AsyncResult"),
    ("broker: waiting for a result", "cum", "celery AsyncResult.get",
     lambda f, fn: f.endswith("celery/result.py") and fn == "get"),
    ("rendering JSON responses", "cum", "rest_framework renderers render",
     lambda f, fn: f.endswith("rest_framework/renderers.py") and fn == "render"),
    ("Django ORM building SQL (Python)", "cum", "SQLCompiler.as_sql",
     lambda f, fn: f.endswith("db/models/sql/compiler.py") and fn == "as_sql"),
)


def profile_summary(profile_dir: Path) -> dict[str, Any]:
    """The web process's profiles (``cloudcore.core.profiling``) summed: seconds in the application
    per endpoint, the ``_PROFILE_ROWS`` and the top functions by own time."""
    requests: list[tuple[str, str, str, float]] = []
    for path in profile_dir.glob("*.json"):
        requests += [tuple(r) for r in json.loads(path.read_text())]  # type: ignore[misc]
    by_endpoint: dict[str, list[float]] = {}
    for method, path, _status, seconds in requests:
        by_endpoint.setdefault(f"{method} {_UUID.sub('{id}', path)}", []).append(seconds)
    files = [str(p) for p in sorted(profile_dir.glob("*.prof"))]
    if not files:
        return {"requests": len(requests), "app_s": 0.0, "by_endpoint": {}, "rows": [], "top": []}
    stats = pstats.Stats(*files)
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    rows = []
    for label, kind, what, match in _PROFILE_ROWS:
        seconds = sum((tt if kind == "own" else ct) for (f, _line, fn), (_cc, _nc, tt, ct, _callers) in raw.items()
                      if match(f, fn))
        calls = sum(nc for (f, _line, fn), (_cc, nc, _tt, _ct, _callers) in raw.items() if match(f, fn))
        if calls:
            rows.append({"what": label, "measured_as": f"{'own' if kind == 'own' else 'cumulative'} time of {what}",
                         "seconds": seconds, "calls": calls})
    top = sorted(raw.items(), key=lambda item: -item[1][2])[:12]
    return {
        "requests": len(requests), "app_s": sum(r[3] for r in requests),
        "by_endpoint": {k: {"n": len(v), "p50_ms": _ms(v, 0.5), "p95_ms": _ms(v, 0.95), "total_s": sum(v)}
                        for k, v in sorted(by_endpoint.items())},
        "rows": rows,
        "top": [{"function": f"{Path(f).name}:{line} {fn}" if f != "~" else fn, "own_s": tt, "calls": nc}
                for (f, line, fn), (_cc, nc, tt, _ct, _callers) in top],
    }


def run(env: Any) -> dict[str, Any]:
    from tests.e2e.livecloud import cloud_in

    boots = QUICK_BOOTS if env.quick else BOOTS
    rounds = QUICK_DETAIL_ROUNDS if env.quick else DETAIL_ROUNDS
    var_dir = Path(tempfile.mkdtemp(prefix="cloudcore-bench-load-"))
    profile_dir = var_dir / "profile"
    load_before = os.getloadavg()
    try:
        with cloud_in(var_dir, CLOUDCORE_PROFILE_DIR=str(profile_dir), **CLOUD_ENV) as cloud:
            try:
                clients = [Client(cloud.port) for _ in range(CLIENTS)]
                for client in clients:
                    client.login("demo", cloud.env["CLOUDCORE_DEMO_PASSWORD"], "demo")
                _, flavors = clients[0].call("GET", "/compute/v2.1/flavors")
                flavor = next(f["id"] for f in flavors["flavors"] if f["name"] == "m1.tiny")
                _, images = clients[0].call("GET", "/image/v2/images")
                image = next(i["id"] for i in images["images"] if i.get("status") == "active")
                shares = [boots // CLIENTS + (i < boots % CLIENTS) for i in range(CLIENTS)]
                errors: list[str] = []
                threads = [threading.Thread(target=_boot_share, args=(c, n, f"load-{i}", flavor, image, errors))
                           for i, (c, n) in enumerate(zip(clients, shares, strict=True)) if n]
                started = time.perf_counter()
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join()
                boot_s = time.perf_counter() - started
                if errors:
                    raise RuntimeError("; ".join(errors[:5]))
                detail = []
                for _ in range(rounds):
                    t0 = time.perf_counter()
                    _, body = clients[0].call("GET", "/compute/v2.1/servers/detail")
                    detail.append(time.perf_counter() - t0)
                listed = len(body["servers"])
                time.sleep(1.2)  # past the profiler's dump interval: the next request of each thread dumps
                for client in clients[:8]:
                    client.call("GET", "/compute/v2.1/flavors")
            except Exception:
                print(cloud.tail(40))
                raise
        load_after = os.getloadavg()
        profile = profile_summary(profile_dir)
    finally:
        if not os.environ.get("BENCH_KEEP"):
            shutil.rmtree(var_dir, ignore_errors=True)
    posts = [s for c in clients for k, s in c.timings if k == "POST /compute/v2.1/servers"]
    client_by_endpoint: dict[str, list[float]] = {}
    for c in clients:
        for k, s in c.timings:
            client_by_endpoint.setdefault(k, []).append(s)
    result = {
        "clients": CLIENTS, "boots": boots, "boot_s": boot_s, "servers_per_s": boots / boot_s,
        "post_p50_ms": _ms(posts, 0.5), "post_p95_ms": _ms(posts, 0.95),
        "detail_servers": listed, "detail_rounds": rounds, "detail_p50_ms": _ms(detail, 0.5),
        "detail_p95_ms": _ms(detail, 0.95),
        "client_by_endpoint": {k: {"n": len(v), "p50_ms": _ms(v, 0.5), "p95_ms": _ms(v, 0.95)}
                               for k, v in sorted(client_by_endpoint.items())},
        "profile": profile, "load_before": load_before, "load_after": load_after, "findings": list(FINDINGS),
        "method": f"`manage.py run_cloud` (tests/e2e/livecloud.py `cloud_in`: private var dir, free port, "
                  f"{'PostgreSQL' if cloud.env.get('CLOUDCORE_DATABASE_URL') else 'SQLite'}, "
                  f"{'external' if cloud.env.get('CLOUDCORE_BROKER_URL') else 'embedded'} Redis broker, "
                  f"libvirt test driver); {CLIENTS} client threads, one token and one keep-alive connection "
                  f"each; web process under cProfile (CLOUDCORE_PROFILE_DIR)",
    }
    print(f"   {boots} servers ACTIVE in {boot_s:.1f} s = {result['servers_per_s']:.1f} servers/s; "
          f"POST /servers p50 {result['post_p50_ms']:.0f} ms p95 {result['post_p95_ms']:.0f} ms; "
          f"GET /servers/detail ({listed} servers) p50 {result['detail_p50_ms']:.0f} ms; "
          f"load {load_before[0]:.2f} -> {load_after[0]:.2f}", flush=True)
    for row in profile["rows"]:
        print(f"   {row['what']:<44} {row['seconds']:8.2f} s  {row['calls']:>7} calls", flush=True)
    return result
