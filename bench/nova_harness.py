"""Nova's side of the side-by-side benchmark. NOT imported by cloudcore: ``bench/nova.py`` runs this
file with the Python of a separate virtualenv (``bench/out/nova-venv``) where the ``nova`` wheel from
PyPI is installed; the wheel ships ``nova/tests/functional`` and its fixtures, which run every Nova
service in one process (in-memory SQLite API/cell0/cell1/cell2 databases, the placement service via
wsgi-intercept, fake Glance/Neutron/Cinder, ``nova.virt.fake`` drivers).

Scenarios matching cloudcore's (RPC casts made synchronous with Nova's ``CastAsCallFixture``, as
cloudcore's bench runs its Celery tasks eagerly, so a request returns when the work is done):

- boot: ``HOSTS`` compute services split over cell1/cell2, ``BOOTS`` sequential ``POST /servers``
  (m1.tiny, networks none), time per request until the server is ACTIVE; then ``GET /servers/detail``
  with those servers;
- cross-cell resize: ``TestMultiCellMigrate``'s set-up (host1 in cell1, host2 in cell2, policy
  rule granted), an image-backed server resized from cell1 into cell2 then confirmed, another one
  resized and reverted.

SQL statements are counted on every SQLAlchemy engine (API, cells, placement). Environment: the
``BENCH_NOVA_*`` variables below; results are written as JSON to ``BENCH_NOVA_OUT``.
"""
from __future__ import annotations

import json
import os
import resource
import statistics
import sys
import threading
import time
import unittest
from typing import Any

from nova.tests import fixtures as nova_fixtures
from nova.tests.functional import integrated_helpers
from nova.tests.functional import test_cross_cell_migrate as xc
from sqlalchemy import event
from sqlalchemy.engine import Engine

BOOTS = int(os.environ.get("BENCH_NOVA_BOOTS", "20"))
HOSTS = int(os.environ.get("BENCH_NOVA_HOSTS", "4"))
ROUNDS = int(os.environ.get("BENCH_NOVA_ROUNDS", "1"))
REPEATS = int(os.environ.get("BENCH_NOVA_REPEATS", "3"))
#: After the list of the booted servers, the list again with this many servers (0: not measured):
#: the others are row copies of the booted ones, as cloudcore's list_scale makes its 1,000 rows.
LIST_ROWS = int(os.environ.get("BENCH_NOVA_LIST_ROWS", "0"))
RESULTS: dict[str, Any] = {}
_statements = [0]
_polling = threading.local()


@event.listens_for(Engine, "before_cursor_execute")
def _count(*_args: Any, **_kwargs: Any) -> None:
    if not getattr(_polling, "active", False):  # the bench's own status polls are not counted
        _statements[0] += 1


def _timed(fn: Any) -> tuple[Any, float, int]:
    before = _statements[0]
    started = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - started, _statements[0] - before


ASYNC_SEEN: list[str] = []


def _timed_until(api: Any, server_id: Any, status: str, fn: Any) -> tuple[float, int]:
    """Time (and statements) from ``fn()`` until the server shows ``status``. With CastAsCall the
    request itself does all the work and the status is there at once; otherwise poll every 10 ms (the
    time counts, and so do the statements of Nova's own threads meanwhile, not those of the polls).
    Raises if the server goes to ERROR."""
    before = _statements[0]
    started = time.perf_counter()
    fn()
    elapsed = time.perf_counter() - started
    statements = _statements[0] - before
    server_id = server_id() if callable(server_id) else server_id
    if _status(api, server_id) != status:
        ASYNC_SEEN.append(status)
        deadline = time.monotonic() + 60
        while (now := _status(api, server_id)) != status:
            if now == "ERROR" or time.monotonic() > deadline:
                raise AssertionError(f"{server_id} is {now}, not {status}")
            time.sleep(0.01)
        elapsed = time.perf_counter() - started
        statements = _statements[0] - before
    return elapsed, statements


def _status(api: Any, server_id: str) -> str:
    """The API status the server would show, read from its cell database (a GET through Nova's
    functional API takes ~100 ms here, too coarse a clock for a boot; these reads are not counted)."""
    from nova import context as nova_context
    from nova import objects

    _polling.active = True
    try:
        ctx = nova_context.get_admin_context()
        mapping = objects.InstanceMapping.get_by_instance_uuid(ctx, server_id)
        if mapping.cell_mapping is None:
            return "BUILD"
        with nova_context.target_cell(ctx, mapping.cell_mapping) as cctx:
            instance = objects.Instance.get_by_uuid(cctx, server_id)
        if instance.task_state is not None:
            return "BUSY"
        return {"active": "ACTIVE", "resized": "VERIFY_RESIZE", "error": "ERROR"}.get(instance.vm_state, "OTHER")
    finally:
        _polling.active = False


#: Cell tables whose rows belong to one instance (by ``instance_uuid``) and that a list reads.
_COPIED_TABLES = ("instance_extra", "instance_info_caches", "instance_system_metadata", "instance_metadata",
                  "block_device_mapping", "security_group_instance_association", "pci_devices")


