"""``make run``: start the broker, migrate, create the demo cloud, start every process, stay in the
foreground and keep them up.

The embedded broker is a private ``redis-server`` under ``var/`` (``cloudcore.core.broker``), started
first and stopped last; with ``CLOUDCORE_BROKER_URL`` set the cloud uses that Redis instead. A child
that dies is restarted with backoff and the restart is logged with the reason and shown on the
console (``cloudcore.core.supervise``); one that keeps dying is left stopped and reported. Ctrl-C
(SIGINT) or SIGTERM stops every child.

"cloudcore is running" is said once the web answers and every app's part of the demo is ready
(``cloudcore.core.demo.waiting_for``: the compute hosts mapped to their cells), or after
``READY_TIMEOUT`` with what is still missing: a user acts on it at once.
"""
from __future__ import annotations

import os
import signal
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db import connections

from cloudcore.core import broker
from cloudcore.core.demo import collect_processes, run_setups, startup_warnings, waiting_for, web_process
from cloudcore.core.supervise import Child, Supervisor, log_tail

#: how long the embedded Redis may take to answer
REDIS_START_TIMEOUT = 20.0
#: how long the processes may take to be ready before the banner is shown anyway
READY_TIMEOUT = 180.0


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
        env = {k: v for k, v in os.environ.items()}
        env.setdefault("DJANGO_SETTINGS_MODULE", "cloudcore.settings")
        env.setdefault("CLOUDCORE_PUBLIC_URL", f"http://{bind}")
        env.setdefault("CLOUDCORE_VAR_DIR", str(settings.VAR_DIR))
        env.setdefault("CLOUDCORE_FORCE_CONFIG_DRIVE", "true")  # the demo's guests all get a config drive
        supervisor = Supervisor(cwd=Path(settings.BASE_DIR), say=self.stdout.write, warn=self.stderr.write,
                                on_death=_requeue_unacked)
        stopping = False

        def stop(*_: Any) -> None:
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        try:
            self._start_broker(supervisor, env)
            if not options["no_setup"]:
                call_command("migrate", verbosity=0)
                run_setups(self.stdout.write)
            call_command("collectstatic", interactive=False, verbosity=0)
            processes = [web_process(bind, env), *collect_processes(env)]
            for warning in startup_warnings(processes):
                self.stderr.write(f"warning: {warning}")
            connections.close_all()
            for proc in processes:
                supervisor.add(proc.name, proc.argv, proc.environment(env), queues=proc.queues)
            for child in supervisor.children:
                if child.popen is None:
                    supervisor.spawn(child)
                    self.stdout.write(f"started {child.name} (pid {child.popen.pid if child.popen else '?'}), "
                                      f"log: {child.log_path}")
            self._wait_ready(supervisor, bind, lambda: stopping)
            self._banner(bind)
            while not stopping:
                supervisor.check()
                time.sleep(0.5)
        finally:
            supervisor.stop_all()

    def _start_broker(self, supervisor: Supervisor, env: dict[str, str]) -> None:
        """The private Redis, unless CLOUDCORE_BROKER_URL names an external one."""
        if not settings.EMBEDDED_BROKER:
            self.stdout.write(f"broker: external Redis {_masked(settings.CELERY_BROKER_URL)}")
            return
        socket = broker.embedded_socket_path(Path(settings.VAR_DIR))
        if broker.ping(socket):
            raise CommandError(f"a Redis already answers on {socket}: another cloud runs with this var dir "
                               f"({settings.VAR_DIR}); stop it first")
        socket.unlink(missing_ok=True)
        try:
            argv = broker.redis_server_argv(socket, Path(settings.VAR_DIR) / "redis")
        except RuntimeError as exc:
            raise CommandError(str(exc)) from exc
        child = supervisor.add("redis", argv, env)
        supervisor.spawn(child)
        popen = child.popen
        if not broker.wait_ready(socket, timeout=REDIS_START_TIMEOUT,
                                 alive=lambda: popen is not None and popen.poll() is None):
            tail = "\n".join(log_tail(child.log_path, 20))
            raise CommandError(f"Redis did not start on {socket} (see {child.log_path}):\n{tail}")
        self.stdout.write(f"started redis (pid {popen.pid if popen else '?'}) on {socket}, log: {child.log_path}")

    def _wait_ready(self, supervisor: Supervisor, bind: str, stopping: Callable[[], bool]) -> None:
        """Until the web answers and nothing is waited for (``waiting_for``), keeping the children up meanwhile;
        what is still missing after ``READY_TIMEOUT`` is said on stderr."""
        deadline = time.monotonic() + READY_TIMEOUT
        said: set[str] = set()
        waiting: list[str] = []
        while not stopping() and time.monotonic() < deadline:
            supervisor.check()
            waiting = ([] if _web_answers(bind) else ["the web process does not answer yet"]) + waiting_for()
            if not waiting:
                break
            for what in waiting:
                if what not in said:
                    said.add(what)
                    self.stdout.write(f"waiting: {what}")
            time.sleep(0.5)
        connections.close_all()
        if waiting and not stopping():
            self.stderr.write(f"not ready after {READY_TIMEOUT:.0f} s: {'; '.join(waiting)}")

    def _banner(self, bind: str) -> None:
        base = f"http://{bind}"
        lines = [
            "",
            "cloudcore is running:",
            f"  web console     {base}/",
            f"  compute API     {base}/compute/v2.1",
            f"  identity API    {base}/identity/v3",
            f"  Django admin    {base}/admin/",
            f"  VNC proxy       {settings.NOVNCPROXY_BASE_URL} (noVNC; console tokens)",
            f"  serial proxy    {settings.SERIALPROXY_BASE_URL} (console tokens)",
            f"  broker          {_masked(settings.CELERY_BROKER_URL)}",
            f"  credentials     {settings.VAR_DIR / 'credentials.txt'}",
            f"  clouds.yaml     {settings.VAR_DIR / 'clouds.yaml'}",
            "Press Ctrl-C to stop every process.",
        ]
        creds = settings.VAR_DIR / "credentials.txt"
        if creds.exists():
            lines.insert(-1, creds.read_text().rstrip())
        self.stdout.write("\n".join(lines))


def _requeue_unacked(child: Child) -> str:
    """The messages the dead child had taken go back on its queues (see ``broker.requeue_unacked``)."""
    if not child.queues:
        return ""
    requeued = broker.requeue_unacked(settings.CELERY_BROKER_URL, child.queues)
    return f"requeued {len(requeued)} unacknowledged task(s) {requeued}" if requeued else ""


def _web_answers(bind: str) -> bool:
    host, _, port = bind.rpartition(":")
    host = "127.0.0.1" if host in ("", "0.0.0.0", "[::]") else host  # noqa: S104 - the address bound, asked locally
    try:
        with urllib.request.urlopen(f"http://{host}:{port}/compute/", timeout=2) as response:  # noqa: S310
            return bool(response.status == 200)
    except OSError:
        return False


def _masked(url: str) -> str:
    """A broker URL without its password."""
    parts = urllib.parse.urlsplit(url)
    if parts.password:
        netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
        return urllib.parse.urlunsplit(parts._replace(netloc=netloc))
    return url
