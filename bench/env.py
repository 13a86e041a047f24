"""The environment every benchmark runs in: Django set up on a private temporary var dir
(``CLOUDCORE_VAR_DIR``) with a migrated SQLite API database and two migrated cell databases,
plus helpers to count SQL statements over every connection and to read the peak RSS.

``env.fresh()`` puts the databases back as they were right after migration (a file copy), so
that each scenario starts from an empty cloud whatever the one before it left behind."""
from __future__ import annotations

import contextlib
import gc
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class BenchEnv:
    var_dir: Path
    quick: bool = False
    cells: dict[str, Any] = field(default_factory=dict)
    keep: bool = False

    @classmethod
    def create(cls, *, quick: bool = False) -> BenchEnv:
        var_dir = Path(tempfile.mkdtemp(prefix="cloudcore-bench-"))
        os.environ["CLOUDCORE_VAR_DIR"] = str(var_dir)
        os.environ["DJANGO_SETTINGS_MODULE"] = "cloudcore.settings"
        os.environ.setdefault("CLOUDCORE_CELERY_EAGER", "true")
        os.environ.setdefault("CLOUDCORE_CELL_SCATTER_INLINE", "true")
        # one process, no HTTP server: the compute's calls to Glance & co. go through this
        # process's WSGI handler (compute.clients.session), as in the test suite
        os.environ.setdefault("CLOUDCORE_SERVICE_TRANSPORT", "inprocess")
        os.environ.setdefault("CLOUDCORE_LOG_LEVEL", "WARNING")
        os.environ.pop("CLOUDCORE_DATABASE_URL", None)
        # Cell connections pre-declared under the cells' names (as the test settings do).
        os.environ["CLOUDCORE_CELL_DATABASES"] = ",".join(
            f"{name}=sqlite:///{var_dir / name}.sqlite3" for name in ("cell0", "cell1", "cell2"))
        import django

        django.setup()
        env = cls(var_dir=var_dir, quick=quick, keep=bool(os.environ.get("BENCH_KEEP")))
        try:
            env._migrate()
        except BaseException:
            env.close()
            raise
        return env

    def _migrate(self) -> None:
        from django.core.management import call_command

        from cells.dburl import sqlite_url
        from cells.models import CELL0_UUID, CellMapping

        started = time.perf_counter()
        call_command("migrate", verbosity=0, interactive=False)
        for name in ("cell0", "cell1", "cell2"):
            defaults: dict[str, Any] = {"database_connection": sqlite_url(self.var_dir / f"{name}.sqlite3")}
            if name == "cell0":
                defaults["uuid"] = CELL0_UUID
            cell, _ = CellMapping.objects.get_or_create(name=name, defaults=defaults)
            from cells.transactions import cell_db

            call_command("migrate", database=cell_db(cell), verbosity=0, interactive=False)
            self.cells[name] = cell
        print(f"   (databases migrated in {self.var_dir} in {time.perf_counter() - started:.1f} s)", flush=True)
        self._snapshot()

    def _db_files(self) -> list[Path]:
        return sorted(p for p in self.var_dir.glob("*.sqlite3"))

    def _snapshot(self) -> None:
        from django.db import connections

        connections.close_all()
        pristine = self.var_dir / "pristine"
        pristine.mkdir(exist_ok=True)
        for path in self._db_files():
            shutil.copy2(path, pristine / path.name)

    def fresh(self) -> None:
        """Every database back to its just-migrated state (cell mappings included, same uuids)."""
        from django.db import connections

        from scheduling.services.traces import forget_stored

        connections.close_all()
        pristine = self.var_dir / "pristine"
        for path in self._db_files():
            for suffix in ("-wal", "-shm"):
                Path(f"{path}{suffix}").unlink(missing_ok=True)
            shutil.copy2(pristine / path.name, path)
        forget_stored()  # the trace bodies this process stored are gone with the databases

    def close(self) -> None:
        from django.db import connections

        connections.close_all()
        if not self.keep:
            shutil.rmtree(self.var_dir, ignore_errors=True)


