"""``manage.py cell_v2 <subcommand>``: Nova's cells v2 operator commands, with Nova's options and
exit codes. The logic is in ``cells.services`` (the registry), ``hosts.services.discovery`` and
``servers.services.cells_admin`` (what a cell holds); this command sits above all three.

  map_cell0 [--database_connection URL]                  0 (also when cell0 exists)
  create_cell --name N --database_connection URL [--transport-url U] [--disabled] [--verbose]
                                                         0 created, 1 missing/invalid URL, 2 duplicate
  list_cells [--verbose]                                 0
  delete_cell --cell_uuid U [--force]                    0, 1 not found, 2 hosts mapped, 3 instances
  discover_hosts [--cell_uuid U] [--verbose] [--strict] [--by-service]
                                                         0, 1 nothing new with --strict, 2 duplicate
  list_hosts [--cell_uuid U]                             0, 1 cell not found
  map_instances --cell_uuid U [--max-count N] [--reset]  0 all mapped, 1 more remain, 127 bad count
  verify_instance --uuid U [--quiet]                     0 ok, 1 no mapping, 2 no cell, 3 deleted, 4 archived
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from cells import services
from cells.selectors import cell_list
from cloudcore.core.exceptions import Invalid
from hosts.services.discovery import discover_hosts

from ...services import cells_admin


def _mask(url: str, verbose: bool) -> str:
    return url if verbose else re.sub(r"//([^:/@]+):([^@]+)@", r"//\1:****@", url)


class Command(BaseCommand):
    help = "Cells v2 operations (Nova's nova-manage cell_v2)."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="subcommand", required=True)
        p = sub.add_parser("map_cell0")
        p.add_argument("--database_connection", "--database-connection", dest="database_connection")
        p = sub.add_parser("create_cell")
        p.add_argument("--name")
        p.add_argument("--database_connection", "--database-connection", dest="database_connection")
        p.add_argument("--transport-url", "--transport_url", dest="transport_url")
        p.add_argument("--disabled", action="store_true")
        p.add_argument("--verbose", action="store_true")
        p = sub.add_parser("list_cells")
        p.add_argument("--verbose", action="store_true")
        p = sub.add_parser("delete_cell")
        p.add_argument("--cell_uuid", "--cell-uuid", dest="cell_uuid", required=True)
        p.add_argument("--force", action="store_true")
        p = sub.add_parser("discover_hosts")
        p.add_argument("--cell_uuid", "--cell-uuid", dest="cell_uuid")
        p.add_argument("--verbose", action="store_true")
        p.add_argument("--strict", action="store_true")
        p.add_argument("--by-service", "--by_service", dest="by_service", action="store_true")
        p = sub.add_parser("list_hosts")
        p.add_argument("--cell_uuid", "--cell-uuid", dest="cell_uuid")
        p = sub.add_parser("map_instances")
        p.add_argument("--cell_uuid", "--cell-uuid", dest="cell_uuid", required=True)
        p.add_argument("--max-count", "--max_count", dest="max_count", type=str, default="50")
        p.add_argument("--reset", action="store_true")
        p = sub.add_parser("verify_instance")
        p.add_argument("--uuid", required=True)
        p.add_argument("--quiet", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        code = getattr(self, f"_{options['subcommand']}")(options)
        if code:
            raise SystemExit(code)

    # -- subcommands (each returns Nova's exit code) ------------------------------------------
    def _map_cell0(self, o: dict[str, Any]) -> int:
        try:
            cell, created = services.map_cell0(database_connection=o.get("database_connection"))
        except Exception as exc:  # a bad URL or an unreachable database
            self.stderr.write(str(exc))
            return 1
        if not created:
            self.stdout.write("Cell0 is already setup")
        return 0

    def _create_cell(self, o: dict[str, Any]) -> int:
        try:
            cell = services.create_cell(name=o.get("name"), database_connection=o.get("database_connection"),
                                        transport_url=o.get("transport_url"), disabled=o["disabled"])
        except Invalid as exc:
            self.stderr.write(str(exc))
            return 1
        except services.CellExists as exc:
            self.stderr.write(str(exc))
            return 2
        if o["verbose"]:
            self.stdout.write(cell.uuid)
        return 0

    def _list_cells(self, o: dict[str, Any]) -> int:
        rows = [("Name", "UUID", "Transport URL", "Database Connection", "Disabled")]
        for cell in cell_list(by_name=True):
            rows.append((cell.name or "", cell.uuid, _mask(cell.transport_url, o["verbose"]),
                         _mask(cell.database_connection, o["verbose"]), str(cell.disabled)))
        self._table(rows)
        return 0

    def _delete_cell(self, o: dict[str, Any]) -> int:
        try:
            services.delete_cell(cell_uuid=o["cell_uuid"], force=o["force"],
                                 has_instances=cells_admin.cell_has_instances)
        except services.CellNotFound as exc:
            self.stderr.write(str(exc))
            return 1
        except services.CellHasHosts as exc:
            self.stderr.write(str(exc))
            return 2
        except services.CellHasInstances as exc:
            self.stderr.write(str(exc))
            return 3
        return 0

    def _discover_hosts(self, o: dict[str, Any]) -> int:
        try:
            result = discover_hosts(cell_uuid=o.get("cell_uuid"), by_service=o["by_service"])
        except services.CellNotFound as exc:
            self.stderr.write(str(exc))
            return 1
        if o["verbose"]:
            for host, cell in result.mapped:
                self.stdout.write(f"Checking host mapping for compute host '{host}': creating mapping to cell {cell}")
            self.stdout.write(f"Found {len(result.mapped)} unmapped computes.")
        if result.duplicates:
            self.stderr.write("ERROR: Duplicate host mapping was encountered. This command should be run once "
                              f"after all compute hosts have been deployed: {', '.join(result.duplicates)}")
            return 2
        if o["strict"] and not result.mapped:
            return 1
        return 0

    def _list_hosts(self, o: dict[str, Any]) -> int:
        try:
            hosts = services.list_hosts(cell_uuid=o.get("cell_uuid"))
        except services.CellNotFound as exc:
            self.stderr.write(str(exc))
            return 1
        self._table([("Cell Name", "Cell UUID", "Hostname")]
                    + [(h.cell.name or "", h.cell.uuid, h.host) for h in hosts])
        return 0

    def _map_instances(self, o: dict[str, Any]) -> int:
        try:
            max_count = int(o["max_count"])
            if max_count < 1:
                raise ValueError
        except ValueError:
            self.stderr.write("Must supply a positive integer for --max-count")
            return 127
        try:
            done = cells_admin.map_instances(cell_uuid=o["cell_uuid"], max_count=max_count, reset=o["reset"])
        except services.CellNotFound as exc:
            self.stderr.write(str(exc))
            return 127
        return 0 if done else 1

    def _verify_instance(self, o: dict[str, Any]) -> int:
        code, message = cells_admin.verify_instance(instance_uuid=o["uuid"])
        if not o["quiet"]:
            self.stdout.write(message)
        return code

    def _table(self, rows: Sequence[tuple[str, ...]]) -> None:
        widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
        line = "+" + "+".join("-" * (w + 2) for w in widths) + "+"
        self.stdout.write(line)
        for n, row in enumerate(rows):
            self.stdout.write("| " + " | ".join(str(v).ljust(w) for v, w in zip(row, widths, strict=True)) + " |")
            if n == 0:
                self.stdout.write(line)
        self.stdout.write(line)
