"""``manage.py compute --host NAME --cell CELL``: one compute host's worker process.

Isolated (``CLOUDCORE_COMPUTE_CELL`` and ``CLOUDCORE_COMPUTE_CELL_DATABASE_URL`` set, no API
database URL, see ``cells.agent``) the process is the compute agent of that cell from the start:
it opens that cell's database and no other.

Runs the start-up identity checks of seed 2 (refusing to start, with nothing written, on a
hostname change, a lost or disagreeing identity file, a new service over existing guests or a
changed node uuid), registers the Service and ComputeNode in the host's cell, reports to
placement over its HTTP API, asks the conductor to map the host to its cell (cloudcore's stand-in
for a periodic ``discover_hosts``), then
consumes queue ``compute.NAME`` with a Celery worker while a thread heartbeats and refreshes the
resource tracker. ``--check-only`` stops after the checks (exit 0 when the host may start).
"""
from __future__ import annotations

import json
import logging
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import close_old_connections
from django.utils import timezone

from cells.agent import enter_configured_cell
from cells.context import CellNotFound, resolve_cell, target_cell
from cells.selectors import host_mapping_get
from cloudcore.celery import app
from cloudcore.core.exceptions import InvalidConfiguration
from compute import rpc
from compute.drivers import register_driver
from compute.tasks import serve_cell
from hosts.selectors import compute_node_get_by_id
from hosts.services.servicegroup import service_heartbeat

from ...resource_tracker import update_usage
from ...startup import apply_startup, check_startup
from ...virt.libvirt import LibvirtDriver, write_test_node

if TYPE_CHECKING:
    from cells.models import CellMapping

log = logging.getLogger("hosts.compute")


REFUSAL_FILE = "startup-refusal.json"


def default_state_path() -> Path:
    """The machine's state path (Nova's ``/var/lib/nova``): it does not depend on the host name, so
    the ``compute_id`` kept there still names this machine's node after a ``--host`` rename (and the
    rename is refused). Several hosts on one machine (the demo) each pass ``--state-path``."""
    return Path(settings.STATE_PATH)


def record_refusal(state_path: Path, host: str, message: str) -> None:
    """Leave the refusal where operators (and the console's hosts page) see it: in the host's state
    path, never in a database (a refused start writes nothing there)."""

    state_path.mkdir(parents=True, exist_ok=True)
    (state_path / REFUSAL_FILE).write_text(json.dumps({"host": host, "message": message,
                                                       "when": timezone.now().isoformat()}))


def clear_refusal(state_path: Path) -> None:
    (state_path / REFUSAL_FILE).unlink(missing_ok=True)


def refusals() -> list[dict[str, str]]:
    """The start-up refusals recorded under STATE_PATH (newest first)."""

    found = []
    root = Path(settings.STATE_PATH)
    for path in [root / REFUSAL_FILE, *root.glob(f"*/{REFUSAL_FILE}")]:
        if not path.exists():
            continue
        try:
            found.append(json.loads(path.read_text()))
        except (OSError, ValueError):
            continue
    return sorted(found, key=lambda r: r.get("when", ""), reverse=True)


