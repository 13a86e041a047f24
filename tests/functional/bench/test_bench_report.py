"""``make bench`` keeps producing its report: ``python -m bench --quick cross_cell_resize`` in a
subprocess (its own temporary databases, as ``make bench`` runs it) writes report.md and
report.json with the expected keys and sane figures; the writer also says plainly what it did
not measure."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench import report

ROOT = Path(__file__).resolve().parents[3]


def test_quick_cross_cell_run_writes_one_report(tmp_path: Path) -> None:
    # given a clean environment (no test settings leaking into the bench's own Django set-up)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLOUDCORE_", "DJANGO_"))}
    # when the bench runs the cross-cell scenario in quick mode, without the Nova side
    proc = subprocess.run([sys.executable, "-m", "bench", "--quick", "--nova", "skip", "--out", str(tmp_path),
                           "cross_cell_resize"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    # then one Markdown and one JSON report exist
    md, data = (tmp_path / "report.md").read_text(), json.loads((tmp_path / "report.json").read_text())
    assert set(data) >= {"meta", "figures", "ratios", "results", "rss", "nova", "not_measured"}
    assert data["meta"]["quick"] is True and data["meta"]["git_commit"]
    figures = {name: fig["value"] for name, fig in data["figures"].items()}
    for key in ("confirm", "revert"):
        assert 0 < figures[f"cross_cell_{key}_control_ms"] < 60_000
        assert 20 < figures[f"cross_cell_{key}_sql"] < 5_000
        move = data["results"]["cross_cell_resize"][key]
        assert move["resize_wall_ms"] >= move["resize_control_ms"] > 0
        assert move["move_sql"] == move["resize_sql"] + move["finish_sql"]
        assert {"default", "cell1", "cell2"} <= set(move["sql_by_db"]["resize"])
    assert 20 < figures["bench_process_peak_rss_mb"] < 4096
    # and it says what it did not measure, the Nova comparison included, rather than inventing numbers
    assert data["nova"] == {"run": False, "reason": "skipped with --nova skip"}
    assert any("Nova side by side" in item for item in data["not_measured"])
    assert "## 4. Cross-cell resize (cell1 -> cell2)" in md and "The Nova comparison was not run" in md
    assert "cross_cell_confirm_control_ms" in proc.stdout  # figures printed too


def test_report_of_a_failed_scenario_has_no_made_up_figures(tmp_path: Path) -> None:
    data = report.build(results={"list_scale": {"error": "RuntimeError('boom')"}}, durations={"list_scale": 1.0},
                        rss_after={"setup": 50_000}, nova={"run": False, "reason": "skipped"}, quick=True, total_s=1.0)
    md_path, json_path = report.write(data, tmp_path)
    assert not any(name.startswith("list_") for name in data["figures"])
    assert "**Failed:** `RuntimeError('boom')`" in md_path.read_text()
    assert json.loads(json_path.read_text())["figures"]["bench_process_peak_rss_mb"]["value"] > 0


def _live_pass(**figures: float) -> dict[str, object]:
    return {"database": "SQLite", "broker": "embedded Redis", "profiled": False, "clients": 20, "boots": 100,
            "boot_s": 100 / figures["servers_per_s"], "detail_servers": 100, "detail_rounds": 30,
            "detail_p95_ms": 70.0, "client_by_endpoint": {}, "load_before": [0.5, 0.4, 0.3],
            "load_after": [1.5, 0.6, 0.4], **figures}


def _live_result(external: dict[str, object]) -> dict[str, object]:
    from bench.scenarios import live_load

    profiled = {**_live_pass(servers_per_s=8.0, post_p50_ms=400.0, post_p95_ms=900.0, detail_p50_ms=80.0),
                "profiled": True, "boots": 20}
    return {**_live_pass(servers_per_s=21.5, post_p50_ms=150.0, post_p95_ms=280.0, detail_p50_ms=40.0),
            "targets": live_load.TARGETS, "findings": ["Fixed: something measured."], "method": "run_cloud",
            "pg_round_trips": [{"what": "`POST /servers` (web)", "before": 12, "after": 7, "which": "reads; rows"}],
            "profiled_pass": profiled, "external": external,
            "timeline": {"steps": {"POST /servers (client: sent to answered)": {"p50_ms": 150.0, "p95_ms": 280.0}},
                         "reached": {"post_sent": {"first_s": 0.0, "last_s": 2.0}},
                         "boots_per_host": {"abc": 60, "def": 40}},
            "process_cpu_s": {"web (gunicorn)": 3.0, "conductor (Celery)": 2.5},
            "profile": {"requests": 10, "app_s": 1.0, "by_endpoint": {}, "rows": [
                {"what": "token validation (X-Auth-Token)", "measured_as": "cumulative time", "seconds": 0.2,
                 "calls": 10}], "top": []}}


def test_live_load_section_shows_each_figure_against_its_target_and_which_pass_it_comes_from(tmp_path: Path) -> None:
    # given a live_load result without the PostgreSQL pass
    live = _live_result({"not_run": "CLOUDCORE_E2E_DATABASE_URL / CLOUDCORE_E2E_BROKER_URL not set"})
    data = report.build(results={"live_load": live}, durations={"live_load": 1.0}, rss_after={"setup": 50_000},
                        nova={"run": False, "reason": "skipped"}, quick=False, total_s=1.0)
    md = report.write(data, tmp_path)[0].read_text()
    section = md[md.index("## 5b."):md.index("## 6.")]
    # then the figures are the unprofiled pass's, each with its target and whether it is met
    assert "pass **without the profiler** (SQLite + embedded Redis, no profiler; load average (1 min) 0.50" in section
    assert "| 100 boots to ACTIVE (4.7 s) | 21.5 | servers/s | ≥ 20 | met |" in section
    assert "| `POST /servers` p50 | 150 | ms | ≤ 100 | **not met** |" in section
    assert "| `POST /servers` p95 | 280 | ms | ≤ 300 | met |" in section
    assert "| `GET /servers/detail` (100 servers) p50 | 40 | ms | ≤ 60 | met |" in section
    # and the profiled pass is named as the source of the "where the time goes" table only
    assert "Profiled pass (quick size, only for the tables below; SQLite + embedded Redis, web under cProfile" \
        in section
    assert "| token validation (X-Auth-Token) | 0.20 | 20% | 10 |" in section
    assert "web (gunicorn) 3.00, conductor (Celery) 2.50" in section
    # and the PostgreSQL variant says it was not run, in the section and in "not measured"
    assert "Not run (CLOUDCORE_E2E_DATABASE_URL / CLOUDCORE_E2E_BROKER_URL not set)." in section
    assert any("PostgreSQL + Redis" in item for item in data["not_measured"])
    assert "live_pg_servers_per_s" not in data["figures"]


def test_live_load_section_fills_the_postgresql_row_when_that_pass_ran(tmp_path: Path) -> None:
    pg_profiled = {**_live_pass(servers_per_s=6.0, post_p50_ms=500.0, post_p95_ms=900.0, detail_p50_ms=90.0),
                   "database": "PostgreSQL", "broker": "external Redis", "profiled": True, "boots": 20}
    external = {**_live_pass(servers_per_s=12.5, post_p50_ms=90.0, post_p95_ms=350.0, detail_p50_ms=55.0),
                "database": "PostgreSQL", "broker": "external Redis", "profiled_pass": pg_profiled,
                "profile": {"requests": 40, "app_s": 4.0, "by_endpoint": {}, "top": [], "rows": [
                    {"what": "PostgreSQL statements", "measured_as": "own time", "seconds": 1.0, "calls": 400}]}}
    data = report.build(results={"live_load": _live_result(external)}, durations={"live_load": 1.0},
                        rss_after={"setup": 50_000}, nova={"run": False, "reason": "skipped"}, quick=False, total_s=1.0)
    md = report.write(data, tmp_path)[0].read_text()
    assert "PostgreSQL + external Redis, no profiler; load average (1 min) 0.50 before, 1.50 after." in md
    assert "| 100 boots to ACTIVE (8.0 s) | 12.5 | servers/s | ≥ 20 | **not met** |" in md
    assert "| `POST /servers` p95 | 350 | ms | ≤ 300 | **not met** |" in md
    assert data["figures"]["live_pg_servers_per_s"]["value"] == 12.5
    # and its own "where the time goes" table, from its profiled pass
    assert ("Where the time goes in the web process on PostgreSQL (profiled pass, quick size; PostgreSQL + "
            "external Redis, web under cProfile; load average (1 min) 0.50 before, 1.50 after: 40 requests") in md
    assert "| PostgreSQL statements | 1.00 | 25% | 400 | own time |" in md
    # and the round trips per request on PostgreSQL, before and now
    assert "Where the time goes on PostgreSQL: round trips to the server" in md
    assert "| `POST /servers` (web) | 12 | 7 | reads; rows |" in md


def test_process_cpu_follows_the_process_tree() -> None:
    from bench.scenarios.live_load import _process_name, process_cpu

    # given a child process of this one that burns some CPU
    child = subprocess.Popen([sys.executable, "-c", "import time\nt = time.process_time()\n"
                              "while time.process_time() - t < 0.3: pass\ntime.sleep(5)"])
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and process_cpu(child.pid).get("other", 0.0) < 0.25:
            time.sleep(0.1)
        # then the child's CPU time is counted from its parent's pid too
        assert process_cpu(os.getpid())["other"] >= 0.25
    finally:
        child.kill()
        child.wait()
    assert _process_name("python -m gunicorn cloudcore.wsgi:application --bind x") == "web (gunicorn)"
    assert _process_name("python manage.py compute --host compute2 --cell cell1") == "compute (compute2)"
    assert _process_name("python -m celery -A cloudcore worker -Q conductor -n conductor@%h") == "conductor (Celery)"


def test_live_load_takes_each_figure_as_the_median_of_its_passes_and_keeps_the_median_posts_pass() -> None:
    from bench.scenarios.live_load import median_pass

    # given three passes of one backend, the middle one by POST p50 with its own timeline
    runs = [{**_live_pass(servers_per_s=s, post_p50_ms=p50, post_p95_ms=p95, detail_p50_ms=d), "idle_before": 0.95,
             "timeline": {"which": p50}}
            for s, p50, p95, d in ((30.0, 280.0, 400.0, 20.0), (20.0, 70.0, 250.0, 40.0), (25.0, 90.0, 600.0, 30.0))]
    result = median_pass(runs)
    # then each figure is the median over the passes, whichever pass gave it
    assert (result["servers_per_s"], result["post_p50_ms"], result["post_p95_ms"], result["detail_p50_ms"]) \
        == (25.0, 90.0, 400.0, 30.0)
    assert result["boot_s"] == 4.0
    # and the rest comes from the pass whose POST p50 is the median one
    assert result["timeline"] == {"which": 90.0}
    # and every pass's figures are kept, in the order they ran
    assert [one["post_p50_ms"] for one in result["passes"]] == [280.0, 70.0, 90.0]


def test_live_load_section_shows_the_median_and_every_pass_when_there_were_several(tmp_path: Path) -> None:
    from bench.scenarios.live_load import median_pass

    # given three passes on SQLite
    runs = [{**_live_pass(servers_per_s=s, post_p50_ms=p50, post_p95_ms=280.0, detail_p50_ms=40.0),
             "idle_before": idle} for s, p50, idle in ((30.0, 280.0, 0.97), (20.0, 70.0, 0.93), (25.0, 90.0, 0.99))]
    live = {**_live_result({"not_run": "not set"}), **median_pass(runs)}
    data = report.build(results={"live_load": live}, durations={"live_load": 1.0}, rss_after={"setup": 50_000},
                        nova={"run": False, "reason": "skipped"}, quick=False, total_s=1.0)
    md = report.write(data, tmp_path)[0].read_text()
    # then the table gives the median against the target, then each pass's figure
    assert "| figure | median of passes | unit | target |  | each pass |" in md
    assert "| `POST /servers` p50 | 90 | ms | ≤ 100 | met | 280, 70, 90 |" in md
    assert "| 100 boots to ACTIVE (4.0 s) | 25.0 | servers/s | ≥ 20 | met | 30.0, 20.0, 25.0 |" in md
    # and how idle the machine was before each pass
    assert "Figures from the passes **without the profiler** (SQLite + embedded Redis, no profiler, 3 passes; " \
           "CPUs idle before each: 97%, 93%, 99%; load average (1 min) before / after each: 0.50 / 1.50" in md
    assert data["figures"]["live_post_servers_p50_ms"]["value"] == 90.0


def test_settle_waits_for_idle_cpus_and_gives_up_after_its_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    from bench.scenarios import live_load

    # given CPUs that are busy for two samples, then idle
    samples = iter([0.2, 0.5, 0.95, 0.1])
    monkeypatch.setattr(live_load, "cpu_idle", lambda seconds: next(samples))
    # then settle returns at the first idle sample
    assert live_load.settle() == 0.95
    # and with CPUs that stay busy, it returns once its bound has passed
    monkeypatch.setattr(live_load, "cpu_idle", lambda seconds: 0.3)
    monkeypatch.setattr(live_load, "SETTLE_MAX_S", 0.0)
    assert live_load.settle() == 0.3


def test_cpu_idle_reads_the_machines_cpu_time() -> None:
    from bench.scenarios.live_load import cpu_idle

    # given a process of our own that keeps one CPU busy
    child = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        busy = cpu_idle(0.5)
    finally:
        child.kill()
    # then at most the other CPUs were idle
    cpus = os.cpu_count() or 1
    assert 0.0 <= busy <= (cpus - 1) / cpus + 0.05
