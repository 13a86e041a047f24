"""``make bench`` keeps producing its report: ``python -m bench --quick cross_cell_resize`` in a
subprocess (its own temporary databases, as ``make bench`` runs it) writes report.md and
report.json with the expected keys and sane figures; the writer also says plainly what it did
not measure."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

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
