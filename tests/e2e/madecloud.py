"""The cloud exactly as the README starts it: ``make run`` in a fresh copy of the tree, with only
``CLOUDCORE_BIND`` and the two passwords set (issue 15: test the path the user runs).

The copy holds what a fresh clone of the working tree holds (``git ls-files`` of tracked and
untracked-but-not-ignored files, modification times kept) and borrows the suite's own virtualenv as
its ``.venv``, so the Makefile finds its requirements installed and goes straight to ``run_cloud``.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from .cloud import ROOT, LiveCloud, free_port

ADMIN_PASSWORD = "made-admin-secret"
DEMO_PASSWORD = "made-demo-secret"


def copy_tree(dest: Path) -> Path:
    """What a fresh clone of the working tree holds, at ``dest``."""
    listed = subprocess.run(["git", "ls-files", "-z", "-co", "--exclude-standard"], cwd=ROOT, check=True,
                            capture_output=True).stdout.decode().split("\0")
    for rel in filter(None, listed):
        src = ROOT / rel
        if not src.is_file() or rel.startswith(".venv"):
            continue
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, target)
    (dest / ".venv").symlink_to(Path(sys.prefix))
    return dest


class MadeCloud(LiveCloud):
    """``make run`` in ``root``; its state is ``root/var`` as the README says."""

    root: Path

    @classmethod
    def in_copy(cls, root: Path) -> MadeCloud:
        port = free_port()
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("CLOUDCORE_", "MAKE", "MFLAGS", "DJANGO_", "PYTEST_"))}
        env.update({"CLOUDCORE_BIND": f"127.0.0.1:{port}", "CLOUDCORE_ADMIN_PASSWORD": ADMIN_PASSWORD,
                    "CLOUDCORE_DEMO_PASSWORD": DEMO_PASSWORD,
                    # the console proxies' own ports (another cloud of the suite may hold 6080/6083)
                    "CLOUDCORE_NOVNCPROXY_PORT": str(free_port()), "CLOUDCORE_SERIALPROXY_PORT": str(free_port())})
        cloud = cls(var_dir=root / "var", port=port, env=env)
        cloud.root = root
        return cloud

    def start(self, timeout: float = 400.0) -> None:
        self.var_dir.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")  # noqa: SIM115 - closed with the process
        self.process = subprocess.Popen(["make", "run"], cwd=self.root, env=self.env, stdout=log,
                                        stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"make run exited with {self.process.returncode}:\n{self.tail()}")
            try:
                with urllib.request.urlopen(f"{self.url}/compute/", timeout=2) as response:  # noqa: S310
                    # and once it says so, as a user sees it (every demo host mapped by then)
                    if response.status == 200 and self.clouds_yaml.exists() and self.processes() \
                            and self.says_running():
                        return
            except OSError:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"make run did not come up in {timeout}s:\n{self.tail()}")

    def stop(self) -> None:
        """Ctrl-C, as a user stops it."""
        self.close_connections()
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGINT)
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    # -- what the supervisor and the databases say ---------------------------------------------
    def processes(self) -> dict[str, dict[str, Any]]:
        try:
            data = json.loads((self.var_dir / "processes.json").read_text())
        except (OSError, ValueError):
            return {}
        return {p["name"]: p for p in data.get("processes", [])}

    def api_db(self, sql: str) -> list[tuple[Any, ...]]:
        with sqlite3.connect(self.var_dir / "api.sqlite3", timeout=30) as conn:
            return conn.execute(sql).fetchall()

    def redis(self) -> Any:
        import redis

        from cloudcore.core.broker import embedded_socket_path

        return redis.Redis(unix_socket_path=str(embedded_socket_path(self.var_dir)))

    def web_statuses(self) -> list[int]:
        """The HTTP status of every request in gunicorn's access log."""
        import re

        pattern = re.compile(r'" (\d{3}) ')
        text = (self.var_dir / "log" / "web.log").read_text(errors="replace")
        return [int(m.group(1)) for m in pattern.finditer(text)]

    def admin_compute_get(self, path: str, version: str) -> Any:
        """A compute API GET as the cloud admin at ``version`` (the SDK's adapter)."""
        from .traffic import connect

        conn = connect(self, "cloudcore-admin")
        try:
            response = conn.compute.get(path, microversion=version)
            assert response.status_code == 200, response.text
            return response.json()
        finally:
            conn.close()
