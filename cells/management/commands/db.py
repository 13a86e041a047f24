"""``manage.py db <subcommand>`` (Nova's ``nova-manage db``): subcommands come from
``cells.dbcommands.DB_SUBCOMMANDS`` and every installed app's ``<app>.dbcommands`` module
(e.g. ``archive_deleted_rows`` here, ``online_data_migrations`` from hosts)."""
from __future__ import annotations

import importlib
from typing import Any

from django.apps import apps
from django.core.management.base import BaseCommand, CommandParser

from cells.dbcommands import DB_SUBCOMMANDS


def _load() -> None:
    for config in apps.get_app_configs():
        try:
            importlib.import_module(f"{config.name}.dbcommands")
        except ModuleNotFoundError as exc:
            if exc.name != f"{config.name}.dbcommands":
                raise


class Command(BaseCommand):
    help = "Database maintenance (Nova's nova-manage db)."

    def add_arguments(self, parser: CommandParser) -> None:
        _load()
        sub = parser.add_subparsers(dest="subcommand", required=True)
        for name, (add_args, _run) in sorted(DB_SUBCOMMANDS.items()):
            add_args(sub.add_parser(name))

    def handle(self, *args: Any, **options: Any) -> None:
        _add, run = DB_SUBCOMMANDS[options["subcommand"]]
        code = run(options, self.stdout, self.stderr)
        if code:
            raise SystemExit(code)