def _copy_rows(conn: Any, table: Any, column: str, old: str, new: str, fresh_uuid: bool = False) -> None:
    """Insert a copy of ``table``'s rows whose ``column`` is ``old``, with every ``old`` in a string
    value replaced by ``new`` (a JSON blob naming the instance too), without the primary key."""
    import uuid as uuidlib

    rows = conn.execute(table.select().where(table.c[column] == old)).mappings().all()
    copies = []
    for row in rows:
        copy = {k: (v.replace(old, new) if isinstance(v, str) else v) for k, v in row.items() if k != "id"}
        if fresh_uuid and "uuid" in copy:
            copy["uuid"] = str(uuidlib.uuid4())
        copies.append(copy)
    if copies:
        conn.execute(table.insert(), copies)


def _insert_copies(total: int) -> int:
    """Copy the booted (non-deleted) instances row by row until there are ``total``, split evenly
    over the cells they are in: the instance row and its per-instance rows in the cell database,
    its InstanceMapping and RequestSpec in the API database. Copies are older than the booted
    servers (one millisecond apart), so the booted ones stay first in the default sort."""
    import datetime
    import uuid as uuidlib

    import sqlalchemy as sa
    from nova import context as nova_context
    from nova import objects
    from nova.db.api import api as api_db
    from nova.db.main import api as main_db

    ctx = nova_context.get_admin_context()
    cells = [c for c in objects.CellMappingList.get_all(ctx) if c.uuid != objects.CellMapping.CELL0_UUID]
    templates: dict[str, list[dict[str, Any]]] = {}
    engines = {}
    for cell in cells:
        with nova_context.target_cell(ctx, cell) as cctx:
            engines[cell.uuid] = main_db.get_engine(context=cctx)
        meta = sa.MetaData()
        instances = sa.Table("instances", meta, autoload_with=engines[cell.uuid])
        with engines[cell.uuid].connect() as conn:
            templates[cell.uuid] = [dict(r) for r in conn.execute(
                instances.select().where(instances.c.deleted == 0).order_by(instances.c.id)).mappings()]
    booted = sum(len(t) for t in templates.values())
    missing = total - booted
    used = [c for c in cells if templates[c.uuid]]
    api_meta = sa.MetaData()
    api_engine = api_db.get_engine()
    mappings = sa.Table("instance_mappings", api_meta, autoload_with=api_engine)
    specs = sa.Table("request_specs", api_meta, autoload_with=api_engine)
    serial = 0
    for k, cell in enumerate(used):
        count = missing // len(used) + (1 if k < missing % len(used) else 0)
        engine = engines[cell.uuid]
        meta = sa.MetaData()
        instances = sa.Table("instances", meta, autoload_with=engine)
        children = [sa.Table(name, meta, autoload_with=engine) for name in _COPIED_TABLES]
        oldest = min(t["created_at"] for t in templates[cell.uuid])
        with engine.begin() as conn, api_engine.begin() as api_conn:
            for i in range(count):
                template = templates[cell.uuid][i % len(templates[cell.uuid])]
                old, new = template["uuid"], str(uuidlib.uuid4())
                serial += 1
                row = {key: value for key, value in template.items() if key != "id"}
                row.update(uuid=new, display_name=f"copy-{serial:05d}", hostname=f"copy-{serial:05d}",
                           created_at=oldest - datetime.timedelta(milliseconds=serial))
                conn.execute(instances.insert(), [row])
                for table in children:
                    _copy_rows(conn, table, "instance_uuid", old, new, fresh_uuid=table.name == "block_device_mapping")
                _copy_rows(api_conn, mappings, "instance_uuid", old, new)
                _copy_rows(api_conn, specs, "instance_uuid", old, new)
    return booted + max(missing, 0)


def _list_timed(api: Any, microversion: str) -> dict[str, Any]:
    """``GET /servers/detail`` at ``microversion``: median ms, fewest statements, rows returned."""
    saved = api.microversion
    api.microversion = microversion
    try:
        api.get_servers(detail=True)  # warm-up, not counted
        times, statements, returned = [], [], 0
        for _ in range(REPEATS):
            servers, seconds, count = _timed(lambda: api.get_servers(detail=True))
            times.append(seconds)
            statements.append(count)
            returned = len(servers)
    finally:
        api.microversion = saved
    return {"ms": statistics.median(times) * 1000, "min_ms": min(times) * 1000, "sql": min(statements),
            "returned": returned}


