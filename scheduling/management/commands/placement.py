"""``manage.py placement sync_aggregates [--dry-run] [--verbose]``: mirror host aggregates into
placement, as ``nova-manage placement sync_aggregates`` does, with its exit codes: 0 done,
4 a member host is not mapped to a cell, 5 a host has no compute node, 6 a compute node has no
resource provider."""
from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from scheduling.services.aggregates import aggregates_sync_all


class Command(BaseCommand):
    help = "Placement maintenance (sync_aggregates)."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        sync = sub.add_parser("sync_aggregates", help="Mirror host aggregates into placement aggregates.")
        sync.add_argument("--dry-run", action="store_true", help="Report without writing.")
        sync.add_argument("--verbose", action="store_true", help="Print every host synced.")

    def handle(self, *args: Any, **options: Any) -> None:
        report = aggregates_sync_all(dry_run=options["dry_run"])
        if options["verbose"]:
            for host in report.synced:
                self.stdout.write(f"{'Would sync' if options['dry_run'] else 'Synced'} host {host}")
        code = 0
        if report.unmapped:
            self.stderr.write(f"Failed to find host mappings for aggregate members: {', '.join(report.unmapped)}")
            code = 4
        if report.without_nodes:
            self.stderr.write(f"Failed to find compute nodes for hosts: {', '.join(report.without_nodes)}")
            code = code or 5
        if report.without_providers:
            self.stderr.write(f"Failed to find resource providers for hosts: {', '.join(report.without_providers)}")
            code = code or 6
        if code:
            sys.exit(code)
        self.stdout.write(f"{len(report.synced)} host(s) synced.")
