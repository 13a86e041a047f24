"""Process supervision for ``manage.py run_cloud`` (what ``make run`` runs).

The embedded cloud is a handful of real processes (Redis, web, conductor, beat, volume and compute
workers). ``run_cloud`` keeps them up the way systemd does with ``Restart=on-failure``: a child that
exits while the cloud is not stopping is restarted after a backoff (1 s, doubling, at most 30 s);
one that dies ``MAX_RESTARTS`` times within ``WINDOW`` seconds is left stopped and reported
(``failed``) instead of being restarted forever.

Every change is written to ``var/processes.json`` (``status_path()``), which the web console's
hosts and overview pages read: the web process is a sibling, not a parent, so a file under
``var/`` is the one place both see. Each restart is recorded with its exit status and the last
lines of the child's log, the reason an operator needs.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.conf import settings

#: a child dying this many times within WINDOW seconds is left stopped
MAX_RESTARTS = 5
WINDOW = 60.0
BACKOFF_FIRST = 1.0
BACKOFF_MAX = 30.0
#: log lines kept with each restart event
TAIL_LINES = 12
#: restart events kept per process in the status file
EVENTS_KEPT = 10


def status_path() -> Path:
    return Path(settings.VAR_DIR) / "processes.json"


def read_status() -> dict[str, Any]:
    """What the supervisor last wrote (``{}`` when no ``run_cloud`` ever ran here)."""
    try:
        data = json.loads(status_path().read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def restarted_processes() -> list[dict[str, Any]]:
    """The supervised processes that ever died (restarted, waiting to be, or given up on), most
    troubled first: what the console shows."""
    rows = [p for p in read_status().get("processes", []) if p.get("events")]
    return sorted(rows, key=lambda p: (p.get("state") != "failed", -int(p.get("restarts", 0))))


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def exit_reason(returncode: int) -> str:
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exited with {returncode}"


def log_tail(path: Path, lines: int = TAIL_LINES) -> list[str]:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - 16384))
            text = fh.read().decode(errors="replace")
    except OSError:
        return []
    return text.splitlines()[-lines:]


@dataclass
class Child:
    """One supervised process: how to start it and what happened to it."""

    name: str
    argv: list[str]
    env: dict[str, str]
    log_path: Path
    queues: list[str] = field(default_factory=list)
    popen: subprocess.Popen[bytes] | None = None
    state: str = "starting"  # running | restarting | failed | stopped
    started_at: str = ""
    restart_at: float = 0.0
    deaths: list[float] = field(default_factory=list)
    restarts: int = 0
    events: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "pid": self.popen.pid if self.popen else None, "state": self.state,
                "started_at": self.started_at, "restarts": self.restarts, "events": self.events,
                "log": str(self.log_path)}


class Supervisor:
    """Start, watch and restart children; ``stop_all`` ends them (SIGTERM, then SIGKILL)."""

    def __init__(self, *, cwd: Path, say: Callable[[str], None], warn: Callable[[str], None],
                 on_death: Callable[[Child], str] | None = None) -> None:
        self.cwd = cwd
        self.say = say
        self.warn = warn
        #: called when a child died, before it is restarted; what it returns is logged with the death
        self.on_death = on_death
        self.children: list[Child] = []

    def add(self, name: str, argv: list[str], env: dict[str, str], queues: list[str] | None = None) -> Child:
        log_dir = Path(settings.VAR_DIR) / "log"
        log_dir.mkdir(parents=True, exist_ok=True)
        child = Child(name=name, argv=argv, env=env, log_path=log_dir / f"{name}.log", queues=list(queues or []))
        self.children.append(child)
        return child

    def spawn(self, child: Child) -> None:
        with open(child.log_path, "ab") as log:
            child.popen = subprocess.Popen(child.argv, env=child.env, stdout=log, stderr=subprocess.STDOUT,
                                           cwd=self.cwd, start_new_session=True)
        child.state, child.started_at = "running", _now()
        self.write_status()

    def check(self, now: float | None = None) -> None:
        """One supervision pass: notice deaths, schedule or give up restarts, start those due."""
        now = time.monotonic() if now is None else now
        for child in self.children:
            if child.state == "running" and child.popen is not None and child.popen.poll() is not None:
                self._died(child, child.popen.returncode, now)
            elif child.state == "restarting" and now >= child.restart_at:
                child.restarts += 1
                self.spawn(child)
                self.say(f"restarted {child.name} (pid {child.popen.pid if child.popen else '?'}), "
                         f"restart {child.restarts}")

    def _died(self, child: Child, returncode: int, now: float) -> None:
        child.deaths = [t for t in child.deaths if now - t < WINDOW] + [now]
        tail = log_tail(child.log_path)
        reason = exit_reason(returncode)
        if self.on_death is not None:
            try:
                note = self.on_death(child)
            except Exception as exc:  # the supervisor must go on whatever the hook hit
                note = f"could not requeue its messages: {exc}"
            if note:
                reason = f"{reason}; {note}"
        if len(child.deaths) >= MAX_RESTARTS:
            child.state, action = "failed", f"left stopped: it died {len(child.deaths)} times in {int(WINDOW)} s"
        else:
            delay = min(BACKOFF_MAX, BACKOFF_FIRST * 2 ** (len(child.deaths) - 1))
            child.state, child.restart_at = "restarting", now + delay
            action = f"restarting in {delay:g} s"
        child.events = [*child.events, {"when": _now(), "reason": reason, "action": action,
                                        "log_tail": tail}][-EVENTS_KEPT:]
        self.warn(f"process {child.name} {reason}; {action}. Last lines of {child.log_path}:\n"
                  + "\n".join(f"    {line}" for line in tail))
        self.write_status()

    def write_status(self) -> None:
        path = status_path()
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"updated": _now(), "supervisor_pid": os.getpid(),
                                   "processes": [c.as_dict() for c in self.children]}, indent=1))
        tmp.replace(path)

    def stop_all(self, timeout: float = 15.0) -> None:
        for child in reversed(self.children):
            if child.popen is not None and child.popen.poll() is None:
                _signal_group(child.popen, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for child in reversed(self.children):
            if child.popen is None:
                continue
            try:
                child.popen.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _signal_group(child.popen, signal.SIGKILL)
                child.popen.wait()
            child.state = "stopped"
            self.say(f"stopped {child.name}")
        self.write_status()


def _signal_group(popen: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    try:
        os.killpg(popen.pid, sig)
    except ProcessLookupError:
        pass