class NovaBootAndList(integrated_helpers.ProviderUsageBaseTestCase):
    NUMBER_OF_CELLS = 2
    compute_driver = "fake.FakeDriver"  # 1,000 vCPUs per host: capacity is not what is measured

    def setUp(self) -> None:
        super().setUp()
        self.flags(instances=-1, cores=-1, ram=-1, group="quota")  # as cloudcore's bench lifts its quotas
        self.useFixture(nova_fixtures.CastAsCallFixture(self))
        for i in range(HOSTS):
            self._start_compute(f"host{i + 1}", cell_name="cell1" if i % 2 == 0 else "cell2")

    def test_boot_and_list(self) -> None:
        flavor = next(f for f in self.api.get_flavors() if f["name"] == "m1.tiny")
        times, statements = [], []
        for i in range(BOOTS):
            body = self._build_server(name=f"bench-{i:05d}", flavor_id=flavor["id"], networks="none")
            created: dict[str, Any] = {}

            def post(body: dict[str, Any] = body, created: dict[str, Any] = created) -> None:
                created.update(self.api.post_server({"server": body}))

            seconds, count = _timed_until(self.api, lambda created=created: created["id"], "ACTIVE", post)
            times.append(seconds)
            statements.append(count)
        time.sleep(1.0)  # let the last build's thread finish its writes before the list is measured
        list_times, list_statements, returned = [], [], 0
        for _ in range(REPEATS):
            servers, seconds, count = _timed(lambda: self.api.get_servers(detail=True))
            list_times.append(seconds)
            list_statements.append(count)
            returned = len(servers)
        RESULTS["boot"] = {"asynchronous_waits": ASYNC_SEEN.count("ACTIVE"),
            "boots": BOOTS, "hosts": HOSTS, "boot_per_s": BOOTS / sum(times),
            "boot_ms_median": statistics.median(times) * 1000, "sql_per_boot": statistics.median(statements),
            "list_servers": returned, "list_detail_ms": statistics.median(list_times) * 1000,
            # fewest over the repeats: Nova's periodic/background threads write now and then while
            # a request runs, and those statements are not the request's
            "list_detail_sql": min(list_statements),
            "list_microversion": self.api.microversion,
        }
        if LIST_ROWS:
            servers_now = _insert_copies(LIST_ROWS)
            RESULTS["boot"]["list_rows"] = {
                "servers": servers_now, "booted": BOOTS,
                "by_version": {v: _list_timed(self.api, v) for v in ("2.1", "latest")},
            }


class NovaCrossCellResize(xc.TestMultiCellMigrate):
    compute_driver = "fake.FakeDriver"

    def setUp(self) -> None:
        super().setUp()
        self.useFixture(nova_fixtures.CastAsCallFixture(self))

    def _move(self, finish: str) -> dict[str, Any]:
        flavors = self.api.get_flavors()
        old, new = flavors[0], flavors[1]
        server = self._create_server(old, no_networking=True)
        assert server["OS-EXT-AZ:availability_zone"] == "cell1", server
        resize_s, resize_q = _timed_until(self.api, server["id"], "VERIFY_RESIZE", lambda: self.api.post_server_action(
            server["id"], {"resize": {"flavorRef": new["id"]}}))
        server = self._wait_for_state_change(server, "VERIFY_RESIZE")
        assert server["OS-EXT-SRV-ATTR:host"] == "host2", server["OS-EXT-SRV-ATTR:host"]
        finish_s, finish_q = _timed_until(self.api, server["id"], "ACTIVE",
                                          lambda: self.api.post_server_action(server["id"], {finish: None}))
        server = self._wait_for_state_change(server, "ACTIVE")
        expected = "host2" if finish == "confirmResize" else "host1"
        assert server["OS-EXT-SRV-ATTR:host"] == expected, server["OS-EXT-SRV-ATTR:host"]
        return {"resize_ms": resize_s * 1000, "finish_ms": finish_s * 1000, "move_ms": (resize_s + finish_s) * 1000,
                "resize_sql": resize_q, "finish_sql": finish_q, "move_sql": resize_q + finish_q}

    def test_resize_confirm_and_revert(self) -> None:
        out: dict[str, Any] = {}
        ASYNC_SEEN.clear()
        for key, finish in (("confirm", "confirmResize"), ("revert", "revertResize")):
            moves = [self._move(finish) for _ in range(ROUNDS)]
            out[key] = {k: statistics.median(m[k] for m in moves) for k in moves[0]}
        RESULTS["cross_cell"] = {"rounds": ROUNDS, "asynchronous_waits": len(ASYNC_SEEN), **out}


def main() -> int:
    from importlib.metadata import version

    suite = unittest.TestSuite()
    loader = unittest.TestLoader()
    wanted = sys.argv[1:] or ["boot", "cross_cell"]
    if "boot" in wanted:
        suite.addTests(loader.loadTestsFromTestCase(NovaBootAndList))
    if "cross_cell" in wanted:
        suite.addTest(NovaCrossCellResize("test_resize_confirm_and_revert"))
    started = time.perf_counter()
    outcome = unittest.TextTestRunner(stream=sys.stderr, verbosity=1).run(suite)
    RESULTS["meta"] = {"nova_version": version("nova"), "sqlalchemy": version("SQLAlchemy"),
                       "python": sys.version.split()[0],
                       "seconds": time.perf_counter() - started, "ok": outcome.wasSuccessful(),
                       "asynchronous_waits": len(ASYNC_SEEN),
                       "peak_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                       "errors": [str(t) + ": " + tb.strip().splitlines()[-1] for t, tb in
                                  outcome.errors + outcome.failures]}
    with open(os.environ["BENCH_NOVA_OUT"], "w") as fh:
        json.dump(RESULTS, fh, indent=2)
    return 0 if outcome.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