class QueryCounter:
    """Counts SQL statements on every connection while active (``counter.total``)."""

    def __init__(self) -> None:
        self.by_alias: dict[str, int] = {}

    @property
    def total(self) -> int:
        return sum(self.by_alias.values())


class CapturedQueries:
    """SQL statements captured per connection alias by :func:`capture_queries`."""

    def __init__(self, contexts: dict[str, Any]) -> None:
        self._contexts = contexts

    @property
    def by_alias(self) -> dict[str, int]:
        return {alias: len(ctx) for alias, ctx in self._contexts.items() if len(ctx)}

    @property
    def total(self) -> int:
        return sum(len(ctx) for ctx in self._contexts.values())

    def statements(self) -> list[tuple[str, str]]:
        return [(alias, q["sql"]) for alias, ctx in self._contexts.items() for q in ctx.captured_queries]


@contextlib.contextmanager
def capture_queries() -> Iterator[CapturedQueries]:
    """``django.test.utils.CaptureQueriesContext`` on every configured connection (the API
    database and every cell database) at once; ``.total`` is the number of statements."""
    from django.db import connections
    from django.test.utils import CaptureQueriesContext

    contexts = {alias: CaptureQueriesContext(connections[alias]) for alias in connections}
    with contextlib.ExitStack() as stack:
        for ctx in contexts.values():
            stack.enter_context(ctx)
        yield CapturedQueries(contexts)


@contextlib.contextmanager
def served_heap() -> Iterator[None]:
    """Time requests with the heap as the served web process has it: what exists before them is
    frozen (``gc.freeze``, as ``cloudcore.core.heap.freeze_startup_heap`` does once a gunicorn
    worker has loaded the application), so a full collection during a timed request walks what
    requests made, not the bench's own set-up (the servers it inserted, earlier scenarios' clouds),
    which a web process never holds (``CLOUDCORE_GC_FREEZE`` off: not frozen, as the web). Unfrozen
    after."""
    from cloudcore.core.heap import freeze_startup_heap

    freeze_startup_heap()
    try:
        yield
    finally:
        gc.unfreeze()


def peak_rss_kb() -> int:
    """Peak resident set size of this process so far, in KiB (``getrusage``; Linux gives KiB)."""
    import resource
    import sys

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak // 1024 if sys.platform == "darwin" else peak


