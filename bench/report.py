"""The benchmark report: one JSON document and its Markdown rendering, written side by side
(``report.json`` and ``report.md``) from the results of one run.

JSON keys: ``meta`` (when, where, what code), ``figures`` (name -> {value, unit, what}: the
headline numbers, always positive when measured), ``ratios`` (name -> {value, what}), ``results``
(each scenario's full result, or ``{"error": ...}``), ``rss`` (peak RSS), ``nova`` (the side by side
or why it was not run), ``not_measured`` (what the report does not cover, in words)."""
from __future__ import annotations

import datetime
import json
import os
import platform
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def _meta(*, quick: bool, total_s: float, durations: dict[str, float],
          load_at_start: tuple[float, ...] | None) -> dict[str, Any]:
    cpu_model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "generated_at": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "git_commit": _git("rev-parse", "HEAD"), "git_dirty": bool(_git("status", "--porcelain", "--", ".")),
        "python": sys.version.split()[0], "platform": platform.platform(), "cpus": os.cpu_count(),
        "cpu_model": cpu_model, "quick": quick, "databases": "SQLite files (API DB + cell0/cell1/cell2)",
        "total_s": round(total_s, 1), "scenario_s": {k: round(v, 1) for k, v in durations.items()},
        "load_average_at_start": [round(x, 2) for x in load_at_start] if load_at_start else None,
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
    }


def _figure(figures: dict[str, Any], name: str, value: Any, unit: str, what: str) -> None:
    if isinstance(value, int | float) and value > 0:
        figures[name] = {"value": round(float(value), 3), "unit": unit, "what": what}


def _ratio(ratios: dict[str, Any], name: str, num: Any, den: Any, what: str) -> None:
    if isinstance(num, int | float) and isinstance(den, int | float) and num > 0 and den > 0:
        ratios[name] = {"value": round(num / den, 2), "what": what}


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def _ok(results: dict[str, Any], name: str) -> dict[str, Any] | None:
    result = results.get(name)
    return result if result and "error" not in result else None


