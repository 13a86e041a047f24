"""run_cloud's supervisor on real child processes: restart with backoff, the reason recorded with
the log's last lines, a process that keeps dying left stopped, Ctrl-C stopping everything."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from cloudcore.core import supervise
from cloudcore.core.supervise import Child, Supervisor


@pytest.fixture
def sup(settings, tmp_path: Path) -> Supervisor:
    settings.VAR_DIR = tmp_path
    said: list[str] = []
    s = Supervisor(cwd=tmp_path, say=said.append, warn=said.append)
    s.said = said  # type: ignore[attr-defined]
    return s


def _wait_dead(child: Child, timeout: float = 10.0) -> None:
    assert child.popen is not None
    child.popen.wait(timeout=timeout)


def test_a_child_that_exits_is_restarted_after_a_backoff_with_its_reason(sup: Supervisor) -> None:
    # given a child that prints a line and exits 3
    child = sup.add("flaky", [sys.executable, "-c", "print('boom: lost the broker'); raise SystemExit(3)"], {})
    sup.spawn(child)
    first_pid = child.popen.pid  # type: ignore[union-attr]
    _wait_dead(child)
    # when the supervisor looks
    sup.check(now=100.0)
    # then it is due for a restart in 1 s, with the exit status and the log's last line recorded
    assert child.state == "restarting" and child.restart_at == 101.0
    event = child.events[-1]
    assert event["reason"] == "exited with 3" and "restarting in 1 s" in event["action"]
    assert "boom: lost the broker" in event["log_tail"]
    status = json.loads(supervise.status_path().read_text())
    assert status["processes"][0]["state"] == "restarting"
    assert [p["name"] for p in supervise.restarted_processes()] == ["flaky"]
    # when the backoff has passed, it runs again as a new process
    sup.check(now=100.5)
    assert child.state == "restarting"
    sup.check(now=101.0)
    assert child.state == "running" and child.restarts == 1 and child.popen.pid != first_pid  # type: ignore[union-attr]
    assert supervise.restarted_processes()[0]["restarts"] == 1


def test_backoff_doubles_and_a_child_dying_five_times_a_minute_is_left_stopped(sup: Supervisor) -> None:
    # given a child that always exits at once
    child = sup.add("broken", [sys.executable, "-c", "raise SystemExit(1)"], {})
    sup.spawn(child)
    delays, now = [], 1000.0
    # when it dies again and again within a minute
    for _ in range(supervise.MAX_RESTARTS):
        _wait_dead(child)
        sup.check(now=now)
        if child.state == "failed":
            break
        delays.append(child.restart_at - now)
        now = child.restart_at
        sup.check(now=now)
    # then the backoff doubled each time and the fifth death leaves it stopped, reported
    assert delays == [1.0, 2.0, 4.0, 8.0]
    assert child.state == "failed"
    assert "left stopped" in child.events[-1]["action"]
    sup.check(now=now + 100)
    assert child.state == "failed" and child.restarts == 4
    assert supervise.restarted_processes()[0]["state"] == "failed"


def test_deaths_spread_over_more_than_a_minute_keep_being_restarted(sup: Supervisor) -> None:
    child = sup.add("rare", [sys.executable, "-c", "raise SystemExit(1)"], {})
    sup.spawn(child)
    now = 0.0
    for _ in range(supervise.MAX_RESTARTS + 2):
        _wait_dead(child)
        sup.check(now=now)
        assert child.state == "restarting"
        sup.check(now=child.restart_at)
        now = child.restart_at + supervise.WINDOW  # the next death comes a minute later
    assert child.restarts == supervise.MAX_RESTARTS + 2


def test_the_death_hook_runs_before_the_restart_and_its_note_is_kept(sup: Supervisor) -> None:
    seen: list[str] = []

    def hook(child: Child) -> str:
        seen.append(child.name)
        return "requeued 1 unacknowledged task(s)"

    sup.on_death = hook
    child = sup.add("worker", [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"], {},
                    queues=["conductor"])
    sup.spawn(child)
    _wait_dead(child)
    sup.check(now=5.0)
    assert seen == ["worker"]
    assert child.events[-1]["reason"] == "killed by SIGKILL; requeued 1 unacknowledged task(s)"


def test_stop_all_ends_every_child_and_records_it(sup: Supervisor) -> None:
    children = [sup.add(f"sleeper{i}", [sys.executable, "-c", "import time; time.sleep(60)"], {}) for i in range(2)]
    for child in children:
        sup.spawn(child)
    started = time.monotonic()
    sup.stop_all(timeout=10)
    assert time.monotonic() - started < 10
    assert all(c.popen.poll() is not None for c in children)  # type: ignore[union-attr]
    assert {p["state"] for p in json.loads(supervise.status_path().read_text())["processes"]} == {"stopped"}