def proc_status_kb(pid: int, field_name: str = "VmHWM") -> int | None:
    """``VmHWM`` (peak RSS) or another ``kB`` field of ``/proc/<pid>/status``; None if unreadable."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field_name}:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


@contextlib.contextmanager
def count_queries() -> Iterator[QueryCounter]:
    from django.db import connections

    counter = QueryCounter()

    def wrapper_for(alias: str) -> Any:
        def wrapper(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
            counter.by_alias[alias] = counter.by_alias.get(alias, 0) + 1
            return execute(sql, params, many, context)
        return wrapper

    with contextlib.ExitStack() as stack:
        for alias in list(connections.settings):
            stack.enter_context(connections[alias].execute_wrapper(wrapper_for(alias)))
        yield counter


#: the step of a boot a statement belongs to: the first whose code is on the stack
_STEPS = (
    ("token validation", "identity/auth.py"),
    ("notifications", "cloudcore/core/notifications.py"),
    ("scheduler and placement", "scheduling/scheduler.py"),
    ("compute host", "compute/"),
    ("conductor", "conductor/"),
    ("API", "servers/api/"),
    # what the request scope writes when the outermost request ends (notification and trace
    # records, one transaction): last, as a read memoised by the scope also has it on its stack
    ("rows written at the request's end", "cloudcore/core/scope.py"),
)


@contextlib.contextmanager
def sql_by_step() -> Iterator[dict[str, int]]:
    """Statements on every connection while active, counted by the step of the request whose
    code issued them (``_STEPS``: the first one found on the stack; "other" when none, e.g. a
    test helper's own query)."""
    import traceback

    from django.db import connections

    root = str(Path(__file__).resolve().parent.parent) + os.sep
    steps: dict[str, int] = {}

    def step_of() -> str:
        files = [f.filename[len(root):] for f in traceback.extract_stack() if f.filename.startswith(root)]
        for step, marker in _STEPS:
            if any(f.startswith(marker) for f in files):
                return step
        return "other"

    def wrapper(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        step = step_of()
        steps[step] = steps.get(step, 0) + 1
        return execute(sql, params, many, context)

    with contextlib.ExitStack() as stack:
        for alias in list(connections.settings):
            stack.enter_context(connections[alias].execute_wrapper(wrapper))
        yield steps


def callgrind_dump(name: str, run: Callable[[], None]) -> None:
    """``run()`` counted by callgrind, this process being run under ``valgrind --tool=callgrind
    --instr-atstart=no``: the counters zeroed, the instrumentation on around it, one dump."""
    def callgrind(*args: str) -> None:
        subprocess.run(["callgrind_control", *args, str(os.getpid())], check=True, capture_output=True)  # noqa: S603, S607

    callgrind("-z")
    callgrind("-i", "on")
    run()
    callgrind("-d", name)
    callgrind("-i", "off")


@contextlib.contextmanager
def one_host_cloud(driver_factory: Callable[[str], Any] | None = None) -> Iterator[tuple[Any, Any]]:
    """The cloud of the boot counters (``bench.post_instructions``, ``bench.build_instructions``,
    ``bench.compute_instructions``): the tasks cast to kombu's in-memory transport and left there,
    no quota, one large compute host in cell1 (its virt driver made by ``driver_factory(host)``,
    default the tests' ``TestVirtDriver``) and the demo objects; yields the cloud and a member's
    API client."""
    os.environ["CLOUDCORE_CELERY_EAGER"] = "false"
    os.environ["CLOUDCORE_BROKER_URL"] = "memory://"
    os.environ.setdefault("CLOUDCORE_SERVICE_DOWN_TIME", "86400")
    env = BenchEnv.create(quick=False)
    try:
        env.fresh()
        from django.conf import settings

        from tests.cloud import Cloud

        settings.QUOTA_INSTANCES = settings.QUOTA_CORES = settings.QUOTA_RAM = -1
        cloud = Cloud(cells=env.cells, driver_factory=driver_factory)
        cloud.add_host("bench-host-000", cell="cell1", zone=None, vcpus=4096, memory_mb=4 * 1024 * 1024,
                       disk_gb=100000)
        cloud.add_demo_objects()
        yield cloud, cloud.member("bench", "bench")
        cloud.teardown()
    finally:
        env.close()


def recorded_casts(module: Any, name: str, run: Callable[[], None], *,
                   drop: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """The arguments of each call of the RPC function ``module.name`` while ``run()`` runs, as the
    worker's task gets them (the request context as a dict, the arguments ``drop`` names left out:
    e.g. the host, which only chooses the queue); each cast is still sent."""
    casts: list[dict[str, Any]] = []
    cast = getattr(module, name)

    def recorded(**kwargs: Any) -> None:
        casts.append({**{k: v for k, v in kwargs.items() if k not in drop}, "ctx": kwargs["ctx"].to_dict()})
        cast(**kwargs)

    setattr(module, name, recorded)
    try:
        run()
    finally:
        setattr(module, name, cast)
    return casts


def profile_or_count(name: str, run: Callable[[], None]) -> None:
    """``run()`` under cProfile, its 50 dearest functions printed, when ``PROFILE`` is set (sorted
    by ``SORT``, default ``tottime``); else counted by callgrind as ``name`` (``callgrind_dump``)."""
    if not os.environ.get("PROFILE"):
        callgrind_dump(name, run)
        return
    import cProfile
    import pstats

    profile = cProfile.Profile()
    profile.enable()
    run()
    profile.disable()
    pstats.Stats(profile).sort_stats(os.environ.get("SORT", "tottime")).print_stats(50)