class Command(BaseCommand):
    help = "Run a compute host's worker (libvirt driver, queue compute.<host>)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", required=True)
        parser.add_argument("--cell", help="cell name or uuid (default: the host's HostMapping)")
        parser.add_argument("--state-path", dest="state_path")
        parser.add_argument("--libvirt-uri", dest="libvirt_uri",
                            help="default test:///<state-path>/node.xml (a simulated host)")
        parser.add_argument("--config", help="config file; a compute_id next to it is read too")
        parser.add_argument("--check-only", dest="check_only", action="store_true")
        parser.add_argument("--register-only", dest="register_only", action="store_true",
                            help="run the checks, register the host and exit without serving")
        parser.add_argument("--concurrency", type=int, default=None,
                            help="task threads (default: settings.COMPUTE_CONCURRENCY)")
        parser.add_argument("--vcpus", type=int, default=8, help="simulated host size (test driver)")
        parser.add_argument("--memory-mb", dest="memory_mb", type=int, default=16384)
        parser.add_argument("--disk-gb", dest="disk_gb", type=int, default=100)

    def handle(self, *args: Any, **o: Any) -> None:
        host: str = o["host"]
        state_path = Path(o["state_path"]) if o["state_path"] else default_state_path()
        cell = self._own_cell(o.get("cell")) or self._cell(host, o.get("cell"))
        uri = o["libvirt_uri"] or f"test://{state_path / 'node.xml'}"
        if uri.startswith("test://") and not (state_path / "node.xml").exists():
            write_test_node(state_path, hostname=host, vcpus=o["vcpus"], memory_mb=o["memory_mb"],
                            disk_gb=o["disk_gb"])
        driver = LibvirtDriver(host=host, uri=uri, state_path=state_path)
        config = Path(o["config"]) if o.get("config") else None
        try:
            plan = check_startup(host=host, cell=cell, driver=driver, state_path=state_path, config_file=config)
        except InvalidConfiguration as exc:
            self.stderr.write(f"ERROR: compute {host} refuses to start: {exc}")
            record_refusal(state_path, host, str(exc))
            raise SystemExit(1) from None
        clear_refusal(state_path)
        if o["check_only"]:
            self.stdout.write(f"compute {host}: start-up checks passed (node {plan.node_uuid})")
            return
        service, node = apply_startup(plan, driver=driver, state_path=state_path)
        if o["register_only"]:
            self.stdout.write(f"compute {host} registered: node {node.uuid}")
            return
        register_driver(host, driver)
        serve_cell(cell)
        self.stdout.write(f"compute {host} up in cell {cell.name}: node {node.uuid} ({node.hypervisor_hostname})")
        threading.Thread(target=self._heartbeat, args=(cell, service.id, node.id, driver), daemon=True,
                         name=f"heartbeat-{host}").start()
        self._run_worker(host, o["concurrency"] or settings.COMPUTE_CONCURRENCY)

    def _own_cell(self, name: str | None) -> CellMapping | None:
        """Isolated (CLOUDCORE_COMPUTE_CELL): the configured cell, this process its compute agent
        from here on; ``--cell``, if given, must name the same cell."""
        try:
            agent = enter_configured_cell()
        except InvalidConfiguration as exc:
            raise CommandError(str(exc)) from None
        if agent is None:
            return None
        if name and not agent.owns(name):
            raise CommandError(f"--cell {name} is not this compute's cell {agent.mapping} (CLOUDCORE_COMPUTE_CELL)")
        return agent.mapping

    def _cell(self, host: str, name: str | None) -> CellMapping:
        if name:
            try:
                return resolve_cell(name)
            except CellNotFound:
                raise CommandError(f"Cell {name} doesn't exist.") from None
        mapping = host_mapping_get(host)
        if mapping is None:
            raise CommandError(f"Host {host} is not mapped to a cell: pass --cell.")
        return mapping.cell

    def _heartbeat(self, cell: CellMapping, service_id: int, node_id: int, driver: Any) -> None:
        last_audit = 0.0
        last_cache_clean = time.monotonic()
        while True:
            interval = settings.IMAGE_CACHE_MANAGER_INTERVAL
            if interval and time.monotonic() - last_cache_clean >= interval and hasattr(driver, "clean_image_cache"):
                last_cache_clean = time.monotonic()
                try:
                    removed = driver.clean_image_cache(
                        min_age_seconds=settings.REMOVE_UNUSED_ORIGINAL_MINIMUM_AGE_SECONDS)
                    if removed:
                        log.info("image cache: removed %s", ", ".join(p.name for p in removed))
                except Exception:
                    log.exception("image cache cleaning failed")
            try:
                with target_cell(cell):
                    service_heartbeat(service_id)
                    if time.monotonic() - last_audit >= max(settings.REPORT_INTERVAL * 6, 30):
                        node = compute_node_get_by_id(node_id)
                        if node is None:
                            log.warning("compute node %s is gone: no resource audit", node_id)
                        else:
                            update_usage(node=node, driver=driver)
                        last_audit = time.monotonic()
            except Exception:
                log.exception("heartbeat failed")
            finally:
                # kept when CLOUDCORE_DB_CONN_MAX_AGE says so (run_cloud: 300 s), as a task's are:
                # on PostgreSQL a connection is a backend forked, set up and closed each time
                close_old_connections()
            time.sleep(settings.REPORT_INTERVAL)

    def _run_worker(self, host: str, concurrency: int) -> None:
        worker = app.Worker(queues=[rpc.queue_for(host)], concurrency=concurrency, pool="threads",
                            hostname=f"compute@{host}", loglevel="WARNING", without_mingle=True,
                            without_gossip=True, without_heartbeat=True)
        worker.start()
        sys.exit(worker.exitcode or 0)
