"""``make run``: migrate, create the demo cloud, start every process, stay in the foreground.

Ctrl-C (SIGINT) or SIGTERM stops every child. A child that dies is reported and the cloud
stops, so a broken process is never hidden.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand

from cloudcore.core.demo import DemoProcess, collect_processes, run_setups


class Command(BaseCommand):
    help = "Run the whole demo cloud in the foreground (what `make run` calls)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--bind", default=os.environ.get("CLOUDCORE_BIND", "127.0.0.1:8000"))
        parser.add_argument("--no-setup", action="store_true", help="Skip migrate and demo setup.")

    def handle(self, *args: Any, **options: Any) -> None:
        bind: str = options["bind"]
        if "CLOUDCORE_PUBLIC_URL" not in os.environ:
            # clouds.yaml and the catalog must name the address actually bound.
            settings.PUBLIC_URL = f"http://{bind}"
        if not options["no_setup"]:
            call_command("migrate", verbosity=0)
            run_setups(self.stdout.write)
        env = {k: v for k, v in os.environ.items()}
        env.setdefault("DJANGO_SETTINGS_MODULE", "cloudcore.settings")
        env.setdefault("CLOUDCORE_PUBLIC_URL", f"http://{bind}")
        python = sys.executable
        procs = [
            DemoProcess(
                "web",
                [python, "-m", "gunicorn", "cloudcore.wsgi:application", "--bind", bind,
                 "--workers", "2", "--threads", "4", "--timeout", "120", "--access-logfile", "-",
                 # Clients (keystoneauth, the SDK's 2 s status polls) reuse connections without
                 # retrying: gunicorn's 2 s default closes them just as the next request goes out.
                 "--keep-alive", "75"],
            ),
            *collect_processes(env),
        ]
        children: list[tuple[DemoProcess, subprocess.Popen[bytes]]] = []
        log_dir = settings.VAR_DIR / "log"
        log_dir.mkdir(parents=True, exist_ok=True)
        stopping = False

        def stop(*_: Any) -> None:
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        for proc in procs:
            log = open(log_dir / f"{proc.name}.log", "ab")  # noqa: SIM115 - owned by the child
            child = subprocess.Popen(
                proc.argv, env={**env, **proc.env}, stdout=log, stderr=subprocess.STDOUT,
                cwd=settings.BASE_DIR, start_new_session=True,
            )
            children.append((proc, child))
            self.stdout.write(f"started {proc.name} (pid {child.pid}), log: {log_dir / proc.name}.log")
        self._banner(bind)
        exit_code = 0
        try:
            while not stopping:
                for proc, child in children:
                    if child.poll() is not None:
                        self.stderr.write(
                            f"process {proc.name} exited with {child.returncode}; stopping the cloud "
                            f"(see {log_dir / proc.name}.log)"
                        )
                        stopping, exit_code = True, 1
                        break
                time.sleep(0.5)
        finally:
            self._stop_all(children)
        if exit_code:
            raise SystemExit(exit_code)

    def _stop_all(self, children: list[tuple[DemoProcess, subprocess.Popen[bytes]]]) -> None:
        for _, child in children:
            if child.poll() is None:
                os.killpg(child.pid, signal.SIGTERM)
        deadline = time.monotonic() + 15
        for proc, child in children:
            try:
                child.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(child.pid, signal.SIGKILL)
                child.wait()
            self.stdout.write(f"stopped {proc.name}")

    def _banner(self, bind: str) -> None:
        base = f"http://{bind}"
        lines = [
            "",
            "cloudcore is running:",
            f"  web console     {base}/",
            f"  compute API     {base}/compute/v2.1",
            f"  identity API    {base}/identity/v3",
            f"  Django admin    {base}/admin/",
            f"  credentials     {settings.VAR_DIR / 'credentials.txt'}",
            f"  clouds.yaml     {settings.VAR_DIR / 'clouds.yaml'}",
            "Press Ctrl-C to stop every process.",
        ]
        creds = settings.VAR_DIR / "credentials.txt"
        if creds.exists():
            lines.insert(-1, creds.read_text().rstrip())
        self.stdout.write("\n".join(lines))
