"""The demo cloud of DESIGN.md section 9, assembled from each app's ``demo.py``.

An app that contributes to the demo defines, in ``<app>/demo.py``:

- ``setup(out) -> None``: idempotent creation of its demo objects (cells, users, flavors, ...);
  ``out`` is a callable that prints one line;
- ``processes(env) -> list[DemoProcess]``: the long-running processes it needs;
- ``not_ready() -> str | None``: what of its part is not ready to serve a user yet (None once it
  is), asked by run_cloud before it says the cloud is running;
- ``warnings(processes) -> list[str]``: what is wrong with running ``processes`` (every app's) on
  this cloud, said by run_cloud before it starts them.

``manage.py demo_setup`` runs every ``setup`` in INSTALLED_APPS order; ``manage.py run_cloud``
(what ``make run`` calls) migrates, runs the setups, then starts and supervises the processes.
"""
from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import ModuleType

from django.apps import apps
from django.conf import settings

#: the options of every ``celery worker`` run_cloud starts: no gossip, mingle or worker heartbeats
#: (the cloud reads none of them; each is broker traffic, the heartbeat every 2 s)
QUIET_WORKER = ("--without-gossip", "--without-mingle", "--without-heartbeat")


@dataclass
class DemoProcess:
    name: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    #: the broker queues this process alone consumes: when it dies, the messages it had taken and
    #: not acknowledged are put back on them for its restarted self (``broker.requeue_unacked``)
    queues: list[str] = field(default_factory=list)
    #: variables of run_cloud's environment this process must not get (an isolated compute: the
    #: API database URL)
    unset: tuple[str, ...] = ()
    #: the most database connections the process may hold at once, given the number of cells
    #: (cell0 among them): each kept by a thread, or one opened for a moment
    connections: Callable[[int], int] = field(default=lambda _cells: 1)

    def environment(self, base: dict[str, str]) -> dict[str, str]:
        """The process's environment: ``base`` (run_cloud's) with ``env`` over it, less ``unset``, and
        its name (``CLOUDCORE_PROCESS_NAME``: PostgreSQL's ``application_name``, ``cells.dburl``)."""
        named = {**base, "CLOUDCORE_PROCESS_NAME": self.name, **self.env}
        return {key: value for key, value in named.items() if key not in self.unset}


def demo_modules() -> Iterator[ModuleType]:
    for config in apps.get_app_configs():
        try:
            yield importlib.import_module(f"{config.name}.demo")
        except ModuleNotFoundError as exc:
            if exc.name != f"{config.name}.demo":
                raise


def run_setups(out: Callable[[str], None]) -> None:
    for module in demo_modules():
        setup = getattr(module, "setup", None)
        if setup is not None:
            setup(out)


def web_process(bind: str, env: dict[str, str]) -> DemoProcess:
    """The web process ``run_cloud`` serves the APIs and the console with, on ``bind``."""
    return DemoProcess("web", [
        sys.executable, "-m", "gunicorn", "cloudcore.wsgi:application", "--bind", bind,
        "--workers", str(settings.WEB_WORKERS), "--threads", str(settings.WEB_THREADS),
        "--worker-class",
        "cloudcore.webworker.PreparedThreadWorker" if settings.WEB_PREPARE_THREADS else "gthread",
        "--timeout", "120", "--access-logfile", "-",
        # Clients (keystoneauth, the SDK's 2 s status polls) reuse connections without
        # retrying: gunicorn's 2 s default closes them just as the next request goes out.
        "--keep-alive", "75"],
        # its threads keep their database connections (see cells.dburl): a connect and the
        # WAL pragmas per database per request were a tenth of its time under 20 clients
        {"CLOUDCORE_DB_CONN_MAX_AGE": env.get("CLOUDCORE_DB_CONN_MAX_AGE", "300")},
        connections=lambda cells: settings.WEB_WORKERS * threads_connections(settings.WEB_THREADS, cells))


def threads_connections(threads: int, cells: int) -> int:
    """The connections a process whose ``threads`` each use every database may keep: theirs to the
    API database and each cell's, and its threads per cell for calls in every cell at once
    (``cells.scatter``), each with one to its cell's."""
    return threads * (1 + cells) + settings.CELL_SCATTER_THREADS * cells


def collect_processes(env: dict[str, str]) -> list[DemoProcess]:
    procs: list[DemoProcess] = []
    for module in demo_modules():
        fn = getattr(module, "processes", None)
        if fn is not None:
            procs.extend(fn(env))
    return procs


def startup_warnings(processes: list[DemoProcess]) -> list[str]:
    """What the apps' ``warnings`` say of running ``processes``."""
    said = []
    for module in demo_modules():
        check = getattr(module, "warnings", None)
        if check is not None:
            said.extend(check(processes))
    return said


def waiting_for() -> list[str]:
    """What the apps' ``not_ready`` say is not ready yet (empty once the demo cloud can serve)."""
    waiting = []
    for module in demo_modules():
        check = getattr(module, "not_ready", None)
        if check is not None and (what := check()):
            waiting.append(what)
    return waiting