def build(*, results: dict[str, Any], durations: dict[str, float], rss_after: dict[str, int], nova: dict[str, Any],
          quick: bool, total_s: float, load_at_start: tuple[float, ...] | None = None) -> dict[str, Any]:
    """The report document (see the module doc)."""
    figures: dict[str, Any] = {}
    ratios: dict[str, Any] = {}
    not_measured: list[str] = []

    if boot := _ok(results, "boot_and_list"):
        _figure(figures, "boot_servers_per_s", boot["boot_per_s"], "servers/s",
                f"servers booted to ACTIVE per second, {boot['boots']} sequential boots on {boot['hosts']} hosts "
                f"in 2 cells (in-process, eager tasks)")
        _figure(figures, "boot_sql_per_server", boot["sql_per_boot"], "statements", "SQL statements per boot (median)")
    else:
        not_measured.append("boot throughput (boot_and_list not run or failed)")

    if listing := _ok(results, "list_scale"):
        for row in listing["rows"]:
            n = row["servers"]
            _figure(figures, f"list_detail_ms_{n}", row["detail_ms"], "ms",
                    f"GET /servers/detail (default page, {row['detail_returned']} rows returned) with {n} servers")
            _figure(figures, f"list_detail_sql_{n}", row["detail_sql"], "statements",
                    f"SQL statements per GET /servers/detail with {n} servers")
            _figure(figures, f"list_page{listing['small_page']}_ms_{n}", row["page_ms"], "ms",
                    f"GET /servers/detail?limit={listing['small_page']} with {n} servers")
            for version, m in row.get("by_version", {}).items():
                key = version.replace(".", "_")
                _figure(figures, f"list_detail_ms_{n}_at_{key}", m["ms"], "ms",
                        f"GET /servers/detail at microversion {version} ({m['returned']} rows) with {n} servers")
        if any(row["inserted"] for row in listing["rows"]):
            not_measured.append(f"server lists of more than {listing['booted']} booted servers: at the larger "
                                f"sizes every server beyond the first {listing['booted']} is a bulk row insert into "
                                f"the cell databases, not a boot")
        first, last = listing["rows"][0], listing["rows"][-1]
        # compare pages of the same length: the default page is capped (1,000 rows)
        same = next(r for r in listing["rows"] if r["detail_returned"] == last["detail_returned"])
        if same is last:
            same = first
        _ratio(ratios, "list_detail_last_vs_same_page", last["detail_ms"], same["detail_ms"],
               f"GET /servers/detail latency at {last['servers']} vs {same['servers']} servers "
               f"({last['detail_returned']} vs {same['detail_returned']} rows returned)")
        _ratio(ratios, "list_page_last_vs_first", last["page_ms"], first["page_ms"],
               f"GET /servers/detail?limit={listing['small_page']} at {last['servers']} vs {first['servers']} servers")
    else:
        not_measured.append("server list latency (list_scale not run or failed)")

    if sched := _ok(results, "scheduler"):
        for row in sched["rows"]:
            n = row["providers"]
            _figure(figures, f"scheduler_ms_{n}", row["median_ms"], "ms",
                    f"select_destinations per request (median) with {n} hosts")
            _figure(figures, f"scheduler_sql_{n}", row["queries_max"], "statements",
                    f"SQL statements per select_destinations with {n} hosts (max)")
        first, last = sched["rows"][0], sched["rows"][-1]
        _ratio(ratios, "scheduler_last_vs_first", last["median_ms"], first["median_ms"],
               f"select_destinations time at {last['providers']} vs {first['providers']} hosts")
    else:
        not_measured.append("scheduler time (scheduler not run or failed)")

    if trace := _ok(results, "scheduling_trace"):
        for row in trace["rows"]:
            slug = _slug(row["case"])
            _figure(figures, f"scheduling_trace_ms_{slug}_{row['hosts']}", row["trace_ms"], "ms",
                    f"scheduling trace cost per request ({row['case']}) with {row['hosts']} hosts")
            _figure(figures, f"scheduling_trace_share_{slug}_{row['hosts']}", row["share_pct"], "%",
                    f"scheduling trace share of select_destinations ({row['case']}) with {row['hosts']} hosts")
    else:
        not_measured.append("scheduling trace cost (scheduling_trace not run or failed)")

    if move := _ok(results, "cross_cell_resize"):
        for key, label in (("confirm", "resize + confirm"), ("revert", "resize + revert")):
            r = move[key]
            _figure(figures, f"cross_cell_{key}_control_ms", r["move_control_ms"], "ms",
                    f"cross-cell {label} cell1 -> cell2, control-plane time (image copy excluded), median")
            _figure(figures, f"cross_cell_{key}_sql", r["move_sql"], "statements",
                    f"SQL statements per cross-cell {label}, all databases, median")
    else:
        not_measured.append("cross-cell resize (cross_cell_resize not run or failed)")

    bench_peak = max(rss_after.values()) if rss_after else 0
    _figure(figures, "bench_process_peak_rss_mb", bench_peak / 1024, "MiB",
            "peak RSS of the in-process bench (getrusage ru_maxrss), all scenarios")
    processes = _ok(results, "processes")
    if processes:
        for proc in processes["processes"]:
            _figure(figures, f"rss_{_slug(proc['name'])}_mb", proc["vmhwm_kb"] / 1024, "MiB",
                    f"peak RSS (VmHWM) of {proc['name']} in manage.py run_cloud")
        _figure(figures, "run_cloud_total_peak_rss_mb", processes["total_vmhwm_kb"] / 1024, "MiB",
                "sum of every run_cloud process's peak RSS")
    else:
        not_measured.append("peak RSS of the real processes (processes not run or failed): only the in-process "
                            "bench's own peak RSS is reported")

    if live := _ok(results, "live_load"):
        _figure(figures, "live_servers_per_s", live["servers_per_s"], "servers/s",
                f"{live['boots']} boots to ACTIVE by {live['clients']} HTTP clients through manage.py run_cloud")
        _figure(figures, "live_post_servers_p50_ms", live["post_p50_ms"], "ms", "POST /servers p50, real processes")
        _figure(figures, "live_post_servers_p95_ms", live["post_p95_ms"], "ms", "POST /servers p95, real processes")
        _figure(figures, "live_servers_detail_p50_ms", live["detail_p50_ms"], "ms",
                f"GET /servers/detail of {live['detail_servers']} servers p50, real processes")
        if "servers_per_s" in (external := live.get("external") or {}):
            _figure(figures, "live_pg_servers_per_s", external["servers_per_s"], "servers/s",
                    f"as live_servers_per_s on {external['database']} + {external['broker']}")
            _figure(figures, "live_pg_post_servers_p50_ms", external["post_p50_ms"], "ms",
                    f"POST /servers p50 on {external['database']} + {external['broker']}")
            _figure(figures, "live_pg_post_servers_p95_ms", external["post_p95_ms"], "ms",
                    f"POST /servers p95 on {external['database']} + {external['broker']}")
            _figure(figures, "live_pg_servers_detail_p50_ms", external["detail_p50_ms"], "ms",
                    f"GET /servers/detail p50 on {external['database']} + {external['broker']}")
        else:
            not_measured.append("concurrent clients on PostgreSQL + Redis (CLOUDCORE_E2E_DATABASE_URL / "
                                "CLOUDCORE_E2E_BROKER_URL not set)")
    else:
        not_measured.append("concurrent clients against the real processes (live_load not run or failed)")

    for key, item in (nova.get("ratios") or {}).items():
        ratios[f"nova_{key}"] = item
    if not nova.get("run"):
        not_measured.append(f"Nova side by side: {nova.get('reason', 'not run')}")
    return {
        "meta": _meta(quick=quick, total_s=total_s, durations=durations, load_at_start=load_at_start),
        "figures": figures, "ratios": ratios, "results": results,
        "rss": {"bench_process_peak_kb": bench_peak, "bench_peak_kb_after": rss_after,
                "processes": processes["processes"] if processes else None},
        "nova": nova, "not_measured": not_measured,
    }


