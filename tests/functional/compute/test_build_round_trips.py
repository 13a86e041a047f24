"""The statements a compute host sends for one build (``build_and_run_instance_task``, as a compute
worker runs it: issue 23 item 2, where each compute worker spent as much CPU per build as the
conductor), on every connection as Django logs them (``CaptureQueriesContext``), on databases with
no transaction of the test around them; on PostgreSQL each is a round trip (plus the health check's
``SELECT 1`` of each database used, which Django sends outside that log).

Pinned per backend: in the host's cell the instance, the build's event, the three task states, the
server ACTIVE and the event finished; in the API database nothing: a worker serving a host of the
cell (``compute.tasks.serve_cell``, as ``manage.py compute`` registers it at start-up) finds the
cell's mapping without reading every cell's again (a read, and on PostgreSQL the API connection's
health check, per task); its six notifications go to the conductor in two casts (those up to the
spawn before it; each cast's task, run eagerly here, keeps its notifications in one INSERT). And the
statements of the host's own rows are built once per process (``cloudcore.core.prepared``): a build
after the first compiles only the event's two (the ``servers`` actions' ORM), where it compiled all
seven. Counts, not timed assertions."""
from __future__ import annotations

import contextlib
from typing import Any

import pytest
from django.db import connections
from django.db.models.sql.compiler import SQLCompiler, SQLInsertCompiler, SQLUpdateCompiler
from django.test import override_settings
from django.test.utils import CaptureQueriesContext

import compute.rpc
import compute.tasks
from cloudcore.core.models import NotificationRecord
from compute.tasks import build_and_run_instance_task, serve_cell
from servers.models import Instance, InstanceActionEvent
from tests.cloud import build_cloud
from tests.conftest import ALL_DATABASES

pytestmark = pytest.mark.django_db(databases=ALL_DATABASES, transaction=True)

#: statements of one build: the instance; the event; networking, block_device_mapping, spawning;
#: ACTIVE; the event finished (on each backend: no transaction is opened)
STATEMENTS = {"api": 0, "cell": 1 + 1 + 3 + 1 + 1, "other cell": 0}


@override_settings(QUOTA_INSTANCES=-1, QUOTA_CORES=-1, QUOTA_RAM=-1, NOTIFICATIONS_ENABLED=True)
def test_a_build_on_its_host_costs_its_pinned_statements(cells: dict[str, Any], monkeypatch: Any) -> None:
    cloud = build_cloud(cells, vcpus=64, memory_mb=65536, disk_gb=1000)
    try:
        client = cloud.member()
        casts: list[dict[str, Any]] = []
        # given servers placed by the conductor, its casts to their host recorded as the worker receives them
        monkeypatch.setattr(compute.rpc, "build_and_run_instance", lambda **kwargs: casts.append(
            {**{k: v for k, v in kwargs.items() if k != "host"}, "ctx": kwargs["ctx"].to_dict()}))
        accepted = [cloud.create_server(client, f"built-{i}", networks="none")["id"] for i in range(5)]
        assert [c["instance_uuid"] for c in casts] == accepted
        # (three of them in one cell: the first prepares its statements there)
        by_cell: dict[str, list[dict[str, Any]]] = {}
        for cast in casts:
            by_cell.setdefault(cast["cell_uuid"], []).append(cast)
        casts = max(by_cell.values(), key=len)[:3]
        assert len(casts) == 3
        servers = [c["instance_uuid"] for c in casts]
        # and a worker that serves a host of their cell (as manage.py compute registers it)
        cell = next(c for c in cells.values() if str(c.uuid) == casts[0]["cell_uuid"])
        monkeypatch.setattr(compute.tasks, "_served_cells", {})
        serve_cell(cell)
        build_and_run_instance_task.run(**casts[0])  # the statements prepared, as in a worker's steady state
        built: list[str] = []

        def counted(compiler: type[SQLCompiler]) -> Any:
            as_sql = compiler.as_sql

            def compiled(self: SQLCompiler, *args: Any, **kwargs: Any) -> Any:
                made = as_sql(self, *args, **kwargs)  # (an INSERT's: a list of them)
                built.extend(sql for sql, _params in (made if isinstance(made, list) else [made]))
                return made
            return compiled

        # when the host builds the next server
        with contextlib.ExitStack() as stack, monkeypatch.context() as patch:
            captured = {alias: stack.enter_context(CaptureQueriesContext(connections[alias]))
                        for alias in ALL_DATABASES}  # (not a cell another test registered)
            for compiler in (SQLCompiler, SQLInsertCompiler, SQLUpdateCompiler):  # Django's builders of SQL
                patch.setattr(compiler, "as_sql", counted(compiler))
            build_and_run_instance_task.run(**casts[1])
        # then it sends its pinned statements, on each database
        by_alias = {alias: [q["sql"] for q in c.captured_queries] for alias, c in captured.items()}
        # (the notifications it hands to the conductor are kept by the conductor's task, run eagerly here)
        kept = [sql for sql in by_alias["default"] if '"core_notificationrecord"' in sql]
        by_alias["default"] = [sql for sql in by_alias["default"] if sql not in kept]
        # (two casts and an INSERT each for the six: instance.create.start and 3 instance.update before
        # the spawn, the last instance.update and instance.create.end after it)
        assert len(kept) == 2
        records = list(NotificationRecord.objects.order_by("-id").values_list("event_type", "payload"))[:6][::-1]
        assert [event_type for event_type, _ in records] == [
            "instance.create.start", *["instance.update"] * 4, "instance.create.end"]
        assert {payload["payload"]["nova_object.data"]["uuid"] for _, payload in records} == {servers[1]}
        cell_alias = cell.name
        counts = {"api": len(by_alias.pop("default")), "cell": len(by_alias.pop(cell_alias)),
                  "other cell": sum(len(statements) for statements in by_alias.values())}
        everything = "\n".join(q["sql"][:160] for c in captured.values() for q in c.captured_queries)
        assert counts == STATEMENTS, everything
        # and builds only the event's two statements (its INSERT and its finish), the conductor's
        # notification records aside
        built = [sql for sql in built if '"core_notificationrecord"' not in sql]
        assert len(built) == 2, built
        assert all('"servers_instanceactionevent"' in sql for sql in built), built
        # and the build is as before: the server ACTIVE and running, its event a success
        build_and_run_instance_task.run(**casts[2])
        from cells.context import target_cell

        with target_cell(cell):
            for uuid in servers:
                instance = Instance.objects.get(uuid=uuid)
                assert (instance.vm_state, instance.task_state, instance.power_state) == ("active", None, 1)
                assert instance.launched_at is not None and instance.updated_at >= instance.launched_at
            events = InstanceActionEvent.objects.filter(action__instance_uuid__in=servers,
                                                        event="compute_build_and_run_instance")
            assert sorted(e.result for e in events) == ["Success"] * 3
    finally:
        cloud.teardown()
