"""Nova side by side: the same scenarios run in OpenStack Nova's own functional-test harness.

Nova's PyPI wheel ships ``nova/tests/functional`` and ``nova/tests/fixtures`` (checked in the
downloaded wheel before anything is installed), which run every Nova service in one process with
fake virt drivers. This module makes a separate virtualenv ``<out>/nova-venv`` (git-ignored; Nova's
code is never part of this repository), installs the wheel plus the test-only packages its
functional fixtures import, runs ``bench/nova_harness.py`` with that venv's Python, and lines the
figures up with cloudcore's from the same run. Anything that goes wrong (no network, install or
harness failure, time limit) ends up as the plain reason the comparison was not run.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

HARNESS = Path(__file__).resolve().parent / "nova_harness.py"
#: nova's functional fixtures import these test-only packages; SQLAlchemy 2.1 turns a deprecation
#: warning Nova's test fixtures make fatal into an API 500, so stay on 2.0 (as OpenStack's
#: upper-constraints do).
TEST_PACKAGES = ("openstack-placement", "fixtures", "testtools", "oslotest", "wsgi-intercept", "requests-mock", "ddt",
                 "SQLAlchemy<2.1")
INSTALL_TIMEOUT_S = 600
RUN_TIMEOUT_S = 1200
#: list_rows: after the list of the booted servers, Nova's list again with this many (the others row
#: copies of the booted ones, as cloudcore's list_scale makes its larger sizes).
FULL = {"boots": 100, "hosts": 4, "rounds": 3, "repeats": 5, "list_rows": 1000}
QUICK = {"boots": 20, "hosts": 4, "rounds": 1, "repeats": 3, "list_rows": 100}


def _base_python() -> str:
    return getattr(sys, "_base_executable", "") or sys.executable


def _venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def _nova_ready(venv: Path) -> bool:
    python = _venv_python(venv)
    if not python.exists():
        return False
    probe = subprocess.run([str(python), "-c", "import nova.tests.functional.integrated_helpers, placement, sqlalchemy;"
                            "assert sqlalchemy.__version__ < '2.1'"],
                           capture_output=True, text=True, timeout=120, cwd=tempfile.gettempdir())
    return probe.returncode == 0


def _pip(python: Path, *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(python), "-m", "pip", "--disable-pip-version-check", *args], capture_output=True,
                          text=True, timeout=timeout)


def ensure_venv(venv: Path) -> dict[str, Any]:
    """The venv with nova and its functional-test fixtures; ``{"ok": bool, "reason"|"install_s": ...}``."""
    if _nova_ready(venv):
        return {"ok": True, "install_s": 0.0, "reused": True}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        download = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
                                   "nova", "-d", tmp], capture_output=True, text=True, timeout=300)
        wheels = list(Path(tmp).glob("nova-*.whl"))
        if download.returncode or not wheels:
            return {"ok": False, "reason": "`pip download --no-deps nova` failed: "
                    + (download.stderr.strip().splitlines() or ["no wheel"])[-1]}
        names = set(zipfile.ZipFile(wheels[0]).namelist())
        needed = ("nova/tests/functional/integrated_helpers.py", "nova/tests/fixtures/nova.py",
                  "nova/tests/functional/test_cross_cell_migrate.py")
        missing = [n for n in needed if n not in names]
        if missing:
            return {"ok": False, "reason": f"Nova's wheel {wheels[0].name} does not ship {', '.join(missing)}"}
        shutil.rmtree(venv, ignore_errors=True)
        made = subprocess.run([_base_python(), "-m", "venv", str(venv)], capture_output=True, text=True, timeout=120)
        if made.returncode:
            return {"ok": False, "reason": f"could not create {venv}: {made.stderr.strip()[-300:]}"}
        left = INSTALL_TIMEOUT_S - (time.perf_counter() - started)
        try:
            installed = _pip(_venv_python(venv), "install", "-q", str(wheels[0]), *TEST_PACKAGES, timeout=left)
        except subprocess.TimeoutExpired:
            return {"ok": False, "reason": f"installing nova and its test packages took over {INSTALL_TIMEOUT_S} s"}
        if installed.returncode:
            return {"ok": False, "reason": "pip install of nova + test packages failed: "
                    + installed.stderr.strip()[-400:]}
        wheel_name = wheels[0].name
    # Nova's test config finds etc/nova/api-paste.ini next to the package; the wheel installs it
    # under the venv's data dir.
    site = next((venv / "lib").glob("python3*/site-packages"))
    if not (site / "etc").exists() and (venv / "etc").exists():
        (site / "etc").symlink_to(Path("..", "..", "..", "etc"))
    if not _nova_ready(venv):
        return {"ok": False, "reason": "nova installed but its functional test modules do not import"}
    return {"ok": True, "install_s": time.perf_counter() - started, "reused": False, "wheel": wheel_name}


def _comparisons(results: dict[str, Any], nova: dict[str, Any], rss_after: dict[str, int]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []

    def add(what: str, ours: Any, theirs: Any, unit: str, note: str = "") -> None:
        if isinstance(ours, int | float) and isinstance(theirs, int | float) and ours > 0 and theirs > 0:
            rows.append({"what": what, "cloudcore": float(ours), "nova": float(theirs), "unit": unit,
                         "ratio": float(theirs) / float(ours), "note": note})

    boot, listing, move = results.get("boot_and_list") or {}, results.get("list_scale") or {}, \
        results.get("cross_cell_resize") or {}
    nboot, nmove = nova.get("boot") or {}, nova.get("cross_cell") or {}
    if "error" not in boot and nboot:
        add("boot: ms per server to ACTIVE (median)", boot.get("boot_ms_median"), nboot.get("boot_ms_median"), "ms",
            f"cloudcore {boot.get('boots')} boots on {boot.get('hosts')} hosts, Nova {nboot.get('boots')} on "
            f"{nboot.get('hosts')} hosts; both 2 cells, sequential")
        add("boot: SQL statements per server", boot.get("sql_per_boot"), nboot.get("sql_per_boot"), "statements")
    row = next((r for r in listing.get("rows", []) if r["servers"] == nboot.get("list_servers")), None)
    if row and nboot:
        add(f"GET /servers/detail with {row['servers']} servers (ms)", row["detail_ms"], nboot.get("list_detail_ms"),
            "ms", "all booted for real on both sides at this size")
        add(f"GET /servers/detail with {row['servers']} servers (SQL)", row["detail_sql"],
            nboot.get("list_detail_sql"), "statements")
    nrows = nboot.get("list_rows") or {}
    row = next((r for r in listing.get("rows", []) if r["servers"] == nrows.get("servers")), None)
    for version, theirs in (nrows.get("by_version") or {}).items():
        ours = ((row or {}).get("by_version") or {}).get(version)
        if ours and ours["returned"] == theirs["returned"]:
            add(f"GET /servers/detail, {row['servers']} servers @{version} (ms)", ours["ms"], theirs["ms"], "ms",
                f"{ours['returned']} rows; {nrows.get('booted')} booted on Nova's side, {row['booted']} on "
                f"cloudcore's, the others row copies on both")
            add(f"GET /servers/detail, {row['servers']} servers @{version} (SQL)", ours["sql"], theirs["sql"],
                "statements")
    for key, label in (("confirm", "resize + confirm"), ("revert", "resize + revert")):
        ours, theirs = move.get(key) or {}, nmove.get(key) or {}
        if ours and theirs:
            add(f"cross-cell {label}: wall ms per move", ours["resize_wall_ms"] + ours["finish_wall_ms"],
                theirs["move_ms"], "ms", "wall time incl. the (tiny) image copy on both sides")
            add(f"cross-cell {label}: SQL per move", ours["move_sql"], theirs["move_sql"], "statements")
    # Peak RSS of the one process that hosts every service: Nova's harness ran boots, a 100-server
    # list and the cross-cell moves; cloudcore's bench process after the same kinds of work (the
    # scenarios run in name order, so before the 10,000-row list and the 10,000-host scheduler).
    ours_kb = rss_after.get("cross_cell_resize") or rss_after.get("boot_and_list")
    if ours_kb and nova.get("meta", {}).get("peak_rss_kb"):
        add("peak RSS of the one process running every service (MiB)", ours_kb / 1024,
            nova["meta"]["peak_rss_kb"] / 1024, "MiB",
            "cloudcore: bench process after boot_and_list + cross_cell_resize; Nova: its harness process")
    return rows


def side_by_side(out_dir: Path, *, quick: bool, results: dict[str, Any],
                 rss_after: dict[str, int] | None = None) -> dict[str, Any]:
    """Run the Nova side and compare; ``{"run": False, "reason": ...}`` when it cannot be run."""
    sizes = QUICK if quick else FULL
    if not any(name in results for name in ("boot_and_list", "list_scale", "cross_cell_resize")):
        return {"run": False, "reason": "none of the scenarios with a Nova counterpart (boot_and_list, list_scale, "
                                        "cross_cell_resize) was run"}
    out_dir.mkdir(parents=True, exist_ok=True)
    venv = out_dir / "nova-venv"
    try:
        setup = ensure_venv(venv)
    except (OSError, subprocess.SubprocessError) as exc:
        setup = {"ok": False, "reason": f"setting up the Nova venv failed: {exc!r}"}
    if not setup["ok"]:
        print(f"   Nova comparison not run: {setup['reason']}", flush=True)
        return {"run": False, "reason": setup["reason"]}
    how = "reused" if setup.get("reused") else f"installed in {setup.get('install_s', 0):.0f} s"
    print(f"   nova venv {how}: {venv}", flush=True)
    result_path = out_dir / "nova-results.json"
    result_path.unlink(missing_ok=True)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("CLOUDCORE_", "DJANGO_"))},
           "BENCH_NOVA_OUT": str(result_path), "BENCH_NOVA_BOOTS": str(sizes["boots"]),
           "BENCH_NOVA_HOSTS": str(sizes["hosts"]), "BENCH_NOVA_ROUNDS": str(sizes["rounds"]),
           "BENCH_NOVA_REPEATS": str(sizes["repeats"]), "PYTHONWARNINGS": "ignore",
           "BENCH_NOVA_LIST_ROWS": str(sizes["list_rows"] if "list_scale" in results else 0)}
    wanted = [name for name, ours in (("boot", ("boot_and_list", "list_scale")), ("cross_cell", ("cross_cell_resize",)))
              if any(o in results for o in ours)]
    log_path = out_dir / "nova-harness.log"
    started = time.perf_counter()
    try:
        with open(log_path, "w") as log:
            # run from a temp dir: the harness's own directory must not shadow anything on sys.path
            proc = subprocess.run([str(_venv_python(venv)), "-P", str(HARNESS), *wanted], env=env, stdout=log,
                                  stderr=subprocess.STDOUT, timeout=RUN_TIMEOUT_S, cwd=tempfile.gettempdir())
    except subprocess.TimeoutExpired:
        return {"run": False, "reason": f"Nova's harness did not finish within {RUN_TIMEOUT_S} s (log: {log_path})"}
    run_s = time.perf_counter() - started
    if not result_path.exists():
        return {"run": False, "reason": f"Nova's harness exited with {proc.returncode} without results "
                                        f"(log: {log_path})"}
    nova = json.loads(result_path.read_text())
    meta = nova.get("meta", {})
    if not meta.get("ok"):
        reason = f"Nova's harness failed: {'; '.join(meta.get('errors', []))[:500]} (log: {log_path})"
        if not (nova.get("boot") or nova.get("cross_cell")):
            return {"run": False, "reason": reason}
    rows = _comparisons(results, nova, rss_after or {})
    if not rows:
        return {"run": False, "reason": "Nova ran but no figure lines up with one of this run's cloudcore figures"}
    ratios = {re.sub(r"[^a-z0-9]+", "_", r["what"].lower()).strip("_"):
              {"value": round(r["ratio"], 2), "what": f"Nova / cloudcore, {r['what']}"} for r in rows}
    for r in rows:
        print(f"   {r['what']:<52} cloudcore {r['cloudcore']:>9.1f}  Nova {r['nova']:>9.1f} {r['unit']:<10} "
              f"Nova/cloudcore {r['ratio']:.2f}x", flush=True)
    notes = [
        "Ratios are Nova / cloudcore: above 1 means Nova took longer or ran more SQL statements.",
        "Not compared: the scheduler at 1,000 / 10,000 hosts (Nova's functional harness starts a full "
        "nova-compute service per host, which is not feasible at that count in minutes), the server list at 10,000 "
        "servers (Nova is compared at 100 booted servers, and at 1,000 where the servers beyond the booted ones are "
        "row copies in Nova's cell and API databases, as cloudcore's are bulk inserts), and memory of "
        "separate service processes (Nova's harness is one process; only that one process is compared, with "
        "cloudcore's in-process bench).",
        "Differences in set-up that remain: Nova's functional databases are in-memory SQLite (cloudcore's are "
        "SQLite files); Nova's fake services (Glance, Neutron, Cinder) are in-memory stubs while cloudcore's are its "
        "real apps; Nova's cross-cell server has no port (cloudcore's has one on demo-net); Nova's builds run in a "
        "worker thread after the POST returns, so its boot time is from the POST until the instance is active in its "
        "cell database (polled every 10 ms; the polls' own SQL not counted, the statements of Nova's threads "
        "meanwhile are), while cloudcore's build runs inside the POST. Nova's SQL per list request is the fewest "
        "over the repeats, because its background threads write now and then during a request.",
    ]
    if meta.get("errors"):
        notes.append(f"Part of Nova's harness failed: {'; '.join(meta['errors'])[:500]}")
    return {
        "run": True, "nova_version": meta.get("nova_version"), "sqlalchemy": meta.get("sqlalchemy"),
        "install_s": round(setup.get("install_s", 0.0), 1), "venv_reused": bool(setup.get("reused")),
        "run_s": round(run_s, 1), "sizes": sizes, "raw": {k: v for k, v in nova.items() if k != "meta"},
        "comparisons": rows, "ratios": ratios, "notes": notes,
        "method": f"Nova {meta.get('nova_version')} from its PyPI wheel in a separate venv ({venv}, "
                  f"{how}), "
                  f"scenarios run by bench/nova_harness.py inside Nova's own functional-test harness "
                  f"(nova.tests.functional: every service in one process, nova.virt.fake drivers, placement via "
                  f"wsgi-intercept, RPC casts as calls) in {run_s:.0f} s: {sizes['boots']} sequential boots on "
                  f"{sizes['hosts']} hosts in 2 cells, GET /servers/detail with them (and with "
                  f"{sizes['list_rows']} servers, the rest row "
                  f"copies, at 2.1 and latest), and {sizes['rounds']} "
                  f"cross-cell resize(s) of each kind with TestMultiCellMigrate's set-up. SQL statements counted "
                  f"on every SQLAlchemy engine.",
    }