def write(data: dict[str, Any], out_dir: Path) -> tuple[Path, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path, md_path = out_dir / "report.json", out_dir / "report.md"
    json_path.write_text(json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")
    md_path.write_text(render_markdown(data))
    return md_path, json_path


def summary_text(data: dict[str, Any]) -> str:
    lines = ["== figures"]
    for name, fig in data["figures"].items():
        lines.append(f"   {name:<40} {fig['value']:>12,.2f} {fig['unit']}")
    if data["ratios"]:
        lines.append("== ratios")
        for ratio in data["ratios"].values():
            lines.append(f"   {ratio['value']:>8.2f}x  {ratio['what']}")
    if data["not_measured"]:
        lines.append("== not measured")
        lines += [f"   - {item}" for item in data["not_measured"]]
    return "\n".join(lines)


# -- Markdown ----------------------------------------------------------------------------------

def _table(headers: list[str], rows: list[list[Any]]) -> list[str]:
    def cell(v: Any) -> str:
        if isinstance(v, float):
            return f"{v:,.1f}" if abs(v) >= 10 else f"{v:,.2f}"
        return str(v)

    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---:" if i else "---" for i in range(len(headers))) + "|"]
    out += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return out


def _failed(results: dict[str, Any], name: str) -> list[str]:
    result = results.get(name)
    if result is None:
        return ["Not run in this report (scenario not selected)."]
    return [f"**Failed:** `{result['error']}`"]


def _load(values: list[float] | None) -> str:
    return "(" + ", ".join(f"{v:.2f}" for v in values) + ")" if values else "(unknown)"


SCHEDULER_PROFILE = (
    "Profile (cProfile and timers, 10,000 hosts) before the scheduler kept copies of placement and of the "
    "compute nodes (commit d46301a): of ~180 ms per request, placement's allocation-candidates SQL took 92 ms "
    "(a correlated usage sum per inventory row of every provider, then summaries and traits with IN lists of "
    "1,000 ids), reading the 1,000 candidates' node and service rows from the cells 43 ms (IN lists of 1,000 "
    "uuids, datetime conversion of every service field), zones and aggregate metadata (two IN lists of 1,000 "
    "host names) plus host states 34 ms, weighers 6, claim 7, filters 5. Now placement is an in-memory copy "
    "refreshed by change stamps (only changed providers are re-read), nodes are copied per cell behind a "
    "one-statement fingerprint, service state is one query for the services with a problem, and big copies "
    "are frozen out of the garbage collector (full collections walking them had cost up to a third of a "
    "request).")


def render_markdown(data: dict[str, Any]) -> str:
    meta, results, figures = data["meta"], data["results"], data["figures"]
    md: list[str] = [
        "# cloudcore benchmark report", "",
        f"Generated {meta['generated_at']} from commit `{meta['git_commit'][:12] or 'unknown'}`"
        f"{' (uncommitted changes in the tree)' if meta['git_dirty'] else ''}; "
        f"{'**quick run (small sizes)**' if meta['quick'] else 'full run'}, {meta['total_s']} s in all.",
        f"Machine: {meta['cpus']} CPU(s) {meta['cpu_model']}, {meta['platform']}, Python {meta['python']}; "
        f"databases: {meta['databases']}. Every figure below comes from this one run.",
        f"Load average (1/5/15 min) at the start / end of the run: {_load(meta['load_average_at_start'])} / "
        f"{_load(meta['load_average_at_end'])} on {meta['cpus']} CPU(s) (the bench itself keeps about one busy; "
        f"more means other work shared the machine, and wall times are then noisy; SQL statement counts are not).",
        "",
        "## Headline figures", "",
    ]
    md += _table(["figure", "value", "unit", "what"],
                 [[f"`{k}`", v["value"], v["unit"], v["what"]] for k, v in figures.items()])
    if data["ratios"]:
        md += ["", "Ratios:", ""]
        md += _table(["ratio", "value", "what"], [[f"`{k}`", f"{v['value']:.2f}x", v["what"]]
                                                  for k, v in data["ratios"].items()])

    md += ["", "## 1. Boot throughput", ""]
    if boot := _ok(results, "boot_and_list"):
        md += [f"{boot['method']}. {boot['boots']} servers on {boot['hosts']} hosts in 2 cells: "
               f"**{boot['boot_per_s']:.1f} servers/s** to ACTIVE (median {boot['boot_ms_median']:.1f} ms and "
               f"{boot['sql_per_boot']:.0f} SQL statements per boot).", ""]
        md += _table(["servers", "boots/s", "SQL/boot", f"detail page of {boot['page']} ms", "SQL/page"],
                     [[r["servers"], r["boot_per_s"], r["boot_q"], r["page_ms"], r["page_q"]] for r in boot["rows"]])
        if steps := boot.get("sql_per_boot_by_step"):
            md += ["", "Where the SQL of one boot goes (statements by the step issuing them; \"other\" is the "
                   "bench's own flavor lookup):", ""]
            md += _table(["step", "statements"], [[step, n] for step, n in steps.items()])
    else:
        md += _failed(results, "boot_and_list")

    md += ["", "## 2. `GET /servers/detail` at scale (2 cells)", ""]
    if listing := _ok(results, "list_scale"):
        md += [f"{listing['method']}. **Only the first {listing['booted']} servers were booted; every other row "
               f"is a bulk insert into the cell databases.** Median of {listing['repeats']} requests; SQL "
               f"statements counted with `CaptureQueriesContext` on every connection.", ""]
        md += _table(["servers", "cell1 / cell2", "booted / inserted", "detail ms (default page)", "rows returned",
                      "SQL/request", f"limit={listing['small_page']} ms", "SQL/request"],
                     [[r["servers"], f"{r['per_cell']['cell1']} / {r['per_cell']['cell2']}",
                       f"{r['booted']} / {r['inserted']}", r["detail_ms"], r["detail_returned"], r["detail_sql"],
                       r["page_ms"], r["page_sql"]] for r in listing["rows"]])
        versions = listing.get("versions") or []
        if versions:
            md += ["", "The full default page again at the first and the newest microversion (target: 1,000 rows "
                       "in at most 50 ms):", ""]
            md += _table(["servers", *(f"{h} @{v}" for v in versions for h in ("ms", "SQL"))],
                         [[r["servers"], *(r["by_version"][v][k] for v in versions for k in ("ms", "sql"))]
                          for r in listing["rows"]])
        if listing.get("breakdown"):
            md += ["", f"Where the time of one full page goes ({listing['breakdown_at']} servers, microversion "
                       f"latest, median wall ms of each step, timed by wrappers around them; indented steps are "
                       f"inside `render`):", ""]
            md += _table(["step", "ms"], [[label.replace("  ", "&nbsp;&nbsp;"), ms]
                                         for label, ms in listing["breakdown"].items()])
        md += ["", "The default page is capped at the API's maximum page size (1,000, Nova's `max_limit`), so at "
                   "10,000 servers one request returns 1,000 of them and a `next` link."]
    else:
        md += _failed(results, "list_scale")

    md += ["", "## 3. Scheduler", ""]
    if sched := _ok(results, "scheduler"):
        md += [f"{sched['method']}. {sched['requests']} single-instance requests per size.", ""]
        md += _table(["hosts", "select ms (median)", "p95 ms", "allocation candidates ms", "SQL/request",
                      f"{sched['multi']}-instance request ms", "SQL"],
                     [[r["providers"], r["median_ms"], r["p95_ms"], r["candidates_ms"], r["queries_max"],
                       r["multi_ms"], r["multi_queries"]] for r in sched["rows"]])
        if sched.get("phases"):
            md += ["", f"Where the time goes at {sched['phases_hosts']} hosts (mean ms per single-instance request, "
                   "each step timed in place; \"allocation candidates\" above is placement's SQL query alone, "
                   "which the scheduler no longer runs):", ""]
            md += _table(["step", "ms"], [[p["step"], p["ms"]] for p in sched["phases"]])
        md += ["", SCHEDULER_PROFILE]
    else:
        md += _failed(results, "scheduler")
    if trace := _ok(results, "scheduling_trace"):
        md += ["", "### The scheduling trace's cost (issue 22)", "",
               f"{trace['method']}. {trace['requests']} requests per case.", ""]
        md += _table(["hosts", "case", "request ms", "trace ms", "share %"],
                     [[r["hosts"], r["case"], r["total_ms"], r["trace_ms"], r["share_pct"]] for r in trace["rows"]])

    md += ["", "## 4. Cross-cell resize (cell1 -> cell2)", ""]
    if move := _ok(results, "cross_cell_resize"):
        md += [f"{move['method']}. Policy rule `compute:servers:resize:cross_cell` granted to the project. "
               f"{move['rounds']} move(s) of each kind, medians. *Control* = wall time less the image copy.", ""]
        rows = []
        for key, label in (("confirm", "resize + confirm"), ("revert", "resize + revert")):
            r = move[key]
            rows.append([label, r["resize_wall_ms"], r["resize_image_copy_ms"], r["finish_wall_ms"],
                         r["move_control_ms"], r["resize_sql"], r["finish_sql"], r["move_sql"]])
        md += _table(["move", "resize ms", "of which image copy ms", "confirm/revert ms", "control-plane ms per move",
                      "SQL resize", "SQL confirm/revert", "SQL per move"], rows)
        by_db = move["confirm"]["sql_by_db"]
        md += ["", "SQL statements by database (last resize + confirm): "
               + "; ".join(f"{part}: " + ", ".join(f"{db} {n}" for db, n in sorted(counts.items()))
                           for part, counts in by_db.items())]
    else:
        md += _failed(results, "cross_cell_resize")

    md += ["", "## 5. Memory (peak RSS)", ""]
    rss = data["rss"]
    md += [f"In-process bench (this Python process, `resource.getrusage(RUSAGE_SELF).ru_maxrss`): "
           f"**{rss['bench_process_peak_kb'] / 1024:.0f} MiB** peak. Peak after each scenario (it only grows): "
           + ", ".join(f"{k} {v / 1024:.0f} MiB" for k, v in rss["bench_peak_kb_after"].items()) + "."]
    if processes := _ok(results, "processes"):
        md += ["", f"{processes['method']}.", ""]
        md += _table(["process", "pid", "peak RSS (VmHWM) MiB", "RSS now (VmRSS) MiB"],
                     [[p["name"], p["pid"], p["vmhwm_kb"] / 1024, p["vmrss_kb"] / 1024]
                      for p in processes["processes"]])
        md += ["", f"All processes together: {processes['total_vmhwm_kb'] / 1024:.0f} MiB (sum of peaks). "
                   f"{processes['boots']} servers reached ACTIVE in {processes['boot_s']:.1f} s through the real "
                   f"processes (web + conductor + compute workers, polling `GET /servers/{{id}}`)."]
    else:
        result = results.get("processes")
        md += ["", "The real processes of `manage.py run_cloud` were **not measured** in this report"
               + (f": `{result['error']}`." if result else " (scenario not selected).")]

    md += ["", "## 5b. Real processes under concurrent clients", ""]
    if live := _ok(results, "live_load"):
        md += _live_load_section(live)
    else:
        md += _failed(results, "live_load") if "live_load" in results else ["Not run (scenario not selected)."]

    md += ["", "## 6. Nova side by side", ""]
    nova = data["nova"]
    if nova.get("run"):
        md += [nova["method"], ""]
        md += _table(["scenario", "cloudcore", "Nova", "Nova / cloudcore", "note"],
                     [[c["what"], f"{c['cloudcore']:.1f} {c['unit']}", f"{c['nova']:.1f} {c['unit']}",
                       f"{c['ratio']:.2f}x", c.get("note", "")] for c in nova["comparisons"]])
        for note in nova.get("notes", []):
            md += ["", note]
    else:
        md += [f"**The Nova comparison was not run.** {nova.get('reason', '')}"]
        for note in nova.get("notes", []):
            md += ["", note]

    md += ["", "## Not measured", ""]
    md += [f"- {item}" for item in data["not_measured"]] or ["- Nothing else (section 6 lists what was not "
                                                              "compared with Nova)."]
    md += ["", "Scenario wall times (s): " + ", ".join(f"{k} {v}" for k, v in meta["scenario_s"].items()), ""]
    return "\n".join(md)


def _met(value: float, target: tuple[float, str]) -> str:
    bound, kind = target
    ok = value >= bound if kind == "min" else value <= bound
    return "met" if ok else "**not met**"


def _live_figures(live: dict[str, Any], targets: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
    """The header and figure rows of one backend's passes: value (the median over the passes when
    there were several), target, met / not met, and each pass's figure."""
    passes = live.get("passes") or []
    header = ["figure", "median of passes" if len(passes) > 1 else "value", "unit", "target", ""]
    if len(passes) > 1:
        header.append("each pass")
    rows = []
    for key, label, unit in (
        ("servers_per_s", f"{live['boots']} boots to ACTIVE ({live['boot_s']:.1f} s)", "servers/s"),
        ("post_p50_ms", "`POST /servers` p50", "ms"), ("post_p95_ms", "`POST /servers` p95", "ms"),
        ("detail_p50_ms", f"`GET /servers/detail` ({live['detail_servers']} servers) p50", "ms"),
    ):
        def shown(value: float, unit: str = unit) -> str:
            return f"{value:.1f}" if unit == "servers/s" else f"{value:.0f}"

        target = targets.get(key)
        bound = f"{'≥' if target and target[1] == 'min' else '≤'} {target[0]:g}" if target else ""
        row = [label, shown(live[key]), unit, bound, _met(live[key], target) if target else ""]
        if len(passes) > 1:
            row.append(", ".join(shown(one[key]) for one in passes))
        rows.append(row)
    return header, rows


def _pass_line(live: dict[str, Any]) -> str:
    passes = live.get("passes") or []
    if len(passes) > 1:
        return (f"{live.get('database', 'SQLite')} + {live.get('broker', 'embedded Redis')}, no profiler, "
                f"{len(passes)} passes; CPUs idle before each: "
                f"{', '.join(format(one['idle_before'], '.0%') for one in passes)}; load average (1 min) "
                "before / after each: "
                + ", ".join(f"{one['load_before'][0]:.2f} / {one['load_after'][0]:.2f}" for one in passes))
    return (f"{live.get('database', 'SQLite')} + {live.get('broker', 'embedded Redis')}, "
            f"{'web under cProfile' if live.get('profiled') else 'no profiler'}; load average (1 min) "
            f"{live['load_before'][0]:.2f} before, {live['load_after'][0]:.2f} after")


def _profile_rows(profile: dict[str, Any]) -> list[str]:
    """The "where the time goes" table of a profiled pass."""
    return _table(["what", "seconds", "share of app time", "calls", "measured as"],
                  [[r["what"], f"{r['seconds']:.2f}", f"{100 * r['seconds'] / (profile['app_s'] or 1):.0f}%",
                    r["calls"], r["measured_as"]] for r in profile["rows"]])


def _live_load_section(live: dict[str, Any]) -> list[str]:
    """Figures against the issue's targets (from the pass without the profiler), the same on
    PostgreSQL + Redis when run, where each boot's time went across the processes, and the
    "where the time goes" table of the web process (from the profiled pass)."""
    targets = live.get("targets") or {}
    profile = live["profile"]
    profiled = live.get("profiled_pass") or {}
    md = [f"{live['method']}.", "",
          f"Figures from the {'passes' if len(live.get('passes') or []) > 1 else 'pass'} **without the profiler** "
          f"({_pass_line(live)}):", ""]
    md += _table(*_live_figures(live, targets))
    external = live.get("external") or {}
    md += ["", "The same on PostgreSQL + Redis (`CLOUDCORE_E2E_DATABASE_URL` / `CLOUDCORE_E2E_BROKER_URL`):", ""]
    if "servers_per_s" in external:
        md += [f"{_pass_line(external)}.", ""]
        md += _table(*_live_figures(external, targets))
        if external.get("process_cpu_s"):
            md += ["", f"CPU seconds per process while its {external['boots']} boots ran: " + ", ".join(
                f"{name} {seconds:.2f}" for name, seconds in external["process_cpu_s"].items() if seconds >= 0.01)
                + "."]
        if (pg_profile := external.get("profile")) and (pg_profiled := external.get("profiled_pass")):
            md += ["", f"Where the time goes in the web process on {external['database']} (profiled pass, quick "
                       f"size; {_pass_line(pg_profiled)}: {pg_profile['requests']} requests, "
                       f"{pg_profile['app_s']:.1f} s inside the application):", ""]
            md += _profile_rows(pg_profile)
    else:
        md += [f"Not run ({external.get('not_run', 'the variables were not set')})."]
    if trips := live.get("pg_round_trips"):
        md += ["", "Where the time goes on PostgreSQL: round trips to the server, each a wait for its backend and "
                   "then for a CPU and the GIL on a busy machine (counted in-process, deterministic: the "
                   "statements Django logs, `BEGIN` and `COMMIT` included, and the health check's `SELECT 1` of "
                   "each database used):", ""]
        md += _table(["per", "round trips before", "now", "which"],
                     [[t["what"], t["before"], t["after"], t["which"]] for t in trips])
    timeline = live.get("timeline")
    if timeline:
        md += ["", "Where each boot's wall time goes across the processes (pass without the profiler; from the "
                   "instance action of each `POST` and the client's clock):", ""]
        md += _table(["step", "p50 ms", "p95 ms"],
                     [[k, f"{v['p50_ms']:.0f}", f"{v['p95_ms']:.0f}"] for k, v in timeline["steps"].items()])
        reached = timeline.get("reached") or {}
        if reached:
            md += ["", "First / last boot at each point, seconds after the first `POST`: " + "; ".join(
                f"{k} {v['first_s']:.2f} / {v['last_s']:.2f}" for k, v in reached.items())
                + f". Boots per compute host: {', '.join(str(n) for n in timeline['boots_per_host'].values())}."]
    if live.get("process_cpu_s"):
        md += ["", f"CPU seconds per process while the {live['boots']} boots ran ({live['boot_s']:.1f} s wall on "
                   f"this machine's CPUs): " + ", ".join(
                       f"{name} {seconds:.2f}" for name, seconds in live["process_cpu_s"].items() if seconds >= 0.01)
               + "."]
    if profiled:
        md += ["", f"Profiled pass (quick size, only for the tables below; {_pass_line(profiled)}): "
                   f"{profiled['boots']} boots {profiled['servers_per_s']:.1f} servers/s, `POST /servers` p50 "
                   f"{profiled['post_p50_ms']:.0f} / p95 {profiled['post_p95_ms']:.0f} ms."]
        client_by_endpoint = profiled["client_by_endpoint"]
    else:
        client_by_endpoint = live["client_by_endpoint"]
    app = profile["by_endpoint"]
    md += ["", "Per endpoint (profiled pass): what the clients saw, and the time spent inside the web application "
               "(cProfile on, which slows Python code); the difference is time waiting for a gunicorn thread, "
               "the GIL and the CPU. Requests from the compute workers (images, ports, placement) appear "
               "only on the application side.", ""]
    rows = []
    for key in sorted(set(client_by_endpoint) | set(app)):
        client, inside = client_by_endpoint.get(key, {}), app.get(key, {})
        rows.append([f"`{key}`", client.get("n", ""), f"{client['p50_ms']:.0f}" if client else "",
                     f"{client['p95_ms']:.0f}" if client else "", inside.get("n", ""),
                     f"{inside['p50_ms']:.0f}" if inside else "", f"{inside['total_s']:.1f}" if inside else ""])
    md += _table(["endpoint", "client n", "client p50 ms", "client p95 ms", "in app n", "in app p50 ms",
                  "in app total s"], rows)
    md += ["", f"Where the time goes in the web process (profiled pass: {profile['requests']} requests, "
               f"{profile['app_s']:.1f} s inside the application summed over its threads; wall-clock, so "
               f"waiting for the GIL counts where it happens; rows overlap, e.g. token validation includes "
               f"its SQL):", ""]
    md += _profile_rows(profile)
    md += ["", "Top functions by own time: " + "; ".join(
        f"`{t['function']}` {t['own_s']:.2f} s ({t['calls']} calls)" for t in profile["top"][:8]) + "."]
    if live.get("findings"):
        md += ["", "Findings and fixes:", ""] + [f"- {f}" for f in live["findings"]]
    return md
